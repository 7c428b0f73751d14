# Sourced by the Go builds of the test infrastructure (k8s/build.sh, promtool/build.sh, s3/build.sh): the Go
# toolchain and every cache under $LORE_CACHE/go, so rebuilds are cached and nothing leaks into ~/go.
#
#   LORE_CACHE=...; . test/infra/go-env.sh; lore_go_env "<GOFLAGS>"

lore_go_env() {
  if ! command -v go >/dev/null 2>&1; then export PATH="/usr/local/go/bin:$PATH"; fi
  export GOPATH="$LORE_CACHE/go"
  export GOMODCACHE="$GOPATH/pkg/mod"
  export GOCACHE="$LORE_CACHE/go/cache"
  export GOFLAGS="$1"
  export CGO_ENABLED=0
  export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
  export GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}"
}
