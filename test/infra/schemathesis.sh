#!/usr/bin/env bash
# Installs (once, cached) Schemathesis, the OpenAPI fuzzer of the fuzzing suite (test/fuzz/), into its own
# virtual environment under $LORE_CACHE_DIR (default ~/.cache/lore), pinned, from PyPI with pip.
#
# Usage:
#   test/infra/schemathesis.sh           install if missing, print the path of the `schemathesis` executable
#   test/infra/schemathesis.sh --check   exit 0 (and print the path) when the pinned version is installed
#
# A warm run only checks a stamp file and returns at once. Override the version with LORE_SCHEMATHESIS_VERSION.
set -euo pipefail

LORE_SCHEMATHESIS_VERSION="${LORE_SCHEMATHESIS_VERSION:-4.32.5}"
LORE_CACHE="${LORE_CACHE_DIR:-$HOME/.cache/lore}"
VENV="$LORE_CACHE/schemathesis/$LORE_SCHEMATHESIS_VERSION"
BIN="$VENV/bin/schemathesis"
STAMP="$VENV/.lore-installed"
LOCK="$LORE_CACHE/schemathesis/install.lock"

installed() { [[ -x "$BIN" && -f "$STAMP" && "$(cat "$STAMP")" == "$LORE_SCHEMATHESIS_VERSION" ]]; }

if [[ "${1:-}" == "--check" ]]; then
  if installed; then echo "$BIN"; exit 0; fi
  exit 1
fi
if installed; then echo "$BIN"; exit 0; fi

mkdir -p "$(dirname "$LOCK")"
exec 9>"$LOCK"
flock 9 # a parallel caller waits for this install instead of racing it
if installed; then echo "$BIN"; exit 0; fi

PYTHON="${LORE_PYTHON:-python3}"
command -v "$PYTHON" >/dev/null || { echo "schemathesis.sh: $PYTHON not found" >&2; exit 1; }
start=$SECONDS
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV" >&2
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
  "schemathesis==$LORE_SCHEMATHESIS_VERSION" >&2
# The executable must answer with the pinned version before the stamp is written.
version="$("$BIN" --version 2>/dev/null || true)"
[[ "$version" == *"$LORE_SCHEMATHESIS_VERSION"* ]] || { echo "schemathesis.sh: unexpected version: $version" >&2; exit 1; }
echo "$LORE_SCHEMATHESIS_VERSION" >"$STAMP"
echo "schemathesis.sh: installed Schemathesis $LORE_SCHEMATHESIS_VERSION in $((SECONDS - start))s" >&2
echo "$BIN"
