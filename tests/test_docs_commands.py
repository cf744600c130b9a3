"""Every command shown in README.md and docs/*.md is run, in a tiny variant.

The ```bash blocks are parsed (continuation lines joined, comments dropped).
Each command maps to the test that runs its tiny variant (shipped configs
shrunk by tests/tiny_variants, bundled photos and samples, a few iterations),
or to the reason it cannot run here. A documented command without an entry
fails ``test_every_documented_command_is_covered``.
"""
import glob
import os.path as osp
import re
import shutil

import coco_wholebody_to_sapiens308 as wholebody_to_308
import cv2
import infer
import numpy as np
import publish_model
import pytest
import sapiens2_mm_to_official as mm_to_official
import sapiens2_official_to_mm as official_to_mm
import test as test_tool
import train as train_tool

from tests.conftest import COCO_DIR, PARITY_DIR, PHOTO, REPO_DIR
from tests.tiny_variants import (
    random_checkpoint,
    read_json,
    tiny_variant,
)

TINY_SEG = osp.join(REPO_DIR, 'configs', 'seg',
                    'sapiens2-tiny_1xb2-30_seg29sample-128x96.py')
POSE_308_1B = osp.join(REPO_DIR, 'configs', 'pose',
                       'sapiens2-1b_8xb7-20k_sapiens308-1024x768.py')
POSE_COCO_1B = osp.join(REPO_DIR, 'configs', 'pose',
                        'sapiens2-1b_8xb7-20k_coco-1024x768.py')
SEG_1B = osp.join(REPO_DIR, 'configs', 'seg',
                  'sapiens2-1b_8xb8-20k_seg29-1024x768.py')

CUDA = 'needs a CUDA GPU'
ESTIMATE = 'tests/test_tools/test_estimate_memory.py::'
TINY_4K_TRAIN = 'tests/test_tools/test_tiny_4k_training.py::' \
    'test_tiny_4k_config_learns_and_tests_at_the_original_size'
SLURM = 'needs a Slurm cluster (srun)'
DIST = 'tests/test_tools/test_distributed.py::' \
       'test_two_process_gloo_train_and_eval_match_single_process'
EXPORT = 'tests/test_tools/test_deployment.py::test_cli_exports_and_verifies'
# tools/dist_train.sh with the FSDP snippet on a tiny config, 2 CPU ranks
FSDP = 'tests/test_engine/test_fsdp_strategy.py::' \
    'test_fsdp_equals_ddp_with_weight_decay_and_layer_groups'

DENSE_TRAIN = 'tests/test_tools/test_dense_tiny_training.py::' \
    'test_tiny_dense_config_learns_and_tests'
DENSE_INFER = 'tests/test_tools/test_infer_dense.py::'
DENSE_MASKS = 'tests/test_tools/test_infer_dense_masks.py::'
FINETUNE = 'tests/test_models/test_selfsup/test_linear_probe.py::' \
    'test_linear_probe_on_exported_backbone'
# The benchmark commands run on a 2-block backbone at 64x48 (the 0.1B model
# takes minutes per variant on 2 cores).
BENCH_POSE = 'tests/test_tools/test_benchmark_inference.py::' \
    'test_pose_eager_fp32_bf16_and_end_to_end'
BENCH_SEG = 'tests/test_tools/test_benchmark_inference.py::' \
    'test_seg_compiled_matches_eager'
TINY_PRETRAIN = osp.join(REPO_DIR, 'configs', 'pretrain',
                         'sapiens2-tiny_pretrain-cpu-64x48.py')

BASELINES = 'tests/test_tools/test_baselines.py::'
CUSTOM = 'tests/test_tools/test_custom_data.py::'
COMPARE = 'tests/test_tools/test_compare_models.py::test_documented_comparison'
RES18_SAMPLE = 'configs/baselines/pose/td-hm_res18_1xb12-300_cocosample-128x96.py'
SEGFORMER_SAMPLE = ('configs/baselines/seg/'
                    'segformer_mit-b0_1xb2-30_seg29sample-128x96.py')


def documented_comparison(family: str) -> str:
    """The compare_models.py command of docs/baselines.md for a family
    (built where the test that runs it defines the models)."""
    from tests.test_tools.test_compare_models import documented_command
    return documented_command(family)


# command -> ('test', name in this file or path::name) or ('reason', why not).
COVERAGE = {
    'bash tools/run_sample_job.sh': ('reason', (
        'creates/updates .venv with tools/setup_env.sh, then trains 300 '
        'iterations; its train/test/infer steps run here as tiny variants')),
    'bash tools/run_tests.sh': ('reason', (
        'reinstalls .venv and runs the whole suite, which includes this test')),
    'bash tools/run_tests.sh -m "not slow"': ('reason', (
        'reinstalls .venv and runs the suite without the slow-marked tests, '
        'which includes this test')),
    'source .venv/bin/activate': ('reason', (
        'shell set-up; the tests already run in that environment')),
    'python tools/model_converters/sapiens2_official_to_mm.py '
    'sapiens2_1b_pose.safetensors sapiens2-1b_pose.pth':
        ('test', 'test_model_converters_round_trip_and_publish'),
    'python tools/model_converters/sapiens2_mm_to_official.py '
    'work_dirs/x/iter_20000.pth mine.safetensors':
        ('test', 'test_model_converters_round_trip_and_publish'),
    'python tools/model_converters/publish_model.py '
    'work_dirs/x/iter_20000.pth sapiens2-1b_pose.pth':
        ('test', 'test_model_converters_round_trip_and_publish'),
    'python tools/train.py configs/seg/'
    'sapiens2-tiny_1xb2-30_seg29sample-128x96.py':
        ('test', 'test_train_tiny_seg'),
    'python tools/train.py CONFIG --resume': ('test', 'test_resume_auto_and_path'),
    'python tools/train.py CONFIG --resume work_dirs/x/iter_2000.pth':
        ('test', 'test_resume_auto_and_path'),
    'python tools/train.py CONFIG --amp --cfg-options '
    'train_dataloader.batch_size=4 model.backbone.with_cp=True':
        ('test', 'test_train_cfg_options_with_cp'),  # --amp: CUDA only
    'python tools/test.py CONFIG sapiens2_1b_pose.safetensors --show-dir vis/ '
    '--out preds.pkl': ('test', 'test_test_pth_and_official_safetensors'),
    'python tools/test.py CONFIG CHECKPOINT [--work-dir DIR] [--out preds.pkl] '
    '[--show-dir DIR] [--cfg-options ...] [--launcher none|pytorch|slurm]':
        ('test', 'test_test_pth_and_official_safetensors'),
    'python tools/test.py configs/seg/sapiens2-1b_8xb8-20k_seg29-1024x768.py '
    'CKPT.safetensors': ('test', 'test_test_1b_seg_config_on_safetensors'),
    'tools/dist_train.sh CONFIG 8': ('test', DIST),
    'tools/dist_test.sh CONFIG CHECKPOINT 8': ('test', DIST),
    'tools/dist_train.sh CONFIG GPUS [train.py options]': ('test', DIST),
    'tools/dist_test.sh CONFIG CHECKPOINT GPUS [test.py options]':
        ('test', DIST),
    'tools/dist_train.sh configs/seg/sapiens2-1b_8xb8-20k_seg29-1024x768.py 8':
        ('test', DIST),
    'NNODES=2 NODE_RANK=0 MASTER_ADDR=host0 PORT=29500 tools/dist_train.sh '
    'CONFIG 8': ('reason', 'needs two hosts'),
    'GPUS=16 tools/slurm_train.sh PARTITION JOB CONFIG': ('reason', SLURM),
    'GPUS=16 tools/slurm_train.sh PARTITION JOB CONFIG [WORK_DIR] [options]':
        ('reason', SLURM),
    'GPUS=8 tools/slurm_test.sh PARTITION JOB CONFIG CHECKPOINT [options]':
        ('reason', SLURM),
    'tools/dist_train.sh configs/pose/'
    'sapiens2-0.8b_8xb12-10k_sapiens308-1024x768_fsdp.py 8': ('test', FSDP),
    # Memory estimate (docs/large_models.md).
    'python tools/analysis_tools/estimate_memory.py '
    'configs/pose/sapiens2-1b_8xb7-20k_sapiens308-1024x768.py': (
        'test', ESTIMATE + 'test_every_shipped_config_fits_the_gpus_its_name_'
        'gives'),
    'python tools/analysis_tools/estimate_memory.py '
    'configs/seg/sapiens2-1b_8xb8-20k_seg29-1024x768.py --gpus 1 '
    '--gpu-memory 24': ('test', ESTIMATE + 'test_yes_or_no_with_the_exit_'
                        'status'),
    'python tools/analysis_tools/estimate_memory.py --table '
    'configs/*/sapiens2-[015]*.py': (
        'test', ESTIMATE + 'test_every_shipped_config_fits_the_gpus_its_name_'
        'gives'),
    'python tools/benchmarks/estimate_memory_calibration.py --out calib.json':
        ('test', ESTIMATE + 'test_estimate_is_near_a_measured_cpu_peak'),
    'python tools/gpu_acceptance.py --check-imports': (
        'test', 'tests/test_tools/test_gpu_acceptance.py::'
        'test_check_imports_reports_the_stack'),
    'bash tools/fetch_acceptance_wheels.sh': ('reason', (
        'downloads wheels from PyPI for the GPU machine; the list was fetched '
        'and the stack imported from it under Python 3.12, torch 2.11, numpy '
        '2.5 when it was written (docs/large_models.md)')),
    'bash tools/gpu_acceptance.sh OUT_DIR': ('reason', (
        'needs a CUDA GPU; every stage runs with tiny shapes on the CPU in '
        'tests/test_tools/test_gpu_acceptance.py::test_dry_run_every_stage')),
    'bash tools/gpu_acceptance.sh --dry-run OUT_DIR': (
        'test', 'tests/test_tools/test_gpu_acceptance.py::'
        'test_dry_run_every_stage'),
    'git clone --depth 1 https://github.com/facebookresearch/sapiens2 '
    '.official/sapiens2': ('reason', (
        'downloads the official repository (network); the comparison it '
        'feeds runs on a local snapshot when one is there, and is skipped '
        'with its reason in the dry run of CI')),
    'python tools/benchmarks/fsdp.py --embed-dims 384 '
    '--num-layers 8 --iters 3 --out fsdp_bench.json': (
        'test', 'tests/test_tools/test_benchmarks.py::'
        'test_tiny_benchmark_variants_agree_and_shard'),
    'python tools/benchmarks/fsdp_memory.py --out fsdp_memory.json': (
        'test', 'tests/test_tools/test_benchmarks.py::'
        'test_tiny_fsdp_memory_benchmark_resumes_one_state'),
    'python tools/model_converters/consolidate_sharded_checkpoint.py '
    'work_dirs/my_pose_5b/iter_20000.pth sapiens2_5b_pose_iter_20000.pth': (
        'test', 'tests/test_engine/test_fsdp_sharded_checkpoint.py::'
        'test_consolidated_checkpoint_resumes_full_and_converts'),
    'python tools/infer.py pose configs/pose/'
    'sapiens2-1b_8xb7-20k_sapiens308-1024x768.py '
    'checkpoints/pose/sapiens2_1b_pose.safetensors --input photos/ '
    '--output out/pose [--bboxes boxes.json | --det-config DET.py '
    '--det-checkpoint DET.pth] --flip-test':
        ('test', 'test_infer_pose_308_whole_image_flip'),
    'python tools/infer.py pose configs/pose/'
    'sapiens2-1b_8xb7-20k_sapiens308-1024x768.py '
    'checkpoints/pose/sapiens2_1b_pose.safetensors --input photos/ '
    '--output out/pose --flip-test --device cuda:0 --batch-size 16':
        ('test', 'test_infer_pose_308_whole_image_flip'),  # device: cpu here
    'python tools/infer.py pose CONFIG CKPT --input photos/ --output out/pose '
    '--bboxes boxes.json': ('test', 'test_infer_pose_box_file'),
    'python tools/infer.py pose CONFIG CKPT --input clip.mp4 --output out/pose '
    '--det-config rtmdet_m_640-8xb32_coco-person.py '
    '--det-checkpoint rtmdet_m.pth': ('test', 'test_infer_pose_detector_video'),
    'python tools/infer.py seg configs/seg/sapiens2-1b_8xb8-20k_seg29-1024x768.py '
    'checkpoints/seg/sapiens2_1b_seg.safetensors --input video.mp4 '
    '--output out/seg': ('test', 'test_infer_seg_video_and_photos'),
    'python tools/infer.py seg configs/seg/sapiens2-1b_8xb8-20k_seg29-1024x768.py '
    'checkpoints/seg/sapiens2_1b_seg.safetensors --input photos/ '
    '--output out/seg': ('test', 'test_infer_seg_video_and_photos'),
    'python tools/deployment/export_model.py CONFIG CKPT --output export/ '
    '--verify': ('test', EXPORT),
    'python tools/deployment/export_model.py CONFIG [CHECKPOINT] '
    '--output export/ [--shape 1024 768] [--max-batch 32] [--verify] [--onnx] '
    '[--device cuda:0] [--overwrite]': ('test', EXPORT),
    # --onnx: test_onnx_export_*; --overwrite:
    # test_deployment.py::test_an_earlier_export_is_never_replaced
    # Dense tasks (docs/dense.md, docs/dense_data.md, docs/inference.md).
    'python tools/train.py configs/normal/'
    'sapiens2-tiny_1xb2-30_densesample-128x96.py --work-dir work_dirs/normal_tiny':
        ('test', DENSE_TRAIN),
    'python tools/test.py configs/normal/'
    'sapiens2-tiny_1xb2-30_densesample-128x96.py '
    'work_dirs/normal_tiny/iter_30.pth --work-dir work_dirs/normal_tiny/test '
    '--show-dir work_dirs/normal_tiny/show': ('test', DENSE_TRAIN),
    'python tools/infer.py normal configs/normal/'
    'sapiens2-tiny_1xb2-30_densesample-128x96.py '
    'work_dirs/normal_tiny/iter_30.pth --input photos/ --output out/normal '
    '--batch-size 2': ('test', DENSE_INFER + 'test_normal_outputs_read_back'),
    'python tools/infer.py pointmap configs/pointmap/'
    'sapiens2-tiny_1xb2-30_densesample-128x96.py '
    'work_dirs/pointmap_tiny/iter_30.pth --input photos/ --output out/pointmap '
    '--ply-step 4 --no-vis':
        ('test', DENSE_INFER + 'test_pointmap_ply_step_and_its_error'),
    'python tools/infer.py albedo configs/albedo/'
    'sapiens2-tiny_1xb2-30_densesample-128x96.py '
    'work_dirs/albedo_tiny/iter_30.pth --input photos/ --output out/albedo '
    '--flip-test': ('test', DENSE_INFER + 'test_albedo_outputs_read_back'),
    'python tools/dataset_converters/generate_synthetic_dense.py data/synthetic '
    '--num-scenes 100 --height 256 --width 192 --seed 0 '
    '[--tasks normal pointmap albedo] '
    '[--normal-convention opencv|opencv_away|opengl] '
    '[--image-format .png|.jpg] [--normal-format .npy|.npz]':
        ('test', 'tests/test_tools/test_generate_synthetic_dense.py::'
                 'test_cli_writes_every_layout_and_refuses_to_overwrite'),
    'python tools/infer.py normal configs/normal/'
    'sapiens2-1b_8xb7-40k_normal-1024x768.py '
    'checkpoints/normal/sapiens2_1b_normal.safetensors --input photos/ clip.mp4 '
    '--output out/normal': ('test', DENSE_INFER + 'test_normal_outputs_read_back'),
    'python tools/infer.py pointmap configs/pointmap/'
    'sapiens2-1b_8xb3-40k_pointmap-1024x768.py '
    'checkpoints/pointmap/sapiens2_1b_pointmap.safetensors --input photos/ '
    '--output out/pointmap [--ply-step N]':
        ('test', DENSE_INFER + 'test_pointmap_outputs_read_back'),
    'python tools/infer.py albedo CONFIG CKPT --input photos/ --output out/albedo '
    '[--flip-test]': ('test', DENSE_INFER + 'test_albedo_outputs_read_back'),
    # foreground masks and large photos (docs/inference.md)
    'python tools/infer.py seg SEG_CONFIG SEG_CKPT --input photos/ '
    '--output out/seg': ('test', DENSE_MASKS + 'test_seg_run_then_dense_seg_dir'),
    'python tools/infer.py normal CONFIG CKPT --input photos/ --output '
    'out/normal --seg-dir out/seg':
        ('test', DENSE_MASKS + 'test_seg_run_then_dense_seg_dir'),
    'python tools/infer.py pointmap CONFIG CKPT --input photos/ --output '
    'out/pointmap --fg-seg SEG_CONFIG SEG_CKPT':
        ('test', DENSE_MASKS +
         'test_fg_seg_in_the_same_pass_and_each_photo_decoded_once'),
    'python tools/infer.py pointmap CONFIG CKPT --input big_photo.jpg '
    '--output out/big --array-dtype float16 --ply-step auto':
        ('test', DENSE_MASKS + 'test_float16_arrays'),
    'python tools/train.py CONFIG [--work-dir DIR] [--resume [auto|PATH]] '
    '[--amp] [--load-partial] [--ignore-lock] [--cfg-options key=value ...] '
    '[--launcher none|pytorch|slurm]': ('test', 'test_resume_auto_and_path'),
    # Pretraining (docs/pretrain.md).
    'python tools/train.py configs/pretrain/sapiens2-tiny_pretrain-cpu-64x48.py':
        ('test', 'test_train_tiny_pretrain'),
    'tools/dist_train.sh configs/pretrain/sapiens2-0.4b_pretrain-1024x768.py 1 '
    '--cfg-options train_dataloader.dataset.data_root=/data/humans':
        ('reason', (
            'official-size pretraining (0.4B at 1024x768, FSDP bf16 on a GPU); '
            'its FSDP path runs on the tiny pretrain config, 2 CPU ranks, in '
            'tests/test_engine/test_fsdp_strategy.py::'
            'test_fsdp_pretraining_teacher_equals_ddp, and every pretrain '
            'config is built in tests/test_configs.py')),
    'tools/dist_train.sh configs/pretrain/sapiens2-1b_pretrain-1024x768.py 8':
        ('reason', (
            'official-size 1B pretraining (FSDP on 8 GPUs); its FSDP path runs '
            'on the tiny pretrain config, 2 CPU ranks, in tests/test_engine/'
            'test_fsdp_strategy.py::test_fsdp_pretraining_teacher_equals_ddp')),
    'GPUS=64 tools/slurm_train.sh PARTITION pretrain_1b '
    'configs/pretrain/sapiens2-1b_pretrain-1024x768.py work_dirs/pretrain_1b':
        ('reason', SLURM),
    'python tools/model_converters/export_pretrain.py '
    'work_dirs/pretrain_1b/iter_500000.pth sapiens2_1b_pretrain.safetensors '
    '--pth sapiens2_1b_pretrain_teacher.pth':
        ('test', 'tests/test_tools/test_export_pretrain.py::test_cli'),
    'tools/dist_train.sh configs/pose/sapiens2-1b_8xb7-20k_sapiens308-1024x768.py '
    '8 --cfg-options model.backbone.init_cfg.checkpoint='
    'sapiens2_1b_pretrain.safetensors': ('test', FINETUNE),
    'tools/dist_train.sh configs/seg/sapiens2-1b_8xb8-20k_seg29-1024x768.py 8 '
    '--cfg-options model.backbone.init_cfg.checkpoint='
    'sapiens2_1b_pretrain.safetensors': ('test', FINETUNE),
    'python tools/model_converters/export_pretrain.py '
    'work_dirs/sapiens2-tiny_pretrain-cpu-64x48/iter_40.pth '
    'work_dirs/sapiens2_tiny_pretrain.safetensors':
        ('test', 'test_tiny_pretrain_export_finetune_chain'),
    'python tools/train.py configs/pretrain/'
    'sapiens2-tiny_finetune-pose_cocosample-128x96.py':
        ('test', 'test_tiny_pretrain_export_finetune_chain'),
    'python tools/train.py configs/pose/'
    'sapiens2-tiny_1xb12-300_sapiens308sample-128x96.py '
    '--work-dir work_dirs/pose308_tiny':
        ('test', 'test_tiny_308_config_trains_and_tests'),
    'python tools/test.py configs/pose/'
    'sapiens2-tiny_1xb12-300_sapiens308sample-128x96.py '
    'work_dirs/pose308_tiny/iter_300.pth':
        ('test', 'test_tiny_308_config_trains_and_tests'),
    'python tools/analysis_tools/show_reconstructions.py '
    'configs/pretrain/sapiens2-tiny_pretrain-cpu-64x48.py '
    'work_dirs/sapiens2-tiny_pretrain-cpu-64x48/iter_40.pth '
    '--input my_photos/ --output-dir work_dirs/reconstructions':
        ('test', 'tests/test_tools/test_show_reconstructions.py::'
                 'test_panels_are_legible_and_show_the_masked_photo'),
    # Speed options (docs/inference.md).
    'python tools/infer.py pose CONFIG CKPT --input photos/ --output out/ '
    '--bboxes boxes.json --batch-size 16 --compile --dtype bf16': ('reason', (
        '--dtype bf16 is refused on this CPU (bf16 emulated, no AMX), tested '
        'in tests/test_apis/test_precision.py::'
        'test_infer_cli_bf16_without_support_fails_before_any_frame; '
        '--compile, --batch-size and --bboxes run in tests/test_apis/'
        'test_compile.py and tests/test_apis/test_runner.py')),
    'python tools/analysis_tools/benchmark_inference.py '
    'configs/pose/sapiens2-0.4b_8xb6-10k_coco-1024x768.py --arch sapiens2_0.1b '
    '--input-size 512 384 --input tests/data/coco_sample --boxes coco '
    '--compile --dtypes fp32 bf16': ('test', BENCH_POSE),
    'python tools/analysis_tools/benchmark_inference.py '
    'configs/pose/sapiens2-0.4b_8xb6-10k_coco-1024x768.py --arch sapiens2_0.1b '
    '--input-size 128 96 --repeat 2 --compile --dtypes fp32 bf16 '
    '--compile-dtypes fp32 bf16': ('test', BENCH_POSE),
    'python tools/analysis_tools/benchmark_inference.py '
    'configs/seg/sapiens2-0.4b_8xb12-20k_seg29-1024x768.py --arch sapiens2_0.1b '
    '--input-size 128 96 --repeat 2 --compile --dtypes fp32 bf16 '
    '--compile-dtypes fp32 bf16': ('test', BENCH_SEG),
    'python tools/analysis_tools/benchmark_cpu_stages.py '
    'configs/pose/sapiens2-0.4b_8xb6-10k_coco-1024x768.py --upscale 4032 '
    '3024 --workers 1 2': ('test', (
        'tests/test_tools/test_analysis_tools.py::'
        'test_benchmark_cpu_stages_counts_every_item')),
    'python tools/benchmarks/label_resize.py': ('test', (
        'tests/test_tools/test_benchmarks.py::'
        'test_label_resize_both_ways_agree')),
    'python tools/benchmarks/loader_4k.py --rounds 3 --samples 4 --steps': (
        'test', ('tests/test_tools/test_benchmarks.py::'
                 'test_loader_4k_before_and_after_give_equal_batches')),
    'python tools/dataset_converters/coco_wholebody_to_sapiens308.py '
    'data/coco/annotations/coco_wholebody_val_v1.0.json '
    'data/coco/annotations/coco_wholebody_val_308.json':
        ('test', 'test_wholebody_to_308_converter'),
    # 4K models (docs/4k.md).
    'python tools/analysis_tools/get_flops.py --arch sapiens2_1b_4k': (
        'test', 'tests/test_tools/test_analysis_tools.py::'
        'test_get_flops_4k_backbone_params_and_macs'),
    'python tools/analysis_tools/estimate_memory.py '
    'configs/seg/sapiens2-1b-4k_8xb4-40k_seg29-4096x3072.py': (
        'test', ESTIMATE + 'test_every_shipped_config_fits_the_gpus_its_name_'
        'gives'),
    'tools/dist_train.sh configs/seg/'
    'sapiens2-1b-4k_8xb4-40k_seg29-4096x3072.py 8': ('reason', (
        'full-size 1B-4K training on 8 GPUs with the official 4K pretrain '
        'file; the same 4K path (tokenizer, 2K head, 2K labels) trains in '
        'tests/test_tools/test_tiny_4k_training.py, dist_train.sh runs in '
        + DIST + ', and the config builds and runs (tiny variant) in '
        'tests/test_all_configs_inference.py')),
    'python tools/infer.py seg '
    'configs/seg/sapiens2-1b-4k_8xb4-40k_seg29-4096x3072.py '
    'work_dirs/seg_4k/iter_40000.pth --input photos/ --output out/seg_4k': (
        'test', 'tests/test_all_configs_inference.py::'
        'test_infer_cli_on_a_bundled_photo'),
    'python tools/train.py configs/seg/'
    'sapiens2-tiny-4k_1xb2-30_seg29sample-512x384.py': (
        'test', TINY_4K_TRAIN),
    'python tools/train.py configs/normal/'
    'sapiens2-tiny-4k_1xb2-30_densesample-512x384.py': (
        'test', TINY_4K_TRAIN),
    'python tools/train.py configs/pointmap/'
    'sapiens2-tiny-4k_1xb2-30_densesample-512x384.py': (
        'test', TINY_4K_TRAIN),
    'python tools/train.py configs/albedo/'
    'sapiens2-tiny-4k_1xb2-30_densesample-512x384.py': (
        'test', TINY_4K_TRAIN),
    'python tools/train.py configs/pose/'
    'sapiens2-tiny-4k_1xb12-300_sapiens308sample-512x384.py': (
        'test', TINY_4K_TRAIN),
    # Baselines and own data (docs/baselines.md, docs/custom_data.md).
    'python tools/train.py ' + RES18_SAMPLE + ' --work-dir work_dirs/pose_res18':
        ('test', BASELINES + 'test_our_tools_train_and_test_stock_configs'),
    'python tools/test.py ' + RES18_SAMPLE +
    ' work_dirs/pose_res18/iter_300.pth':
        ('test', BASELINES + 'test_our_tools_train_and_test_stock_configs'),
    'python tools/infer.py pose ' + RES18_SAMPLE +
    ' work_dirs/pose_res18/iter_300.pth --input tests/data/coco_sample '
    '--output out/res18 --bboxes tests/data/coco_sample/test_coco.json': (
        'test', 'tests/test_apis/test_foreign_models.py::'
        'test_infer_cli_runs_a_stock_pose_config'),
    'python -m sapiens2_mm.upstream mmpose train ' + RES18_SAMPLE:
        ('test', BASELINES + 'test_mmpose_own_tools_run_the_stock_config'),
    'python -m sapiens2_mm.upstream mmseg test ' + SEGFORMER_SAMPLE +
    ' work_dirs/seg_segformer/iter_30.pth':
        ('test', BASELINES + 'test_mmseg_own_tools_run_the_stock_config'),
    'python -m sapiens2_mm.upstream mmpose analysis_tools/get_flops ' +
    RES18_SAMPLE + ' --input-shape 128 96': ('test', BASELINES + (
        'test_python_m_entry_runs_a_tool_that_imports_mmpose_first')),
    'python tools/analysis_tools/get_flops.py ' + SEGFORMER_SAMPLE: (
        'test', 'tests/test_apis/test_model_cost.py::'
        'test_get_flops_cli_names_source_conventions_and_build'),
    **{documented_comparison(family): ('test', COMPARE)
       for family in ('pose', 'seg', 'normal')},
    'python tools/train.py configs/examples/pose/'
    'sapiens2-tiny_1xb12-300_hand21-128x96.py':
        ('test', CUSTOM + 'test_21_hand_keypoints_train_and_test'),
    'python tools/train.py configs/examples/seg/'
    'sapiens2-tiny_1xb2-30_parts20-128x96.py':
        ('test', CUSTOM + 'test_adapted_20_class_config_trains_and_tests'),
    'python tools/train.py configs/examples/normal/'
    'sapiens2-tiny_1xb2-30_normal-png-128x96.py':
        ('test', CUSTOM + 'test_png_normals_without_masks_train_and_test'),
}


def documented_commands():
    """``{command: [files]}`` of the ```bash blocks of README.md and docs/."""
    found = {}
    pages = ['README.md'] + sorted(
        osp.relpath(p, REPO_DIR)
        for p in glob.glob(osp.join(REPO_DIR, 'docs', '*.md')))
    for page in pages:
        with open(osp.join(REPO_DIR, page)) as f:
            text = f.read()
        for block in re.findall(r'^```(?:bash|sh|shell)\n(.*?)^```', text,
                                re.S | re.M):
            for line in re.sub(r'\\\n\s*', ' ', block).splitlines():
                line = re.sub(r'(^|\s)#.*$', '', line).strip()
                if line:
                    found.setdefault(' '.join(line.split()), []).append(page)
    return found


def test_every_documented_command_is_covered():
    documented = documented_commands()
    missing = {c: p for c, p in documented.items() if c not in COVERAGE}
    assert not missing, (
        'Documented commands without a tiny variant or a reason; add them to '
        f'COVERAGE in {__file__}: {missing}')
    stale = sorted(set(COVERAGE) - set(documented))
    assert not stale, f'COVERAGE lists commands no page shows: {stale}'
    names = {n for n in globals() if n.startswith('test_')}
    for kind, value in COVERAGE.values():
        if kind != 'test':
            continue
        if '::' in value:
            path, name = value.split('::')
            with open(osp.join(REPO_DIR, path)) as f:
                assert f'def {name}(' in f.read(), value
        else:
            assert value in names, value


# ----------------------------------------------------------------- train/test
@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    """tools/train.py on the tiny seg config: 2 iterations, one evaluation."""
    work = str(tmp_path_factory.mktemp('docs') / 'work')
    train_tool.main([TINY_SEG, '--work-dir', work, '--launcher', 'none',
                     '--cfg-options', 'train_cfg.max_iters=2',
                     'train_cfg.val_interval=2',
                     'experiment_name=docs_train'])
    return work


def test_train_tiny_seg(trained):
    assert osp.isfile(osp.join(trained, 'iter_2.pth'))
    assert glob.glob(osp.join(trained, '*', 'vis_data', 'scalars.json'))


def test_resume_auto_and_path(trained, tmp_path):
    work = str(tmp_path / 'work')
    shutil.copytree(trained, work)
    train_tool.main([TINY_SEG, '--work-dir', work, '--resume',
                     '--cfg-options', 'train_cfg.max_iters=3',
                     'experiment_name=docs_resume_auto'])
    assert osp.isfile(osp.join(work, 'iter_3.pth'))
    train_tool.main([TINY_SEG, '--work-dir', work, '--resume',
                     osp.join(work, 'iter_3.pth'), '--cfg-options',
                     'train_cfg.max_iters=4', 'experiment_name=docs_resume_pth'])
    assert osp.isfile(osp.join(work, 'iter_4.pth'))


def test_train_cfg_options_with_cp(tmp_path):
    """The documented overrides; --amp is left out (AmpOptimWrapper: CUDA)."""
    work = str(tmp_path / 'work')
    train_tool.main([TINY_SEG, '--work-dir', work, '--cfg-options',
                     'train_dataloader.batch_size=4',
                     'model.backbone.with_cp=True', 'train_cfg.max_iters=1',
                     'train_cfg.val_interval=1', 'experiment_name=docs_cp'])
    assert osp.isfile(osp.join(work, 'iter_1.pth'))


def test_test_pth_and_official_safetensors(trained, tmp_path):
    ckpt = osp.join(trained, 'iter_2.pth')
    show, out = str(tmp_path / 'vis'), str(tmp_path / 'preds.pkl')
    from_pth = test_tool.main([
        TINY_SEG, ckpt, '--work-dir', str(tmp_path / 't1'), '--show-dir', show,
        '--out', out, '--launcher', 'none', '--cfg-options',
        'experiment_name=docs_test_pth'])
    assert osp.isfile(out)
    assert glob.glob(osp.join(show, '**', '*.png'), recursive=True) or \
        glob.glob(osp.join(show, '**', '*.jpg'), recursive=True)
    official = str(tmp_path / 'mine.safetensors')
    mm_to_official.main([ckpt, official])
    from_official = test_tool.main([
        TINY_SEG, official, '--work-dir', str(tmp_path / 't2'),
        '--cfg-options', 'experiment_name=docs_test_st'])
    assert from_official['mIoU'] == from_pth['mIoU']


def test_test_1b_seg_config_on_safetensors(tmp_path):
    tiny = tiny_variant(SEG_1B, str(tmp_path), with_test_data=True)
    pth = random_checkpoint(tiny, str(tmp_path / 'random.pth'))
    official = str(tmp_path / 'CKPT.safetensors')
    mm_to_official.main([pth, official])
    metrics = test_tool.main([tiny, official, '--work-dir', str(tmp_path / 'w'),
                              '--cfg-options', 'experiment_name=docs_seg1b'])
    assert 'mIoU' in metrics


def test_model_converters_round_trip_and_publish(trained, tmp_path):
    source = osp.join(PARITY_DIR, 'tiny18_pose.safetensors')
    pth = str(tmp_path / 'sapiens2-tiny_pose.pth')
    official_to_mm.main([source, pth])
    back = str(tmp_path / 'mine.safetensors')
    mm_to_official.main([pth, back])
    from safetensors.torch import load_file
    a, b = load_file(source), load_file(back)
    assert a.keys() == b.keys()
    assert all((a[k] == b[k]).all() for k in a)
    published = publish_model.main([osp.join(trained, 'iter_2.pth'),
                                    str(tmp_path / 'seg-tiny.pth')])
    names = glob.glob(str(tmp_path / 'seg-tiny-*.pth'))
    assert len(names) == 1, (published, names)


# ---------------------------------------------------------------------- infer
@pytest.fixture
def photos(tmp_path):
    folder = tmp_path / 'photos'
    folder.mkdir()
    shutil.copy(PHOTO, folder)
    return str(folder)


@pytest.fixture
def clip(tmp_path):
    path = str(tmp_path / 'clip.mp4')
    frame = cv2.resize(cv2.imread(PHOTO), (160, 96))
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*'mp4v'), 4.0,
                             (160, 96))
    for _ in range(2):
        writer.write(frame)
    writer.release()
    return path


def test_infer_pose_308_whole_image_flip(photos, tmp_path):
    out = tmp_path / 'out' / 'pose'
    rc = infer.main(['pose', tiny_variant(POSE_308_1B, str(tmp_path)),
                     '--input', photos, '--output', str(out), '--flip-test',
                     '--batch-size', '2'])
    assert rc == 0
    assert read_json(out / 'pose_predictions.json')['num_keypoints'] == 308


def test_infer_pose_box_file(photos, tmp_path):
    boxes = tmp_path / 'boxes.json'
    boxes.write_text('{"%s": [[250, 40, 470, 390, 0.9]]}' % osp.basename(PHOTO))
    out = tmp_path / 'out' / 'pose'
    rc = infer.main(['pose', tiny_variant(POSE_COCO_1B, str(tmp_path)),
                     '--input', photos, '--output', str(out), '--bboxes',
                     str(boxes)])
    assert rc == 0
    (frame, ) = read_json(out / 'pose_predictions.json')['frames']
    assert [round(v) for v in frame['instances'][0]['bbox'][:4]] == \
        [250, 40, 470, 390]


def test_infer_pose_detector_video(clip, tmp_path):
    """mmdet's RTMDet-tiny config with random weights stands in for the
    documented RTMDet-m download."""
    import mmdet
    det = osp.join(osp.dirname(mmdet.__file__), '.mim', 'configs', 'rtmdet',
                   'rtmdet_tiny_8xb32-300e_coco.py')
    assert osp.isfile(det), det
    out = tmp_path / 'out' / 'pose'
    rc = infer.main(['pose', tiny_variant(POSE_COCO_1B, str(tmp_path)),
                     '--input', clip, '--output', str(out), '--det-config',
                     det])
    assert rc == 0
    assert len(read_json(out / 'pose_predictions.json')['frames']) == 2
    assert (out / 'clip.mp4').is_file()


def test_infer_seg_video_and_photos(clip, photos, tmp_path):
    tiny = tiny_variant(SEG_1B, str(tmp_path))
    out = tmp_path / 'out' / 'seg'
    assert infer.main(['seg', tiny, '--input', clip, '--output', str(out)]) == 0
    assert (out / 'clip.mp4').is_file()
    assert infer.main(['seg', tiny, '--input', photos, '--output',
                       str(out)]) == 0
    stem = osp.splitext(osp.basename(PHOTO))[0]
    assert np.load(out / f'{stem}_seg.npy').shape == cv2.imread(PHOTO).shape[:2]


def test_wholebody_to_308_converter(tmp_path):
    out = str(tmp_path / 'coco_wholebody_val_308.json')
    wholebody_to_308.main([osp.join(COCO_DIR, 'test_coco_wholebody.json'), out])
    data = read_json(out)
    assert data['annotations']
    assert all(np.asarray(a['goliath_wholebody_kpts']).size == 308 * 3
               for a in data['annotations'])


def test_train_tiny_pretrain(tmp_path):
    """tools/train.py on the tiny pretraining config, two iterations."""
    work = str(tmp_path / 'work')
    train_tool.main([TINY_PRETRAIN, '--work-dir', work, '--cfg-options',
                     'train_cfg.max_iters=2', 'experiment_name=docs_pretrain'])
    assert osp.isfile(osp.join(work, 'iter_2.pth'))


def torch_equal(a, b) -> bool:
    return bool((a.float() == b.float()).all())


def _run_log(work_dir: str) -> str:
    (path, ) = glob.glob(osp.join(work_dir, '*', '*.log'))
    with open(path) as f:
        return f.read()


def _pth_state(path: str) -> dict:
    import torch
    return torch.load(path, map_location='cpu', weights_only=True)[
        'state_dict']


def test_tiny_pretrain_export_finetune_chain(tmp_path):
    """docs/pretrain.md's CPU chain: pretrain (1 iteration here), export
    the teacher, fine-tune the tiny pose config from it (1 iteration at
    lr 0, so the saved backbone is the export, tensor for tensor). The load
    is logged with the file and the tensor count (issue 18 items 11, 15)."""
    import export_pretrain
    from safetensors.torch import load_file
    pre = str(tmp_path / 'pre')
    train_tool.main([TINY_PRETRAIN, '--work-dir', pre, '--cfg-options',
                     'train_cfg.max_iters=1', 'experiment_name=chain_pre'])
    exported = str(tmp_path / 'sapiens2_tiny_pretrain.safetensors')
    export_pretrain.main([osp.join(pre, 'iter_1.pth'), exported])
    work = str(tmp_path / 'ft')
    finetune = osp.join(REPO_DIR, 'configs', 'pretrain',
                        'sapiens2-tiny_finetune-pose_cocosample-128x96.py')
    train_tool.main([finetune, '--work-dir', work, '--cfg-options',
                     f'model.backbone.init_cfg.checkpoint={exported}',
                     'train_cfg.max_iters=1', 'optim_wrapper.optimizer.lr=0.0',
                     'experiment_name=chain_ft'])
    weights = load_file(exported)
    saved = _pth_state(osp.join(work, 'iter_1.pth'))
    for key, value in weights.items():
        assert torch_equal(saved[f'backbone.{key}'], value), key
    assert (f'Pretrained: loaded {len(weights)} tensors from {exported}; '
            'every tensor of the file was used.') in _run_log(work)


def test_init_cfg_override_on_a_config_whose_init_cfg_is_none(tmp_path):
    """The tiny pose config has init_cfg=None; the documented override
    loads the backbone of a task checkpoint (its head keys are skipped and
    listed in the log)."""
    import torch
    from mmengine.config import Config
    from safetensors.torch import save_file

    from sapiens2_mm.registry import MODELS
    config = osp.join(REPO_DIR, 'configs', 'pose',
                      'sapiens2-tiny_1xb12-300_cocosample-128x96.py')
    cfg = Config.fromfile(config)
    assert cfg.model.backbone.init_cfg is None
    torch.manual_seed(3)
    backbone = MODELS.build(cfg.model.backbone)
    backbone.init_weights()
    state = {f'backbone.{k}': v.contiguous()
             for k, v in backbone.state_dict().items()}
    state['head.final_layer.weight'] = torch.zeros(17, 16, 1, 1)
    path = str(tmp_path / 'task.safetensors')
    save_file(state, path)
    work = str(tmp_path / 'w')
    train_tool.main([config, '--work-dir', work, '--cfg-options',
                     f'model.backbone.init_cfg.checkpoint={path}',
                     'train_cfg.max_iters=1', 'optim_wrapper.optimizer.lr=0.0',
                     'experiment_name=init_none'])
    saved = _pth_state(osp.join(work, 'iter_1.pth'))
    for key, value in state.items():
        if key.startswith('backbone.'):
            assert torch_equal(saved[key], value), key
    log = _run_log(work)
    assert ('model.backbone.init_cfg was None; it starts from '
            "{'type': 'Pretrained'} instead.") in log
    assert (f'Pretrained: loaded {len(state) - 1} tensors from {path} (keys '
            "under 'backbone.'); 1 key(s) of the file not used: "
            'head.final_layer.weight.') in log


@pytest.mark.slow  # trains and tests: 34 s
def test_tiny_308_config_trains_and_tests(tmp_path):
    """Issue 18: the flagship 308-keypoint task had no sample config. The
    bundled annotations are the converter's output for the bundled
    COCO-WholeBody file (byte for byte); train.py (2 iterations here) and
    test.py run on them and report the 308-keypoint metric."""
    import json
    config = osp.join(REPO_DIR, 'configs', 'pose',
                      'sapiens2-tiny_1xb12-300_sapiens308sample-128x96.py')
    converted = str(tmp_path / 'converted.json')
    wholebody_to_308.main([osp.join(COCO_DIR, 'test_coco_wholebody.json'),
                           converted])
    with open(converted, 'rb') as f, open(
            osp.join(COCO_DIR, 'test_sapiens308.json'), 'rb') as g:
        assert f.read() == g.read()
    work = str(tmp_path / 'pose308_tiny')
    train_tool.main([config, '--work-dir', work, '--cfg-options',
                     'train_cfg.max_iters=2', 'experiment_name=pose308'])
    test_work = str(tmp_path / 'test')
    test_tool.main([config, osp.join(work, 'iter_2.pth'), '--work-dir',
                    test_work])
    with open(osp.join(test_work, 'test_metrics.json')) as f:
        metrics = json.load(f)
    assert 0 <= metrics['keypoints308/AP'] <= 1
    assert metrics['keypoints308/face/AP'] == -1  # no face labels
    assert 'keypoints308/body/AP' in metrics
