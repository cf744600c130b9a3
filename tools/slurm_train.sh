#!/usr/bin/env bash
# Training on a Slurm cluster: one task per GPU, launched by srun.
#   tools/slurm_train.sh PARTITION JOB_NAME CONFIG [WORK_DIR] [train.py options...]
# Environment: GPUS (total, default 8), GPUS_PER_NODE (8), CPUS_PER_TASK (5),
# SRUN_ARGS (extra srun arguments).
# Runs under bash >= 4.2 with set -u: an empty array is expanded as
# ${A[@]+"${A[@]}"} (bash < 4.4 reports "${A[@]}" of an empty array as an
# unbound variable).
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 PARTITION JOB_NAME CONFIG [WORK_DIR] [tools/train.py options]" >&2
    exit 2
fi
PARTITION=$1
JOB_NAME=$2
CONFIG=$3
shift 3
WORK_DIR_ARGS=()
if [ $# -gt 0 ] && [[ $1 != -* ]]; then
    WORK_DIR_ARGS=(--work-dir "$1")
    shift
fi
GPUS=${GPUS:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CPUS_PER_TASK=${CPUS_PER_TASK:-5}
SRUN_ARGS=${SRUN_ARGS:-""}
PYTHON=${PYTHON:-python}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

# shellcheck disable=SC2086
PYTHONPATH="$ROOT:${PYTHONPATH:-}" \
srun -p "$PARTITION" \
    --job-name="$JOB_NAME" \
    --gres=gpu:"$GPUS_PER_NODE" \
    --ntasks="$GPUS" \
    --ntasks-per-node="$GPUS_PER_NODE" \
    --cpus-per-task="$CPUS_PER_TASK" \
    --kill-on-bad-exit=1 \
    $SRUN_ARGS \
    "$PYTHON" -u "$ROOT/tools/train.py" "$CONFIG" \
    ${WORK_DIR_ARGS[@]+"${WORK_DIR_ARGS[@]}"} --launcher slurm "$@"
