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
# What `npm ci` installed is kept under the cache, named by the lockfile, every package.json, Node's version and the
# machine: a clean clone of the same dependencies unpacks it (a few seconds) instead of installing again (50–110 s),
# and any change to one of those makes `npm ci` run and check again (docs/infrastructure.md, "The test command").
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  nm_dir="$LORE_CACHE_DIR/node-modules"
  # Every node_modules npm ci fills: the root's and a workspace's own, where the lockfile puts a version that differs
  # from the root's (services/runtime/node_modules/jose, for one).
  mapfile -t nm_paths < <(node -e '
    const keys = Object.keys(require("./package-lock.json").packages);
    const nested = keys.map((k) => /^(?!node_modules\/)(.+?)\/node_modules\//.exec(k)?.[1]).filter(Boolean);
    for (const p of ["node_modules", ...[...new Set(nested)].sort().map((d) => d + "/node_modules")]) console.log(p);') \
    && [ "${#nm_paths[@]}" -gt 0 ] || fail_setup "reading package-lock.json"
  nm_key=$( (echo "node_modules tar 2: ${nm_paths[*]}"; cat package-lock.json; git ls-files -z '*package.json' | sort -z | xargs -0 cat; node --version; uname -sm) | sha256sum | cut -c1-24)
  nm_cache="$nm_dir/$nm_key.tar"
  if [ -f "$nm_cache" ]; then
    echo "unpacking the dependencies npm ci installed before from this lockfile ($nm_cache)"
    rm -rf "${nm_paths[@]}" && tar -xf "$nm_cache" && touch node_modules/.package-lock.json || fail_setup "unpacking $nm_cache"
  else
    ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund || fail_setup "npm ci"
    # Kept before anything runs from it; written aside and renamed, so a run stopped half-way leaves nothing that
    # looks whole (its part goes with the next run's clean-up). The two newest are kept (about 0.7 GB each).
    mkdir -p "$nm_dir" && find "$nm_dir" -name '*.partial.*' -mmin +60 -delete && tar -cf "$nm_cache.partial.$$" "${nm_paths[@]}" && mv "$nm_cache.partial.$$" "$nm_cache" \
      && { ls -t "$nm_dir"/*.tar | tail -n +3 | xargs -r rm -f; } \
      || { rm -f "$nm_cache.partial.$$"; echo "could not keep node_modules in $nm_dir (the run goes on)" >&2; }
  fi
fi

step "type-check (tsc -b) and lint, side by side"
# tsc -b runs on one core; lint (no type information) takes the other (about 20 s beside 60–130 s).
checks_ok=1
run_check() { # name, log, command...
  local name=$1 log=$2; shift 2
  "$@" >"$log" 2>&1 || { echo "$name failed:" >&2; cat "$log" >&2; return 1; }
}
run_check "lint" "$REPORTS/lint.log" npx eslint . &
check_lint=$!
npx tsc -b || checks_ok=0
wait $check_lint || checks_ok=0
[ $checks_ok -eq 1 ] || fail_setup "type-check or lint"

step "type-check the suites and benchmarks outside the build, side by side"
# Two independent checks that only read the tree and need the build above, one per core.
run_check "type-check of test" "$REPORTS/tsc-test.log" npx tsc -p test/tsconfig.json --noEmit &
check_tsc_test=$!
run_check "type-check of operator/test and bench" "$REPORTS/tsc-rest.log" \
  bash -c 'npx tsc -p operator/test/tsconfig.json --noEmit && npx tsc -p bench/tsconfig.json --noEmit' &
check_tsc_rest=$!
wait $check_tsc_test || checks_ok=0
wait $check_tsc_rest || checks_ok=0
[ $checks_ok -eq 1 ] || fail_setup "type-check of the suites and benchmarks"

step "unit tests"
# Two workers: the unit suites are CPU-bound and independent (each PGlite in memory or in its own directory); on
# the 2-core machine this took 166 s instead of 204 s with jest's default of one worker there.
npx jest --selectProjects unit --ci --maxWorkers=2 --json --outputFile="$REPORTS/unit.json" ${LORE_JEST_ARGS:-}
unit_rc=$?

step "start PostgreSQL, Redis, Kafka, the S3 test server"
# A broker that is not running starts over from empty test data when earlier runs left over 2,000 partitions
# (loading them costs a cold start half a minute); a running broker is left as it is.
LORE_KAFKA_PRUNE_OVER="${LORE_KAFKA_PRUNE_OVER:-2000}" bash test/infra/up.sh || fail_setup "test/infra/up.sh"
set -a; . "$LORE_INFRA_DIR/env"; set +a

# The Kubernetes control plane comes up in the background: on a cold machine its build is not done yet (about 30
# minutes cold on the 2-core machine), and the suites that need it run last (test/integration-lanes.txt, `kube`).
kube_job=
if [ -f test/infra/k8s/up.sh ]; then
  step "start etcd + kube-apiserver in the background once the Kubernetes build is done"
  ( bash test/infra/k8s/build.sh --wait && bash test/infra/k8s/up.sh ) >"$REPORTS/k8s-up.log" 2>&1 &
  kube_job=$!
fi

step "fetch the local embedding model (cached; test/ai runs it)"
bash scripts/fetch-model.sh >/dev/null || fail_setup "scripts/fetch-model.sh"

step "install Schemathesis (cached; test/fuzz runs it)"
bash test/infra/schemathesis.sh >/dev/null || fail_setup "test/infra/schemathesis.sh"

# The integration suites run in two lanes (test/integration-lanes.txt; docs/infrastructure.md, "The test command:
# two lanes"): those listed as parallel with two jest workers, then every other one alone. A suite not listed
# runs alone; the check names it.
mapfile -t int_suites < <(npx jest --selectProjects integration --listTests ${LORE_JEST_ARGS:-} 2>/dev/null | grep '\.test\.ts$')
node test/support/jest/lanes.js check "${int_suites[@]}" || fail_setup "test/integration-lanes.txt"

# --forceExit: a suite whose set-up failed half-way can leave a client's retry timer behind, and jest would then wait
# for it past CI's limit after printing every result; the results are already written when it exits.
# --passWithNoTests: LORE_JEST_ARGS may select suites of one lane only; the other lane then reports zero tests.
int_rc=0
# The first round runs without the Kubernetes environment even where the caller's shell has it, so a suite that needs
# it and is not marked `kube` fails on every machine.
KUBE_ENV=(KUBECONFIG LORE_TEST_KUBECONFIG LORE_KUBECTL LORE_HELM LORE_KUBE_SERVER LORE_KUBE_CA_FILE LORE_KUBE_TOKEN_FILE LORE_ETCD_ENDPOINT LORE_K8S_BIN_DIR)
lane() { # lane (parallel|serial), kube (without|only), report name
  local workers=(--maxWorkers=2) unset_kube=()
  [ "$1" = serial ] && workers=(--runInBand)
  [ "$2" = without ] && for v in "${KUBE_ENV[@]}"; do unset_kube+=(-u "$v"); done
  env "${unset_kube[@]}" LORE_TEST_LANE=$1 LORE_TEST_KUBE=$2 npx jest --selectProjects integration --ci "${workers[@]}" --forceExit --passWithNoTests \
    --json --outputFile="$REPORTS/$3.json" ${LORE_JEST_ARGS:-} || int_rc=1
}

step "integration tests without Kubernetes: the parallel lane (two workers)"
lane parallel without integration-parallel
step "integration tests without Kubernetes: the serial lane (one suite at a time)"
lane serial without integration-serial

if [ -n "$kube_job" ]; then
  step "wait for etcd + kube-apiserver"
  wait "$kube_job" || { cat "$REPORTS/k8s-up.log" >&2; fail_setup "test/infra/k8s/build.sh --wait, test/infra/k8s/up.sh"; }
  set -a; . "$LORE_INFRA_DIR/k8s/env"; set +a
fi
step "integration tests on Kubernetes: the parallel lane (two workers)"
lane parallel only integration-kube-parallel
step "integration tests on Kubernetes: the serial lane (one suite at a time)"
lane serial only integration-kube-serial

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
' "$REPORTS/unit.json" "$REPORTS"/integration-{parallel,serial,kube-parallel,kube-serial}.json

if [ $unit_rc -ne 0 ] || [ $int_rc -ne 0 ]; then exit 1; fi
exit 0
