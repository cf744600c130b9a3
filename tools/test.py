"""Evaluate a checkpoint with mmengine's Runner.

Usage::

    python tools/test.py CONFIG CHECKPOINT [--work-dir DIR] [--out FILE.pkl]
        [--show-dir DIR] [--tta] [--compile] [--dtype fp32|bf16]
        [--cfg-options key=value ...]
        [--launcher none|pytorch|slurm]

CHECKPOINT may be an official Sapiens2 task ``.safetensors`` file or a ``.pth``
saved by tools/train.py. Either is loaded strictly: a checkpoint of another
task or model size fails with the list of mismatching keys. The metrics are
printed and written to ``<work dir>/test_metrics.json``.
"""
import argparse
import json
import os
import os.path as osp
import sys
from typing import List, Optional

from mmengine.config import Config

sys.path.insert(0, osp.dirname(osp.abspath(__file__)))
from train import (  # noqa: E402
    ToolError,
    build_runner,
    cleanup_distributed,
    ensure_writable_dir,
    is_fsdp,
    load_config,
    parse_with_common_args,
    prepare_cpu_distributed,
    resolve_work_dir,
    wait_for_all_ranks,
)

METRICS_FILE = 'test_metrics.json'


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Test (and evaluate) a sapiens2_mm model')
    parser.add_argument('config', help='config file path')
    parser.add_argument(
        'checkpoint', help='checkpoint: official .safetensors or a .pth')
    parser.add_argument(
        '--work-dir', help='where logs and metrics go (default: '
        './work_dirs/<config name>)')
    parser.add_argument(
        '--out', help='dump the raw predictions to this .pkl file')
    parser.add_argument(
        '--show-dir', help='write visualizations of the predictions here')
    parser.add_argument(
        '--tta', action='store_true',
        help='test-time augmentation: wrap the model in the config\'s '
        'tta_model and use its tta_pipeline (seg flip test); pose flip test '
        'is model.test_cfg.flip_test')
    parser.add_argument(
        '--compile', action='store_true',
        help='torch.compile the network (eager with a warning where no '
        'compiler is available)')
    parser.add_argument(
        '--dtype', choices=('fp32', 'bf16'), default='fp32',
        help='network precision (bf16: autocast; an error on devices '
        'without bf16)')
    return parse_with_common_args(parser, argv)


def set_checkpoint(cfg: Config, checkpoint: str) -> None:
    """Load ``checkpoint`` strictly through CheckedCheckpointLoadHook.

    mmengine's ``load_from`` would read only torch files and load them
    non-strictly; the hook reads .safetensors too and lists mismatching keys.
    """
    if not osp.isfile(checkpoint):
        raise ToolError(
            f'Checkpoint not found: {checkpoint!r}. Pass a .pth from '
            'tools/train.py or an official .safetensors file.')
    cfg.load_from = None
    cfg.resume = False
    if is_fsdp(cfg):
        # Sapiens2FSDPStrategy loads it (the same checks) into the plain
        # model before wrapping; FlexibleRunner's test would call
        # init_weights, which reads pretrain init_cfg files a tester does not
        # need and the plain Runner never calls for testing
        cfg.strategy.load_before_wrap = dict(checkpoint=checkpoint)
        cfg.init_weights_for_test_or_val = False
        return
    hooks = [
        h for h in (cfg.get('custom_hooks') or [])
        if 'CheckedCheckpointLoadHook' not in str(h.get('type'))
    ]
    hooks.append(dict(type='CheckedCheckpointLoadHook', checkpoint=checkpoint))
    cfg.custom_hooks = hooks


def add_dump(cfg: Config, out: str) -> None:
    """Append mmengine's DumpResults metric writing predictions to ``out``."""
    if not out.endswith(('.pkl', '.pickle')):
        raise ToolError(f'--out must be a .pkl file, got {out!r}')
    ensure_writable_dir(osp.dirname(osp.abspath(out)), '--out directory')
    evaluator = cfg.test_evaluator
    metrics = list(evaluator) if isinstance(evaluator, (list, tuple)) else [
        evaluator
    ]
    metrics.append(dict(type='DumpResults', out_file_path=out))
    cfg.test_evaluator = metrics


def dataset_input_folders(dataset: dict) -> List[str]:
    """The folders a dataset config reads: ``data_root``, every
    ``data_prefix`` folder and the folder of ``ann_file``, also inside
    wrappers (``dataset=`` / ``datasets=[...]``). Empty entries (the current
    folder by default) are left out."""
    folders: List[str] = []
    if not isinstance(dataset, dict):
        return folders
    root = dataset.get('data_root') or ''
    if root:
        folders.append(root)
    prefixes = dataset.get('data_prefix') or {}
    entries = list(prefixes.values()) if isinstance(prefixes, dict) else []
    ann_file = dataset.get('ann_file')
    if isinstance(ann_file, str) and ann_file:
        entries.append(osp.dirname(ann_file))
    for entry in entries:
        if isinstance(entry, str) and (entry or root):
            folders.append(osp.join(root, entry) if root else entry)
    inner = [dataset.get('dataset')] + list(dataset.get('datasets') or [])
    for sub in inner:
        folders += dataset_input_folders(sub)
    return folders


def check_show_folder(images_dir: str, inputs: List[str]) -> None:
    """Refuse a drawing folder that is (inside) an input folder or already
    holds files: a drawing never replaces a photo or an earlier drawing."""
    from sapiens2_mm.utils.output_paths import OutputPathError, check_outside_folders
    try:
        check_outside_folders(images_dir, inputs, '--show-dir folder')
    except OutputPathError as err:
        raise ToolError(str(err)) from err
    held = sorted(n for n in os.listdir(images_dir)
                  if not n.startswith('.')) if osp.isdir(images_dir) else []
    if held:
        raise ToolError(
            f'--show-dir: {images_dir!r} already holds {len(held)} file(s) '
            f'({", ".join(held[:3])}{", ..." if len(held) > 3 else ""}); '
            'drawings are never written over existing files. Pass a new or '
            'empty folder.')


def enable_show_dir(cfg: Config, show_dir: str) -> str:
    """Switch the task's visualization hook on, writing under ``show_dir``.

    The config's task (its registered description) knows its hook: pose uses
    mmpose's PoseVisualizationHook (``show_dir/<image>``), seg mmseg's
    SegVisualizationHook (``show_dir/vis_data/vis_image/<image>``). A config
    without a visualization hook gets the task's default one.

    The drawings keep the image names, so a folder inside the test data (or
    the image folder itself) or one holding files is refused before anything
    is written (:func:`check_show_folder`).

    Returns:
        The folder the images are written to.
    """
    from sapiens2_mm.apis.tasks import find_task
    inputs = dataset_input_folders(
        (cfg.get('test_dataloader') or {}).get('dataset') or {})
    check_show_folder(osp.abspath(show_dir), inputs)
    show_dir = osp.abspath(ensure_writable_dir(show_dir, '--show-dir'))
    try:
        images_dir = find_task(cfg).enable_show_dir(cfg, show_dir)
    except ValueError as err:
        raise ToolError(f'--show-dir: {err}') from err
    if images_dir != show_dir:
        check_show_folder(images_dir, inputs)
    return images_dir


def enable_tta(cfg: Config, config_path: str) -> None:
    """Wrap the model in ``tta_model`` and test with ``tta_pipeline`` (mmseg's
    ``--tta`` convention)."""
    missing = [k for k in ('tta_model', 'tta_pipeline') if not cfg.get(k)]
    if missing:
        raise ToolError(
            f'--tta needs {" and ".join(missing)} in {config_path}; seg configs '
            'define them (SegFlipTTAModel), pose configs flip-test through '
            'model.test_cfg.flip_test=True instead.')
    cfg.test_dataloader.dataset.pipeline = cfg.tta_pipeline
    cfg.tta_model.module = cfg.model
    cfg.model = cfg.tta_model


def build_cfg(args: argparse.Namespace) -> Config:
    cfg = load_config(args.config, args.cfg_options)
    cfg.launcher = args.launcher
    resolve_work_dir(cfg, args.work_dir, args.config)
    set_checkpoint(cfg, args.checkpoint)
    if cfg.get('test_dataloader') is None or cfg.get('test_evaluator') is None:
        raise ToolError(
            f'{args.config} has no test_dataloader/test_evaluator to test '
            'with.')
    if args.out:
        add_dump(cfg, args.out)
    if args.show_dir:
        args.show_images_dir = enable_show_dir(cfg, args.show_dir)
    if args.tta:
        enable_tta(cfg, args.config)
    if args.dtype != 'fp32':
        import torch

        from sapiens2_mm.runtime.precision import check_dtype
        try:  # mmengine's runner uses the GPU when there is one
            check_dtype(args.dtype,
                        'cuda' if torch.cuda.is_available() else 'cpu')
        except ValueError as err:
            raise ToolError(str(err)) from err
    if args.compile or args.dtype != 'fp32':
        cfg.custom_hooks = list(cfg.get('custom_hooks') or []) + [
            dict(type='InferenceSpeedHook', compile=args.compile,
                 dtype=args.dtype)]
    return cfg


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    from sapiens2_mm.utils import register_all_modules
    from sapiens2_mm.utils.cfg_options import UnknownConfigKeyError
    register_all_modules(init_default_scope=False)
    try:
        cfg = build_cfg(args)
    except (ToolError, UnknownConfigKeyError) as err:
        sys.exit(f'error: {err}')
    from mmengine.dist import is_main_process
    prepare_cpu_distributed(cfg)
    try:
        runner = build_runner(cfg)
        metrics = runner.test()
        wait_for_all_ranks()
        main_process = is_main_process()  # before the group is destroyed
    except Exception as err:
        from sapiens2_mm.utils.checkpoint import CheckpointMismatchError
        if isinstance(err, CheckpointMismatchError) or (
                isinstance(err, ValueError) and args.checkpoint in str(err)):
            sys.exit(f'error: {err}')
        raise
    finally:
        cleanup_distributed()
    if main_process:
        plain = {k: (v.item() if hasattr(v, 'item') else v)
                 for k, v in metrics.items()}
        path = osp.join(cfg.work_dir, METRICS_FILE)
        with open(path, 'w') as f:
            json.dump(plain, f, indent=2)
        print(json.dumps(plain))
        print(f'Metrics written to {path}')
        if getattr(args, 'show_images_dir', None):
            print(f'Visualizations written to {args.show_images_dir}')
    return metrics


if __name__ == '__main__':
    main()
