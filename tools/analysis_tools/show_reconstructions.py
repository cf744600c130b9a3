"""Show what a pretraining checkpoint reconstructs on your own photos.

Usage::

    python tools/analysis_tools/show_reconstructions.py CONFIG CHECKPOINT \
        --input PHOTO|FOLDER ... --output-dir DIR [--mask-ratio 0.75]
        [--seed 0] [--min-height 512] [--device cpu]

CONFIG is the pretraining config the checkpoint was trained with; CHECKPOINT
a training checkpoint of it (``work_dirs/.../iter_N.pth``: the pixel decoder
is needed, which an exported backbone does not hold). Each photo is scaled to
cover the backbone's input size (``model.backbone.img_size``, the global crop
size) and centre-cropped, normalized by the config's preprocessor, masked with
a seeded random mask and reconstructed by the student (backbone + decoder),
as ``PretrainReconstructionVisHook`` does during training. One PNG per photo,
``DIR/<stem>_reconstruction.png``: ``[masked input | reconstruction |
input]`` (hidden patches grey; the reconstruction shows the prediction at
hidden patches and the input elsewhere), each panel enlarged by a whole
factor (nearest neighbour) to at least ``--min-height`` pixels so small
models stay legible, with a title strip. The mean squared error on the
hidden patches (normalized pixels, the training loss) is printed per photo.
Existing files are never overwritten; unreadable photos are skipped and
counted.
"""
import argparse
import math
import os
import os.path as osp
import sys
from typing import List, Tuple

import numpy as np

TITLE_HEIGHT = 28


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('config', help='the pretraining config')
    parser.add_argument('checkpoint', help='its training checkpoint (.pth)')
    parser.add_argument('--input', nargs='+', required=True,
                        help='photos and/or folders of photos')
    parser.add_argument('--output-dir', required=True)
    parser.add_argument('--mask-ratio', type=float, default=None,
                        help="default: the config's mask_ratio")
    parser.add_argument('--seed', type=int, default=0,
                        help='mask seed (the same masks for the same seed)')
    parser.add_argument('--min-height', type=int, default=512,
                        help='panels are enlarged to at least this height')
    parser.add_argument('--device', default='cpu')
    return parser.parse_args(argv)


def list_photos(inputs: List[str]) -> List[str]:
    """Files given, and the image files of folders given (recursively,
    sorted).

    Raises:
        FileNotFoundError: an input that does not exist.
    """
    from sapiens2_mm.datasets.pretrain import IMAGE_EXTENSIONS
    photos = []
    for item in inputs:
        if osp.isfile(item):
            photos.append(item)
        elif osp.isdir(item):
            for root, _, files in sorted(os.walk(item)):
                photos += [osp.join(root, f) for f in sorted(files)
                           if f.lower().endswith(IMAGE_EXTENSIONS)]
        else:
            raise FileNotFoundError(f'--input {item!r} does not exist.')
    return photos


def cover_crop(image: np.ndarray, size: Tuple[int, int]) -> np.ndarray:
    """Scale ``image`` (H, W, 3) to cover ``size`` (h, w), keeping its aspect
    ratio, and cut the centre (h, w) out."""
    import cv2
    h, w = size
    scale = max(h / image.shape[0], w / image.shape[1])
    new = (max(w, round(image.shape[1] * scale)),
           max(h, round(image.shape[0] * scale)))
    resized = cv2.resize(image, new, interpolation=cv2.INTER_AREA
                         if scale < 1 else cv2.INTER_LINEAR)
    top = (resized.shape[0] - h) // 2
    left = (resized.shape[1] - w) // 2
    return np.ascontiguousarray(resized[top:top + h, left:left + w])


def load_pretrainer(config: str, checkpoint: str, device: str):
    """The config's ``Sapiens2Pretrainer`` with the checkpoint's weights.

    Raises:
        ValueError: not a pretraining config, or a checkpoint without the
            decoder (an exported backbone) or of another model.
    """
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import read_checkpoint
    from sapiens2_mm.utils.checkpoint import check_state_dict
    from sapiens2_mm.utils.user_errors import CheckpointError, ConfigError
    cfg = Config.fromfile(config)
    if str(cfg.model.get('type', '')).split('.')[-1] != 'Sapiens2Pretrainer':
        raise ConfigError(
            f'{config} builds a {cfg.model.get("type")}, not a '
            'Sapiens2Pretrainer; give the pretraining config the checkpoint '
            'was trained with (configs/pretrain/).')
    cfg.model.backbone.init_cfg = None
    model = MODELS.build(cfg.model)
    state = read_checkpoint(checkpoint)
    if not any(k.startswith('neck.') for k in state):
        raise CheckpointError(
            f'{checkpoint} holds no pixel decoder (neck.*): reconstructions '
            'need the training checkpoint of the pretraining run '
            '(work_dirs/<run>/iter_N.pth), not an exported backbone.')
    report = check_state_dict(model, state)
    if report:
        first = report.strip().splitlines()[0].split(':', 1)[0]
        raise CheckpointError(
            f'{checkpoint} does not fit the model of {config} ({first} ...); '
            'give the config it was trained with.')
    model.load_state_dict(state)
    return model.to(device).eval(), cfg


def panels(grid: np.ndarray, height: int) -> List[np.ndarray]:
    """The three rows of a one-image ``reconstruction_grid`` (masked,
    reconstruction, input), RGB."""
    return [grid[i * height:(i + 1) * height] for i in range(3)]


def compose(rows: List[np.ndarray], titles: List[str],
            min_height: int) -> np.ndarray:
    """``[panel | panel | panel]`` enlarged by a whole factor to at least
    ``min_height``, 4 px apart, under a title strip; BGR uint8."""
    import cv2
    factor = max(1, math.ceil(min_height / rows[0].shape[0]))
    big = [np.repeat(np.repeat(r, factor, 0), factor, 1)[..., ::-1]
           for r in rows]
    h, w = big[0].shape[:2]
    gap = 4
    out = np.zeros((TITLE_HEIGHT + h, 3 * w + 2 * gap, 3), np.uint8)
    for i, (panel, title) in enumerate(zip(big, titles)):
        x = i * (w + gap)
        out[TITLE_HEIGHT:, x:x + w] = panel
        cv2.putText(out, title, (x + 4, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.55,
                    (255, 255, 255), 1, cv2.LINE_AA)
    return out


def reconstruct_photo(model, image_bgr: np.ndarray, size: Tuple[int, int],
                      mask_ratio, seed: int):
    """``(grid, hidden_mse, ratio)`` of one photo: the
    ``reconstruction_grid`` (3 * h, w, 3) RGB, the MSE on hidden patches and
    the mask ratio used."""
    import torch

    from sapiens2_mm.engine.hooks.pretrain_vis_hook import (
        reconstruction_grid,
    )
    crop = cover_crop(image_bgr, size)
    device = next(model.parameters()).device
    batch = torch.from_numpy(crop).permute(2, 0, 1)[None].to(device)
    preprocessor = model.data_preprocessor
    with torch.no_grad():
        images = preprocessor(dict(inputs=[batch], data_samples=None),
                              False)['inputs'][0]
        generator = torch.Generator(device=images.device).manual_seed(seed)
        ratio = model.mask_ratio if mask_ratio is None else mask_ratio
        out = model.reconstruct(images, ratio, generator=generator)
        mse = float(model.head.loss(out['pred'], images, out['mask']))
    mean = getattr(preprocessor, 'mean', torch.zeros(3, 1, 1))
    std = getattr(preprocessor, 'std', torch.ones(3, 1, 1))
    grid = reconstruction_grid(images, out['pred'], out['mask'],
                               model.head.patch_size, mean, std,
                               model.head.norm_pix)
    return grid, mse, ratio


def main(argv=None) -> List[str]:
    args = parse_args(argv)
    import cv2

    from sapiens2_mm.utils import register_all_modules
    from sapiens2_mm.utils.atomic_file import atomic_output
    from sapiens2_mm.utils.cli_errors import user_errors_as_exit
    from sapiens2_mm.utils.output_paths import check_outside_folders, check_writable_dir
    register_all_modules()
    with user_errors_as_exit():
        photos = list_photos(args.input)
        if not photos:
            raise FileNotFoundError(f'No photos in {args.input}.')
        check_outside_folders(
            args.output_dir,
            [item if osp.isdir(item) else osp.dirname(item) or '.'
             for item in args.input], '--output-dir')
        out_dir = check_writable_dir(args.output_dir, '--output-dir')
        model, cfg = load_pretrainer(args.config, args.checkpoint,
                                     args.device)
    size = tuple(cfg.model.backbone.img_size)
    written, skipped = [], []
    for photo in photos:
        stem = osp.splitext(osp.basename(photo))[0]
        path = osp.join(out_dir, f'{stem}_reconstruction.png')
        if osp.exists(path):
            skipped.append(f'{photo} ({path} exists)')
            continue
        image = cv2.imread(photo, cv2.IMREAD_COLOR)
        if image is None:
            skipped.append(f'{photo} (unreadable)')
            continue
        grid, mse, ratio = reconstruct_photo(model, image, size,
                                             args.mask_ratio, args.seed)
        titles = [f'masked ({ratio:.0%} hidden)', 'reconstruction', 'input']
        drawing = compose(panels(grid, size[0]), titles, args.min_height)
        with atomic_output(path) as tmp:
            if not cv2.imwrite(tmp, drawing):
                raise SystemExit(f'error: could not write {path!r}.')
        written.append(path)
        print(f'{photo}: hidden-patch MSE {mse:.4f} -> {path}')
    print(f'Wrote {len(written)} reconstruction(s) to {out_dir}'
          + (f'; skipped {len(skipped)}: ' + '; '.join(skipped)
             if skipped else ''))
    return written


if __name__ == '__main__':
    sys.exit(0 if main() else 1)
