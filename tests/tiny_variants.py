"""Tiny-architecture variants of the shipped configs, for smoke runs on a CPU.

A variant is a config file ``_base_ = [<shipped config>]`` plus overrides: a
2-block, 32-channel backbone without pretrain weights, narrow heads, and, for
testing, the test split pointed at the bundled sample data (one batch). The
shipped pipeline, codec, input size, metric and inference path are unchanged.
"""
import glob
import json
import os.path as osp
import subprocess
import sys

from tests.conftest import DATA_DIR, REPO_DIR

COCO = osp.join(DATA_DIR, 'coco_sample')
SEG = osp.join(DATA_DIR, 'seg_sample')
PHOTO = osp.join(COCO, '000000197388.jpg')

SHIPPED = sorted(
    p for p in glob.glob(osp.join(REPO_DIR, 'configs', '*', '*.py'))
    if '_base_' not in p)

TINY_ARCH = dict(embed_dims=32, num_layers=2, num_heads=2,
                 feedforward_channels=64, num_tokenizer_layers=1)


def task_of(config: str) -> str:
    return osp.basename(osp.dirname(config))


def layout_of(config: str) -> str:
    """'coco', 'coco-wholebody', 'sapiens308' or 'seg29' (the test data)."""
    name = osp.basename(config)
    if task_of(config) == 'seg':
        return 'seg29'
    for layout in ('coco-wholebody', 'sapiens308'):
        if layout in name:
            return layout
    return 'coco'


def sapiens308_sample(tmp_dir: str) -> str:
    """The bundled COCO-WholeBody sample converted to 308 keypoints with
    tools/dataset_converters/coco_wholebody_to_sapiens308.py."""
    out = osp.join(tmp_dir, 'test_sapiens308.json')
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
    if task_of(config) == 'pose':
        model = '''
model = dict(
    backbone=dict(arch=dict(_delete_=True, **tiny_arch), init_cfg=None),
    head=dict(in_channels=32, deconv_out_channels=(16, 16),
              conv_out_channels=(16, ), conv_kernel_sizes=(1, )))
'''
    else:
        model = '''
model = dict(
    backbone=dict(arch=dict(_delete_=True, **tiny_arch), init_cfg=None,
                  with_cp=False),
    decode_head=dict(in_channels=32, deconv_out_channels=(16, 16, 16, 16),
                     conv_out_channels=(16, 16)))
'''
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
