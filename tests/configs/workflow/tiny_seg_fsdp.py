# tiny_seg_layer_decay.py under the shipped FSDP strategy snippet, in fp32 (no
# bf16 mixed precision) so that it can equal the DDP run exactly. On a machine
# without a GPU the strategy runs FSDP on the CPU (gloo).
#   SAPIENS2_WORKFLOW_DATA=/tmp/seg tools/dist_train.sh THIS_FILE 2
_base_ = ['./tiny_seg_layer_decay.py',
          '../../../configs/_base_/strategies/fsdp_bf16.py']
strategy = dict(model_wrapper=dict(mixed_precision=None))
