#!/usr/bin/env bash
# Distributed training with torchrun.
#   tools/dist_train.sh CONFIG GPUS [train.py options...]
# Multi-node: NNODES=2 NODE_RANK=0 MASTER_ADDR=host PORT=29500 tools/dist_train.sh ...
# CPU-only machines work too (gloo backend), e.g. for a smoke test.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 CONFIG GPUS [tools/train.py options]" >&2
    exit 2
fi
CONFIG=$1
GPUS=$2
shift 2
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}
# the interpreter: the `python` first on PATH unless PYTHON is set (e.g.
# PYTHON=.venv/bin/python when the environment is not activated)
PYTHON=${PYTHON:-python}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

PYTHONPATH="$ROOT:${PYTHONPATH:-}" \
"$PYTHON" -m torch.distributed.run \
    --nnodes="$NNODES" \
    --node_rank="$NODE_RANK" \
    --master_addr="$MASTER_ADDR" \
    --nproc_per_node="$GPUS" \
    --master_port="$PORT" \
    "$ROOT/tools/train.py" "$CONFIG" --launcher pytorch "$@"
