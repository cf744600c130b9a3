"""Grid images of masked input / reconstruction / original during pretraining."""
from typing import Optional

import numpy as np
import torch
from mmengine.hooks import Hook

from ...registry import HOOKS


def reconstruction_grid(images: torch.Tensor, pred: torch.Tensor,
                        mask: torch.Tensor, patch_size: int,
                        mean: torch.Tensor, std: torch.Tensor,
                        norm_pix: bool = False,
                        eps: float = 1e-6) -> np.ndarray:
    """Rows: masked input (hidden patches grey), reconstruction, original.

    The reconstruction row shows the prediction at hidden patches and the
    input at visible ones (MAE's visualization).

    Args:
        images: (B, 3, H, W) normalized RGB inputs.
        pred: (B, N, p*p*3) decoder output in target space.
        mask: (B, N) bool, True = hidden.
        patch_size: p.
        mean: (3, 1, 1) preprocessor mean (0-255 scale).
        std: (3, 1, 1) preprocessor std.
        norm_pix: the target was per-patch normalized: undo it with the
            input patch statistics.

    Returns:
        (3 * H, B * W, 3) uint8 RGB image.
    """
    from ...models.heads.selfsup.rect_mae_head import patchify, unpatchify
    images = images.detach().float().cpu()
    pred = pred.detach().float().cpu()
    mask = mask.cpu()
    target = patchify(images, patch_size)
    if norm_pix:
        mu = target.mean(-1, keepdim=True)
        sigma = (target.var(-1, keepdim=True) + eps)**0.5
        pred = pred * sigma + mu
    grid = (images.shape[2] // patch_size, images.shape[3] // patch_size)
    hidden = mask[..., None]
    masked = unpatchify(torch.where(hidden, torch.zeros_like(target), target),
                        grid, patch_size)
    recon = unpatchify(torch.where(hidden, pred, target), grid, patch_size)
    rows = []
    for row in (masked, recon, images):
        pixels = row * std.cpu() + mean.cpu()
        if row is masked:  # hidden patches: mid grey
            pixels = torch.where(
                unpatchify(hidden.expand_as(target).float(), grid,
                           patch_size).bool(), torch.full_like(pixels, 128.),
                pixels)
        pixels = pixels.clamp(0, 255).round().to(torch.uint8)
        rows.append(torch.cat(list(pixels.permute(0, 2, 3, 1)), dim=1))
    return torch.cat(rows, dim=0).numpy()


@HOOKS.register_module()
class PretrainReconstructionVisHook(Hook):
    """Every ``interval`` iterations, draw the student's reconstructions.

    Uses the first ``num_images`` images of the current batch's first global
    view, a fixed-seed mask, and writes the grid through the runner's
    visualizer (``vis_data/vis_image/pretrain_reconstruction_<iter>.png`` with
    the local backend).

    Args:
        interval: iterations between images.
        num_images: images per grid.
        mask_ratio: ratio to draw with (None: the model's).
        seed: mask RNG seed (the same masks at every interval).
    """

    priority = 'LOW'

    def __init__(self, interval: int = 1000, num_images: int = 4,
                 mask_ratio: Optional[float] = None, seed: int = 0):
        self.interval = interval
        self.num_images = num_images
        self.mask_ratio = mask_ratio
        self.seed = seed

    def after_train_iter(self, runner, batch_idx: int, data_batch=None,
                         outputs=None) -> None:
        """Draw a grid on every ``interval``-th iteration."""
        if data_batch is None or not self.every_n_train_iters(
                runner, self.interval):
            return
        from mmpretrain.utils import get_ori_model
        model = get_ori_model(runner.model)
        with torch.no_grad():
            data = model.data_preprocessor(data_batch, False)
            views = data['inputs']
            images = (views[0] if isinstance(views, (list, tuple)) else
                      views)[:self.num_images]
            generator = torch.Generator(device=images.device)
            generator.manual_seed(self.seed)
            # through the wrapper (DDP / FSDP): every rank runs this, and
            # FSDP units must gather their shards (upstream: FSDP1 leaves
            # root-unit parameters sharded outside the root's forward)
            out = runner.model(images, mode='reconstruct',
                               mask_ratio=self.mask_ratio,
                               generator=generator)
            out = dict(pred=out['pred'].float(), mask=out['mask'])
        # Without normalization the preprocessor has no mean/std buffers.
        preprocessor = model.data_preprocessor
        mean = getattr(preprocessor, 'mean', torch.zeros(3, 1, 1))
        std = getattr(preprocessor, 'std', torch.ones(3, 1, 1))
        grid = reconstruction_grid(images, out['pred'], out['mask'],
                                   model.head.patch_size, mean, std,
                                   model.head.norm_pix)
        runner.visualizer.add_image('pretrain_reconstruction', grid,
                                    step=runner.iter + 1)
