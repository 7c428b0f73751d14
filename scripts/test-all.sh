#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs dependencies, type-checks, lints, starts the real
# infrastructure (PostgreSQL, Redis, Kafka, etcd + kube-apiserver), runs unit and integration suites, and prints
# one closing line `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export LORE_CACHE_DIR="${LORE_CACHE_DIR:-$HOME/.cache/lore}"
export LORE_INFRA_DIR="${LORE_INFRA_DIR:-$LORE_CACHE_DIR/run}"
REPORTS="$ROOT/.lore-test"
rm -rf "$REPORTS"; mkdir -p "$REPORTS"

step() { printf '\n==> %s (%ss)\n' "$1" "$SECONDS"; }
fail_setup() { echo "setup failed: $1" >&2; echo "0 passed, 1 failed"; exit 1; }

if [ -f test/infra/k8s/build.sh ]; then
  # Cold, this build takes 10-20 minutes; it runs while dependencies install, the code type-checks and the unit
  # suites run. Cached after the first run, this returns at once.
  step "build etcd, kube-apiserver, kubectl, helm in the background (cached)"
  bash test/infra/k8s/build.sh --background || fail_setup "test/infra/k8s/build.sh --background"
fi
# promtool for the chart's alert rule tests (cold: about 14 minutes on a busy 2-core machine; cached: instant). The
# observability suite takes the build's lock, so it waits for this build rather than starting another.
[ -f test/infra/promtool/build.sh ] && { bash test/infra/promtool/build.sh --background || fail_setup "test/infra/promtool/build.sh --background"; }

if [ -f test/infra/s3/build.sh ]; then
  # The S3-compatible test server (Go, ~1.5 minutes cold on 2 cores, cached after): test/infra/up.sh starts it.
  step "build the S3 test server in the background (cached)"
  bash test/infra/s3/build.sh --background || fail_setup "test/infra/s3/build.sh --background"
fi

step "install dependencies"
# `npm ci`: installs exactly what package-lock.json lists (every platform's optional native builds are in it) and
# stops when a package.json and the lockfile disagree instead of quietly re-resolving. It deletes node_modules
# first, so it runs only when node_modules is missing or older than the lockfile: a warm machine skips it.
# ONNXRUNTIME_NODE_INSTALL=skip keeps onnxruntime-node's postinstall from downloading GPU builds from outside the
# npm registry under npm 10, which ignores package.json's allowScripts (docs/infrastructure.md, "npm install").
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund || fail_setup "npm ci"
fi

step "type-check (tsc -b, then the suites and benchmarks outside the build)"
npx tsc -b || fail_setup "type-check"
for project in test operator/test bench; do
  npx tsc -p "$project/tsconfig.json" --noEmit || fail_setup "type-check of $project"
done

step "lint"
npx eslint . || fail_setup "lint"

step "unit tests"
npx jest --selectProjects unit --ci --json --outputFile="$REPORTS/unit.json" ${LORE_JEST_ARGS:-}
unit_rc=$?

step "start PostgreSQL, Redis, Kafka, the S3 test server"
# A broker that is not running starts over from empty test data when earlier runs left over 2,000 partitions
# (loading them costs a cold start half a minute); a running broker is left as it is.
LORE_KAFKA_PRUNE_OVER="${LORE_KAFKA_PRUNE_OVER:-2000}" bash test/infra/up.sh || fail_setup "test/infra/up.sh"
set -a; . "$LORE_INFRA_DIR/env"; set +a

if [ -f test/infra/k8s/up.sh ]; then
  step "wait for the Kubernetes build, start etcd + kube-apiserver"
  bash test/infra/k8s/build.sh --wait || fail_setup "test/infra/k8s/build.sh"
  bash test/infra/k8s/up.sh || fail_setup "test/infra/k8s/up.sh"
  set -a; . "$LORE_INFRA_DIR/k8s/env"; set +a
fi

step "fetch the local embedding model (cached; test/ai runs it)"
bash scripts/fetch-model.sh >/dev/null || fail_setup "scripts/fetch-model.sh"

step "install Schemathesis (cached; test/fuzz runs it)"
bash test/infra/schemathesis.sh >/dev/null || fail_setup "test/infra/schemathesis.sh"

step "integration tests"
# --forceExit: a suite whose set-up failed half-way can leave a client's retry timer behind, and jest would then wait
# for it past CI's limit after printing every result; the results are already written when it exits.
npx jest --selectProjects integration --ci --runInBand --forceExit --json --outputFile="$REPORTS/integration.json" ${LORE_JEST_ARGS:-}
int_rc=$?

step "totals"
node -e '
  const fs = require("fs");
  let passed = 0, failed = 0;
  for (const f of process.argv.slice(1)) {
    if (!fs.existsSync(f)) { failed += 1; console.error("missing report " + f); continue; }
    const r = JSON.parse(fs.readFileSync(f, "utf8"));
    passed += r.numPassedTests;
    failed += r.numFailedTests + (r.numRuntimeErrorTestSuites || 0);
  }
  console.log(passed + " passed, " + failed + " failed");
' "$REPORTS/unit.json" "$REPORTS/integration.json"

if [ $unit_rc -ne 0 ] || [ $int_rc -ne 0 ]; then exit 1; fi
exit 0
