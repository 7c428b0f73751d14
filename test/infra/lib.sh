# shellcheck shell=bash
# Shared helpers for test/infra/up.sh and test/infra/down.sh.
#
# Real PostgreSQL, Redis and Kafka for tests, installed and started by the project itself
# (no Docker), cached under ~/.cache/lore keyed by version, on non-default ports.
# See test/infra/README.md and docs/infrastructure.md.

set -euo pipefail

INFRA_SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# ---------------------------------------------------------------- configuration
: "${HOME:=/root}"
LORE_CACHE_DIR="$(realpath -m "${LORE_CACHE_DIR:-$HOME/.cache/lore}")"
LORE_INFRA_DIR="$(realpath -m "${LORE_INFRA_DIR:-$HOME/.cache/lore/run}")"
# Below Linux's ephemeral range (32768-60999): a client that dials a port in that range while nothing listens
# there yet can be handed the same port as its own source and connect to itself (TCP simultaneous open); it
# then holds the port and the server, binding late (a broker loading its logs), fails "Address already in use".
LORE_PG_PORT="${LORE_PG_PORT:-25432}"
LORE_REDIS_PORT="${LORE_REDIS_PORT:-26379}"
LORE_KAFKA_PORT="${LORE_KAFKA_PORT:-29092}"
LORE_KAFKA_CONTROLLER_PORT="${LORE_KAFKA_CONTROLLER_PORT:-29093}"
LORE_S3_PORT="${LORE_S3_PORT:-29000}"
LORE_S3_BUCKET="${LORE_S3_BUCKET:-lore-test}"

# PostgreSQL: "pgserver" = the PostgreSQL 16 + pgvector build bundled in the PyPI wheel `pgserver`
# (default: gives `CREATE EXTENSION vector`); "debian" = apt postgresql-15 (no pgvector).
LORE_PG_FLAVOR="${LORE_PG_FLAVOR:-pgserver}"
LORE_PGSERVER_PKG="${LORE_PGSERVER_PKG:-pgserver}"
LORE_PGSERVER_VERSION="${LORE_PGSERVER_VERSION:-0.1.4}"
LORE_DEBIAN_PG_MAJOR="${LORE_DEBIAN_PG_MAJOR:-15}"

LORE_KAFKA_VERSION="${LORE_KAFKA_VERSION:-4.1.1}"
LORE_SLF4J_VERSION="${LORE_SLF4J_VERSION:-1.7.36}"
LORE_KAFKA_HEAP="${LORE_KAFKA_HEAP:-512m}"
# C1-only JIT + serial GC: ~40% faster broker start on 2 cores; throughput is irrelevant for tests.
LORE_KAFKA_JVM_OPTS="${LORE_KAFKA_JVM_OPTS:--XX:+UseSerialGC -XX:TieredStopAtLevel=1}"
LORE_KAFKA_CDS="${LORE_KAFKA_CDS:-1}" # AppCDS archive of the broker's classes (faster restarts)

LORE_INFRA_TIMEOUT="${LORE_INFRA_TIMEOUT:-90}"          # seconds per service to become ready
LORE_KAFKA_STOP_TIMEOUT="${LORE_KAFKA_STOP_TIMEOUT:-30}" # seconds before SIGKILL
# A cold broker start loads every partition left by earlier runs (7,000 of them took 32 s on 2 cores). When set,
# a cold start over this many partition directories wipes the (test-only) data first; scripts/test-all.sh sets it.
LORE_KAFKA_PRUNE_OVER="${LORE_KAFKA_PRUNE_OVER:-0}"

RUN="$LORE_INFRA_DIR"
PIDS="$RUN/pids"
LOGS="$RUN/logs"
STATE="$RUN/state"

# ---------------------------------------------------------------- output
now_us() { local t="${EPOCHREALTIME//[!0-9]/}"; echo "$t"; }
fmt_since() { # start_us -> "1.23s"
  local d=$(($(now_us) - $1))
  printf '%d.%02ds' $((d / 1000000)) $(((d % 1000000) / 10000))
}
say() { printf '[infra] %-6s %s\n' "$1" "$2"; }
step() { say "$1" "$2 ($(fmt_since "$3"))"; } # svc message start_us
warn() { printf '[infra] %-6s WARNING: %s\n' "$1" "$2" >&2; }
die() { printf '[infra] %-6s ERROR: %s\n' "$1" "$2" >&2; exit 1; }
die_log() { # svc message logfile
  {
    printf '[infra] %-6s ERROR: %s\n' "$1" "$2"
    if [[ -s "$3" ]]; then
      printf '[infra] %-6s ---- last 40 lines of %s ----\n' "$1" "$3"
      tail -n 40 "$3" | sed 's/^/    /'
      printf '[infra] %-6s ----\n' "$1"
    fi
  } >&2
  exit 1
}

# ---------------------------------------------------------------- processes and ports
is_root() { [[ $EUID -eq 0 ]]; }
pid_alive() { # a zombie (exited, not yet reaped by init) counts as dead
  local stat=""
  [[ -n "${1:-}" ]] && read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  stat=${stat##*) }
  [[ "${stat:0:1}" != Z ]]
}
read_pidfile() { [[ -s "$1" ]] && head -n1 "$1" | tr -dc '0-9' || true; }
read_argv() { # pid -> ARGV array of the process (no fork); 1 when unreadable
  ARGV=()
  [[ -r "/proc/$1/cmdline" ]] || return 1
  mapfile -d '' ARGV <"/proc/$1/cmdline" 2>/dev/null || return 1
  ((${#ARGV[@]}))
}
port_open() { # port -> 0 if something accepts TCP on 127.0.0.1:port
  timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}
wait_pid_exit() { # pid seconds -> 0 if it exited in time
  local pid=$1 deadline=$(($(now_us) + $2 * 1000000))
  while pid_alive "$pid"; do
    (($(now_us) < deadline)) || return 1
    sleep 0.1
  done
}

ensure_dirs() { mkdir -p "$RUN" "$PIDS" "$LOGS" "$STATE" "$LORE_CACHE_DIR"; }

# Serialise every up/down on this run dir: several engineers and test suites share one machine.
take_lock() {
  ensure_dirs
  exec 9>"$RUN/.lock"
  # (every server is started with 9>&- so that it never holds this lock)
  flock -w 600 9 || die infra "another up.sh/down.sh holds $RUN/.lock for more than 600s"
}

# ---------------------------------------------------------------- apt
APT_UPDATED=0
APT_POLICY_CREATED=0
cleanup_policy() { if ((APT_POLICY_CREATED)); then rm -f /usr/sbin/policy-rc.d; APT_POLICY_CREATED=0; fi; }
pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
apt_ensure() { # packages... : installs those missing, running `apt-get update` once first
  local -a missing=()
  local p
  for p in "$@"; do pkg_installed "$p" || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  is_root || die apt "missing Debian packages: ${missing[*]} (run as root, or install them)"
  local t0 log="$LOGS/apt.log"
  t0=$(now_us)
  # Never let package scripts start system services (the Debian default cluster, redis on 6379):
  # we run our own instances on our own ports.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    APT_POLICY_CREATED=1
    trap cleanup_policy EXIT
  fi
  if ((!APT_UPDATED)); then
    apt-get update -qq >>"$log" 2>&1 || { cleanup_policy; die_log apt "apt-get update failed" "$log"; }
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1 ||
    { cleanup_policy; die_log apt "apt-get install ${missing[*]} failed" "$log"; }
  cleanup_policy
  step apt "installed ${missing[*]}" "$t0"
}

# ================================================================= PostgreSQL
PG_ROOT="$RUN/pg"        # owned by the postgres user
PG_DATA="$PG_ROOT/data"
PG_LOG="$PG_ROOT/postgres.log"
PG_SOCKET_DIR=/tmp
PG_SU=postgres           # OS user that runs the server and bootstrap superuser name
PG_BIN=""
PG_FLAVOR_ID=""

pg_resolve() {
  case "$LORE_PG_FLAVOR" in
  pgserver)
    PG_PKG_DIR="$LORE_CACHE_DIR/pgserver/$LORE_PGSERVER_PKG-$LORE_PGSERVER_VERSION"
    PG_BIN="$PG_PKG_DIR/pgserver/pginstall/bin"
    PG_FLAVOR_ID="pypi:$LORE_PGSERVER_PKG==$LORE_PGSERVER_VERSION"
    ;;
  debian)
    PG_BIN="/usr/lib/postgresql/$LORE_DEBIAN_PG_MAJOR/bin"
    PG_FLAVOR_ID="debian:postgresql-$LORE_DEBIAN_PG_MAJOR"
    ;;
  *) die pg "LORE_PG_FLAVOR must be pgserver or debian (got '$LORE_PG_FLAVOR')" ;;
  esac
}

pg_apt_packages() {
  case "$LORE_PG_FLAVOR" in
  debian) echo "postgresql-$LORE_DEBIAN_PG_MAJOR" ;;
  pgserver)
    # pip is needed once to download the wheel; the postgres OS user comes from useradd if missing.
    if [[ ! -x "$PG_BIN/postgres" ]] && ! pip_cmd >/dev/null; then echo python3-pip; fi
    ;;
  esac
}

pip_cmd() { # prints a working "python -m pip" command
  local py
  for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null && "$py" -m pip --version >/dev/null 2>&1; then
      echo "$py -m pip"
      return 0
    fi
  done
  return 1
}

# Fetch the pgserver wheel once and unpack its bundled PostgreSQL (bin, lib, share, pgvector).
# Only the binaries are used, so the wheel is unpacked rather than pip-installed into a venv:
# the cache then does not depend on the local Python version (the wheel is tagged cp311).
pg_install_pgserver() {
  [[ -x "$PG_BIN/postgres" && -f "$PG_PKG_DIR/.complete" ]] && return 0
  local t0 tmp whl pip arch log="$LOGS/pip.log"
  t0=$(now_us)
  pip=$(pip_cmd) || die pg "no pip found to download $LORE_PGSERVER_PKG"
  arch=$(uname -m)
  tmp=$(mktemp -d "$LORE_CACHE_DIR/pgserver.tmp.XXXXXX")
  # shellcheck disable=SC2086
  $pip download --disable-pip-version-check --no-cache-dir --no-deps --only-binary=:all: \
    --platform "manylinux2014_$arch" --python-version 3.11 --implementation cp --abi cp311 \
    -d "$tmp/whl" "$LORE_PGSERVER_PKG==$LORE_PGSERVER_VERSION" >>"$log" 2>&1 ||
    { rm -rf "$tmp"; die_log pg "pip download $LORE_PGSERVER_PKG==$LORE_PGSERVER_VERSION failed" "$log"; }
  whl=$(ls "$tmp"/whl/*.whl)
  # unzip keeping the file modes (zipfile.extract would drop the executable bits)
  python3 - "$whl" "$tmp/root" <<'PY' || { rm -rf "$tmp"; die pg "could not unpack $whl"; }
import os, sys, zipfile
whl, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    for info in z.infolist():
        path = z.extract(info, dest)
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(path, mode)
PY
  "$tmp/root/pgserver/pginstall/bin/postgres" --version >/dev/null ||
    { rm -rf "$tmp"; die pg "the postgres binary in $whl does not run on this machine"; }
  chmod -R a+rX "$tmp/root"
  rm -rf "$PG_PKG_DIR"
  mkdir -p "$(dirname "$PG_PKG_DIR")"
  mv "$tmp/root" "$PG_PKG_DIR"
  rm -rf "$tmp"
  touch "$PG_PKG_DIR/.complete"
  step pg "fetched $LORE_PGSERVER_PKG $LORE_PGSERVER_VERSION ($("$PG_BIN/postgres" --version | awk '{print $NF}')) from PyPI" "$t0"
}

pg_ensure_os_user() {
  is_root || return 0
  getent passwd "$PG_SU" >/dev/null && return 0
  useradd --system --user-group --home-dir /var/lib/postgresql --no-create-home --shell /bin/bash "$PG_SU" ||
    die pg "could not create the $PG_SU OS user"
  say pg "created OS user $PG_SU"
}

as_pg() { if is_root; then runuser -u "$PG_SU" -- "$@"; else "$@"; fi; }

# The server runs as `postgres` but lives under root's home: let it traverse (o+x, not list) the path.
pg_ensure_traverse() {
  is_root || return 0
  local target=$1 d="" part
  local -a parts=()
  as_pg test -x "$target" 2>/dev/null && return 0
  IFS=/ read -ra parts <<<"$target"
  for part in "${parts[@]}"; do
    [[ -n "$part" ]] || continue
    d="$d/$part"
    [[ -d "$d" ]] || break
    if ! as_pg test -x "$d" 2>/dev/null; then
      chmod o+x "$d"
      say pg "granted traverse (o+x) on $d so that user $PG_SU can reach its files"
    fi
  done
}

pg_psql() { # db, then psql args: as the bootstrap superuser over the unix socket
  local db=$1
  shift
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCKET_DIR" -p "$LORE_PG_PORT" -U "$PG_SU" -d "$db" "$@"
}

pg_postmaster_pid() { read_pidfile "$PG_DATA/postmaster.pid"; }
pg_pid_is_ours() { # pid -> is it a postgres process working in our data dir?
  local cwd
  pid_alive "$1" || return 1
  cwd=$(readlink "/proc/$1/cwd" 2>/dev/null) || return 1
  [[ "$cwd" == "$PG_DATA" ]]
}
pg_running_pid() { # prints the postmaster pid when our cluster runs
  local pid
  pid=$(pg_postmaster_pid)
  pg_pid_is_ours "$pid" && echo "$pid"
}
pg_running_port() { sed -n 4p "$PG_DATA/postmaster.pid" 2>/dev/null | tr -dc '0-9'; }

# Left-overs of a crash: postmaster.pid of a dead server, orphaned backends, socket lock files.
pg_clear_stale() {
  local p pid
  if [[ -f "$PG_DATA/postmaster.pid" ]]; then
    rm -f "$PG_DATA/postmaster.pid"
    say pg "removed stale postmaster.pid"
    # backends of a postmaster that was SIGKILLed keep running (and the shared memory) in our data dir
    for p in /proc/[0-9]*; do
      pid=${p#/proc/}
      if [[ "$(readlink "$p/cwd" 2>/dev/null)" == "$PG_DATA" ]]; then
        kill -KILL "$pid" 2>/dev/null && say pg "killed orphaned backend $pid of a dead server"
      fi
    done
  fi
  local lock="$PG_SOCKET_DIR/.s.PGSQL.$LORE_PG_PORT.lock"
  if [[ -f "$lock" ]]; then
    pid=$(read_pidfile "$lock")
    if ! pid_alive "$pid"; then
      rm -f "$lock" "$PG_SOCKET_DIR/.s.PGSQL.$LORE_PG_PORT"
      say pg "removed stale socket lock $lock"
    fi
  fi
}

pg_write_conf() {
  as_pg tee "$PG_DATA/lore.conf" >/dev/null <<EOF
# written by test/infra/up.sh on every start; do not edit
port = $LORE_PG_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$PG_SOCKET_DIR'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
log_line_prefix = '%m [%p] %q%u@%d '
EOF
}

pg_init_cluster() {
  local t0 existing=""
  [[ -f "$PG_DATA/LORE_FLAVOR" ]] && existing=$(cat "$PG_DATA/LORE_FLAVOR")
  if [[ -f "$PG_DATA/PG_VERSION" && "$existing" == "$PG_FLAVOR_ID" ]]; then return 0; fi
  if [[ -e "$PG_DATA" ]]; then
    say pg "data dir was made by '${existing:-unknown}', not '$PG_FLAVOR_ID': re-creating it (test data only)"
    rm -rf "$PG_DATA"
  fi
  t0=$(now_us)
  mkdir -p "$PG_ROOT"
  if is_root; then chown "$PG_SU:" "$PG_ROOT"; fi
  chmod 700 "$PG_ROOT"
  as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U "$PG_SU" -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 --no-sync >"$LOGS/initdb.log" 2>&1 ||
    die_log pg "initdb failed" "$LOGS/initdb.log"
  echo "include_if_exists = 'lore.conf'" | as_pg tee -a "$PG_DATA/postgresql.conf" >/dev/null
  echo "$PG_FLAVOR_ID" | as_pg tee "$PG_DATA/LORE_FLAVOR" >/dev/null
  step pg "initdb $PG_DATA" "$t0"
}

pg_provision() {
  pg_psql postgres >/dev/null <<'SQL' || die_log pg "creating roles and database failed" "$PG_LOG"
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'lore_owner') THEN CREATE ROLE lore_owner; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'lore_app') THEN CREATE ROLE lore_app; END IF;
END $$;
ALTER ROLE lore_owner WITH LOGIN SUPERUSER PASSWORD 'lore_owner';
ALTER ROLE lore_app WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD 'lore_app';
SELECT 'CREATE DATABASE lore OWNER lore_owner' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'lore') \gexec
ALTER DATABASE lore OWNER TO lore_owner;
SQL
  # pgvector: try it in a transaction that is rolled back, so the database is left as it was.
  local vector=0 version
  if pg_psql lore -c "BEGIN; CREATE EXTENSION IF NOT EXISTS vector; SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector; ROLLBACK;" >/dev/null 2>&1; then
    vector=1
  fi
  version=$(pg_psql postgres -tAc 'SHOW server_version' | awk '{print $1}')
  printf 'LORE_TEST_PG_VECTOR=%s\nLORE_TEST_PG_SERVER_VERSION=%s\n' "$vector" "$version" >"$STATE/pg"
  PG_VECTOR=$vector
  PG_VERSION=$version
}

pg_up() {
  local t0 pid port
  t0=$(now_us)
  pg_resolve
  if [[ "$LORE_PG_FLAVOR" == pgserver ]]; then pg_install_pgserver; fi
  [[ -x "$PG_BIN/postgres" ]] || die pg "no PostgreSQL binaries in $PG_BIN"
  pg_ensure_os_user
  mkdir -p "$PG_ROOT"
  if is_root; then chown "$PG_SU:" "$PG_ROOT"; fi
  chmod 700 "$PG_ROOT"
  pg_ensure_traverse "$PG_ROOT"
  pg_ensure_traverse "$PG_BIN"

  pid=$(pg_running_pid || true)
  if [[ -n "$pid" && "$(cat "$PG_DATA/LORE_FLAVOR" 2>/dev/null)" != "$PG_FLAVOR_ID" ]]; then
    say pg "the running cluster is '$(cat "$PG_DATA/LORE_FLAVOR" 2>/dev/null)', wanted '$PG_FLAVOR_ID': replacing it"
    pg_stop_server
    pid=""
  fi
  if [[ -n "$pid" ]]; then
    port=$(pg_running_port)
    if [[ "$port" == "$LORE_PG_PORT" ]] && "$PG_BIN/pg_isready" -q -h "$PG_SOCKET_DIR" -p "$LORE_PG_PORT" -t 5; then
      echo "$pid" >"$PIDS/pg.pid"
      pg_provision
      step pg "already running (pid $pid, port $LORE_PG_PORT, PostgreSQL $PG_VERSION, vector=$PG_VECTOR)" "$t0"
      return 0
    fi
    say pg "running on port ${port:-?} but wanted $LORE_PG_PORT (or not answering): restarting"
    pg_stop_server
  fi

  pg_init_cluster
  pg_clear_stale
  if port_open "$LORE_PG_PORT"; then
    die pg "port $LORE_PG_PORT is in use by another process (not our cluster in $PG_DATA); set LORE_PG_PORT"
  fi
  pg_write_conf
  t0=$(now_us)
  : >"$LOGS/pg_ctl.log"
  # 9>&-: the server must not inherit (and hold) the lock of up.sh
  if ! as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$LORE_INFRA_TIMEOUT" start >"$LOGS/pg_ctl.log" 2>&1 9>&-; then
    cat "$LOGS/pg_ctl.log" >&2
    die_log pg "PostgreSQL did not start within ${LORE_INFRA_TIMEOUT}s" "$PG_LOG"
  fi
  local deadline=$(($(now_us) + LORE_INFRA_TIMEOUT * 1000000))
  until "$PG_BIN/pg_isready" -q -h "$PG_SOCKET_DIR" -p "$LORE_PG_PORT" -t 1; do
    (($(now_us) < deadline)) || die_log pg "pg_isready failed for ${LORE_INFRA_TIMEOUT}s" "$PG_LOG"
    sleep 0.1
  done
  pid=$(pg_postmaster_pid)
  echo "$pid" >"$PIDS/pg.pid"
  pg_provision
  step pg "started PostgreSQL $PG_VERSION (pid $pid) on 127.0.0.1:$LORE_PG_PORT, vector=$PG_VECTOR" "$t0"
}

pg_stop_server() {
  local pid bin
  pid=$(pg_running_pid || true)
  [[ -n "$pid" ]] || return 1
  bin=$(dirname "$(readlink -f "/proc/$pid/exe")") # the running server's own pg_ctl
  [[ -x "$bin/pg_ctl" ]] || bin=$PG_BIN
  if ! as_pg "$bin/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 stop >"$LOGS/pg_ctl.log" 2>&1; then
    warn pg "pg_ctl stop failed; sending SIGQUIT to $pid"
    kill -QUIT "$pid" 2>/dev/null || true
    wait_pid_exit "$pid" 10 || kill -KILL "$pid" 2>/dev/null || true
  fi
  return 0
}

pg_down() {
  local t0 pid
  t0=$(now_us)
  pg_resolve
  pid=$(pg_running_pid || true)
  if [[ -z "$pid" ]]; then
    rm -f "$PIDS/pg.pid"
    step pg "not running" "$t0"
    return 0
  fi
  pg_stop_server
  rm -f "$PIDS/pg.pid"
  step pg "stopped (pid $pid)" "$t0"
}

pg_wipe() { rm -rf "$PG_DATA" "$STATE/pg"; say pg "wiped $PG_DATA"; }

# ================================================================= Redis
REDIS_DIR="$RUN/redis"
REDIS_LOG="$REDIS_DIR/redis.log"
REDIS_PIDFILE="$PIDS/redis.pid"

redis_apt_packages() { command -v redis-server >/dev/null && command -v redis-cli >/dev/null || echo redis-server; }
redis_ping() { [[ "$(timeout 3 redis-cli -h 127.0.0.1 -p "$LORE_REDIS_PORT" ping 2>/dev/null)" == PONG ]]; }
redis_is_ours() { # pid -> a redis-server working in our dir (it chdirs to --dir)?
  pid_alive "$1" && read_argv "$1" && [[ "${ARGV[0]}" == *redis-server* ]] &&
    [[ "$(readlink "/proc/$1/cwd" 2>/dev/null)" == "$REDIS_DIR" ]]
}
redis_pid() { # our redis-server pid: from the pid file, or found by its working dir (lost pid file)
  local pid p
  pid=$(read_pidfile "$REDIS_PIDFILE")
  if redis_is_ours "$pid"; then
    echo "$pid"
    return 0
  fi
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    read_argv "$pid" && [[ "${ARGV[0]}" == *redis-server* ]] || continue
    if redis_is_ours "$pid"; then
      echo "$pid" >"$REDIS_PIDFILE"
      echo "$pid"
      return 0
    fi
  done
  return 1
}

redis_up() {
  local t0 pid
  t0=$(now_us)
  command -v redis-server >/dev/null || die redis "redis-server is not installed"
  mkdir -p "$REDIS_DIR"
  pid=$(redis_pid || true)
  if [[ -n "$pid" ]]; then
    if redis_ping; then
      step redis "already running (pid $pid, port $LORE_REDIS_PORT)" "$t0"
      return 0
    fi
    say redis "pid $pid does not answer on port $LORE_REDIS_PORT: restarting it"
    redis_stop_pid "$pid"
  fi
  if [[ -f "$REDIS_PIDFILE" ]]; then
    rm -f "$REDIS_PIDFILE"
    say redis "removed stale pid file"
  fi
  if port_open "$LORE_REDIS_PORT"; then
    die redis "port $LORE_REDIS_PORT is in use by another process (not ours); set LORE_REDIS_PORT"
  fi
  t0=$(now_us)
  redis-server --port "$LORE_REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --pidfile "$REDIS_PIDFILE" --logfile "$REDIS_LOG" --dir "$REDIS_DIR" \
    >"$LOGS/redis-start.log" 2>&1 9>&- || die_log redis "redis-server failed to start" "$LOGS/redis-start.log"
  local deadline=$(($(now_us) + LORE_INFRA_TIMEOUT * 1000000))
  until redis_ping; do
    (($(now_us) < deadline)) || die_log redis "no PONG on port $LORE_REDIS_PORT after ${LORE_INFRA_TIMEOUT}s" "$REDIS_LOG"
    sleep 0.05
  done
  step redis "started Redis $(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2) (pid $(read_pidfile "$REDIS_PIDFILE")) on 127.0.0.1:$LORE_REDIS_PORT" "$t0"
}

redis_stop_pid() { # SHUTDOWN NOSAVE, SIGTERM if that fails, SIGKILL after 15 s
  timeout 5 redis-cli -h 127.0.0.1 -p "$LORE_REDIS_PORT" shutdown nosave >/dev/null 2>&1 || kill -TERM "$1" 2>/dev/null || true
  wait_pid_exit "$1" 15 || { kill -KILL "$1" 2>/dev/null || true; wait_pid_exit "$1" 5 || true; }
}

redis_down() {
  local t0 pid
  t0=$(now_us)
  pid=$(redis_pid || true)
  if [[ -z "$pid" ]]; then
    rm -f "$REDIS_PIDFILE"
    step redis "not running" "$t0"
    return 0
  fi
  redis_stop_pid "$pid"
  rm -f "$REDIS_PIDFILE"
  step redis "stopped (pid $pid)" "$t0"
}

# ================================================================= Kafka (KRaft, single node)
KAFKA_HOME="$LORE_CACHE_DIR/kafka/$LORE_KAFKA_VERSION"
KAFKA_LIBS="$KAFKA_HOME/libs"
KAFKA_DIR="$RUN/kafka"
KAFKA_DATA="$KAFKA_DIR/data"
KAFKA_PROPS="$KAFKA_DIR/server.properties"
KAFKA_LOG="$KAFKA_DIR/kafka.log"
KAFKA_PIDFILE="$PIDS/kafka.pid"

kafka_apt_packages() {
  local -a p=()
  command -v java >/dev/null && command -v javac >/dev/null || p+=(openjdk-17-jdk-headless)
  if [[ ! -d "$KAFKA_LIBS" ]] && ! command -v mvn >/dev/null; then p+=(maven); fi
  echo "${p[*]}"
}

# Resolve the broker's jars from Maven Central once (cached per version).
kafka_install() {
  [[ -d "$KAFKA_LIBS" ]] && return 0
  local t0 tmp log="$LOGS/maven.log"
  t0=$(now_us)
  mkdir -p "$KAFKA_HOME"
  tmp=$(mktemp -d "$KAFKA_HOME/libs.tmp.XXXXXX")
  mvn -B -q -f "$INFRA_SRC_DIR/kafka/pom.xml" \
    -Dmaven.repo.local="$LORE_CACHE_DIR/m2" -Dmaven.artifact.threads=16 \
    -Dkafka.version="$LORE_KAFKA_VERSION" -Dslf4j.version="$LORE_SLF4J_VERSION" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp" >"$log" 2>&1 ||
    { rm -rf "$tmp"; die_log kafka "resolving kafka_2.13:$LORE_KAFKA_VERSION with Maven failed" "$log"; }
  ls "$tmp"/kafka_2.13-*.jar >/dev/null 2>&1 || { rm -rf "$tmp"; die kafka "no kafka_2.13 jar resolved"; }
  mv "$tmp" "$KAFKA_LIBS"
  step kafka "resolved Kafka $LORE_KAFKA_VERSION jars from Maven Central ($(find "$KAFKA_LIBS" -name '*.jar' | wc -l) jars)" "$t0"
}

# A tiny AdminClient program: ready = metadata lists a broker, topics can be listed and the group
# coordinator answers (this also creates __consumer_offsets so the first consumer does not wait).
KAFKA_READY_SRC='import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
public class LoreKafkaReady {
  public static void main(String[] a) throws Exception {
    long deadline = System.currentTimeMillis() + Long.parseLong(a[1]) * 1000L;
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, a[0]);
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
    p.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, "100");
    p.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, "100");
    p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
    Exception last = null;
    try (Admin admin = Admin.create(p)) {
      while (System.currentTimeMillis() < deadline) {
        try {
          DescribeClusterResult c = admin.describeCluster();
          int brokers = c.nodes().get(5, TimeUnit.SECONDS).size();
          if (brokers == 0) throw new IllegalStateException("no broker in metadata");
          int topics = admin.listTopics().names().get(5, TimeUnit.SECONDS).size();
          admin.listConsumerGroupOffsets("lore-infra-readiness").partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
          System.out.println("cluster=" + c.clusterId().get() + " brokers=" + brokers + " topics=" + topics);
          return;
        } catch (Exception e) {
          last = e;
          Thread.sleep(200);
        }
      }
    }
    System.err.println("not ready: " + last);
    System.exit(1);
  }
}'

kafka_ready_tool() { # compiles the readiness check once per Kafka version and source
  local sum dir
  sum=$(printf '%s' "$KAFKA_READY_SRC" | md5sum | cut -c1-10)
  dir="$KAFKA_HOME/ready-$sum"
  if [[ ! -f "$dir/LoreKafkaReady.class" ]]; then
    local tmp
    tmp=$(mktemp -d "$KAFKA_HOME/ready.tmp.XXXXXX")
    printf '%s\n' "$KAFKA_READY_SRC" >"$tmp/LoreKafkaReady.java"
    javac -nowarn -cp "$KAFKA_LIBS/*" -d "$tmp" "$tmp/LoreKafkaReady.java" >"$LOGS/javac.log" 2>&1 ||
      { rm -rf "$tmp"; die_log kafka "compiling the readiness check failed" "$LOGS/javac.log"; }
    rm -rf "$dir"
    mv "$tmp" "$dir"
  fi
  echo "$dir"
}

kafka_ready_check() { # timeout_seconds -> prints cluster info, 0 when ready
  local dir
  dir=$(kafka_ready_tool)
  timeout $(($1 + 10)) java -Xshare:auto -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dorg.slf4j.simpleLogger.defaultLogLevel=error \
    -cp "$dir:$KAFKA_LIBS/*" LoreKafkaReady "127.0.0.1:$LORE_KAFKA_PORT" "$1"
}

kafka_is_ours() { # pid -> is it a java running kafka.Kafka with our server.properties?
  read_argv "$1" || return 1
  [[ "${ARGV[0]##*/}" == java && "${ARGV[*]}" == *"kafka.Kafka $KAFKA_PROPS"* ]]
}
kafka_pid() { # our broker's pid, from the pid file or (orphan) from the process table
  local pid p
  pid=$(read_pidfile "$KAFKA_PIDFILE")
  if pid_alive "$pid" && kafka_is_ours "$pid"; then
    echo "$pid"
    return 0
  fi
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    if kafka_is_ours "$pid"; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

kafka_write_props() {
  mkdir -p "$KAFKA_DIR"
  cat >"$KAFKA_PROPS" <<EOF
# written by test/infra/up.sh on every start; do not edit
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$LORE_KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$LORE_KAFKA_PORT,CONTROLLER://127.0.0.1:$LORE_KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$LORE_KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$KAFKA_DATA
num.partitions=3
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=true
delete.topic.enable=true
group.initial.rebalance.delay.ms=0
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
num.network.threads=2
num.io.threads=4
log.flush.interval.messages=9223372036854775807
EOF
}

kafka_new_cluster_id() { # 16 random bytes, base64url without padding (what StorageTool random-uuid prints)
  local id
  while :; do
    id=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    [[ "$id" != -* ]] && echo "$id" && return 0
  done
}

kafka_format() {
  local t0 cid ports="$LORE_KAFKA_PORT/$LORE_KAFKA_CONTROLLER_PORT"
  # A data dir formatted for other ports or another cluster id is test data: start over.
  if [[ -f "$KAFKA_DATA/meta.properties" ]]; then
    cid=$(cat "$KAFKA_DIR/cluster.id" 2>/dev/null || true)
    if [[ "$(cat "$KAFKA_DIR/ports" 2>/dev/null)" != "$ports" || -z "$cid" ]] ||
      ! grep -qx "cluster.id=$cid" "$KAFKA_DATA/meta.properties"; then
      say kafka "data dir belongs to another cluster id or ports: re-formatting (test data only)"
      rm -rf "$KAFKA_DATA"
    fi
  fi
  # A broker that died keeps .lock files; the OS lock died with it, so the files are only clutter.
  rm -f "$KAFKA_DATA/.lock"
  [[ -f "$KAFKA_DATA/meta.properties" ]] && return 0
  t0=$(now_us)
  cid=$(kafka_new_cluster_id)
  java -Xshare:auto -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool \
    format -t "$cid" -c "$KAFKA_PROPS" --ignore-formatted >"$LOGS/kafka-format.log" 2>&1 ||
    die_log kafka "formatting $KAFKA_DATA failed" "$LOGS/kafka-format.log"
  echo "$cid" >"$KAFKA_DIR/cluster.id"
  echo "$ports" >"$KAFKA_DIR/ports"
  step kafka "formatted KRaft storage (cluster id $cid)" "$t0"
}

# AppCDS: the first broker run records its classes when it exits (down.sh/restart); later starts map
# them (~2 s faster on 2 cores). The archive is keyed by JDK build, jars and JVM options; a bad one is
# simply ignored by the JVM (-Xshare:auto) and discarded here.
kafka_cds_opts() {
  [[ "$LORE_KAFKA_CDS" == 1 ]] || return 0
  local java_bin jvm key dir jsa tmp
  java_bin=$(readlink -f "$(command -v java)")
  jvm=$(find "$(dirname "$(dirname "$java_bin")")" -name libjvm.so -path '*server*' 2>/dev/null | head -n1)
  key=$(printf '%s|%s|%s|%s|%s' "$java_bin" "$(stat -c %Y "$jvm" 2>/dev/null)" "$LORE_KAFKA_HEAP" \
    "$LORE_KAFKA_JVM_OPTS" "$(ls "$KAFKA_LIBS")" | md5sum | cut -c1-10)
  dir="$KAFKA_HOME/cds"
  jsa="$dir/kafka-$key.jsa"
  # one temporary archive per run dir: two brokers (two run dirs) never dump into the same file
  tmp="$jsa.$(printf '%s' "$KAFKA_PROPS" | md5sum | cut -c1-8).tmp"
  mkdir -p "$dir"
  if [[ ! -s "$jsa" && -s "$tmp" ]]; then # our broker is not running: its dump is complete
    # shellcheck disable=SC2086
    if java -Xshare:on -Xmx"$LORE_KAFKA_HEAP" $LORE_KAFKA_JVM_OPTS -XX:SharedArchiveFile="$tmp" \
      -cp "$KAFKA_LIBS/*" -version >/dev/null 2>&1; then
      mv -f "$tmp" "$jsa"
    fi
  fi
  rm -f "$tmp"
  if [[ -s "$jsa" ]]; then
    echo "-XX:SharedArchiveFile=$jsa -Xlog:cds=off -Xlog:cds+dynamic=off"
  else
    echo "-XX:ArchiveClassesAtExit=$tmp -Xlog:cds=off -Xlog:cds+dynamic=off"
  fi
}

kafka_up() {
  local t0 pid
  t0=$(now_us)
  command -v java >/dev/null || die kafka "java is not installed"
  kafka_install
  kafka_ready_tool >/dev/null
  mkdir -p "$KAFKA_DIR"

  pid=$(kafka_pid || true)
  if [[ -n "$pid" ]]; then
    local info
    if info=$(kafka_ready_check "$LORE_INFRA_TIMEOUT" 2>>"$LOGS/kafka-ready.log"); then
      echo "$pid" >"$KAFKA_PIDFILE"
      step kafka "already running (pid $pid, 127.0.0.1:$LORE_KAFKA_PORT, $info)" "$t0"
      return 0
    fi
    say kafka "pid $pid does not answer on port $LORE_KAFKA_PORT: restarting it"
    kafka_stop_pid "$pid" TERM
  fi
  if [[ -f "$KAFKA_PIDFILE" ]]; then
    rm -f "$KAFKA_PIDFILE"
    say kafka "removed stale pid file"
  fi
  local port
  for port in "$LORE_KAFKA_PORT" "$LORE_KAFKA_CONTROLLER_PORT"; do
    if port_open "$port"; then die kafka "port $port is in use by another process (not our broker); set LORE_KAFKA_PORT/LORE_KAFKA_CONTROLLER_PORT"; fi
  done

  kafka_write_props
  kafka_prune
  kafka_format
  t0=$(now_us)
  [[ -f "$KAFKA_LOG" ]] && mv -f "$KAFKA_LOG" "$KAFKA_LOG.1"
  local cds
  cds=$(kafka_cds_opts)
  # setsid: the broker must outlive the shell (and process group) of whoever called up.sh.
  # shellcheck disable=SC2086
  nohup setsid java -Xms128m -Xmx"$LORE_KAFKA_HEAP" $LORE_KAFKA_JVM_OPTS $cds \
    -Djava.awt.headless=true -Dorg.slf4j.simpleLogger.showDateTime=true \
    -Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd\'T\'HH:mm:ss.SSS \
    -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_PROPS" >"$KAFKA_LOG" 2>&1 </dev/null 9>&- &
  pid=$!
  for _ in $(seq 1 50); do kafka_is_ours "$pid" && break; sleep 0.05; done # until nohup/setsid exec java
  kafka_is_ours "$pid" || pid=$(kafka_pid || echo "$pid")
  echo "$pid" >"$KAFKA_PIDFILE"

  # Wait for the broker to say it started while it is alive, then ask it. Nothing dials its port before that
  # line: the acceptors bind only after the logs are loaded, and a dial to a port nobody holds can take it.
  local deadline=$(($(now_us) + LORE_INFRA_TIMEOUT * 1000000))
  until grep -q 'Kafka Server started' "$KAFKA_LOG" 2>/dev/null; do
    pid_alive "$pid" || { rm -f "$KAFKA_PIDFILE"; die_log kafka "the broker exited during start-up" "$KAFKA_LOG"; }
    (($(now_us) < deadline)) || die_log kafka "the broker did not start within ${LORE_INFRA_TIMEOUT}s (pid $pid still running)" "$KAFKA_LOG"
    sleep 0.1
  done
  local left=$(((deadline - $(now_us)) / 1000000)) info
  ((left > 5)) || left=5
  info=$(kafka_ready_check "$left" 2>>"$LOGS/kafka-ready.log") ||
    die_log kafka "the broker is up but the AdminClient check failed (see also $LOGS/kafka-ready.log)" "$KAFKA_LOG"
  step kafka "started Kafka $LORE_KAFKA_VERSION (pid $pid) on 127.0.0.1:$LORE_KAFKA_PORT, $info" "$t0"
}

kafka_stop_pid() { # pid signal
  kill -"$2" "$1" 2>/dev/null || true
  if ! wait_pid_exit "$1" "$LORE_KAFKA_STOP_TIMEOUT"; then
    warn kafka "pid $1 did not exit within ${LORE_KAFKA_STOP_TIMEOUT}s: SIGKILL"
    kill -KILL "$1" 2>/dev/null || true
    wait_pid_exit "$1" 10 || true
  fi
}

kafka_down() { # [KILL] : SIGKILL instead of a controlled shutdown (crash tests)
  local t0 pid sig=TERM
  [[ "${1:-}" == KILL ]] && sig=KILL
  t0=$(now_us)
  pid=$(kafka_pid || true)
  if [[ -z "$pid" ]]; then
    rm -f "$KAFKA_PIDFILE"
    step kafka "not running" "$t0"
    return 0
  fi
  kafka_stop_pid "$pid" "$sig"
  rm -f "$KAFKA_PIDFILE"
  step kafka "stopped (pid $pid, SIG$sig)" "$t0"
}

kafka_prune() { # a cold start over LORE_KAFKA_PRUNE_OVER partition directories starts from empty test data
  ((LORE_KAFKA_PRUNE_OVER > 0)) && [[ -d "$KAFKA_DATA" ]] || return 0
  local n
  n=$(find "$KAFKA_DATA" -mindepth 1 -maxdepth 1 -type d -name '*-[0-9]*' | wc -l)
  ((n > LORE_KAFKA_PRUNE_OVER)) || return 0
  say kafka "$n partitions left by earlier runs (over $LORE_KAFKA_PRUNE_OVER): starting from empty test data"
  kafka_wipe
}

kafka_wipe() { rm -rf "$KAFKA_DATA" "$KAFKA_DIR/cluster.id" "$KAFKA_DIR/ports"; say kafka "wiped $KAFKA_DATA"; }

# ================================================================= headless browser
# Debian's Chromium for the suites that load a Lore page in a real browser (the deep search live page). Nothing
# runs: the suite starts its own headless instance. Installed once; later runs find it on PATH.
browser_apt_packages() { command -v chromium >/dev/null || echo chromium; }
browser_up() {
  command -v chromium >/dev/null || die browser "chromium is not installed"
  say browser "$(chromium --version 2>/dev/null | head -1)"
}

# ================================================================= S3-compatible object store (test/infra/s3)
# A small Go server (gofakes3, in memory) built from the Go module proxy by test/infra/s3/build.sh and cached under
# $LORE_CACHE_DIR/s3. It keeps objects in memory: a restart starts with empty buckets.
S3_DIR="$RUN/s3"
S3_LOG="$S3_DIR/s3.log"
S3_PIDFILE="$PIDS/s3.pid"

s3_is_ours() { # pid -> a lore-test-s3 listening on our port?
  pid_alive "$1" && read_argv "$1" && [[ "${ARGV[0]}" == *lore-test-s3 ]] && [[ " ${ARGV[*]} " == *" -addr 127.0.0.1:$LORE_S3_PORT "* ]]
}
s3_pid() {
  local pid
  pid=$(read_pidfile "$S3_PIDFILE")
  if s3_is_ours "$pid"; then echo "$pid"; return 0; fi
  return 1
}
s3_ready() { # the bucket answers a HEAD (200)
  [[ "$(curl -s -o /dev/null -w '%{http_code}' -I --max-time 2 "http://127.0.0.1:$LORE_S3_PORT/$LORE_S3_BUCKET" 2>/dev/null)" == 200 ]]
}

s3_up() {
  local t0 pid bin
  t0=$(now_us)
  mkdir -p "$S3_DIR"
  pid=$(s3_pid || true)
  if [[ -n "$pid" ]] && s3_ready; then
    step s3 "already running (pid $pid, port $LORE_S3_PORT)" "$t0"
    return 0
  fi
  if [[ -n "$pid" ]]; then
    say s3 "pid $pid does not answer on port $LORE_S3_PORT: restarting it"
    s3_stop_pid "$pid"
  fi
  rm -f "$S3_PIDFILE"
  if port_open "$LORE_S3_PORT"; then
    die s3 "port $LORE_S3_PORT is in use by another process (not ours); set LORE_S3_PORT"
  fi
  # Cached: returns at once; cold, it waits for (or does) the build (scripts/test-all.sh starts it in the background).
  bin=$(bash "$INFRA_SRC_DIR/s3/build.sh" 9>&- 2>"$S3_DIR/build.log") || die_log s3 "test/infra/s3/build.sh failed" "$S3_DIR/build.log"
  t0=$(now_us)
  nohup "$bin" -addr "127.0.0.1:$LORE_S3_PORT" -buckets "$LORE_S3_BUCKET" >"$S3_LOG" 2>&1 </dev/null 9>&- &
  echo $! >"$S3_PIDFILE"
  local deadline=$(($(now_us) + LORE_INFRA_TIMEOUT * 1000000))
  until s3_ready; do
    pid_alive "$(read_pidfile "$S3_PIDFILE")" || die_log s3 "lore-test-s3 exited" "$S3_LOG"
    (($(now_us) < deadline)) || die_log s3 "no answer on port $LORE_S3_PORT after ${LORE_INFRA_TIMEOUT}s" "$S3_LOG"
    sleep 0.05
  done
  step s3 "started the S3 test server (pid $(read_pidfile "$S3_PIDFILE")) on 127.0.0.1:$LORE_S3_PORT, bucket $LORE_S3_BUCKET" "$t0"
}

s3_stop_pid() { # SIGTERM, SIGKILL after 10 s
  kill -TERM "$1" 2>/dev/null || true
  wait_pid_exit "$1" 10 || { kill -KILL "$1" 2>/dev/null || true; wait_pid_exit "$1" 5 || true; }
}

s3_down() {
  local t0 pid
  t0=$(now_us)
  pid=$(s3_pid || true)
  rm -f "$S3_PIDFILE"
  if [[ -z "$pid" ]]; then
    step s3 "not running" "$t0"
    return 0
  fi
  s3_stop_pid "$pid"
  step s3 "stopped (pid $pid)" "$t0"
}

# ================================================================= env file


write_env() {
  local vector=0 version="" tmp
  if [[ -f "$STATE/pg" ]]; then
    vector=$(sed -n 's/^LORE_TEST_PG_VECTOR=//p' "$STATE/pg")
    version=$(sed -n 's/^LORE_TEST_PG_SERVER_VERSION=//p' "$STATE/pg")
  fi
  tmp=$(mktemp "$RUN/env.XXXXXX")
  cat >"$tmp" <<EOF
# Written by test/infra/up.sh. Source it: . "$RUN/env"
export LORE_INFRA_DIR='$RUN'
export LORE_TEST_PG_URL='postgres://lore_owner:lore_owner@127.0.0.1:$LORE_PG_PORT/lore'
export LORE_TEST_PG_APP_URL='postgres://lore_app:lore_app@127.0.0.1:$LORE_PG_PORT/lore'
export LORE_TEST_PG_VECTOR='${vector:-0}'
export LORE_TEST_PG_SERVER_VERSION='$version'
export LORE_TEST_REDIS_URL='redis://127.0.0.1:$LORE_REDIS_PORT'
export LORE_TEST_KAFKA_BROKERS='127.0.0.1:$LORE_KAFKA_PORT'
export LORE_TEST_S3_ENDPOINT='http://127.0.0.1:$LORE_S3_PORT'
export LORE_TEST_S3_BUCKET='$LORE_S3_BUCKET'
export LORE_TEST_S3_REGION='us-east-1'
export LORE_TEST_S3_ACCESS_KEY_ID='lore-test'
export LORE_TEST_S3_SECRET_ACCESS_KEY='lore-test-secret'
export LORE_TEST_KAFKA_STOP='bash $INFRA_SRC_DIR/down.sh kafka'
export LORE_TEST_KAFKA_KILL='bash $INFRA_SRC_DIR/down.sh kafka --kill'
export LORE_TEST_KAFKA_START='bash $INFRA_SRC_DIR/up.sh kafka'
export LORE_TEST_KAFKA_RESTART='bash $INFRA_SRC_DIR/up.sh kafka-restart'
export LORE_INFRA_UP='bash $INFRA_SRC_DIR/up.sh'
export LORE_INFRA_DOWN='bash $INFRA_SRC_DIR/down.sh'
export LORE_TEST_CHROMIUM='$(command -v chromium || true)'
EOF
  chmod 644 "$tmp"
  mv -f "$tmp" "$RUN/env"
}

# ================================================================= status
status_all() {
  local pid
  pg_resolve
  pid=$(pg_running_pid || true)
  if [[ -n "$pid" ]]; then say pg "running, pid $pid, 127.0.0.1:$(pg_running_port) ($PG_FLAVOR_ID)"; else say pg "stopped ($PG_FLAVOR_ID)"; fi
  pid=$(redis_pid || true)
  if [[ -n "$pid" ]]; then say redis "running, pid $pid, 127.0.0.1:$LORE_REDIS_PORT"; else say redis stopped; fi
  pid=$(kafka_pid || true)
  if [[ -n "$pid" ]]; then say kafka "running, pid $pid, 127.0.0.1:$LORE_KAFKA_PORT (Kafka $LORE_KAFKA_VERSION)"; else say kafka "stopped (Kafka $LORE_KAFKA_VERSION)"; fi
  pid=$(s3_pid || true)
  if [[ -n "$pid" ]]; then say s3 "running, pid $pid, 127.0.0.1:$LORE_S3_PORT (bucket $LORE_S3_BUCKET)"; else say s3 stopped; fi
  if [[ -f "$RUN/env" ]]; then say env "$RUN/env"; fi
  return 0
}
