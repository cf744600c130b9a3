#!/usr/bin/env bash
# The main job on a fresh machine: set up .venv, then train a tiny Sapiens2 pose
# model on the bundled COCO sample people (CPU), evaluate it with COCO keypoint AP
# and write visualizations. Prints where everything went.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_env.sh
source .venv/bin/activate
config=configs/pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py
work_dir=${WORK_DIR:-work_dirs/sample_job}
python tools/train.py "$config" --work-dir "$work_dir" "$@"
# the checkpoint training finished with (extra options such as
# --cfg-options train_cfg.max_iters=N change its name)
checkpoint=$(cat "$work_dir/last_checkpoint")
python tools/test.py "$config" "$checkpoint" --work-dir "$work_dir/test" \
  --show-dir "$work_dir/test/vis" --out "$work_dir/test/predictions.pkl"
echo
echo "Done. Training log: $work_dir; checkpoint: $checkpoint"
echo "Metrics: $work_dir/test/test_metrics.json; predictions: $work_dir/test/predictions.pkl"
python -c "import json, sys; m = json.load(open(sys.argv[1])); print('  COCO AP %.3f  AR %.3f' % (m['coco/AP'], m['coco/AR']))" \
  "$work_dir/test/test_metrics.json"
echo "Visualizations: $work_dir/test/vis"
