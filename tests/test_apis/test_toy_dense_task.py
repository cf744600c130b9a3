"""A sixth dense task, declared entirely in this file, runs everywhere.

The toy task ``matte`` predicts one map, a 1-channel alpha matte in [0, 1].
Everything it needs is here: its declaration (the map: channels, flip rule,
target resize, coloring), its head, its task description, its dataset and
its metric, and a config written to ``tmp_path``. Nothing in the package
names it, yet ``init_model``, ``tools/train.py``, ``tools/infer.py`` and
``tools/test.py --show-dir`` run it: they read the declaration.

Its ground truth is derived from the bundled dense sample: the grey level of
the albedo PNGs (the dataset points ``matte_path`` at ``albedo/``; the
generic map reader of ``LoadDenseAnnotations`` reads any declared map).

The tools run in this process (the registrations below are made by a
fixture and removed afterwards); a tool run in a subprocess would import
them with ``custom_imports = dict(imports=['tests.test_apis.<this module>'])``
in the config, after moving the registrations to module level.
"""
import json
import os
import os.path as osp

import cv2
import numpy as np
import pytest
from mmengine.evaluator import BaseMetric

from sapiens2_mm.apis import build_inferencer, init_model
from sapiens2_mm.apis.tasks import DenseTask
from sapiens2_mm.datasets.dense.base_dense_dataset import BaseDenseDataset
from sapiens2_mm.models.heads.dense.dense_head_base import DenseHeadBase
from sapiens2_mm.models.heads.dense.letterbox import to_original_size
from sapiens2_mm.registry import DATASETS, METRICS, MODELS, TASKS
from sapiens2_mm.structures import (
    DenseField,
    declare_dense_task,
    forget_dense_task,
)
from sapiens2_mm.utils import OfficialLayout
from sapiens2_mm.visualization.dense_drawer import Coloring, to_uint8
from tests.conftest import REPO_DIR, load_tool
from tests.test_apis.tiny_configs import tiny_config

DENSE_SAMPLE = osp.join(REPO_DIR, 'tests', 'data', 'dense_sample')
MAX_ITERS = 3

pytestmark = pytest.mark.usefixtures('one_torch_thread')


# ------------------------------------------------- the task's own pieces
class GreyColoring(Coloring):
    """A matte drawn as grey levels ``255 a``; black background."""

    def colors(self, value, rounding='truncate', bounds=None):
        grey = to_uint8(np.clip(value, 0, 1) * 255, rounding)
        return np.ascontiguousarray(np.repeat(grey[..., None], 3, axis=2))


MATTE = DenseField('matte', channels=1, flip='mirror', resize='bilinear',
                   coloring=GreyColoring(),
                   meaning='H, W float32 alpha in [0, 1]')


class MatteHead(DenseHeadBase):
    """The shared pixel-shuffle decoder to one channel (declared), L1; its
    key layout lets a checkpoint be recognised as a matte one."""
    output_conv_name = 'conv_matte'
    target_field = 'gt_matte'
    official_layout = OfficialLayout('matte', 'conv_matte.weight')

    def __init__(self, in_channels, loss_decode=None, **kwargs):
        super().__init__(in_channels, loss_decode=loss_decode or [
            dict(type='MaskedL1Loss', loss_weight=1.0)], **kwargs)

    def postprocess_sample(self, outputs, index, meta):
        matte = to_original_size(outputs[index:index + 1], meta,
                                 self.negate_x_on_flip)
        return {'pred_matte': matte.clamp(0, 1)}, {}


class MatteTask(DenseTask):
    summary = 'toy alpha matte of the dense-task declaration test'
    head_types = ('MatteHead', )


class MatteDataset(BaseDenseDataset):
    TARGETS = dict(mask_path=('mask', ('.png', ), 'mask'),
                   matte_path=('albedo', ('.png', ), 'matte'))
    METAINFO = dict(task='matte')


def _data(sample, name):
    value = sample[name]
    return (value['data'] if isinstance(value, dict) else value.data)[0]


class MatteMAE(BaseMetric):
    """Mean absolute matte error over the valid pixels."""
    default_prefix = 'matte'

    def process(self, data_batch, data_samples):
        for sample in data_samples:
            valid = _data(sample, 'gt_mask').bool()
            error = (_data(sample, 'pred_matte') - _data(sample, 'gt_matte'))
            self.results.append((float(error.abs()[valid].sum()),
                                 int(valid.sum())))

    def compute_metrics(self, results):
        return {'mae': sum(r[0] for r in results) /
                max(sum(r[1] for r in results), 1)}


@pytest.fixture
def matte_task():
    declare_dense_task('matte', [MATTE], label='mattes')
    MODELS.register_module(module=MatteHead)
    DATASETS.register_module(module=MatteDataset)
    METRICS.register_module(module=MatteMAE)
    TASKS.register_module(name='matte', module=MatteTask)
    yield
    for registry, name in ((MODELS, 'MatteHead'), (DATASETS, 'MatteDataset'),
                           (METRICS, 'MatteMAE'), (TASKS, 'matte')):
        registry._module_dict.pop(name)
    forget_dense_task('matte')


@pytest.fixture
def matte_config(tmp_path):
    """The tiny normal config with the matte head, data and metric."""
    path = tmp_path / 'matte_config.py'
    path.write_text(f'''
_base_ = [{tiny_config('normal')!r}]
data_root = {DENSE_SAMPLE + '/'!r}
model = dict(decode_head=dict(
    _delete_=True, type='MatteHead', in_channels=64,
    upsample_channels=(32, 16, 16, 8), conv_out_channels=(8, 8),
    conv_kernel_sizes=(3, 3)))
train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseRandomFlip', prob=0.5),
    dict(type='DenseResizePad', height=128, width=96),
    dict(type='PackDenseInputs'),
]
test_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseResizePad', height=128, width=96, size_rounding='floor',
         resize_targets=False),
    dict(type='PackDenseInputs', test_mode=True),
]
train_dataloader = dict(dataset=dict(
    type='MatteDataset', data_root=data_root, pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(
    type='MatteDataset', data_root=data_root, pipeline=test_pipeline))
test_dataloader = val_dataloader
val_evaluator = dict(_delete_=True, type='MatteMAE')
test_evaluator = val_evaluator
train_cfg = dict(max_iters={MAX_ITERS}, val_interval=100)
default_hooks = dict(checkpoint=dict(interval={MAX_ITERS}))
''')
    return str(path)


def test_a_declared_dense_task_runs_through_every_entry_point(
        matte_task, matte_config, tmp_path, capsys):
    names = sorted(os.listdir(osp.join(DENSE_SAMPLE, 'rgb')))
    height, width = cv2.imread(osp.join(DENSE_SAMPLE, 'rgb',
                                        names[0])).shape[:2]

    # init_model: recognised by its head, one output channel (declared)
    model = init_model(matte_config)
    assert model.task == 'matte'
    assert model.dataset_meta['task'] == 'matte'
    assert model.decode_head.conv_matte.out_channels == 1
    frame = cv2.imread(osp.join(DENSE_SAMPLE, 'rgb', names[0]))
    result, = build_inferencer(model, flip_test=True)(frame)
    assert type(result).__name__ == 'DenseResult'
    assert result.matte.shape == (height, width)
    assert result.matte.dtype == np.float32 and result.normal is None

    # tools/train.py: the declared target is loaded, flipped, resized, packed
    train = load_tool('train')
    work = tmp_path / 'train'
    runner = train.main([matte_config, '--work-dir', str(work),
                         '--cfg-options', 'experiment_name=matte_train'])
    losses, _ = runner.message_hub.get_scalar('train/loss').data
    assert len(losses) == MAX_ITERS and np.isfinite(losses).all()
    ckpt = str(work / f'iter_{MAX_ITERS}.pth')
    assert osp.isfile(ckpt)

    # tools/infer.py matte: <stem>_matte.npy (H, W) and .png, the drawing
    infer = load_tool('infer')
    out = tmp_path / 'infer'
    assert infer.main(['matte', matte_config, ckpt, '--input',
                       osp.join(DENSE_SAMPLE, 'rgb'), '--output',
                       str(out)]) == 0
    assert (f'mattes: {len(names)} x <stem>_matte.npy (H, W float32 alpha '
            'in [0, 1]) + <stem>_matte.png') in capsys.readouterr().out
    for name in names:
        stem = osp.splitext(name)[0]
        matte = np.load(out / f'{stem}_matte.npy')
        assert matte.shape == (height, width) and matte.dtype == np.float32
        assert 0 <= matte.min() and matte.max() <= 1
        grey = cv2.imread(str(out / f'{stem}_matte.png'))
        np.testing.assert_array_equal(grey[..., 0], (matte * 255).astype(
            np.uint8))
        assert cv2.imread(str(out / name)).shape == (height, 2 * width, 3)
    with open(out / 'inference_index.jsonl') as f:
        lines = [json.loads(line) for line in f]
    records = [r for r in lines if 'matte' in r]
    assert sorted(osp.basename(r['matte']) for r in records) == sorted(
        osp.splitext(n)[0] + '_matte.npy' for n in names)

    # tools/test.py --show-dir: the metric, [image | prediction | truth]
    test = load_tool('test')
    show = tmp_path / 'show'
    metrics = test.main([matte_config, ckpt, '--work-dir',
                         str(tmp_path / 'test'), '--show-dir', str(show),
                         '--cfg-options', 'experiment_name=matte_test'])
    assert 0 <= metrics['matte/mae'] <= 1
    assert sorted(os.listdir(show)) == names
    drawing = cv2.imread(str(show / names[0]))
    assert drawing.shape[1] == 3 * width
