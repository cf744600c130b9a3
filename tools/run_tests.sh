#!/usr/bin/env bash
# Set up the environment (if needed), lint, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_env.sh
source .venv/bin/activate
ruff check sapiens2_mm tools tests configs projects
python -m pytest -n 2 --dist loadfile tests "$@"
