"""ImageFolderDataset and the pretraining transforms."""
import os
import os.path as osp
import shutil

import numpy as np
import pytest
import torch

from sapiens2_mm.datasets.pretrain import ImageFolderDataset
from sapiens2_mm.datasets.pretrain.transforms import (
    CheckMinImageSize,
    PersonCentricResizedCrop,
    RandomGaussianBlur,
)
from tests.conftest import COCO_DIR

HERE = osp.dirname(osp.abspath(__file__))


def _folder(tmp_path):
    root = tmp_path / 'imgs'
    (root / 'a' / 'deep').mkdir(parents=True)
    (root / 'b').mkdir()
    jpgs = sorted(f for f in os.listdir(COCO_DIR) if f.endswith('.jpg'))
    shutil.copy(osp.join(COCO_DIR, jpgs[0]), root / 'a' / 'deep' / 'x.JPG')
    shutil.copy(osp.join(COCO_DIR, jpgs[1]), root / 'b' / 'y.jpeg')
    shutil.copy(osp.join(COCO_DIR, jpgs[2]), root / 'z.jpg')
    (root / 'b' / 'broken.png').write_bytes(b'not an image')
    (root / 'b' / 'notes.txt').write_text('skip me')
    return root


def test_recursive_listing_skips_corrupt_with_count(tmp_path):
    root = _folder(tmp_path)
    ds = ImageFolderDataset(data_root=str(root))
    names = [osp.relpath(ds[i]['img_path'], root) for i in range(len(ds))]
    assert names == ['z.jpg', 'a/deep/x.JPG', 'b/y.jpeg']
    assert [osp.basename(p) for p in ds.skipped] == ['broken.png']
    unchecked = ImageFolderDataset(data_root=str(root), verify=False)
    assert len(unchecked) == 4 and not unchecked.skipped


def test_empty_and_missing_folders(tmp_path):
    with pytest.raises(FileNotFoundError, match='does not exist'):
        ImageFolderDataset(data_root=str(tmp_path / 'nope'))
    (tmp_path / 'empty').mkdir()
    with pytest.raises(FileNotFoundError, match='No readable image'):
        ImageFolderDataset(data_root=str(tmp_path / 'empty'))
    bad = tmp_path / 'bad'
    bad.mkdir()
    (bad / 'a.jpg').write_bytes(b'\xff\xd8 truncated')
    with pytest.raises(FileNotFoundError, match=r'\(1 unreadable\)'):
        ImageFolderDataset(data_root=str(bad))


def test_person_boxes_from_coco_json():
    ds = ImageFolderDataset(data_root=COCO_DIR,
                            person_boxes=osp.join(COCO_DIR, 'test_coco.json'))
    info = {osp.basename(ds[i]['img_path']): ds[i] for i in range(len(ds))}
    boxes = info['000000000785.jpg']['person_bboxes']
    # test_coco.json: bbox [280.79, 44.73, 218.7, 346.68] (x, y, w, h).
    assert np.allclose(boxes[0], [280.79, 44.73, 499.49, 391.41])


def test_person_crop_contains_the_box_and_keeps_aspect():
    crop = PersonCentricResizedCrop(scale=(64, 48), context_range=(1.2, 1.2),
                                    jitter=0.0)
    img = np.zeros((400, 600, 3), np.uint8)
    box = [300.0, 50.0, 360.0, 250.0]  # 60 x 200, taller than 3:4
    out = crop(dict(img=img, person_bboxes=[box]))
    x1, y1, x2, y2 = out['crop_bbox']
    assert out['img'].shape == (64, 48, 3)
    assert x1 <= box[0] and y1 <= box[1] and x2 >= box[2] and y2 >= box[3]
    assert (y2 - y1) == pytest.approx(240, abs=1)  # 1.2 * 200
    assert (y2 - y1) / (x2 - x1) == pytest.approx(64 / 48, rel=0.02)
    # No boxes: a random crop at the output aspect ratio inside the image.
    out = crop(dict(img=img))
    x1, y1, x2, y2 = out['crop_bbox']
    assert 0 <= x1 < x2 <= 600 and 0 <= y1 < y2 <= 400
    assert (y2 - y1) / (x2 - x1) == pytest.approx(64 / 48, rel=0.05)


def test_min_size_check_errors_or_skips():
    small = dict(img=np.zeros((40, 30, 3), np.uint8), img_path='s.jpg')
    with pytest.raises(ValueError, match='40 x 30, smaller than the crop'):
        CheckMinImageSize(min_size=(64, 48))(dict(small))
    skipper = CheckMinImageSize(min_size=(64, 48), skip=True)
    assert skipper(dict(small)) is None and skipper.num_skipped == 1
    ok = dict(img=np.zeros((64, 48, 3), np.uint8))
    assert skipper(ok) is ok


def test_blur_matches_cv2_and_probability():
    import cv2
    img = (np.random.default_rng(0).random((16, 12, 3)) * 255).astype(np.uint8)
    blur = RandomGaussianBlur(prob=1.0, sigma_range=(1.5, 1.5))
    assert np.array_equal(blur(dict(img=img.copy()))['img'],
                          cv2.GaussianBlur(img, (0, 0), 1.5))
    assert np.array_equal(
        RandomGaussianBlur(prob=0.0)(dict(img=img.copy()))['img'], img)
    with pytest.raises(ValueError, match='prob'):
        RandomGaussianBlur(prob=2.0)


def test_multiview_pipeline_of_the_tiny_config(repo_path):
    from mmengine.config import Config

    from sapiens2_mm.registry import DATASETS
    cfg = Config.fromfile(repo_path(
        'configs', 'pretrain', 'sapiens2-tiny_pretrain-cpu-64x48.py'))
    cfg.train_dataloader.dataset.data_root = repo_path('tests', 'data')
    ds = DATASETS.build(cfg.train_dataloader.dataset)
    assert len(ds) == 8
    sample = ds[0]
    shapes = [tuple(v.shape) for v in sample['inputs']]
    assert shapes == [(3, 64, 48), (3, 64, 48), (3, 32, 32), (3, 32, 32)]
    assert all(v.dtype == torch.uint8 for v in sample['inputs'])


def test_symlink_loops_list_each_image_once(tmp_path, monkeypatch):
    """``self -> .`` listed every image 41 times (os.walk followed the loop
    until the path was too long); two loops made the walk exponential. Each
    real folder is visited once, and the repeats are logged."""
    from sapiens2_mm.datasets.pretrain import image_folder_dataset
    messages = []
    monkeypatch.setattr(image_folder_dataset, 'print_log',
                        lambda msg, **kw: messages.append(msg))
    root = _folder(tmp_path)
    os.symlink('.', root / 'self')
    os.symlink('..', root / 'a' / 'up')
    os.symlink(str(root / 'b'), root / 'b_again')
    ds = ImageFolderDataset(data_root=str(root))
    names = [osp.relpath(ds[i]['img_path'], root) for i in range(len(ds))]
    assert names == ['z.jpg', 'a/deep/x.JPG', 'b/y.jpeg']
    assert sorted(osp.relpath(p, root) for p in ds.repeated_folders) == [
        'a/up', 'b_again', 'self']
    assert any('3 folder(s)' in m and 'listed once' in m for m in messages)
