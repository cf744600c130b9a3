"""Shared helpers for the dense metric tests: data samples and known cases.

Not a test module by itself.
"""
import json
import os.path as osp

import torch
from mmengine.structures import PixelData
from safetensors.torch import load_file

from sapiens2_mm.structures.dense_data_sample import DenseDataSample

from ..conftest import DATA_DIR

OFFICIAL_DIR = osp.join(DATA_DIR, 'official_metrics')


def official_inputs():
    """(tensors, manifest) of tests/data/official_metrics."""
    data = load_file(osp.join(OFFICIAL_DIR, 'metrics_inputs.safetensors'))
    with open(osp.join(OFFICIAL_DIR, 'metrics_manifest.json')) as f:
        return data, json.load(f)


def make_sample(img_path='img.png', as_dict=True, mask=None, meta=None,
                **fields):
    """A DenseDataSample (or its ``to_dict()``) with PixelData fields.

    Args:
        img_path: metainfo ``img_path``.
        as_dict: return ``to_dict()``, what mmengine's Evaluator passes.
        mask: (1, H, W) or (H, W) mask, stored as ``gt_mask``.
        meta: further metainfo.
        **fields: PixelData fields, e.g. ``pred_normal=tensor``.
    """
    sample = DenseDataSample(metainfo=dict(img_path=img_path, **(meta or {})))
    for key, value in fields.items():
        setattr(sample, key, PixelData(data=torch.as_tensor(value)))
    if mask is not None:
        mask = torch.as_tensor(mask).bool()
        sample.gt_mask = PixelData(data=mask if mask.ndim == 3 else mask[None])
    return sample.to_dict() if as_dict else sample


def official_batches(task, pred_key, gt_key, meta=None):
    """The three official batches of ``task`` as lists of sample dicts."""
    data, _ = official_inputs()
    batches = []
    for i in range(3):
        batches.append([
            make_sample(f'{task}_{i}_{j}', mask=data[f'{task}_mask_{i}'][j] > 0,
                        meta=meta,
                        **{pred_key: data[f'{task}_pred_{i}'][j],
                           gt_key: data[f'{task}_gt_{i}'][j]})
            for j in range(2)
        ])
    return batches


def random_unit(shape, seed=0):
    """Random unit vectors (3, *shape) float32."""
    g = torch.Generator().manual_seed(seed)
    v = torch.randn((3, ) + tuple(shape), generator=g)
    return v / v.norm(dim=0, keepdim=True)


def rotate_by(normals, degrees, seed=1):
    """Each unit normal (3, H, W) turned by exactly ``degrees`` (float64 math).

    The turn is inside the plane of the normal and a random perpendicular
    direction, so the angle between input and output is ``degrees`` at every
    pixel.
    """
    n = normals.double()
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(n.shape, generator=g, dtype=torch.float64)
    u = torch.cross(n, a, dim=0)
    u = u / u.norm(dim=0, keepdim=True)
    theta = torch.deg2rad(torch.as_tensor(degrees, dtype=torch.float64))
    return (torch.cos(theta) * n + torch.sin(theta) * u).float()


def camera_pointmap(h=24, w=18, fx=30.0, seed=0):
    """Metric (3, H, W) pointmap of a bumpy surface seen by a pinhole camera."""
    g = torch.Generator().manual_seed(seed)
    v, u = torch.meshgrid(torch.arange(h, dtype=torch.float64),
                          torch.arange(w, dtype=torch.float64), indexing='ij')
    depth = 2.0 + 0.3 * torch.rand((h, w), generator=g, dtype=torch.float64)
    x = (u - (w - 1) / 2) / fx * depth
    y = (v - (h - 1) / 2) / fx * depth
    return torch.stack([x, y, depth]).float()
