#!/usr/bin/env bash
# Start Lore's Kubernetes test control plane: etcd + kube-apiserver on loopback (like controller-runtime's envtest).
# Idempotent: a second run finds both running and healthy and leaves them (one of each); stale pid files are
# cleaned; a leftover process of ours that lost its pid file is adopted instead of duplicated.
#
# Writes, under ${LORE_INFRA_DIR:-$HOME/.cache/lore/run}/k8s:
#   kubeconfig   token auth (system:masters) against https://127.0.0.1:${LORE_KUBE_PORT:-56443}, CA embedded
#   env          `source` it: KUBECONFIG, LORE_TEST_KUBECONFIG, LORE_KUBECTL, LORE_HELM, LORE_KUBE_SERVER, ...
#   *.log        etcd.log, kube-apiserver.log
# Builds the binaries first (test/infra/k8s/build.sh) if they are not cached: that takes 10-20 min cold;
# set LORE_K8S_NO_BUILD=1 to fail instead.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LORE_INFRA_DIR="${LORE_INFRA_DIR:-$HOME/.cache/lore/run}"
RUN_DIR="$LORE_INFRA_DIR/k8s"
ETCD_PORT="${LORE_ETCD_PORT:-52379}"
ETCD_PEER_PORT="${LORE_ETCD_PEER_PORT:-52380}"
KUBE_PORT="${LORE_KUBE_PORT:-56443}"
READY_TIMEOUT="${LORE_K8S_READY_TIMEOUT:-180}"

log() { printf '[k8s-up %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

for tool in openssl curl ss setsid; do command -v "$tool" >/dev/null || die "$tool is required"; done

# ---- binaries ---------------------------------------------------------------------------------
if ! BIN_DIR="$("$HERE/build.sh" --check 2>/dev/null)"; then
  [[ "${LORE_K8S_NO_BUILD:-0}" == 1 ]] && die "binaries not built; run $HERE/build.sh (10-20 min cold)"
  log "binaries missing: building (10-20 min cold) ..."
  "$HERE/build.sh" >&2
  BIN_DIR="$("$HERE/build.sh" --check)" || die "build did not produce the binaries"
fi
ETCD="$BIN_DIR/etcd"; APISERVER="$BIN_DIR/kube-apiserver"; KUBECTL="$BIN_DIR/kubectl"; HELM="$BIN_DIR/helm"

mkdir -p "$RUN_DIR/certs" "$RUN_DIR/pki"
chmod 700 "$RUN_DIR"
ETCD_DATA="$RUN_DIR/etcd-data"
CERT_DIR="$RUN_DIR/certs"
PKI="$RUN_DIR/pki"
KUBECONFIG_FILE="$RUN_DIR/kubeconfig"
ENV_FILE="$RUN_DIR/env"

# ---- process helpers ----------------------------------------------------------------------------
# A process is "ours" when its command line carries the marker argument unique to this run dir.
cmdline_of() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true; }
is_ours() { local pid="$1" marker="$2"; [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && [[ "$(cmdline_of "$pid")" == *"$marker"* ]]; }
port_pid() { ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2; }
# Prints the pid of our running process (from the pid file or, failing that, the one listening on PORT).
# Exit status: 0 running (pid printed), 1 not running, 2 port taken by a process that is not ours.
find_ours() {  # find_ours NAME MARKER PORT PORT_ENV_VAR PORT_ARG
  local name="$1" marker="$2" port="$3" portvar="$4" portarg="$5" pid=""
  pid="$(cat "$RUN_DIR/$name.pid" 2>/dev/null || true)"
  if is_ours "$pid" "$marker"; then
    if [[ "$(cmdline_of "$pid")" == *"$portarg"* ]]; then echo "$pid"; return 0; fi
    # Ours (same run dir) but started with other ports: replace it, a run dir serves one configuration.
    log "$name (pid $pid) runs with other ports than requested ($portarg): restarting it"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 75); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  [[ -f "$RUN_DIR/$name.pid" ]] && { log "removing stale $name.pid ($pid)"; rm -f "$RUN_DIR/$name.pid"; }
  pid="$(port_pid "$port")"
  if [[ -n "$pid" ]]; then
    if is_ours "$pid" "$marker" && [[ "$(cmdline_of "$pid")" == *"$portarg"* ]]; then log "adopting running $name (pid $pid)"; echo "$pid" >"$RUN_DIR/$name.pid"; echo "$pid"; return 0; fi
    log "ERROR: port $port is taken by another process (pid $pid: $(cmdline_of "$pid" | cut -c1-120)); set $portvar"
    return 2
  fi
  return 1
}

# ---- PKI (generated once, reused) ----------------------------------------------------------------
gen_pki() {
  [[ -s "$PKI/ca.crt" && -s "$PKI/apiserver.crt" && -s "$PKI/sa.key" && -s "$PKI/tokens.csv" ]] && return 0
  log "generating CA, serving cert, service-account key and admin token in $PKI"
  local tmp; tmp="$(mktemp -d)"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=lore-test-ca" \
    -keyout "$tmp/ca.key" -out "$tmp/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout "$tmp/apiserver.key" -out "$tmp/apiserver.csr" 2>/dev/null
  cat >"$tmp/ext.cnf" <<'EOF'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
EOF
  openssl x509 -req -in "$tmp/apiserver.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial -days 3650 \
    -extfile "$tmp/ext.cnf" -out "$tmp/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$tmp/sa.key" 2048 2>/dev/null
  openssl rsa -in "$tmp/sa.key" -pubout -out "$tmp/sa.pub" 2>/dev/null
  # token,user,uid,"groups"
  printf '%s,lore-admin,lore-admin,"system:masters"\n' "$(openssl rand -hex 32)" >"$tmp/tokens.csv"
  chmod 600 "$tmp"/*.key "$tmp/tokens.csv"
  mv -f "$tmp"/* "$PKI"/; rmdir "$tmp"
}
gen_pki
TOKEN="$(cut -d, -f1 "$PKI/tokens.csv")"
SERVER="https://127.0.0.1:$KUBE_PORT"

# ---- etcd -------------------------------------------------------------------------------------
ETCD_MARKER="--data-dir=$ETCD_DATA"
etcd_healthy() { curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"'; }
rc=0; ETCD_PID="$(find_ours etcd "$ETCD_MARKER" "$ETCD_PORT" LORE_ETCD_PORT \
  "--listen-client-urls=http://127.0.0.1:$ETCD_PORT --advertise-client-urls=http://127.0.0.1:$ETCD_PORT --listen-peer-urls=http://127.0.0.1:$ETCD_PEER_PORT ")" || rc=$?
(( rc > 1 )) && exit 1
if (( rc == 0 )); then
  log "etcd already running (pid $ETCD_PID)"
else
  port_pid "$ETCD_PEER_PORT" | grep -q . && die "etcd peer port $ETCD_PEER_PORT is taken; set LORE_ETCD_PEER_PORT"
  log "starting etcd on 127.0.0.1:$ETCD_PORT (peer $ETCD_PEER_PORT)"
  setsid nohup "$ETCD" --name=lore-test "$ETCD_MARKER" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="lore-test=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state=new \
    --unsafe-no-fsync=true --quota-backend-bytes=$((2 * 1024 * 1024 * 1024)) --log-level=warn \
    >>"$RUN_DIR/etcd.log" 2>&1 </dev/null &
  ETCD_PID=$!
  echo "$ETCD_PID" >"$RUN_DIR/etcd.pid"
fi
for i in $(seq 1 120); do
  etcd_healthy && break
  kill -0 "$ETCD_PID" 2>/dev/null || { tail -n 20 "$RUN_DIR/etcd.log" >&2; die "etcd exited; see $RUN_DIR/etcd.log"; }
  [[ $i == 120 ]] && die "etcd not healthy after 60s; see $RUN_DIR/etcd.log"
  sleep 0.5
done
log "etcd healthy"

# ---- kube-apiserver ---------------------------------------------------------------------------
API_MARKER="--cert-dir=$CERT_DIR"
api_ready() { curl -fsS --max-time 3 --cacert "$PKI/ca.crt" -H "Authorization: Bearer $TOKEN" "$SERVER/readyz" 2>/dev/null | grep -qx ok; }
rc=0; API_PID="$(find_ours kube-apiserver "$API_MARKER" "$KUBE_PORT" LORE_KUBE_PORT \
  "--etcd-servers=http://127.0.0.1:$ETCD_PORT --secure-port=$KUBE_PORT ")" || rc=$?
(( rc > 1 )) && exit 1
if (( rc == 0 )); then
  log "kube-apiserver already running (pid $API_PID)"
else
  log "starting kube-apiserver on $SERVER"
  setsid nohup "$APISERVER" "$API_MARKER" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --secure-port="$KUBE_PORT" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
    --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$PKI/sa.key" --service-account-signing-key-file="$PKI/sa.key" \
    --token-auth-file="$PKI/tokens.csv" --authorization-mode=RBAC \
    --disable-admission-plugins=ServiceAccount \
    --profiling=false \
    >>"$RUN_DIR/kube-apiserver.log" 2>&1 </dev/null &
  API_PID=$!
  echo "$API_PID" >"$RUN_DIR/kube-apiserver.pid"
fi
t0=$(date +%s)
until api_ready; do
  kill -0 "$API_PID" 2>/dev/null || { tail -n 30 "$RUN_DIR/kube-apiserver.log" >&2; die "kube-apiserver exited; see $RUN_DIR/kube-apiserver.log"; }
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 --cacert "$PKI/ca.crt" -H "Authorization: Bearer $TOKEN" "$SERVER/readyz" 2>/dev/null || true)"
  [[ "$code" == 401 || "$code" == 403 ]] && die "$SERVER answers $code to our token: it is not the apiserver of $RUN_DIR"
  (( $(date +%s) - t0 > READY_TIMEOUT )) && die "kube-apiserver not ready after ${READY_TIMEOUT}s; see $RUN_DIR/kube-apiserver.log"
  sleep 0.5
done
log "kube-apiserver ready (/readyz ok) after $(( $(date +%s) - t0 ))s"

# ---- kubeconfig + env -------------------------------------------------------------------------
umask 077
cat >"$KUBECONFIG_FILE.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: lore-test
  cluster:
    server: $SERVER
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: lore-admin
  user:
    token: $TOKEN
contexts:
- name: lore-test
  context:
    cluster: lore-test
    user: lore-admin
    namespace: default
current-context: lore-test
EOF
mv -f "$KUBECONFIG_FILE.tmp" "$KUBECONFIG_FILE"

cat >"$ENV_FILE.tmp" <<EOF
# Lore Kubernetes test control plane (written by test/infra/k8s/up.sh). Use: source $ENV_FILE
export KUBECONFIG="$KUBECONFIG_FILE"
export LORE_TEST_KUBECONFIG="$KUBECONFIG_FILE"
export LORE_KUBECTL="$KUBECTL"
export LORE_HELM="$HELM"
export LORE_KUBE_SERVER="$SERVER"
export LORE_KUBE_CA_FILE="$PKI/ca.crt"
export LORE_KUBE_TOKEN_FILE="$RUN_DIR/token"
export LORE_ETCD_ENDPOINT="http://127.0.0.1:$ETCD_PORT"
export LORE_K8S_BIN_DIR="$BIN_DIR"
EOF
mv -f "$ENV_FILE.tmp" "$ENV_FILE"
printf '%s' "$TOKEN" >"$RUN_DIR/token"

log "up: $SERVER (etcd pid $ETCD_PID, kube-apiserver pid $API_PID)"
log "use: source $ENV_FILE && \"\$LORE_KUBECTL\" get ns"
echo "$ENV_FILE"
