#!/usr/bin/env bash
# Build (once, cached) the binaries of Lore's Kubernetes test control plane from the Go module proxy:
#   etcd, kube-apiserver, kubectl, helm  ->  $HOME/.cache/lore/k8s/<k8s-version>/bin/
#
# Usage:
#   test/infra/k8s/build.sh               build what is missing (foreground; 10-20 min cold on 2 cores)
#   test/infra/k8s/build.sh --background  same, detached (nohup); log in $HOME/.cache/lore/k8s/<ver>/build.log
#   test/infra/k8s/build.sh --wait        wait for a background build to finish, then verify (exit 0 = all good)
#   test/infra/k8s/build.sh --check       exit 0 if every binary is cached at the right version, 1 otherwise
#   test/infra/k8s/build.sh --print-bin-dir
#
# Versions are pinned (override with env): LORE_K8S_VERSION, LORE_ETCD_VERSION, LORE_HELM_VERSION.
# Idempotent: a binary that exists and reports the expected version is not rebuilt.
set -euo pipefail

LORE_K8S_VERSION="${LORE_K8S_VERSION:-v1.33.13}"   # newest v1.33 patch served by the Go proxy when pinned
LORE_ETCD_VERSION="${LORE_ETCD_VERSION:-v3.5.21}"
LORE_HELM_VERSION="${LORE_HELM_VERSION:-v3.19.5}"  # newest v3.19 patch served by the Go proxy when pinned

LORE_CACHE="${LORE_CACHE_DIR:-$HOME/.cache/lore}"
K8S_ROOT="$LORE_CACHE/k8s/$LORE_K8S_VERSION"
BIN_DIR="$K8S_ROOT/bin"
WORK_DIR="$K8S_ROOT/work"        # throw-away wrapper modules (kept so re-runs are quick; safe to delete)
LOG_FILE="$K8S_ROOT/build.log"
LOCK_FILE="$K8S_ROOT/build.lock"

# Go toolchain and caches: everything under ~/.cache/lore/go so rebuilds are cached and nothing leaks into ~/go.
# shellcheck source=../go-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/../go-env.sh"
# shellcheck source=../build-modes.sh
. "$(dirname "${BASH_SOURCE[0]}")/../build-modes.sh"
lore_go_env "-mod=mod -buildvcs=false"

k8s_ver_nov="${LORE_K8S_VERSION#v}"                 # 1.33.13
k8s_major="${k8s_ver_nov%%.*}"                      # 1
k8s_minor="$(echo "$k8s_ver_nov" | cut -d. -f2)"    # 33
k8s_patch="$(echo "$k8s_ver_nov" | cut -d. -f3)"    # 13
staging_ver="v0.${k8s_minor}.${k8s_patch}"          # v0.33.13

log() { printf '[k8s-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---- version probes ---------------------------------------------------------------------------
# (outputs are captured first: `cmd | grep -q` can fail under pipefail when grep exits early and cmd gets SIGPIPE)
etcd_ok()      { [[ -x "$BIN_DIR/etcd" ]] || return 1; local o; o="$("$BIN_DIR/etcd" --version 2>/dev/null)" || return 1; [[ "$o" == *"etcd Version: ${LORE_ETCD_VERSION#v}"$'\n'* ]]; }
apiserver_ok() { [[ -x "$BIN_DIR/kube-apiserver" ]] && [[ "$("$BIN_DIR/kube-apiserver" --version 2>/dev/null)" == "Kubernetes $LORE_K8S_VERSION" ]]; }
kubectl_ok()   { [[ -x "$BIN_DIR/kubectl" ]] || return 1; local o; o="$("$BIN_DIR/kubectl" version --client -o json 2>/dev/null)" || return 1; [[ "$o" == *"\"gitVersion\": \"$LORE_K8S_VERSION\""* ]]; }
helm_ok()      { [[ -x "$BIN_DIR/helm" ]] && [[ "$("$BIN_DIR/helm" version --template '{{.Version}}' 2>/dev/null)" == "$LORE_HELM_VERSION" ]]; }
all_ok()       { etcd_ok && apiserver_ok && kubectl_ok && helm_ok; }

case "${1:-}" in
  --print-bin-dir) echo "$BIN_DIR"; exit 0 ;;
  --check) if all_ok; then echo "$BIN_DIR"; exit 0; else exit 1; fi ;;
  --background) lore_build_background all_ok "$K8S_ROOT" "$LOG_FILE" "etcd, kube-apiserver, kubectl and helm" ;;
  --wait) lore_build_wait all_ok "$K8S_ROOT" "$LOG_FILE" "etcd, kube-apiserver, kubectl and helm" ;;
  "") ;;
  *) die "unknown argument: $1 (see the header of $0)" ;;
esac

mkdir -p "$BIN_DIR" "$WORK_DIR" "$GOCACHE" "$GOMODCACHE"
command -v go >/dev/null || die "go not found (expected /usr/local/go/bin/go)"

# One build at a time (a second caller waits for the first, then finds everything cached).
lore_build_lock "$LOCK_FILE"

log "go $(go env GOVERSION), GOPATH=$GOPATH, GOCACHE=$GOCACHE, bin=$BIN_DIR"
T_ALL=$(date +%s)
declare -a TIMINGS=()
timed() {  # timed NAME CMD...
  local name="$1"; shift
  local t0; t0=$(date +%s)
  "$@"
  local dt=$(( $(date +%s) - t0 ))
  TIMINGS+=("$name: ${dt}s")
  log "built $name in ${dt}s"
}

# ---- etcd -------------------------------------------------------------------------------------
build_etcd() {
  local d="$WORK_DIR/etcd-$LORE_ETCD_VERSION"
  rm -rf "$d"; mkdir -p "$d"; cd "$d"
  go mod init lore.local/k8s-test-harness/etcd >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@$LORE_ETCD_VERSION"
  go build -p 2 -trimpath -ldflags "-s -w" -o "$BIN_DIR/etcd.tmp" go.etcd.io/etcd/server/v3
  mv -f "$BIN_DIR/etcd.tmp" "$BIN_DIR/etcd"
}

# ---- kube-apiserver + kubectl -------------------------------------------------------------------
k8s_ldflags() {
  local f=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $pkg.gitVersion=$LORE_K8S_VERSION -X $pkg.gitMajor=$k8s_major -X $pkg.gitMinor=$k8s_minor"
    f+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "-s -w$f"
}

prepare_k8s_module() {
  local d="$WORK_DIR/kubernetes-$LORE_K8S_VERSION"
  if [[ -f "$d/.prepared" ]]; then cd "$d"; return 0; fi
  rm -rf "$d"; mkdir -p "$d"; cd "$d"
  go mod init lore.local/k8s-test-harness/kubernetes >/dev/null 2>&1
  local gomod
  gomod="$(go list -m -f '{{.GoMod}}' "k8s.io/kubernetes@$LORE_K8S_VERSION")"
  [[ -f "$gomod" ]] || die "could not read the go.mod of k8s.io/kubernetes@$LORE_K8S_VERSION"
  # Same language/godebug defaults as upstream builds of this release.
  local gover; gover="$(awk '$1=="go"{print $2; exit}' "$gomod")"
  [[ -n "$gover" ]] && go mod edit -go="$gover"
  awk '$1=="godebug" && NF==2 {print $2}' "$gomod" | while read -r kv; do go mod edit -godebug="$kv"; done
  # Every staging module (required at v0.0.0 and replaced by ./staging/... upstream) -> published v0.X.Y.
  local mods
  mods="$( { awk '($1 ~ /^k8s\.io\// && $2=="v0.0.0"){print $1}' "$gomod"
            awk '($2=="=>" && $3 ~ /^\.\/staging\//){print $1}' "$gomod"; } | sort -u)"
  [[ -n "$mods" ]] || die "no staging modules found in $gomod"
  local n=0
  for m in $mods; do go mod edit -replace="$m=$m@$staging_ver"; n=$((n+1)); done
  log "replaced $n staging modules with @$staging_ver"
  go get "k8s.io/kubernetes/cmd/kube-apiserver@$LORE_K8S_VERSION" "k8s.io/kubernetes/cmd/kubectl@$LORE_K8S_VERSION"
  touch .prepared
}

build_k8s_cmd() {  # build_k8s_cmd NAME
  prepare_k8s_module
  go build -p 2 -trimpath -ldflags "$(k8s_ldflags)" -o "$BIN_DIR/$1.tmp" "k8s.io/kubernetes/cmd/$1"
  mv -f "$BIN_DIR/$1.tmp" "$BIN_DIR/$1"
}

# ---- helm -------------------------------------------------------------------------------------
build_helm() {
  local d="$WORK_DIR/helm-$LORE_HELM_VERSION"
  rm -rf "$d"; mkdir -p "$d"; cd "$d"
  local ldf="-s -w -X helm.sh/helm/v3/internal/version.version=$LORE_HELM_VERSION -X helm.sh/helm/v3/internal/version.metadata="
  ldf+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ldf+=" -X $pkg.k8sVersionMajor=$k8s_major -X $pkg.k8sVersionMinor=$k8s_minor"
  done
  # go install pkg@version (the supported way to build a module's command outside any module).
  GOFLAGS="-buildvcs=false" GOBIN="$d/bin" go install -p 2 -trimpath -ldflags "$ldf" "helm.sh/helm/v3/cmd/helm@$LORE_HELM_VERSION"
  mv -f "$d/bin/helm" "$BIN_DIR/helm"
}

if etcd_ok; then log "etcd $LORE_ETCD_VERSION cached"; TIMINGS+=("etcd: cached")
else log "building etcd $LORE_ETCD_VERSION"; timed etcd build_etcd; etcd_ok || die "etcd reports the wrong version"; fi

if apiserver_ok; then log "kube-apiserver $LORE_K8S_VERSION cached"; TIMINGS+=("kube-apiserver: cached")
else log "building kube-apiserver $LORE_K8S_VERSION"; timed kube-apiserver build_k8s_cmd kube-apiserver; apiserver_ok || die "kube-apiserver reports the wrong version"; fi

if kubectl_ok; then log "kubectl $LORE_K8S_VERSION cached"; TIMINGS+=("kubectl: cached")
else log "building kubectl $LORE_K8S_VERSION"; timed kubectl build_k8s_cmd kubectl; kubectl_ok || die "kubectl reports the wrong version"; fi

if helm_ok; then log "helm $LORE_HELM_VERSION cached"; TIMINGS+=("helm: cached")
else log "building helm $LORE_HELM_VERSION"; timed helm build_helm; helm_ok || die "helm reports the wrong version"; fi

log "timings: ${TIMINGS[*]}; total $(( $(date +%s) - T_ALL ))s"
log "binaries: $(cd "$BIN_DIR" && ls -1 | tr '\n' ' ')($(du -sh "$BIN_DIR" | cut -f1))"
echo "$BIN_DIR"
