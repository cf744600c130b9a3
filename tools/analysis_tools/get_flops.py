"""Parameters and FLOPs of a config's model (or of an official backbone size).

Usage::

    python tools/analysis_tools/get_flops.py CONFIG [--shape H W]
    python tools/analysis_tools/get_flops.py --arch sapiens2_0.1b [--shape H W]
    python tools/analysis_tools/get_flops.py --arch sapiens2_1b_4k
    python tools/analysis_tools/get_flops.py --all-archs

The model is built on torch's ``meta`` device, so even the 5B model needs no
memory, and one forward pass of a (1, 3, H, W) meta tensor runs under
``torch.utils.flop_counter.FlopCounterMode``. Counting convention: FLOPs =
2 x multiply-accumulates (MACs) of every convolution and matrix product
(linear layers *and* the attention matmuls QK^T and AV); element-wise ops,
norms and softmax are not counted. MACs are printed too, split into linear /
conv and attention, because the Sapiens2 model card numbers are closest to the
MACs of the linear and conv layers alone (see docs/train_test.md).
"""
import argparse
import os.path as osp
import sys
from typing import Dict, Optional, Tuple

import torch

from sapiens2_mm.utils.cfg_options import CfgOptionsAction

# Sapiens2 README model card: params (billions), TFLOPs at 1024 x 768.
MODEL_CARD = {
    'sapiens2_0.1b': (0.114, 0.342),
    'sapiens2_0.4b': (0.398, 1.260),
    'sapiens2_0.8b': (0.818, 2.592),
    'sapiens2_1b': (1.462, 4.715),
    'sapiens2_5b': (5.071, 15.722),
    # the 1B-4K model (sapiens2_1b + the windowed tokenizer) at 4096 x 3072;
    # the card gives no FLOPs for it
    'sapiens2_1b_4k': (1.607, None),
}
# Backbones that are an official arch built another way, and their input.
VARIANTS = {'sapiens2_1b_4k': (dict(arch='sapiens2_1b', use_tokenizer=True),
                               (4096, 3072))}
ATTENTION_OPS = ('bmm', 'baddbmm', 'scaled_dot_product')
DEFAULT_SHAPE = (1024, 768)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Count parameters and FLOPs (meta device, no memory)')
    parser.add_argument('config', nargs='?', help='config file path')
    parser.add_argument('--arch', help='an official Sapiens2 arch instead of '
                        'a config, e.g. sapiens2_0.1b')
    parser.add_argument('--all-archs', action='store_true',
                        help='table of every official size vs the model card')
    parser.add_argument('--shape', type=int, nargs=2, metavar=('H', 'W'),
                        help='input height and width (default: the config '
                        "backbone's img_size, else 1024 768)")
    parser.add_argument('--cfg-options', nargs='+', action=CfgOptionsAction,
                        help='override config keys (checked as in '
                        'tools/train.py)')
    args = parser.parse_args(argv)
    if not (args.config or args.arch or args.all_archs):
        parser.error('give a CONFIG, --arch NAME or --all-archs')
    return args


def _input_shape(model_cfg: dict, shape: Optional[Tuple[int, int]]):
    if shape:
        return tuple(shape)
    backbone = model_cfg.get('backbone', model_cfg)
    size = backbone.get('img_size', DEFAULT_SHAPE)
    return (size, size) if isinstance(size, int) else tuple(size)


def _forward(model: torch.nn.Module, inputs: torch.Tensor):
    from mmengine.model import BaseModel
    if isinstance(model, BaseModel):  # estimators: head outputs, no decode
        # data_samples is a required positional argument of mmpose's
        # BasePoseEstimator.forward (optional in mmseg / mmpretrain)
        return model(inputs, None, mode='tensor')
    return model(inputs)


def count(model_cfg: dict, shape: Optional[Tuple[int, int]] = None) -> Dict:
    """Build ``model_cfg`` on the meta device and count params and FLOPs.

    Returns:
        dict with ``params``, ``backbone_params``, ``flops`` (2 x MACs),
        ``linear_macs`` (linear + conv), ``attention_macs`` and ``shape``.
    """
    from torch.utils.flop_counter import FlopCounterMode

    from sapiens2_mm.registry import MODELS
    model_cfg = dict(model_cfg)
    hw = _input_shape(model_cfg, shape)
    _drop_pretrained(model_cfg)
    with torch.device('meta'):
        model = MODELS.build(model_cfg).eval()
        inputs = torch.empty(1, 3, *hw)
    params = sum(p.numel() for p in model.parameters())
    backbone = getattr(model, 'backbone', model)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        _forward(model, inputs)
    per_op = {str(k): v for k, v in counter.get_flop_counts()['Global'].items()}
    attention = sum(v for k, v in per_op.items()
                    if any(op in k for op in ATTENTION_OPS))
    total = counter.get_total_flops()
    return dict(params=params,
                backbone_params=sum(p.numel() for p in backbone.parameters()),
                flops=total, linear_macs=(total - attention) // 2,
                attention_macs=attention // 2, shape=hw)


def _drop_pretrained(cfg) -> None:
    """No checkpoint is read on the meta device: drop Pretrained init_cfgs."""
    if isinstance(cfg, dict):
        if isinstance(cfg.get('init_cfg'), dict) and \
                cfg['init_cfg'].get('type') == 'Pretrained':
            cfg['init_cfg'] = None
        for value in cfg.values():
            _drop_pretrained(value)
    elif isinstance(cfg, (list, tuple)):
        for value in cfg:
            _drop_pretrained(value)


def backbone_cfg(arch: str) -> dict:
    """A bare backbone: an official arch at 1024 x 768, or a variant of
    :data:`VARIANTS` (``sapiens2_1b_4k``: tokenizer on, 4096 x 3072)."""
    if arch in VARIANTS:
        settings, shape = VARIANTS[arch]
        return dict(type='Sapiens2', out_type='featmap', img_size=shape,
                    init_cfg=None, **settings)
    return dict(type='Sapiens2', arch=arch, out_type='featmap',
                img_size=DEFAULT_SHAPE, init_cfg=None)


def _fmt(value: float) -> str:
    for unit, scale in (('T', 1e12), ('G', 1e9), ('M', 1e6)):
        if value >= scale:
            return f'{value / scale:.3f} {unit}'
    return f'{value:,.0f}'


def report(name: str, result: Dict) -> str:
    h, w = result['shape']
    lines = [
        f'{name}  input 1x3x{h}x{w}',
        f'  params           {result["params"]:,} '
        f'({result["params"] / 1e9:.3f} B)',
    ]
    if result['backbone_params'] != result['params']:
        lines.append(f'  backbone params  {result["backbone_params"]:,}')
    lines += [
        f'  FLOPs            {_fmt(result["flops"])} (= 2 x MACs)',
        f'  MACs linear+conv {_fmt(result["linear_macs"])}',
        f'  MACs attention   {_fmt(result["attention_macs"])}',
    ]
    return '\n'.join(lines)


def all_archs_table(shape=None) -> str:
    rows = ['| arch | params | card params (B) | FLOPs (T, 2xMACs) | '
            'MACs linear+conv (T) | card TFLOPs |', '|---|---|---|---|---|---|']
    for arch, (card_params, card_flops) in MODEL_CARD.items():
        r = count(backbone_cfg(arch), None if arch in VARIANTS else shape)
        name = arch if arch not in VARIANTS else (
            f'{arch} ({r["shape"][0]}x{r["shape"][1]})')
        rows.append(f'| {name} | {r["params"]:,} | {card_params} | '
                    f'{r["flops"] / 1e12:.3f} | {r["linear_macs"] / 1e12:.3f} '
                    f'| {"-" if card_flops is None else card_flops} |')
    return '\n'.join(rows)


def main(argv=None) -> Dict:
    args = parse_args(argv)
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    if args.all_archs:
        print(all_archs_table(args.shape))
        return {}
    if args.arch:
        result = count(backbone_cfg(args.arch), args.shape)
        print(report(args.arch, result))
        return result
    if not osp.isfile(args.config):
        sys.exit(f'error: config file not found: {args.config!r}')
    from mmengine.config import Config

    from sapiens2_mm.utils.cfg_options import apply_cfg_options
    cfg = Config.fromfile(args.config)
    apply_cfg_options(cfg, args.cfg_options)
    result = count(cfg.model.to_dict(), args.shape)
    print(report(osp.basename(args.config), result))
    return result


if __name__ == '__main__':
    main()
