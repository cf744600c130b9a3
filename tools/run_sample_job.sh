#!/usr/bin/env bash
# The main job on a fresh machine: set up .venv, then train a tiny Sapiens2 pose
# model on the bundled COCO sample people (CPU), evaluate it with COCO keypoint AP
# and write visualisations. Prints where everything went.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_env.sh
source .venv/bin/activate
config=configs/pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py
work_dir=${WORK_DIR:-work_dirs/sample_job}
python tools/train.py "$config" --work-dir "$work_dir" "$@"
python tools/test.py "$config" "$work_dir/iter_300.pth" --work-dir "$work_dir/test" \
  --show-dir "$work_dir/test/vis" --out "$work_dir/test/predictions.pkl"
echo
echo "Done. Training log and checkpoint: $work_dir"
echo "Metrics: $work_dir/test/test_metrics.json; predictions: $work_dir/test/predictions.pkl"
python -c "import json, sys; m = json.load(open(sys.argv[1])); print('  COCO AP %.3f  AR %.3f' % (m['coco/AP'], m['coco/AR']))" \
  "$work_dir/test/test_metrics.json"
echo "Visualisations: $work_dir/test/vis"
