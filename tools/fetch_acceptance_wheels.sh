#!/usr/bin/env bash
# Download the wheels tools/gpu_acceptance.sh installs on a GPU machine with
# Python 3.12 and torch but no OpenMMLab packages and no network. Run it here
# (it needs PyPI); the wheels land in .whl/ (ignored by git), which then
# travels with the working tree (carry .whl; 64 MiB in all with the tree).
#   bash tools/fetch_acceptance_wheels.sh [EXTRA_PACKAGE ...]
# EXTRA_PACKAGE: what `python tools/gpu_acceptance.py --check-imports` on the
# GPU machine lists as missing there (e.g. pyyaml rich); only pure-Python or
# cp312 manylinux wheels are taken. Sizes: the default set is about 11 MB;
# numpy 1.26 adds 18 MB, opencv-python-headless 50 MB (too big to carry with
# the tree: the machine must have cv2).
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${WHEEL_DIR:-.whl}
PYTHON=${PYTHON:-python}
mkdir -p "$DEST"
"$PYTHON" -m pip download --quiet --only-binary=:all: --no-deps \
  --python-version 3.12 --implementation cp --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  -d "$DEST" \
  mmengine==0.10.7 mmcv-lite==2.1.0 mmpretrain==1.2.0 mmpose==1.3.2 \
  mmsegmentation==1.2.2 mmdet==3.3.0 pycocotools==2.0.11 \
  addict yapf termcolor ftfy regex json-tricks munkres einops mat4py \
  modelindex model-index ordered-set terminaltables prettytable wcwidth \
  shapely platformdirs importlib-metadata lazy-importer \
  "$@"
du -sh "$DEST"
