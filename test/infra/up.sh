#!/usr/bin/env bash
# Install (if missing) and start the real infrastructure for tests, idempotently.
#
#   bash test/infra/up.sh [all|pg|redis|kafka|kafka-restart|s3|s3-restart|browser|env|status]...   (default: all)
#
# Then: . "${LORE_INFRA_DIR:-$HOME/.cache/lore/run}/env"   (LORE_TEST_PG_URL, LORE_TEST_KAFKA_BROKERS, ...)
# Stop with test/infra/down.sh. Details: test/infra/README.md, docs/infrastructure.md.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() {
  sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
}

main() {
  local t0 arg
  local -a services=()
  t0=$(now_us)
  (($#)) || set -- all
  for arg in "$@"; do
    case "$arg" in
    all) services+=(pg redis kafka s3 browser) ;;
    browser) services+=(browser) ;;
    pg | postgres) services+=(pg) ;;
    redis) services+=(redis) ;;
    kafka) services+=(kafka) ;;
    kafka-restart) services+=(kafka-restart) ;;
    s3) services+=(s3) ;;
    s3-restart) services+=(s3-restart) ;;
    env) ;;
    status) status_all; return 0 ;;
    -h | --help | help) usage ;;
    *) echo "up.sh: unknown argument '$arg'" >&2; usage ;;
    esac
  done

  take_lock

  # 1. Debian packages, in one apt-get call (apt and dpkg cannot run in parallel).
  local -a pkgs=()
  local s
  pg_resolve
  for s in "${services[@]}"; do
    case "$s" in
    pg) read -ra more <<<"$(pg_apt_packages)"; pkgs+=("${more[@]}") ;;
    redis) read -ra more <<<"$(redis_apt_packages)"; pkgs+=("${more[@]}") ;;
    kafka | kafka-restart) read -ra more <<<"$(kafka_apt_packages)"; pkgs+=("${more[@]}") ;;
    browser) read -ra more <<<"$(browser_apt_packages)"; pkgs+=("${more[@]}") ;;
    esac
  done
  ((${#pkgs[@]} == 0)) || apt_ensure "${pkgs[@]}"

  # 2. Services. Several at once run in parallel (downloads and JVM start overlap).
  if ((${#services[@]} == 1)); then
    run_service "${services[0]}"
  elif ((${#services[@]} > 1)); then
    local -a pids=()
    local failed=0 i
    for s in "${services[@]}"; do
      (run_service "$s") &
      pids+=($!)
    done
    for i in "${!pids[@]}"; do
      wait "${pids[$i]}" || { failed=1; echo "[infra] ${services[$i]} FAILED" >&2; }
    done
    ((failed == 0)) || { write_env; exit 1; }
  fi

  write_env
  say env "$RUN/env ($(fmt_since "$t0") total)"
}

run_service() {
  case "$1" in
  pg) pg_up ;;
  redis) redis_up ;;
  kafka) kafka_up ;;
  kafka-restart) kafka_down && kafka_up ;;
  s3) s3_up ;;
  s3-restart) s3_down && s3_up ;;
  browser) browser_up ;;
  esac
}

main "$@"
