"""Write the synthetic 3-class segmentation set used by the workflow configs.

Each 64x64 image shows a red rectangle (class 1) and a blue disc (class 2) on a
grey background (class 0) at seeded random places, so a tiny model can learn it
in a few iterations. Usage::

    python tests/configs/workflow/make_tiny_seg_data.py OUT_DIR [--num-train 8]
"""
import argparse
import os
import os.path as osp

import cv2
import numpy as np

SIZE = 64


def _sample(rng: np.random.Generator):
    image = np.full((SIZE, SIZE, 3), 128, np.uint8)
    label = np.zeros((SIZE, SIZE), np.uint8)
    x0, y0 = rng.integers(0, SIZE // 2, size=2)
    w, h = rng.integers(12, SIZE // 2, size=2)
    image[y0:y0 + h, x0:x0 + w] = (0, 0, 220)  # BGR red
    label[y0:y0 + h, x0:x0 + w] = 1
    cy, cx = rng.integers(12, SIZE - 12, size=2)
    radius = int(rng.integers(6, 12))
    yy, xx = np.mgrid[:SIZE, :SIZE]
    disc = (yy - cy)**2 + (xx - cx)**2 <= radius**2
    image[disc] = (220, 0, 0)  # BGR blue
    label[disc] = 2
    noise = rng.integers(-20, 21, size=image.shape)
    image = np.clip(image.astype(int) + noise, 0, 255).astype(np.uint8)
    return image, label


def make_tiny_seg_data(out_dir: str, num_train: int = 8, num_val: int = 4,
                       seed: int = 0) -> str:
    """Write ``{img,ann}_dir/{train,val}/*.png`` under ``out_dir``; return it."""
    rng = np.random.default_rng(seed)
    for split, count in (('train', num_train), ('val', num_val)):
        for sub in ('img_dir', 'ann_dir'):
            os.makedirs(osp.join(out_dir, sub, split), exist_ok=True)
        for index in range(count):
            image, label = _sample(rng)
            name = f'{split}_{index:03d}.png'
            cv2.imwrite(osp.join(out_dir, 'img_dir', split, name), image)
            cv2.imwrite(osp.join(out_dir, 'ann_dir', split, name), label)
    return out_dir


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('out_dir')
    parser.add_argument('--num-train', type=int, default=8)
    parser.add_argument('--num-val', type=int, default=4)
    args = parser.parse_args()
    print(make_tiny_seg_data(args.out_dir, args.num_train, args.num_val))
