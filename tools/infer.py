"""Run a Sapiens2 task model on images, folders or videos and save the outputs.

    python tools/infer.py pose CONFIG [CHECKPOINT] --input IMG|DIR|VIDEO \
        --output DIR [--bboxes FILE | --det-config C --det-checkpoint W] \
        [--flip-test] [--device cpu] [--batch-size N] [--kpt-thr 0.3]
    python tools/infer.py seg CONFIG [CHECKPOINT] --input ... --output DIR

Outputs (docs/inference.md): visualisations under the input file names (one
.mp4 per input video), pose keypoints in ``<label>_predictions.json``, seg label
maps as ``<stem>_seg.npy``. Unreadable inputs are skipped and listed at the end.
"""
import argparse
import os.path as osp
import sys

from sapiens2_mm.apis import (
    INFERENCERS,
    BoxFile,
    DetectorBoxes,
    FrameReader,
    build_inferencer,
    init_model,
)
from sapiens2_mm.apis.writers import (
    FrameSink,
    PoseJsonWriter,
    check_writable_dir,
    save_label_map,
)
from sapiens2_mm.visualization import draw_pose, seg_side_by_side


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('task', choices=sorted(INFERENCERS),
                        help='which task the config is for')
    parser.add_argument('config', help='task config file')
    parser.add_argument('checkpoint', nargs='?', default=None,
                        help='official .safetensors or mmengine .pth; '
                        'omitted = random weights (smoke tests only)')
    parser.add_argument('--input', required=True, nargs='+',
                        help='image(s), folder(s) or video(s)')
    parser.add_argument('--output', required=True, help='output folder')
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--batch-size', type=int, default=4,
                        help='frames (seg) or person crops (pose) per forward')
    parser.add_argument('--flip-test', action='store_true',
                        help='average with the mirrored input')
    boxes = parser.add_mutually_exclusive_group()
    boxes.add_argument('--bboxes', help='pose: person boxes JSON '
                       '(schema in docs/inference.md)')
    boxes.add_argument('--det-config', help='pose: mmdet detector config')
    parser.add_argument('--det-checkpoint', help='pose: detector weights')
    parser.add_argument('--bbox-thr', type=float, default=0.3)
    parser.add_argument('--nms-thr', type=float, default=0.3)
    parser.add_argument('--kpt-thr', type=float, default=0.3,
                        help='pose: draw keypoints scoring above this')
    parser.add_argument('--radius', type=int, default=3)
    parser.add_argument('--thickness', type=int, default=1)
    parser.add_argument('--no-vis', action='store_true',
                        help='do not write visualisations')
    return parser.parse_args(argv)


def _progress(total):
    try:
        from tqdm import tqdm
        return tqdm(total=total or None, unit='frame')
    except ImportError:  # tqdm is optional; mmengine's bar is always there
        from mmengine.utils import ProgressBar
        return ProgressBar(total)


def _box_source(args):
    if args.task != 'pose':
        if args.bboxes or args.det_config:
            sys.exit('error: --bboxes / --det-config are for the pose task.')
        return None
    if args.bboxes:
        return BoxFile(args.bboxes)
    if args.det_config:
        return DetectorBoxes(args.det_config, args.det_checkpoint, args.device,
                             args.bbox_thr, args.nms_thr)
    return None


def json_label(out_dir: str) -> str:
    """Official naming: the output folder name, or its parent's when the
    folder is called ``*_output``."""
    out_dir = osp.abspath(out_dir)
    name = osp.basename(out_dir)
    return osp.basename(osp.dirname(out_dir)) if name.endswith(
        '_output') else name


def main(argv=None) -> int:
    args = parse_args(argv)
    check_writable_dir(args.output)
    model = init_model(args.config, args.checkpoint, args.device)
    if model.task != args.task:
        sys.exit(f'error: {args.config} is a {model.task!r} config, not '
                 f'{args.task!r}.')
    kwargs = dict(batch_size=args.batch_size,
                  flip_test=True if args.flip_test else None)
    if args.task == 'pose':
        kwargs['boxes'] = _box_source(args)
    else:
        _box_source(args)
    inferencer = build_inferencer(model, **kwargs)
    reader = FrameReader(args.input)
    sink = FrameSink(args.output)
    meta = model.dataset_meta
    pose_json = PoseJsonWriter(meta, args.kpt_thr)
    label_maps = []
    bar = _progress(reader.num_frames())
    count = 0
    for frame, result in inferencer.iter_frames(None, reader):
        count += 1
        if args.task == 'pose':
            pose_json.add(result)
            vis = None if args.no_vis else draw_pose(
                frame.image, result.keypoints, result.keypoint_scores, meta,
                result.bboxes, args.kpt_thr, args.radius, args.thickness)
        else:
            label_maps.append(
                save_label_map(args.output, frame.name, result.label_map))
            vis = None if args.no_vis else seg_side_by_side(
                frame.image, result.label_map, meta['palette'])
        if vis is not None:
            sink.write(vis, frame.name, frame.video, frame.fps)
        bar.update()
    sink.close()
    if hasattr(bar, 'close'):
        bar.close()
    print(f'\n{count} frame(s) processed; outputs in {args.output}')
    if args.task == 'pose':
        path = pose_json.write(
            osp.join(args.output, f'{json_label(args.output)}'
                     '_predictions.json'))
        print(f'keypoints: {path}')
        if isinstance(kwargs['boxes'], BoxFile) and kwargs['boxes'].num_missing:
            print(f'{kwargs["boxes"].num_missing} frame(s) not in the bbox '
                  'file used the whole-image box')
    else:
        print(f'label maps: {len(label_maps)} x <name>_seg.npy')
    if not args.no_vis:
        print(f'visualisations: {len(sink.written)} file(s)')
    if reader.skipped:
        print(f'skipped {len(reader.skipped)} unreadable input(s):')
        for path, reason in reader.skipped:
            print(f'  {path}: {reason}')
    return 0 if count else 1


if __name__ == '__main__':
    try:
        sys.exit(main())
    except (FileNotFoundError, PermissionError, NotADirectoryError,
            ValueError) as err:
        sys.exit(f'error: {err}')
