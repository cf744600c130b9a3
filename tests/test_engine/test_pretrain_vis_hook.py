"""Reconstruction grid images of the pretraining visualization hook."""
from types import SimpleNamespace

import numpy as np
import torch

from sapiens2_mm.engine.hooks import (
    PretrainReconstructionVisHook,
    reconstruction_grid,
)
from sapiens2_mm.models.heads.selfsup import patchify
from sapiens2_mm.registry import MODELS
from tests.test_models.test_selfsup.test_sapiens2_pretrainer import (
    tiny_pretrainer_cfg,
)

MEAN = torch.tensor([100.0, 110.0, 120.0])[:, None, None]
STD = torch.tensor([50.0, 60.0, 70.0])[:, None, None]


def test_grid_rows():
    gen = torch.Generator().manual_seed(0)
    images = torch.rand(2, 3, 4, 6, generator=gen) - 0.5
    mask = torch.tensor([[True, False, False, False, False, True],
                         [False] * 6])  # grid 2 x 3 of 2x2 patches
    pred = torch.zeros(2, 6, 12) + 1.0  # predicts normalized value 1
    grid = reconstruction_grid(images, pred, mask, 2, MEAN, STD)
    assert grid.shape == (12, 12, 3) and grid.dtype == np.uint8
    original = (images * STD + MEAN).round().to(torch.uint8)
    # third row: the original images side by side
    assert np.array_equal(grid[8:12, 0:6], original[0].permute(1, 2, 0))
    # first row: hidden patch (row 0, col 0) of image 0 is grey
    assert (grid[0:2, 0:2] == 128).all()
    assert np.array_equal(grid[0:2, 2:4], original[0, :, 0:2, 2:4].permute(
        1, 2, 0))
    # second row: prediction at hidden patches, input at visible ones
    assert np.array_equal(grid[4:6, 0:2, 0], np.full((2, 2), 150))
    assert np.array_equal(grid[6:8, 0:4], original[0, :, 2:4, 0:4].permute(
        1, 2, 0))
    # perfect predictions give the original back
    perfect = reconstruction_grid(images, patchify(images, 2), mask, 2, MEAN,
                                  STD)
    assert np.array_equal(perfect[4:8], perfect[8:12])


def test_hook_writes_an_image():
    model = MODELS.build(tiny_pretrainer_cfg())
    model.init_weights()
    images = [torch.randint(0, 255, (3, 64, 48), dtype=torch.uint8)
              for _ in range(3)]
    data_batch = dict(inputs=[torch.stack(images), torch.stack(images)],
                      data_samples=None)
    written = []
    runner = SimpleNamespace(
        model=model, iter=1,
        visualizer=SimpleNamespace(
            add_image=lambda name, img, step: written.append(
                (name, img.shape, step))))
    hook = PretrainReconstructionVisHook(interval=2, num_images=2)
    hook.after_train_iter(runner, 0, data_batch)
    assert written == [('pretrain_reconstruction', (192, 96, 3), 2)]
    runner.iter = 2
    hook.after_train_iter(runner, 0, data_batch)
    assert len(written) == 1
