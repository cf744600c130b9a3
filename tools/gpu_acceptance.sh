#!/usr/bin/env bash
# The GPU acceptance run in one command of at most 8 minutes (stages and
# output: tools/gpu_acceptance.py):
#   bash tools/gpu_acceptance.sh OUT_DIR [--dry-run] [--budget-s 450]
# Wheels in .whl/ (tools/fetch_acceptance_wheels.sh, Python 3.12) are
# unpacked into a temporary folder put first on PYTHONPATH: nothing is
# installed into the machine's environment, no pip or network is needed.
# --dry-run: every stage with tiny shapes on the CPU (what CI runs).
set -euo pipefail
# the budget's clock starts here, before the wheels are unpacked
ACCEPTANCE_START=$(date +%s.%N)
export ACCEPTANCE_START
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
SITE=$(mktemp -d "${TMPDIR:-/tmp}/sapiens2_site.XXXXXX")
trap 'rm -rf "$SITE"' EXIT
"$PYTHON" - "$SITE" <<'PY'
import glob, sys, zipfile
here = sys.version_info[:2]
def fits(wheel):  # name-version-python-abi-platform.whl
    python, abi = wheel[:-4].split('-')[-3:-1]
    if python.startswith('py'):
        return True
    version = tuple(int(c) for c in (python[2], python[3:]))
    return version == here or (abi == 'abi3' and version <= here)
wheels = sorted(glob.glob('.whl/*.whl'))
taken = [w for w in wheels if fits(w)]
for wheel in taken:  # a wheel is a zip of its site-packages files
    zipfile.ZipFile(wheel).extractall(sys.argv[1])
print(f'{len(taken)} of {len(wheels)} wheel(s) from .whl/ unpacked into '
      f'{sys.argv[1]} (the others are for another Python)')
PY
# xtcocotools has no Python 3.12 wheel: where it is missing, a stand-in maps
# it to pycocotools (no stage uses mmpose's COCO keypoint metric, the only
# user of xtcocotools' extensions); check_imports reports it.
if ! PYTHONPATH="$SITE" "$PYTHON" -c 'import xtcocotools' 2>/dev/null; then
  mkdir -p "$SITE/xtcocotools"
  echo '"""Stand-in of the acceptance run: pycocotools under this name."""' \
    > "$SITE/xtcocotools/__init__.py"
  echo 'STAND_IN = "pycocotools"' >> "$SITE/xtcocotools/__init__.py"
  for m in coco cocoeval mask; do
    echo "from pycocotools.$m import *  # noqa: F401,F403" \
      > "$SITE/xtcocotools/$m.py"
  done
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" tools/gpu_acceptance.py "$@"
