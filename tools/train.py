"""Train a sapiens2_mm config with mmengine's Runner.

Usage::

    python tools/train.py CONFIG [--work-dir DIR] [--resume [auto|PATH]] [--amp]
        [--cfg-options key=value ...] [--launcher none|pytorch|slurm]

Distributed: ``tools/dist_train.sh CONFIG GPUS`` (torchrun) or
``tools/slurm_train.sh PARTITION JOB CONFIG`` (srun). A config with a
``strategy`` (FSDP/DeepSpeed, see configs/_base_/strategies/) runs on
mmengine's FlexibleRunner.
"""
import argparse
import os
import os.path as osp
import sys
import tempfile
from typing import List, Optional

from mmengine.config import Config, DictAction

AMP_DTYPE = 'bfloat16'  # bf16: fp16 overflows in ViT heads


class ToolError(RuntimeError):
    """A user error the tools report as one clear message."""


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Train a sapiens2_mm model')
    parser.add_argument('config', help='config file path')
    parser.add_argument(
        '--work-dir', help='where logs and checkpoints go (default: '
        './work_dirs/<config name>)')
    parser.add_argument(
        '--resume', nargs='?', const='auto', default=None, metavar='auto|PATH',
        help='resume the schedule: "auto" (or no value) takes the latest '
        'checkpoint of the work dir, PATH a given checkpoint')
    parser.add_argument(
        '--amp', action='store_true',
        help=f'mixed precision training ({AMP_DTYPE} autocast)')
    return parse_with_common_args(parser, argv)


def parse_with_common_args(parser: argparse.ArgumentParser,
                           argv: Optional[List[str]]) -> argparse.Namespace:
    """Add --cfg-options / --launcher / --local-rank (shared with test.py),
    parse, and export LOCAL_RANK for launchers that only pass the flag."""
    parser.add_argument(
        '--cfg-options', nargs='+', action=DictAction,
        help='override config keys, e.g. train_dataloader.batch_size=4; keys '
        'the config does not have are refused')
    parser.add_argument(
        '--launcher', choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none', help='job launcher')
    # torchrun < 2.0 passes --local-rank / --local_rank
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args(argv)
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


def load_config(path: str, cfg_options: Optional[dict]) -> Config:
    """Read ``path``, refuse unknown ``cfg_options`` keys, merge them."""
    from sapiens2_mm.utils.cfg_options import check_cfg_options
    if not osp.isfile(path):
        raise ToolError(
            f'Config file not found: {path!r}. Pass a path such as '
            'configs/pose/<name>.py (see docs/train_test.md).')
    cfg = Config.fromfile(path)
    check_cfg_options(cfg, cfg_options)
    if cfg_options:
        cfg.merge_from_dict(cfg_options)
    return cfg


def ensure_writable_dir(path: str, what: str = 'work dir') -> str:
    """Create ``path`` if needed and prove it is writable; return it."""
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix='.write_test'):
            pass
    except OSError as err:
        raise ToolError(
            f'The {what} {path!r} is not writable ({err.strerror}). Choose '
            'another directory with --work-dir (or --show-dir/--out).') from err
    return path


def resolve_work_dir(cfg: Config, work_dir: Optional[str],
                     config_path: str) -> None:
    """CLI > config > ./work_dirs/<config name>, checked writable."""
    if work_dir is not None:
        cfg.work_dir = work_dir
    elif cfg.get('work_dir') is None:
        cfg.work_dir = osp.join('./work_dirs',
                                osp.splitext(osp.basename(config_path))[0])
    ensure_writable_dir(cfg.work_dir)


def enable_amp(cfg: Config) -> None:
    """Wrap the optimizer in mmengine's AmpOptimWrapper with bf16 autocast."""
    from mmengine.device import get_device
    if get_device() == 'cpu':
        raise ToolError(
            '--amp needs an accelerator (mmengine AmpOptimWrapper supports '
            'CUDA/NPU/MLU/MUSA); none was found. Drop --amp to train in fp32.')
    wrapper = cfg.optim_wrapper
    if wrapper.get('type') in ('DeepSpeedOptimWrapper', ):
        raise ToolError(
            '--amp does not apply to a DeepSpeed config: set bf16 in the '
            'strategy (configs/_base_/strategies/deepspeed_zero3_bf16.py).')
    if wrapper.get('type') == 'AmpOptimWrapper':
        wrapper.setdefault('dtype', AMP_DTYPE)
        return
    wrapper.type = 'AmpOptimWrapper'
    wrapper.dtype = AMP_DTYPE
    if 'FSDP' in str((cfg.get('strategy') or {}).get('type', '')):
        wrapper.use_fsdp = True  # sharded gradient scaler
    # bf16 keeps fp32's exponent range: no loss scaling needed
    wrapper.loss_scale = 1.0


def set_resume(cfg: Config, resume: Optional[str]) -> None:
    """``auto``: latest checkpoint of the work dir; a path: that file."""
    if resume is None:
        return
    cfg.resume = True
    if resume == 'auto':
        cfg.load_from = None
        return
    if not osp.isfile(resume):
        raise ToolError(
            f'--resume checkpoint not found: {resume!r}. Use --resume auto to '
            'continue from the latest checkpoint of the work dir.')
    cfg.load_from = resume


def add_rng_state_hook(cfg: Config) -> None:
    """Checkpoint RNG states so a resumed run continues the same stream."""
    hooks = list(cfg.get('custom_hooks') or [])
    if not any(h.get('type') in ('RNGStateHook', 'sapiens2_mm.RNGStateHook')
               for h in hooks):
        hooks.append(dict(type='RNGStateHook'))
    cfg.custom_hooks = hooks


def prepare_cpu_distributed(cfg: Config) -> None:
    """Let ``--launcher pytorch`` run on CPU-only machines (gloo).

    mmengine's ``init_dist`` calls ``torch.cuda.set_device`` unconditionally
    and wraps DDP with ``device_ids=[LOCAL_RANK]``; both fail without a GPU.
    Here the process group is initialised first (the Runner then skips its own
    init) and DDP gets ``device_ids=None``, as torch requires for CPU modules.
    """
    import torch.distributed as torch_dist
    from mmengine.device import get_device
    if cfg.launcher != 'pytorch' or get_device() != 'cpu':
        return
    dist_cfg = cfg.setdefault('env_cfg', {}).setdefault('dist_cfg', {})
    if dist_cfg.get('backend', 'nccl') != 'gloo':
        print(f'No GPU: using the gloo backend instead of '
              f'{dist_cfg.get("backend", "nccl")!r}.', file=sys.stderr)
        dist_cfg['backend'] = 'gloo'
    if not torch_dist.is_initialized():
        torch_dist.init_process_group(**dist_cfg)
    wrapper = cfg.get('model_wrapper_cfg') or dict(
        type='MMDistributedDataParallel')
    wrapper.setdefault('device_ids', None)
    cfg.model_wrapper_cfg = wrapper


def check_strategy(cfg: Config) -> None:
    """Refuse FSDP/DeepSpeed set-ups that cannot run here, with the reason."""
    import importlib.util

    from mmengine.device import get_device
    strategy = cfg.get('strategy')
    if not strategy:
        return
    kind = str(strategy.get('type', ''))
    if 'FSDP' in kind and get_device() == 'cpu':
        raise ToolError(
            'The config uses FSDPStrategy, but torch FullyShardedDataParallel '
            '(which mmengine wraps) needs a GPU or other accelerator: torch '
            'raises "FSDP needs a non-CPU accelerator device" on CPU. Train '
            'without the strategy on CPU (DDP with gloo works: '
            'tools/dist_train.sh CONFIG N).')
    if 'FSDP' in kind and cfg.launcher == 'none':
        raise ToolError(
            'FSDPStrategy needs a distributed launch (a process group), even '
            'on one GPU: use tools/dist_train.sh CONFIG 1.')
    if 'DeepSpeed' in kind:
        if importlib.util.find_spec('deepspeed') is None:
            raise ToolError(
                'The config uses DeepSpeedStrategy but deepspeed is not '
                'installed: pip install deepspeed (it builds CUDA ops; see '
                'docs/large_models.md), or use the FSDP strategy instead.')
        wrapper = str(cfg.get('optim_wrapper', {}).get('type', 'OptimWrapper'))
        if 'DeepSpeed' not in wrapper:
            raise ToolError(
                f'DeepSpeedStrategy needs optim_wrapper.type='
                f"'DeepSpeedOptimWrapper', got {wrapper!r}.")


def cleanup_distributed() -> None:
    """Destroy the process group before exit.

    mmengine leaves it alive; with gloo the process can then abort at
    interpreter shutdown ("terminate called without an active exception").
    """
    import torch.distributed as torch_dist
    if torch_dist.is_available() and torch_dist.is_initialized():
        torch_dist.destroy_process_group()


def build_cfg(args: argparse.Namespace) -> Config:
    """The training config after every command-line option is applied."""
    cfg = load_config(args.config, args.cfg_options)
    cfg.launcher = args.launcher
    resolve_work_dir(cfg, args.work_dir, args.config)
    if args.amp:
        enable_amp(cfg)
    set_resume(cfg, args.resume)
    add_rng_state_hook(cfg)
    check_strategy(cfg)
    return cfg


def build_runner(cfg: Config):
    """Runner, FlexibleRunner (configs with a ``strategy``) or ``runner_type``."""
    from mmengine.registry import RUNNERS
    from mmengine.runner import FlexibleRunner, Runner
    if 'runner_type' in cfg:
        return RUNNERS.build(cfg)
    if cfg.get('strategy') is not None:
        return FlexibleRunner.from_cfg(cfg)
    return Runner.from_cfg(cfg)


def main(argv: Optional[List[str]] = None):
    args = parse_args(argv)
    from sapiens2_mm.utils import register_all_modules
    from sapiens2_mm.utils.cfg_options import UnknownConfigKeyError
    register_all_modules(init_default_scope=False)
    try:
        cfg = build_cfg(args)
    except (ToolError, UnknownConfigKeyError) as err:
        sys.exit(f'error: {err}')
    prepare_cpu_distributed(cfg)
    try:
        runner = build_runner(cfg)
        runner.train()
    finally:
        cleanup_distributed()
    return runner


if __name__ == '__main__':
    main()
