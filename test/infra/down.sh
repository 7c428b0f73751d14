#!/usr/bin/env bash
# Stop what test/infra/up.sh started (found by its pid files / data dirs; nothing else is touched).
#
#   bash test/infra/down.sh [all|pg|redis|kafka|s3]... [--kill] [--wipe]   (default: all)
#
#   --kill  Kafka only: SIGKILL the broker instead of a controlled shutdown (crash tests)
#   --wipe  also delete the stopped services' data (PostgreSQL cluster, Kafka log dirs)
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() {
  sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
}

main() {
  local arg kill="" wipe=0 s
  local -a services=()
  for arg in "$@"; do
    case "$arg" in
    all) services+=(s3 kafka redis pg) ;;
    pg | postgres) services+=(pg) ;;
    redis) services+=(redis) ;;
    kafka) services+=(kafka) ;;
    s3) services+=(s3) ;;
    --kill) kill=KILL ;;
    --wipe) wipe=1 ;;
    -h | --help | help) usage ;;
    *) echo "down.sh: unknown argument '$arg'" >&2; usage ;;
    esac
  done
  ((${#services[@]})) || services=(s3 kafka redis pg)

  take_lock
  for s in "${services[@]}"; do
    case "$s" in
    pg) pg_down; ((wipe == 0)) || pg_wipe ;;
    redis) redis_down ;;
    s3) s3_down ;;
    kafka) kafka_down "$kill"; ((wipe == 0)) || kafka_wipe ;;
    esac
  done
}

main "$@"
