#!/usr/bin/env bash
# Build (once, cached) Prometheus's promtool from the Go module proxy, for the chart's alert rule tests
# (`promtool check rules`, `promtool test rules`; test/k8s/observability.int.test.ts):
#   promtool  ->  $HOME/.cache/lore/promtool/<version>/bin/promtool
#
# Usage:
#   test/infra/promtool/build.sh               build if missing (foreground; a few minutes cold on 2 cores)
#   test/infra/promtool/build.sh --background  same, detached (nohup); log in $HOME/.cache/lore/promtool/<ver>/build.log
#   test/infra/promtool/build.sh --wait        wait for a background build to finish, then verify (exit 0 = ready)
#   test/infra/promtool/build.sh --check       exit 0 (and print the binary's path) if cached at the right version
#   test/infra/promtool/build.sh --print-bin
#
# The version is pinned (override with LORE_PROMTOOL_VERSION): the Go module github.com/prometheus/prometheus
# v0.X.Y is Prometheus 3.X.Y. Service discovery is left out of the build (the remove_all_sd tag): rule checks and
# rule unit tests do not use it, and it is most of the code. Idempotent: a binary that reports the expected
# version is not rebuilt.
set -euo pipefail

LORE_PROMTOOL_VERSION="${LORE_PROMTOOL_VERSION:-v0.316.0}"

LORE_CACHE="${LORE_CACHE_DIR:-$HOME/.cache/lore}"
ROOT="$LORE_CACHE/promtool/$LORE_PROMTOOL_VERSION"
BIN="$ROOT/bin/promtool"
LOG_FILE="$ROOT/build.log"
LOCK_FILE="$ROOT/build.lock"

# Go toolchain and caches under ~/.cache/lore/go, shared with the Kubernetes build (test/infra/k8s/build.sh).
if ! command -v go >/dev/null 2>&1; then export PATH="/usr/local/go/bin:$PATH"; fi
export GOPATH="$LORE_CACHE/go"
export GOMODCACHE="$GOPATH/pkg/mod"
export GOCACHE="$LORE_CACHE/go/cache"
export GOFLAGS="-buildvcs=false"
export CGO_ENABLED=0
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}"

# v0.316.0 -> 3.16.0 (what `promtool --version` prints, set through the version package below).
minor_patch="${LORE_PROMTOOL_VERSION#v0.}"                  # 316.0
release="${minor_patch%%.*}"                                 # 316
PROM_VERSION="${release:0:1}.$((10#${release:1})).${minor_patch#*.}"   # 3.16.0

log() { printf '[promtool-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

promtool_ok() {
  [[ -x "$BIN" ]] || return 1
  local o; o="$("$BIN" --version 2>/dev/null)" || return 1
  [[ "$o" == "promtool, version $PROM_VERSION "* ]]
}

case "${1:-}" in
  --print-bin) echo "$BIN"; exit 0 ;;
  --check) if promtool_ok; then echo "$BIN"; exit 0; else exit 1; fi ;;
  --background)
    mkdir -p "$ROOT"
    if promtool_ok; then log "promtool $PROM_VERSION cached: $BIN"; exit 0; fi
    nohup bash "$0" >"$LOG_FILE" 2>&1 </dev/null &
    echo $! >"$ROOT/build.pid"
    log "building in the background (pid $!); log: $LOG_FILE; wait with: $0 --wait"
    exit 0 ;;
  --wait)
    pid="$(cat "$ROOT/build.pid" 2>/dev/null || true)"
    while [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; do sleep 5; done
    if promtool_ok; then log "promtool ready: $BIN"; exit 0; fi
    log "build did not produce promtool $PROM_VERSION; see $LOG_FILE"; tail -n 30 "$LOG_FILE" >&2 || true; exit 1 ;;
  "") ;;
  *) die "unknown argument: $1 (see the header of $0)" ;;
esac

mkdir -p "$ROOT/bin" "$GOCACHE" "$GOMODCACHE"
command -v go >/dev/null || die "go not found (expected /usr/local/go/bin/go)"

# One build at a time (a second caller waits for the first, then finds the binary cached).
exec 9>"$LOCK_FILE"
if ! flock -n 9; then log "another build holds $LOCK_FILE; waiting"; flock 9; fi
if promtool_ok; then log "promtool $PROM_VERSION cached: $BIN"; echo "$BIN"; exit 0; fi

log "go $(go env GOVERSION), GOPATH=$GOPATH, building promtool $PROM_VERSION ($LORE_PROMTOOL_VERSION)"
t0=$(date +%s)
work="$ROOT/work"
rm -rf "$work"; mkdir -p "$work"
ver=github.com/prometheus/common/version
ldf="-s -w -X $ver.Version=$PROM_VERSION -X $ver.Revision=$LORE_PROMTOOL_VERSION -X $ver.Branch=release"
ldf+=" -X $ver.BuildUser=lore -X $ver.BuildDate=19700101-00:00:00"
# go install pkg@version: the supported way to build a module's command outside any module.
GOBIN="$work" go install -p 2 -trimpath -tags remove_all_sd -ldflags "$ldf" \
  "github.com/prometheus/prometheus/cmd/promtool@$LORE_PROMTOOL_VERSION"
mv -f "$work/promtool" "$BIN"
rm -rf "$work"
promtool_ok || die "promtool reports the wrong version: $("$BIN" --version 2>&1 | head -1)"
log "built promtool $PROM_VERSION in $(( $(date +%s) - t0 ))s ($(du -sh "$BIN" | cut -f1))"
echo "$BIN"
