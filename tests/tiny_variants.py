"""Tiny-architecture variants of the shipped configs, for smoke runs on a CPU.

A variant is a config file ``_base_ = [<shipped config>]`` plus overrides: a
2-block, 32-channel backbone without pretrain weights, narrow heads, and, for
testing, the test split pointed at the bundled sample data (one batch). The
shipped pipeline, codec, input size, metric and inference path are unchanged.

``INFERENCE`` is every shipped config of an inference task (pose, seg and the
dense tasks normal / pointmap / albedo); ``NOT_INFERENCE`` names, one by one,
the configs that are not inference models (with the reason), so a new config
is either covered or fails ``test_every_config_is_covered_or_excluded``.
"""
import glob
import json
import os.path as osp
import subprocess
import sys

from tests.conftest import (
    COCO_DIR,
    DATA_DIR,
    PHOTO,  # noqa: F401 - moved to conftest, still importable here
    REPO_DIR,
)

COCO = COCO_DIR  # the earlier name, still importable here
SEG = osp.join(DATA_DIR, 'seg_sample')
DENSE = osp.join(DATA_DIR, 'dense_sample')

SHIPPED = sorted(
    p for p in glob.glob(osp.join(REPO_DIR, 'configs', '*', '*.py'))
    if '_base_' not in p)



def _package_tasks() -> tuple:
    """``(inference tasks, dense tasks)``: the names registered by this
    package's ``sapiens2_mm.apis.tasks`` (not by a test), so a new task is
    covered by the tests without editing them."""
    from sapiens2_mm.apis.tasks import get_task, task_names
    from sapiens2_mm.apis.tasks.dense import DenseTask
    tasks = [get_task(name) for name in task_names()]
    tasks = [t for t in tasks if type(t).__module__.startswith('sapiens2_mm.')]
    return (tuple(t.name for t in tasks),
            tuple(t.name for t in tasks if isinstance(t, DenseTask)))


INFERENCE_TASKS, DENSE_TASKS = _package_tasks()

_PRETRAINER = ('Sapiens2Pretrainer (masked-image pretraining: a backbone '
               'recipe, no prediction head, no inference task; its configs '
               'build in tests/test_configs.py)')
# Exact paths (relative to the repository) of the shipped configs that are
# not inference models.
NOT_INFERENCE = {
    f'configs/pretrain/{name}.py': _PRETRAINER
    for name in ('sapiens2-0.1b_pretrain-1024x768',
                 'sapiens2-0.4b_pretrain-1024x768',
                 'sapiens2-0.8b_pretrain-1024x768',
                 'sapiens2-1b_pretrain-1024x768',
                 'sapiens2-5b_pretrain-1024x768',
                 'sapiens2-tiny_pretrain-cpu-64x48')}
# Configs whose task is not their folder's name: the linear probe of a
# pretrained backbone is a 29-class seg model (mmseg FCNHead), the tiny
# fine-tune from an export a COCO pose model.
TASK_OVERRIDES = {
    'configs/pretrain/sapiens2-tiny_linear-probe_seg29sample-128x96.py': 'seg',
    'configs/pretrain/sapiens2-tiny_finetune-pose_cocosample-128x96.py':
        'pose',
}

INFERENCE = [p for p in SHIPPED
             if osp.relpath(p, REPO_DIR) not in NOT_INFERENCE]

TINY_ARCH = dict(embed_dims=32, num_layers=2, num_heads=2,
                 feedforward_channels=64, num_tokenizer_layers=1)


def task_of(config: str) -> str:
    rel = osp.relpath(config, REPO_DIR)
    return TASK_OVERRIDES.get(rel, osp.basename(osp.dirname(config)))


def head_overrides(model: dict) -> tuple:
    """``(key, overrides)``: the head of the (shipped) ``model`` config and
    the fields that narrow it to 32 input / 8-16 inner channels, keeping the
    number of layers (and so the output resolution)."""
    key = 'head' if 'head' in model else 'decode_head'
    head = model[key]
    if 'deconv_out_channels' in head:  # pose / seg (Sapiens2 heads)
        n_deconv = len(head['deconv_out_channels'])
        over = dict(in_channels=32, deconv_out_channels=(16, ) * n_deconv,
                    conv_out_channels=(16, ) * len(head['conv_out_channels']))
        if key == 'head':
            over.update(conv_out_channels=(16, ), conv_kernel_sizes=(1, ))
        return key, over
    if 'upsample_channels' in head:  # dense (pixel-shuffle decoder)
        over = dict(in_channels=32,
                    upsample_channels=(8, ) * len(head['upsample_channels']),
                    conv_out_channels=(8, ) * len(head['conv_out_channels']))
        if 'scale_conv_out_channels' in head:
            # The scale branch: the config's number of stride-2 convs (the
            # tiny 128x96 config stops at a 2x2 grid, where InstanceNorm2d
            # still works), then an adaptive pool to 2x2 at any input size.
            n_scale = len(head['scale_conv_out_channels'])
            over.update(scale_conv_out_channels=(8, ) * n_scale,
                        scale_pool_size=(2, 2),
                        scale_final_layer=(8 * 2 * 2, 16, 1),
                        # random weights predict any sign of scale: clamp
                        # (with a warning) instead of refusing the frame
                        scale_guard='clamp')
        return key, over
    return key, dict(in_channels=32, channels=32)  # mmseg FCNHead probe


def layout_of(config: str) -> str:
    """'coco', 'coco-wholebody', 'sapiens308', 'seg29' or 'dense' (the test
    data)."""
    name = osp.basename(config)
    if task_of(config) == 'seg':
        return 'seg29'
    if task_of(config) in DENSE_TASKS:
        return 'dense'
    for layout in ('coco-wholebody', 'sapiens308'):
        if layout in name:
            return layout
    return 'coco'


_CONVERTED = {}  # the one conversion of this process, reused


def sapiens308_sample(tmp_dir: str) -> str:
    """The bundled COCO-WholeBody sample converted to 308 keypoints with
    tools/dataset_converters/coco_wholebody_to_sapiens308.py (once per
    process: later calls reuse the file while it exists)."""
    out = _CONVERTED.get('sapiens308')
    if out is not None and osp.isfile(out):
        return out
    out = osp.join(tmp_dir, 'test_sapiens308.json')
    _CONVERTED['sapiens308'] = out
    if not osp.isfile(out):
        subprocess.run(
            [sys.executable, osp.join(
                REPO_DIR, 'tools', 'dataset_converters',
                'coco_wholebody_to_sapiens308.py'),
             osp.join(COCO, 'test_coco_wholebody.json'), out],
            check=True, capture_output=True, cwd=REPO_DIR)
    return out


def _test_data_overrides(config: str, tmp_dir: str) -> str:
    layout = layout_of(config)
    if layout == 'seg29':
        return f'''
test_dataloader = dict(batch_size=1, num_workers=0, persistent_workers=False,
    dataset=dict(data_root={SEG + '/'!r},
                 data_prefix=dict(img_path='images', seg_map_path='labels'),
                 indices=1))
'''
    if layout == 'dense':
        # one folder serves the three dense datasets (rgb/, mask/, normal/,
        # depth/, camera_*/, albedo/)
        return f'''
test_dataloader = dict(batch_size=1, num_workers=0, persistent_workers=False,
    dataset=dict(data_root={DENSE + '/'!r}, indices=1))
'''
    ann = {'coco': osp.join(COCO, 'test_coco.json'),
           'coco-wholebody': osp.join(COCO, 'test_coco_wholebody.json'),
           'sapiens308': sapiens308_sample(tmp_dir)}[layout]
    return f'''
test_dataloader = dict(batch_size=2, num_workers=0, persistent_workers=False,
    dataset=dict(data_root={COCO + '/'!r}, ann_file={ann!r},
                 data_prefix=dict(img=''), indices=2))
test_evaluator = dict(ann_file={ann!r})
'''


def tiny_variant(config: str, tmp_dir: str, with_test_data: bool = False,
                 extra: str = '') -> str:
    """Write the tiny variant of ``config`` into ``tmp_dir``; its path."""
    from mmengine.config import Config
    key, head = head_overrides(Config.fromfile(config).model)
    model = (
        'model = dict(\n'
        '    backbone=dict(arch=dict(_delete_=True, **tiny_arch), '
        'init_cfg=None,\n'
        '                  with_cp=False),\n'
        f'    {key}=dict(**{head!r}))\n')
    text = (f'_base_ = [{config!r}]\ntiny_arch = {TINY_ARCH!r}\n' + model +
            "optim_wrapper = dict(paramwise_cfg=dict(num_layers=2))\n")
    if with_test_data:
        text += _test_data_overrides(config, tmp_dir)
    text += extra
    name = 'tiny_' + osp.basename(config)
    path = osp.join(tmp_dir, name)
    with open(path, 'w') as f:
        f.write(text)
    return path


def random_checkpoint(config: str, path: str) -> str:
    """An mmengine .pth of the (tiny) config's model with random weights."""
    import torch
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    model = MODELS.build(Config.fromfile(config).model)
    torch.save({'state_dict': model.state_dict(), 'meta': {}}, path)
    return path


def read_json(path: str):
    with open(path) as f:
        return json.load(f)
