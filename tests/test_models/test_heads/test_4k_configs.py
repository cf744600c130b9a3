"""The Sapiens2-1B-4K task configs: backbone, 2K heads, pipelines, schedule.

Every config is built on the meta device and run on a (1, 3, 4096, 3072)
input; the expected output sizes follow from the stride-64 feature map
(64x48) and the number of x2 stages, counted here from the configs.
"""
import copy
import glob
import os.path as osp

import pytest
import torch
from mmengine.config import Config

from sapiens2_mm.registry import MODELS
from tests.conftest import REPO_DIR
from tests.tiny_variants import DENSE_TASKS

FOUR_K = sorted(glob.glob(osp.join(REPO_DIR, 'configs', '*',
                                   'sapiens2-1b-4k_*.py')))
TASKS = {osp.basename(osp.dirname(p)): p for p in FOUR_K}
ONE_K = {task: glob.glob(osp.join(REPO_DIR, 'configs', task,
                                  'sapiens2-1b_*' + suffix))[0]
         for task, suffix in (('seg', 'seg29-1024x768.py'),
                              ('normal', 'normal-1024x768.py'),
                              ('pointmap', 'pointmap-1024x768.py'),
                              ('albedo', 'albedo-1024x768.py'),
                              ('pose', 'sapiens308-1024x768.py'))}
PRETRAIN = 'checkpoints/sapiens2_1b_4k_pretrain.safetensors'
BACKBONE_PARAMS = 1_606_588_928  # reference: 1B-4K with the tokenizer
# task -> (upsampling key of the head, output shape of a 4096x3072 input)
OUTPUTS = {
    'seg': ('deconv_out_channels', (1, 29, 2048, 1536)),
    'normal': ('upsample_channels', (1, 3, 2048, 1536)),
    'albedo': ('upsample_channels', (1, 3, 2048, 1536)),
    'pointmap': ('upsample_channels', (1, 3, 2048, 1536)),
    'pose': ('deconv_out_channels', (1, 308, 512, 384)),
}


def test_one_4k_config_per_task():
    assert sorted(TASKS) == sorted(OUTPUTS) and len(FOUR_K) == len(TASKS)


def _head(cfg):
    return cfg.model.get('decode_head') or cfg.model.head


@pytest.mark.parametrize('task', sorted(OUTPUTS))
def test_4k_model_builds_and_predicts_at_2k(task):
    cfg = Config.fromfile(TASKS[task])
    backbone = cfg.model.backbone
    assert backbone.arch == 'sapiens2_1b' and backbone.use_tokenizer
    assert tuple(backbone.img_size) == (4096, 3072)
    assert backbone.init_cfg == dict(type='Pretrained', checkpoint=PRETRAIN)
    backbone.init_cfg = None
    with torch.device('meta'):
        model = MODELS.build(cfg.model)
        out = model._forward(torch.empty(1, 3, 4096, 3072), None)
    assert sum(p.numel() for p in model.backbone.parameters()) == \
        BACKBONE_PARAMS
    pred = out[0] if task == 'pointmap' else out
    assert tuple(pred.shape) == OUTPUTS[task][1]
    if task == 'pointmap':
        assert tuple(out[1].shape) == (1, 1)


# The 4K heads as docs/4k.md describes them, as changes to the 1b 1K head's
# config: one more x2 stage that halves the last 1K width (seg keeps 64) and,
# for pose, 1x1 convs (512, 512, 256) after the 512-channel third deconv
# instead of the 1K (768, 512, 256) (the official 0.4b / 0.8b / 5b heads'
# convs; no official 4K pose head exists).
DOCUMENTED_4K_HEADS = {
    'seg': dict(deconv_out_channels=(512, 256, 128, 64, 64),
                deconv_kernel_sizes=(4, 4, 4, 4, 4)),
    'normal': dict(upsample_channels=(768, 512, 256, 128, 64)),
    'albedo': dict(upsample_channels=(768, 512, 256, 128, 64)),
    'pointmap': dict(upsample_channels=(1536, 768, 512, 256, 128)),
    'pose': dict(deconv_out_channels=(1536, 1024, 512),
                 deconv_kernel_sizes=(4, 4, 4),
                 conv_out_channels=(512, 512, 256)),
}
# Head parameters in millions, 1K and 4K (docs/4k.md)
DOCUMENTED_HEAD_PARAMS = {'seg': (15.3, 15.4), 'normal': (83.9, 84.1),
                          'albedo': (83.9, 84.1), 'pointmap': (174.1, 175.2),
                          'pose': (64.3, 72.0)}


def _build_head(head_cfg):
    with torch.device('meta'):
        return MODELS.build(head_cfg)


@pytest.mark.parametrize('task', sorted(OUTPUTS))
def test_4k_head_is_the_documented_change_of_the_1k_head(task):
    """Every layer of the 4K head (type, shape, kernel, stride, padding, as
    the module's repr lists them) equals that of the 1b 1K head with the
    documented changes, and nothing else differs; the parameter counts are
    the documented ones."""
    four_k = _head(Config.fromfile(TASKS[task]))
    one_k = _head(Config.fromfile(ONE_K[task]))
    documented = copy.deepcopy(one_k)
    documented.update(DOCUMENTED_4K_HEADS[task])
    actual, expected = _build_head(four_k), _build_head(documented)
    assert repr(actual) == repr(expected)
    shapes = [(n, p.shape) for n, p in actual.named_parameters()]
    assert shapes == [(n, p.shape) for n, p in expected.named_parameters()]
    key = OUTPUTS[task][0]
    # one more x2 stage, no wider than the last 1K stage
    assert list(four_k[key][:-1]) == list(one_k[key])
    assert four_k[key][-1] <= one_k[key][-1]
    params = [sum(p.numel() for p in head.parameters()) / 1e6
              for head in (_build_head(one_k), actual)]
    assert [round(p, 1) for p in params] == list(
        DOCUMENTED_HEAD_PARAMS[task])


@pytest.mark.parametrize('task', sorted(OUTPUTS))
def test_4k_schedule_keeps_the_1k_global_batch_and_steps(task):
    """Per-GPU batch x accumulation = the 1K per-GPU batch; loader
    iterations, warmup and intervals scale with the accumulation."""
    four_k, one_k = Config.fromfile(TASKS[task]), Config.fromfile(ONE_K[task])
    accum = four_k.optim_wrapper.get('accumulative_counts', 1)
    batch = four_k.train_dataloader.batch_size
    assert batch * accum == one_k.train_dataloader.batch_size
    assert four_k.train_cfg.max_iters == one_k.train_cfg.max_iters * accum
    assert four_k.param_scheduler[0].end == one_k.param_scheduler[0].end * \
        accum
    assert four_k.param_scheduler[1].end == four_k.train_cfg.max_iters
    assert four_k.optim_wrapper.optimizer == one_k.optim_wrapper.optimizer
    assert four_k.optim_wrapper.paramwise_cfg.num_layers == 40
    assert four_k.optim_wrapper.get('dtype') == one_k.optim_wrapper.get(
        'dtype')
    # the 1b 1K config's strategy (FSDP, bf16 or fp32 for pointmap)
    assert four_k.strategy == one_k.strategy
    name = osp.basename(TASKS[task])
    data = name.split('_')[-1]
    assert name == (f'sapiens2-1b-4k_8xb{batch}-'
                    f'{four_k.train_cfg.max_iters // 1000}k_{data}')
    assert data.endswith('-4096x3072.py')


def _types(pipeline):
    return [step['type'] for step in pipeline]


@pytest.mark.parametrize('task', DENSE_TASKS)
def test_dense_pipelines_letterbox_evenly_and_target_the_2k_output(task):
    cfg = Config.fromfile(TASKS[task])
    train = cfg.train_dataloader.dataset.pipeline
    types = _types(train)
    at = types.index('DenseResizePad')
    assert train[at]['align'] == 2 and (train[at].height,
                                        train[at].width) == (4096, 3072)
    # the targets straight to the 2K frame (= + DenseToOutputSize(0.5))
    assert train[at]['output_scale'] == 0.5
    assert 'DenseToOutputSize' not in types
    test = cfg.test_dataloader.dataset.pipeline
    types = _types(test)
    at = types.index('DenseResizePad')
    assert test[at]['align'] == 2 and not test[at]['resize_targets']
    assert test[at + 1] == dict(type='DenseToOutputSize', scale=0.5,
                                resize_targets=False)
    if task == 'pointmap':
        focal = [s for s in train if s['type'] == 'PointmapGenerateTarget']
        assert focal[0]['canonical_focal_length'] == 1536.0
        assert _head(cfg).canonical_focal_length == 1536.0


def test_seg_pipeline_trains_on_2k_labels_and_tests_at_the_original_size():
    cfg = Config.fromfile(TASKS['seg'])
    train = cfg.train_dataloader.dataset.pipeline
    assert _types(train)[-2:] == ['SegLabelToOutputSize',
                                  'mmseg.PackSegInputs']
    assert cfg.model.data_preprocessor.size == (4096, 3072)
    test = cfg.test_dataloader.dataset.pipeline
    resize = [s for s in test if s['type'] == 'SegResize'][0]
    assert resize['test_mode'] and (resize.height, resize.width) == (4096,
                                                                     3072)


def test_pose_codec_matches_the_4k_head():
    cfg = Config.fromfile(TASKS['pose'])
    codec = cfg.model.head.decoder
    assert tuple(codec.input_size) == (3072, 4096)
    assert tuple(codec.heatmap_size) == (384, 512)  # (W, H) of the output
    assert codec.sigma == 12  # 6 at 256x192, scaled with the heatmap
    encoder = [s for s in cfg.train_dataloader.dataset.pipeline
               if s['type'] == 'mmpose.GenerateTarget'][0]['encoder']
    assert encoder == codec
    assert cfg.model.backbone.with_cp


def test_4k_model_refuses_an_input_not_divisible_by_64_with_the_rule():
    """Pipelines letterbox / resize every photo to 4096x3072; a tensor
    given to the model directly must be a multiple of the stride, 64."""
    cfg = Config.fromfile(TASKS['normal'])
    cfg.model.backbone.init_cfg = None
    with torch.device('meta'):
        model = MODELS.build(cfg.model)
        with pytest.raises(ValueError,
                           match=r'1000 x 752 is not divisible by '
                           r'patch_size x window_size = 64'):
            model._forward(torch.empty(1, 3, 1000, 752), None)


def test_init_model_refuses_a_1k_task_checkpoint_for_a_4k_config(tmp_path):
    """The task-checkpoint route (init_model, tools/test.py, infer.py): a 1K
    seg checkpoint into the 4K seg config (tiny variants of both) is refused
    naming the tokenizer, and the reverse too."""
    from sapiens2_mm.apis import init_model
    from sapiens2_mm.utils import CheckpointMismatchError
    from tests.tiny_variants import random_checkpoint, tiny_variant
    one_k = tiny_variant(ONE_K['seg'], str(tmp_path))
    four_k = tiny_variant(TASKS['seg'], str(tmp_path))
    one_k_ckpt = random_checkpoint(one_k, str(tmp_path / '1k.pth'))
    four_k_ckpt = random_checkpoint(four_k, str(tmp_path / '4k.pth'))
    with pytest.raises(CheckpointMismatchError,
                       match=r'1K checkpoint for a 4K model.*'
                       r'backbone\.tokenizer\.local_pos_embed'):
        init_model(four_k, one_k_ckpt)
    with pytest.raises(CheckpointMismatchError,
                       match='4K checkpoint for a 1K model'):
        init_model(one_k, four_k_ckpt)
