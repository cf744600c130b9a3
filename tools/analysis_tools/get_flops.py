"""Parameters, MACs and FLOPs of a config's model (or of an official backbone).

Usage::

    python tools/analysis_tools/get_flops.py CONFIG [--shape H W]
    python tools/analysis_tools/get_flops.py --arch sapiens2_0.1b [--shape H W]
    python tools/analysis_tools/get_flops.py --arch sapiens2_1b_4k
    python tools/analysis_tools/get_flops.py --all-archs

CONFIG may be of any scope (sapiens2_mm, a stock mmpose / mmseg config). The
input size is the config's test input size (test pipeline, codec, data
preprocessor or backbone img_size; the source is printed), or ``--shape``;
never a default. The model is built on torch's ``meta`` device (no memory, so
the 5B model counts too); a model that cannot be built there (mmseg's
SegFormer) is built on the CPU and moved to it. One forward pass runs under
``torch.utils.flop_counter.FlopCounterMode``
(:mod:`sapiens2_mm.apis.model_cost`). Both conventions are printed, each
named: MACs (multiply-accumulates of convolutions and matrix products,
attention matmuls included: what the mmpose / mmseg model zoos print as
"FLOPs") and FLOPs = 2 x MACs (the Sapiens2 model card's convention). MACs
are also split into linear / conv and attention, because the Sapiens2 model
card numbers are closest to the MACs of the linear and conv layers alone
(see docs/train_test.md).
"""
import argparse
import os.path as osp
import sys
from typing import Dict, Optional, Tuple

from mmengine.config import Config

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
CARD_SHAPE = (1024, 768)  # the model card's input size


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Count parameters and FLOPs (meta device, no memory)')
    parser.add_argument('config', nargs='?', help='config file path')
    parser.add_argument('--arch', help='an official Sapiens2 arch instead of '
                        'a config, e.g. sapiens2_0.1b')
    parser.add_argument('--all-archs', action='store_true',
                        help='table of every official size vs the model card')
    parser.add_argument('--shape', type=int, nargs=2, metavar=('H', 'W'),
                        help='input height and width (default: the '
                        "config's test input size, an arch's img_size)")
    parser.add_argument('--cfg-options', nargs='+', action=CfgOptionsAction,
                        help='override config keys (checked as in '
                        'tools/train.py)')
    args = parser.parse_args(argv)
    if not (args.config or args.arch or args.all_archs):
        parser.error('give a CONFIG, --arch NAME or --all-archs')
    return args


def count(model_cfg: dict, shape: Optional[Tuple[int, int]] = None) -> Dict:
    """Parameters and MACs of a sapiens2_mm-scope ``model_cfg`` (a bare
    backbone or a task model) at ``shape`` (H, W), by default at the size
    the model config gives (``backbone.img_size``, the codec's input size).

    Returns:
        :func:`sapiens2_mm.apis.model_cost.count_cost`'s dict (``params``,
        ``backbone_params``, ``macs``, ``flops`` = 2 x MACs, ``linear_macs``,
        ``attention_macs``, ``shape``).
    """
    from sapiens2_mm.apis.model_cost import config_cost
    return config_cost(Config(dict(model=model_cfg)), shape)


def backbone_cfg(arch: str) -> dict:
    """A bare backbone: an official arch at 1024 x 768, or a variant of
    :data:`VARIANTS` (``sapiens2_1b_4k``: tokenizer on, 4096 x 3072)."""
    if arch in VARIANTS:
        settings, shape = VARIANTS[arch]
        return dict(type='Sapiens2', out_type='featmap', img_size=shape,
                    init_cfg=None, **settings)
    return dict(type='Sapiens2', arch=arch, out_type='featmap',
                img_size=CARD_SHAPE, init_cfg=None)


def _fmt(value: float) -> str:
    for unit, scale in (('T', 1e12), ('G', 1e9), ('M', 1e6)):
        if value >= scale:
            return f'{value / scale:.3f} {unit}'
    return f'{value:,.0f}'


def report(name: str, result: Dict) -> str:
    """The printed summary: input, parameters, MACs and FLOPs, each number
    with its convention."""
    h, w = result['shape']
    source = result.get('shape_source')
    lines = [
        f'{name}  input 1x3x{h}x{w}' + (f' (from {source})' if source else ''),
        f'  params           {result["params"]:,} '
        f'({result["params"] / 1e9:.3f} B)',
    ]
    if result['backbone_params'] != result['params']:
        lines.append(f'  backbone params  {result["backbone_params"]:,}')
    lines += [
        f'  MACs             {_fmt(result["macs"])} (multiply-accumulates: '
        'what the mmpose / mmseg model zoos print as "FLOPs")',
        f'  FLOPs            {_fmt(result["flops"])} (= 2 x MACs: the '
        'Sapiens2 model card\'s convention)',
        f'  MACs linear+conv {_fmt(result["linear_macs"])}',
        f'  MACs attention   {_fmt(result["attention_macs"])}',
    ]
    if result.get('build'):
        lines.append(f'  model            {result["build"]}')
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
    from sapiens2_mm.apis.model_cost import config_cost
    from sapiens2_mm.utils.cfg_options import apply_cfg_options
    cfg = Config.fromfile(args.config)
    apply_cfg_options(cfg, args.cfg_options)
    try:
        result = config_cost(cfg, args.shape)
    except ValueError as err:
        sys.exit(f'error: {err}')
    print(report(osp.basename(args.config), result))
    return result


if __name__ == '__main__':
    main()
