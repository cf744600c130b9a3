"""Draw what the data pipeline of a config feeds the model, one image per sample.

Usage::

    python tools/analysis_tools/browse_dataset.py CONFIG --output-dir DIR
        [--phase train|val|test] [--max-items 10] [--cfg-options k=v ...]

Each sample goes through the full pipeline of the chosen phase (random
augmentations included, so a train phase shows them). The packed image is
drawn with its ground truth by the task's visualizer: keypoints and skeleton
(mmpose PoseLocalVisualizer) for pose, the palette overlay of the label map
(mmseg SegLocalVisualizer) for segmentation. The config's ``visualizer`` is
used when it has one. Dense tasks are drawn ``[image | ground truth]`` in the
colors of ``tools/infer.py`` (normals, depth with its legend, albedo; pixels
without ground truth black); a pretraining sample is its row of views
(global crops, then local crops).
"""
import argparse
import os
import os.path as osp
import sys

import numpy as np
from mmengine.config import Config

from sapiens2_mm.utils.cfg_options import CfgOptionsAction

DEFAULT_VISUALIZERS = {
    'mmpose': dict(type='mmpose.PoseLocalVisualizer', radius=2, line_width=1),
    'mmseg': dict(type='mmseg.SegLocalVisualizer', alpha=0.5),
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Draw pipeline outputs')
    parser.add_argument('config', help='config file path')
    parser.add_argument('--output-dir', required=True,
                        help='where the drawn images go')
    parser.add_argument('--phase', default='train',
                        choices=['train', 'val', 'test'])
    parser.add_argument('--max-items', type=int, default=10,
                        help='samples to draw (from the start)')
    parser.add_argument('--cfg-options', nargs='+', action=CfgOptionsAction,
                        help='override config keys (see tools/train.py)')
    return parser.parse_args(argv)


# model types drawn without an mmengine visualizer
OWN_DRAWINGS = {'DenseEstimator': 'dense', 'Sapiens2Pretrainer': 'pretrain'}
VIEW_GAP = 4  # black pixels between the views of a pretraining sample


def _task_of(cfg: Config) -> str:
    model_type = str(cfg.model.get('type', '')).split('.')[-1]
    if model_type in OWN_DRAWINGS:
        return OWN_DRAWINGS[model_type]
    text = f'{cfg.model.get("type", "")} {cfg.get("visualizer", "")}'
    for task in DEFAULT_VISUALIZERS:
        if task in text:
            return task
    if 'decode_head' in cfg.model:
        return 'mmseg'
    return 'mmpose'


def _pack_transformed(dataset_cfg: dict) -> None:
    """Have mmpose's PackPoseInputs keep the keypoints in crop coordinates.

    By default it packs the keypoints of the original image; the drawing is on
    the transformed crop, so ask for ``transformed_keypoints`` as well.
    """
    for transform in dataset_cfg.get('pipeline') or []:
        if 'PackPoseInputs' in str(transform.get('type')):
            transform['pack_transformed'] = True
    for sub in dataset_cfg.get('datasets') or []:
        _pack_transformed(sub)


def build_visualizer(cfg: Config, dataset):
    """The config's visualizer (or the task default) with the dataset meta."""
    from sapiens2_mm.registry import VISUALIZERS
    task = _task_of(cfg)
    vis_cfg = dict(cfg.get('visualizer') or DEFAULT_VISUALIZERS[task])
    vis_cfg.update(name=f'browse_dataset_{id(dataset)}', vis_backends=None,
                   save_dir=None)
    visualizer = VISUALIZERS.build(vis_cfg)
    meta = dataset.metainfo
    if task == 'mmseg':
        visualizer.set_dataset_meta(meta.get('classes'), meta.get('palette'))
    else:
        visualizer.set_dataset_meta(meta)
    return visualizer


def draw_sample(visualizer, packed: dict, out_file: str) -> np.ndarray:
    """Draw one packed sample (``inputs`` BGR (3, H, W), ``data_samples``)."""
    image = packed['inputs'].permute(1, 2, 0).numpy()[..., ::-1]  # to RGB
    image = np.ascontiguousarray(image, dtype=np.uint8)
    kwargs = dict(draw_gt=True, draw_pred=False, show=False,
                  out_file=out_file)
    if 'Pose' in type(visualizer).__name__:
        # boxes stay in original-image coordinates: not drawn on the crop
        kwargs.update(draw_bbox=False, draw_heatmap=False)
    else:
        kwargs.update(with_labels=False)
    visualizer.add_datasample(osp.basename(out_file), image,
                              packed['data_samples'], **kwargs)
    return image


def _bgr_image(inputs) -> np.ndarray:
    """A packed (3, H, W) BGR tensor as a contiguous (H, W, 3) uint8 array."""
    return np.ascontiguousarray(inputs.permute(1, 2, 0).numpy(),
                                dtype=np.uint8)


def draw_dense_sample(packed: dict) -> np.ndarray:
    """``[image | ground truth]`` of a packed dense sample (BGR uint8).

    The ground truth goes through the drawing of ``tools/infer.py``'s
    predictions (:func:`sapiens2_mm.visualization.draw_dense_prediction`);
    pixels outside ``gt_mask`` are drawn black (normals NaN, depth 0,
    albedo 0). Ground truth kept at the original size (val / test
    pipelines, where the metrics use it) is shown resized to the network
    input, nearest neighbour.

    Raises:
        ValueError: the sample holds no dense ground truth.
    """
    import cv2

    from sapiens2_mm.structures import dense_fields
    from sapiens2_mm.visualization import draw_dense_prediction
    # the targets of the declared maps that have a coloring
    drawn = tuple(f.gt for f in dense_fields() if f.coloring is not None)
    sample = packed['data_samples']
    image = _bgr_image(packed['inputs'])
    size = (image.shape[1], image.shape[0])

    def to_image_size(array: np.ndarray) -> np.ndarray:
        if array.shape[:2] == image.shape[:2]:
            return array
        out = cv2.resize(array, size, interpolation=cv2.INTER_NEAREST)
        return out.reshape(image.shape[:2] + array.shape[2:])

    mask = (to_image_size(sample.gt_mask.data[0].numpy().astype(np.uint8))
            .astype(bool) if 'gt_mask' in sample else None)
    fields = {}
    for name in drawn:
        if name not in sample:
            continue
        value = to_image_size(
            sample.get(name).data.float().numpy().transpose(1, 2, 0))
        if mask is not None:
            value = value.copy()
            value[~mask] = np.nan if name == 'gt_normal' else 0.0
        fields[name.replace('gt_', 'pred_')] = value  # the drawer's names
    if not fields:
        raise ValueError(
            f'sample {sample.metainfo.get("img_path")} holds none of '
            f'{drawn}; nothing to draw.')
    return draw_dense_prediction(image, fields)


def draw_views(packed: dict) -> np.ndarray:
    """The views of a pretraining sample in one row (BGR uint8): global
    crops then local crops, top-aligned, ``VIEW_GAP`` black pixels apart."""
    views = [_bgr_image(v) for v in packed['inputs']]
    height = max(v.shape[0] for v in views)
    width = sum(v.shape[1] for v in views) + VIEW_GAP * (len(views) - 1)
    row = np.zeros((height, width, 3), np.uint8)
    x = 0
    for view in views:
        row[:view.shape[0], x:x + view.shape[1]] = view
        x += view.shape[1] + VIEW_GAP
    return row


def write_image(path: str, image: np.ndarray) -> None:
    """``cv2.imwrite`` with an error when the file cannot be written."""
    import cv2
    if not cv2.imwrite(path, image):
        raise OSError(f'Could not write {path!r}.')


def main(argv=None) -> list:
    args = parse_args(argv)
    from sapiens2_mm.utils import register_all_modules
    from sapiens2_mm.utils.cfg_options import UnknownConfigKeyError, apply_cfg_options
    register_all_modules()
    if not osp.isfile(args.config):
        sys.exit(f'error: config file not found: {args.config!r}')
    cfg = Config.fromfile(args.config)
    try:
        apply_cfg_options(cfg, args.cfg_options)
    except UnknownConfigKeyError as err:
        sys.exit(f'error: {err}')
    from sapiens2_mm.utils.output_paths import OutputPathError, check_writable_dir
    try:
        check_writable_dir(args.output_dir, '--output-dir')
    except OutputPathError as err:
        sys.exit(f'error: {err}')
    loader = cfg.get(f'{args.phase}_dataloader')
    if not loader:
        sys.exit(f'error: {args.config} has no {args.phase}_dataloader')
    from sapiens2_mm.registry import DATASETS
    _pack_transformed(loader['dataset'])
    dataset = DATASETS.build(loader['dataset'])
    task = _task_of(cfg)
    visualizer = (None if task in OWN_DRAWINGS.values() else
                  build_visualizer(cfg, dataset))
    os.makedirs(args.output_dir, exist_ok=True)
    written = []
    for index in range(min(args.max_items, len(dataset))):
        packed = dataset[index]
        name = osp.basename(packed['data_samples'].metainfo.get(
            'img_path', f'{index}.png'))
        stem = osp.splitext(name)[0]
        out_file = osp.join(args.output_dir, f'{index:04d}_{stem}.png')
        if task == 'dense':
            write_image(out_file, draw_dense_sample(packed))
        elif task == 'pretrain':
            write_image(out_file, draw_views(packed))
        else:
            draw_sample(visualizer, packed, out_file)
        written.append(out_file)
    print(f'Wrote {len(written)} images to {args.output_dir}')
    return written


if __name__ == '__main__':
    main()
