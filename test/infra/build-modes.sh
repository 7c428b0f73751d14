# Sourced by the cached builds of the test infrastructure (k8s/build.sh, promtool/build.sh, s3/build.sh): their
# --background and --wait modes and their one-build-at-a-time lock, written once. The caller defines `log` and a
# check function that answers whether everything it builds is cached and right.
#
#   lore_build_background <check> <dir> <log file> <what>   exit 0 at once: cached, or a detached build started
#   lore_build_wait       <check> <dir> <log file> <what>   wait for the detached build; exit 0 when <check> passes
#   lore_build_lock       <lock file>                       hold the lock on fd 9 until the script exits

lore_build_background() {
  local check="$1" dir="$2" logfile="$3" what="$4"
  mkdir -p "$dir"
  if "$check"; then log "$what cached: $dir"; exit 0; fi
  nohup bash "$0" >"$logfile" 2>&1 </dev/null &
  echo $! >"$dir/build.pid"
  log "building $what in the background (pid $!); log: $logfile; wait with: $0 --wait"
  exit 0
}

lore_build_wait() {
  local check="$1" dir="$2" logfile="$3" what="$4" pid
  pid="$(cat "$dir/build.pid" 2>/dev/null || true)"
  while [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; do sleep 5; done
  if "$check"; then log "$what ready: $dir"; exit 0; fi
  log "the build did not produce $what; see $logfile"
  tail -n 30 "$logfile" >&2 || true
  exit 1
}

lore_build_lock() {
  exec 9>"$1"
  if ! flock -n 9; then log "another build holds $1; waiting"; flock 9; fi
}
