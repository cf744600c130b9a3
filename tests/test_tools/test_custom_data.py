"""The own-data recipes of docs/custom_data.md: your own classes (one
metainfo reaching dataset, loss, loader, flip augmentation and flip test,
every disagreement refused by name) and your own keypoints (21 hand
keypoints), each trained and tested through tools/train.py and
tools/test.py on data derived from the bundled samples."""
import json
import math
import os
import os.path as osp
import shutil

import cv2
import numpy as np
import pytest
from mmengine.config import Config

from sapiens2_mm.apis.class_check import (
    ClassMismatchError,
    check_config_classes,
    class_problems,
)
from tests.conftest import DATA_DIR

from .workflow_utils import REPO_DIR, load_tool

pytestmark = pytest.mark.usefixtures('one_torch_thread')

train_tool = load_tool('train')
test_tool = load_tool('test')
EXAMPLES = osp.join(REPO_DIR, 'configs', 'examples')
PARTS20 = osp.join(EXAMPLES, 'seg', 'sapiens2-tiny_1xb2-30_parts20-128x96.py')
HAND21 = osp.join(EXAMPLES, 'pose', 'sapiens2-tiny_1xb12-300_hand21-128x96.py')
TINY_SEG = osp.join(REPO_DIR, 'configs', 'seg',
                    'sapiens2-tiny_1xb2-30_seg29sample-128x96.py')
# The 29 Sapiens2 classes merged into the recipe's 20 (feet with shoes and
# socks, upper and lower leg, lips, teeth with tongue).
TO_PARTS20 = np.full(256, 255, np.uint8)
TO_PARTS20[:29] = [0, 1, 2, 3, 4, 5, 6, 7, 9, 5, 5, 8, 9, 15, 10, 11, 12, 14,
                   10, 10, 13, 14, 17, 16, 18, 18, 19, 19, 19]


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(REPO_DIR)


@pytest.fixture(scope='module')
def parts20(tmp_path_factory):
    """The seg sample with its labels mapped to the 20 classes."""
    root = tmp_path_factory.mktemp('parts20')
    shutil.copytree(osp.join(DATA_DIR, 'seg_sample', 'images'),
                    root / 'images')
    (root / 'labels').mkdir()
    for name in sorted(os.listdir(osp.join(DATA_DIR, 'seg_sample',
                                           'labels'))):
        label = cv2.imread(osp.join(DATA_DIR, 'seg_sample', 'labels', name),
                           cv2.IMREAD_UNCHANGED)
        cv2.imwrite(str(root / 'labels' / name), TO_PARTS20[label])
    return str(root)


def _root_options(root, *extra):
    return ['--cfg-options'] + [
        f'{loader}.dataset.data_root={root}'
        for loader in ('train_dataloader', 'val_dataloader',
                       'test_dataloader')] + list(extra)


def _inheriting_29_class_config(tmp_path) -> str:
    """The issue's config: 20 classes set on the head and the dataset, the
    29-class pipelines, loss weights and flip test inherited."""
    path = tmp_path / 'parts20_inherited.py'
    path.write_text(
        f"_base_ = [{TINY_SEG!r}]\n"
        f"metainfo = {dict(Config.fromfile(PARTS20).metainfo)!r}\n"
        "model = dict(decode_head=dict(num_classes=20))\n"
        "train_dataloader = dict(dataset=dict(type='SegDataset', "
        "metainfo=metainfo))\n"
        "val_dataloader = dict(dataset=dict(type='SegDataset', "
        "metainfo=metainfo))\n"
        "test_dataloader = val_dataloader\n")
    return str(path)


def test_inherited_29_class_places_are_refused_by_name(tmp_path, parts20):
    config = _inheriting_29_class_config(tmp_path)
    with pytest.raises(SystemExit) as err:
        train_tool.main([config, '--work-dir', str(tmp_path / 'w'),
                         *_root_options(parts20)])
    text = str(err.value)
    assert text.startswith('error: ') and 'mismatched labels' in text
    assert 'model.decode_head.num_classes: 20' in text
    assert 'model.decode_head.loss_decode[0].class_weight: 29 values' in text
    assert ('train_dataloader.dataset.pipeline[1] '
            'LoadSegAnnotations.num_classes: 29') in text
    assert ('RandomFlip.swap_seg_labels holds pairs outside the 20 classes '
            '(0..19): [(11, 20), (12, 21)]') in text
    assert 'tta_model.swap_pairs' in text
    assert not (tmp_path / 'w' / 'iter_1.pth').exists()
    ckpt = tmp_path / 'never_read.pth'
    ckpt.write_bytes(b'refused before it is read')
    with pytest.raises(SystemExit, match='mismatched labels'):  # test.py too
        test_tool.main([config, str(ckpt), '--work-dir',
                        str(tmp_path / 't')] + _root_options(parts20))


def test_pairs_inside_the_range_but_not_twins_by_name():
    """Pairs that all lie below 20 still swap the wrong classes: the names
    decide (Left_X <-> Right_X)."""
    cfg = Config.fromfile(PARTS20)
    flip = cfg.train_dataloader.dataset.pipeline[3]
    flip.swap_seg_labels = [(5, 14), (6, 15), (7, 16), (8, 17), (9, 18),
                            (10, 19)]
    (problem, ) = class_problems(cfg)
    assert problem.startswith('train_dataloader.dataset.pipeline[3] '
                              'RandomFlip.swap_seg_labels does not swap')
    assert '5-14 (Left_Foot / Right_Leg)' in problem
    assert '6-15 (Left_Hand / Lower_Clothing)' in problem
    assert 'By name the pairs are [(5, 10), (6, 11), (7, 12), (8, 13), ' \
        '(9, 14)]' in problem


def test_class_weights_of_another_count_are_named():
    cfg = Config.fromfile(PARTS20)
    cfg.model.decode_head.loss_decode[0].class_weight = [1.0] * 29
    with pytest.raises(ClassMismatchError,
                       match=r'loss_decode\[0\]\.class_weight: 29 values'):
        check_config_classes(cfg)


def test_seg29_dataset_with_other_classes_points_to_seg_dataset():
    from sapiens2_mm.registry import DATASETS
    cfg = Config.fromfile(PARTS20)
    dataset = dict(cfg.train_dataloader.dataset, type='Seg29Dataset',
                   data_root=osp.join(DATA_DIR, 'seg_sample'))
    with pytest.raises(ValueError, match="use type='SegDataset'") as err:
        DATASETS.build(dataset)
    assert 'mmseg.BaseSegDataset' in str(err.value)


def test_recipe_flip_augmentation_swaps_the_twins(parts20):
    """The flip of the recipe's pipeline mirrors the 20-class labels and
    exchanges Left_X / Right_X, computed here from the label file."""
    from mmengine.dataset import Compose
    cfg = Config.fromfile(PARTS20)
    steps = [dict(s) for s in cfg.train_dataloader.dataset.pipeline[:2]]
    flip = dict(cfg.train_dataloader.dataset.pipeline[3], prob=1.0)
    load = Compose(steps)
    name = '000000197388'
    results = load(dict(img_path=osp.join(parts20, 'images', name + '.jpg'),
                        seg_map_path=osp.join(parts20, 'labels',
                                              name + '.png'),
                        reduce_zero_label=False, seg_fields=[]))
    label = results['gt_seg_map'].copy()
    out = Compose([flip])(results)['gt_seg_map']
    swap = np.arange(256)
    for a, b in [(5, 10), (6, 11), (7, 12), (8, 13), (9, 14)]:
        swap[a], swap[b] = b, a
    np.testing.assert_array_equal(out, swap[label[:, ::-1]])
    assert np.isin([5, 10], label).any()  # the photo has a foot


def test_adapted_20_class_config_trains_and_tests(tmp_path, parts20):
    work = str(tmp_path / 'w')
    train_tool.main([PARTS20, '--work-dir', work,
                     *_root_options(parts20, 'train_cfg.max_iters=2')])
    metrics = test_tool.main([PARTS20, osp.join(work, 'iter_2.pth'),
                              '--work-dir', str(tmp_path / 't'), '--tta',
                              *_root_options(parts20)])
    assert math.isfinite(metrics['mIoU'])
    assert sorted(k for k in metrics if k.startswith('IoU.')) == sorted(
        f'IoU.{c}' for c in Config.fromfile(PARTS20).metainfo.classes)


@pytest.fixture(scope='module')
def hand21(tmp_path_factory):
    """A COCO-format 21-keypoint hand set: every labelled hand of the
    COCO-WholeBody sample, its box as the instance box."""
    root = tmp_path_factory.mktemp('hand21')
    shutil.copytree(osp.join(DATA_DIR, 'coco_sample'), root / 'images',
                    ignore=shutil.ignore_patterns('*.json'))
    with open(osp.join(DATA_DIR, 'coco_sample',
                       'test_coco_wholebody.json')) as f:
        whole = json.load(f)
    anns = []
    for ann in whole['annotations']:
        for side in ('lefthand', 'righthand'):
            if not ann[f'{side}_valid']:
                continue
            kpts = ann[f'{side}_kpts']
            anns.append(dict(
                id=len(anns) + 1, image_id=ann['image_id'], category_id=1,
                iscrowd=0, bbox=ann[f'{side}_box'], keypoints=kpts,
                num_keypoints=sum(v > 0 for v in kpts[2::3]),
                area=ann[f'{side}_box'][2] * ann[f'{side}_box'][3]))
    assert len(anns) == 10
    category = dict(id=1, name='hand', supercategory='hand',
                    keypoints=[str(i) for i in range(21)], skeleton=[])
    with open(root / 'annotations.json', 'w') as f:
        json.dump(dict(images=whole['images'], annotations=anns,
                       categories=[category]), f)
    return str(root) + '/'


def test_21_hand_keypoints_train_and_test(tmp_path, hand21):
    ann = hand21 + 'annotations.json'
    options = _root_options(hand21, f'val_evaluator.ann_file={ann}',
                            f'test_evaluator.ann_file={ann}')
    work = str(tmp_path / 'w')
    train_tool.main([HAND21, '--work-dir', work,
                     *options, 'train_cfg.max_iters=2'])
    metrics = test_tool.main([HAND21, osp.join(work, 'iter_2.pth'),
                              '--work-dir', str(tmp_path / 't'), *options])
    assert math.isfinite(metrics['coco/AP'])


def test_keypoint_count_of_head_and_metainfo_must_agree():
    cfg = Config.fromfile(HAND21)
    assert class_problems(cfg) == []
    cfg.model.head.out_channels = 17
    with pytest.raises(ClassMismatchError) as err:
        check_config_classes(cfg)
    assert 'model.head.out_channels: 17' in str(err.value)
    assert 'train_dataloader.dataset (metainfo) keypoints: 21' in str(
        err.value)


def test_png_normals_without_masks_train_and_test(tmp_path):
    """The normal recipe: 16-bit PNG normal maps in the OpenGL frame, no
    mask files (the bundled scenes written that way)."""
    from tests.test_datasets.test_dense_file_formats import (
        _png_normal_folder,
    )
    root = _png_normal_folder(tmp_path / 'data')
    config = osp.join(EXAMPLES, 'normal',
                      'sapiens2-tiny_1xb2-30_normal-png-128x96.py')
    work = str(tmp_path / 'w')
    train_tool.main([config, '--work-dir', work,
                     *_root_options(root, 'train_cfg.max_iters=2')])
    metrics = test_tool.main([config, osp.join(work, 'iter_2.pth'),
                              '--work-dir', str(tmp_path / 't'),
                              *_root_options(root)])
    assert metrics and all(math.isfinite(float(v)) for v in metrics.values())
