# Targets the README uses. Everything real (PostgreSQL, Redis, Kafka, the S3 test server, etcd + kube-apiserver) is
# started by test/infra.
INFRA = "$${LORE_INFRA_DIR:-$$HOME/.cache/lore/run}"
.PHONY: install start test test-unit test-int typecheck lint infra-up infra-down k8s-up k8s-down bench

# ONNXRUNTIME_NODE_INSTALL=skip: npm 10 ignores package.json's allowScripts, and onnxruntime-node's install step would
# download GPU builds from outside the npm registry (README, docs/infrastructure.md "npm install").
install:
	ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund

start:
	npm start

test:
	npm test

test-unit:
	npx jest --selectProjects unit

# The integration suites as `npm test` runs them (scripts/test-all.sh), one at a time: first the build (some suites
# start processes from dist/), the embedding model (test/ai) and Schemathesis (test/fuzz), both cached. The operator
# and chart suites need the Kubernetes test control plane: with it running (`make k8s-up`) its k8s/env is sourced and
# every suite runs; without it those suites are left out, and the line before the run says so.
test-int: infra-up
	npx tsc -b
	bash scripts/fetch-model.sh >/dev/null
	bash test/infra/schemathesis.sh >/dev/null
	set -a; . $(INFRA)/env; set +a; \
	if [ -f $(INFRA)/k8s/env ] && kill -0 "$$(cat $(INFRA)/k8s/kube-apiserver.pid 2>/dev/null)" 2>/dev/null; then \
	  set -a; . $(INFRA)/k8s/env; set +a; npx jest --selectProjects integration --runInBand; \
	else \
	  echo "make test-int: the Kubernetes test control plane is not running (make k8s-up): the operator and chart suites are left out"; \
	  rc=0; \
	  LORE_TEST_LANE=parallel LORE_TEST_KUBE=without npx jest --selectProjects integration --runInBand --passWithNoTests || rc=1; \
	  LORE_TEST_LANE=serial LORE_TEST_KUBE=without npx jest --selectProjects integration --runInBand --passWithNoTests || rc=1; \
	  exit $$rc; \
	fi

typecheck:
	npx tsc -b
	for p in test operator/test bench; do npx tsc -p $$p/tsconfig.json --noEmit || exit 1; done

lint:
	npx eslint .

# PostgreSQL, Redis, Kafka and the S3 test server (built once, cached), and a check that Chromium is installed.
infra-up:
	bash test/infra/up.sh

infra-down:
	bash test/infra/down.sh

k8s-up:
	bash test/infra/k8s/build.sh && bash test/infra/k8s/up.sh

k8s-down:
	bash test/infra/k8s/down.sh

bench:
	npm run bench:kit
