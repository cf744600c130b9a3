#!/usr/bin/env bash
# Create .venv with the pinned OpenMMLab stack and install sapiens2_mm (editable).
# Idempotent: a second run only checks that the environment is complete.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
if [[ ! -x .venv/bin/python ]]; then
  "$PYTHON" -m venv .venv
fi
source .venv/bin/activate
stamp=.venv/.sapiens2_mm_installed
want=$(cat requirements/*.txt setup.py | sha1sum | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi
python -m pip install -q --upgrade -r requirements/build.txt
# chumpy (declared by mmpose, unused at run time) only builds without isolation.
python -m pip install -q --no-build-isolation chumpy==0.70
python -m pip install -q -r requirements/runtime.txt -r requirements/tests.txt \
  -r requirements/optional.txt
python -m pip install -q --no-build-isolation --no-deps -e .
python -m pip check
echo "$want" > "$stamp"
