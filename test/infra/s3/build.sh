#!/usr/bin/env bash
# Build (once, cached) Lore's test S3 server from the Go module proxy:
#   test/infra/s3/main.go + gofakes3 (pinned in go.mod/go.sum)  ->  $HOME/.cache/lore/s3/<hash>/lore-test-s3
#
# Usage:
#   test/infra/s3/build.sh               build when missing (foreground; ~20 s cold on 2 cores), print the binary's path
#   test/infra/s3/build.sh --background  same, detached (nohup); log in $HOME/.cache/lore/s3/build.log
#   test/infra/s3/build.sh --wait        wait for a background build to finish (exit 0 = the binary is ready)
#   test/infra/s3/build.sh --check       exit 0 (and print the path) when the binary is cached, 1 otherwise
#
# The cache key is a hash of main.go, go.mod and go.sum: changing any of them builds a new binary.
set -euo pipefail

SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LORE_CACHE="${LORE_CACHE_DIR:-$HOME/.cache/lore}"
S3_ROOT="$LORE_CACHE/s3"
KEY="$(cat "$SRC_DIR/main.go" "$SRC_DIR/go.mod" "$SRC_DIR/go.sum" | sha256sum | cut -c1-16)"
BIN="$S3_ROOT/$KEY/lore-test-s3"
LOG_FILE="$S3_ROOT/build.log"

# shellcheck source=../go-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/../go-env.sh"
# shellcheck source=../build-modes.sh
. "$(dirname "${BASH_SOURCE[0]}")/../build-modes.sh"
lore_go_env "-mod=readonly -buildvcs=false"

log() { printf '[s3-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
ok() { [[ -x "$BIN" ]] && [[ "$("$BIN" -version 2>/dev/null)" == lore-test-s3* ]]; }

case "${1:-}" in
  --check) if ok; then echo "$BIN"; exit 0; else exit 1; fi ;;
  --background) lore_build_background ok "$S3_ROOT" "$LOG_FILE" "the S3 test server" ;;
  --wait) lore_build_wait ok "$S3_ROOT" "$LOG_FILE" "the S3 test server" ;;
  "") ;;
  *) log "unknown argument: $1 (see the header of $0)"; exit 2 ;;
esac

mkdir -p "$S3_ROOT/$KEY" "$GOCACHE" "$GOMODCACHE"
# One build at a time: a second caller (up.sh while the background build runs) waits, then finds the binary.
lore_build_lock "$S3_ROOT/build.lock"
if ok; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || { log "go not found (expected /usr/local/go/bin/go)"; exit 1; }

t0=$(date +%s)
(cd "$SRC_DIR" && go build -p 2 -trimpath -ldflags "-s -w" -o "$BIN.tmp" .)
mv -f "$BIN.tmp" "$BIN"
ok || { log "the built binary does not answer -version"; exit 1; }
log "built $BIN in $(( $(date +%s) - t0 ))s"
echo "$BIN"
