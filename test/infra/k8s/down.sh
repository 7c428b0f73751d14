#!/usr/bin/env bash
# Stop what test/infra/k8s/up.sh started (kube-apiserver, then etcd) for this LORE_INFRA_DIR, and nothing else:
# a pid is signalled only if its command line carries the run-dir-specific argument up.sh gave it.
#   --purge   also delete the run dir (etcd data, certs, token, kubeconfig, logs): the next up.sh starts empty.
set -euo pipefail

LORE_INFRA_DIR="${LORE_INFRA_DIR:-$HOME/.cache/lore/run}"
RUN_DIR="$LORE_INFRA_DIR/k8s"
ETCD_PORT="${LORE_ETCD_PORT:-52379}"
KUBE_PORT="${LORE_KUBE_PORT:-56443}"
PURGE=0
case "${1:-}" in --purge) PURGE=1 ;; "") ;; *) echo "usage: $0 [--purge]" >&2; exit 2 ;; esac

log() { printf '[k8s-down %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
cmdline_of() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true; }
is_ours() { local pid="$1" marker="$2"; [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && [[ "$(cmdline_of "$pid")" == *"$marker"* ]]; }
port_pid() { ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2; }

stop() {  # stop NAME MARKER PORT
  local name="$1" marker="$2" port="$3" pid
  pid="$(cat "$RUN_DIR/$name.pid" 2>/dev/null || true)"
  if ! is_ours "$pid" "$marker"; then
    # pid file missing or stale: maybe ours is still listening (e.g. the pid file was deleted).
    pid="$(port_pid "$port" || true)"
    is_ours "$pid" "$marker" || { log "$name not running"; rm -f "$RUN_DIR/$name.pid"; return 0; }
  fi
  log "stopping $name (pid $pid)"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 75); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then log "$name did not stop in 15s: SIGKILL"; kill -9 "$pid" 2>/dev/null || true; sleep 0.5; fi
  rm -f "$RUN_DIR/$name.pid"
}

stop kube-apiserver "--cert-dir=$RUN_DIR/certs" "$KUBE_PORT"
stop etcd "--data-dir=$RUN_DIR/etcd-data" "$ETCD_PORT"

if (( PURGE )); then
  log "purging $RUN_DIR"
  rm -rf "$RUN_DIR"
fi
log "down"
