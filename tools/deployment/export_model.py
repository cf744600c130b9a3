"""Export a Sapiens2 task model's tensor forward with torch.export (and ONNX).

    python tools/deployment/export_model.py CONFIG [CHECKPOINT] --output DIR \
        [--shape H W] [--max-batch 32] [--onnx] [--verify] [--device cpu]

The exported function is ``backbone + head`` on a normalized RGB batch
(B, 3, H, W) -> heatmaps (pose) / logits (seg), batch dimension dynamic
(1..max_batch), H and W fixed to ``--shape`` (default: the backbone's
img_size). Pre-processing (resize/crop, ImageNet normalization) and decoding
(heatmap -> keypoints, argmax) stay in Python, as in the official deployment
(docs/deployment.md). ``--verify`` reloads each file and compares it with the eager
model on batches of 1 and 2.
"""
import argparse
import os.path as osp
import sys
from typing import Dict, List, Optional, Tuple

import torch
from torch import nn

from sapiens2_mm.apis import init_model


class TensorForward(nn.Module):
    """``model(x, None, mode='tensor')`` as a plain ``forward(x)``."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.model(x, None, mode='tensor')
        return out[0] if isinstance(out, (tuple, list)) else out


def _example(model, shape: Tuple[int, int], batch: int,
             device) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    return torch.randn(batch, 3, *shape, generator=gen).to(device)


def export_program(model: nn.Module, shape: Tuple[int, int],
                   max_batch: int = 32):
    """``torch.export`` of the tensor forward, batch dynamic in [1, max]."""
    wrapper = TensorForward(model).eval()
    device = next(model.parameters()).device
    batch = torch.export.Dim('batch', min=1, max=max_batch)
    return torch.export.export(
        wrapper, (_example(model, shape, 2, device), ),
        dynamic_shapes={'x': {0: batch}})


def export_onnx(model: nn.Module, shape: Tuple[int, int], path: str) -> str:
    """ONNX via the dynamo exporter, batch dynamic.

    Raises:
        ImportError: ``onnx`` / ``onnxscript`` (needed by torch's dynamo
            exporter) are not installed.
    """
    for name in ('onnx', 'onnxscript'):
        try:
            __import__(name)
        except ImportError as err:
            raise ImportError(
                f'--onnx needs the {name!r} package (torch.onnx.export with '
                f'dynamo=True); pip install onnx onnxscript, or use the '
                'torch.export .pt2 file.') from err
    wrapper = TensorForward(model).eval()
    device = next(model.parameters()).device
    batch = torch.export.Dim('batch', min=1, max=64)
    torch.onnx.export(wrapper, (_example(model, shape, 2, device), ), path,
                      dynamo=True, input_names=['input'],
                      output_names=['output'],
                      dynamic_shapes={'x': {0: batch}}, external_data=False)
    return path


def _run_onnx(path: str, x):
    """Run an ONNX file: onnxruntime if installed, else onnx's (slow, exact)
    reference evaluator, which needs only the ``onnx`` package."""
    try:
        import onnxruntime as ort
    except ImportError:
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(path).run(None, {'input': x})[0]
    return ort.InferenceSession(path).run(None, {'input': x})[0]


def verify(model: nn.Module, shape: Tuple[int, int],
           program_path: Optional[str] = None,
           onnx_path: Optional[str] = None) -> Dict[str, float]:
    """Max |exported - eager| over random batches of 1 and 2 per format."""
    wrapper = TensorForward(model).eval()
    device = next(model.parameters()).device
    diffs = {}
    for batch in (1, 2):
        x = _example(model, shape, batch, device) * 0.5 + 0.1
        with torch.no_grad():
            ref = wrapper(x)
            if program_path:
                prog = torch.export.load(program_path).module()
                out = prog(x)
                diffs[f'torch.export b{batch}'] = (out - ref).abs().max().item()
            if onnx_path:
                out = torch.from_numpy(
                    _run_onnx(onnx_path, x.cpu().numpy()))
                diffs[f'onnx b{batch}'] = (out - ref.cpu()).abs().max().item()
    return diffs


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('checkpoint', nargs='?', default=None)
    parser.add_argument('--output', required=True, help='output folder')
    parser.add_argument('--shape', type=int, nargs=2, metavar=('H', 'W'))
    parser.add_argument('--max-batch', type=int, default=32)
    parser.add_argument('--onnx', action='store_true')
    parser.add_argument('--verify', action='store_true')
    parser.add_argument('--tolerance', type=float, default=1e-4)
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--overwrite', action='store_true',
                        help='replace an existing <config name>.pt2 / .onnx '
                        'in --output')
    return parser.parse_args(argv)


def output_paths(args) -> List[str]:
    """The files this export writes: ``<output>/<config name>.pt2`` (and
    ``.onnx`` with ``--onnx``)."""
    stem = osp.join(args.output,
                    osp.splitext(osp.basename(args.config))[0])
    return [stem + '.pt2'] + ([stem + '.onnx'] if args.onnx else [])


def _export(args):
    """Build the model and write the requested files.

    Returns:
        ``(program_path, onnx_path or None, model, (H, W))``.
    """
    from sapiens2_mm.utils.atomic_file import atomic_output
    model = init_model(args.config, args.checkpoint, args.device)
    shape = tuple(args.shape or model.backbone.img_size)
    program_path, *onnx = output_paths(args)
    program = export_program(model, shape, args.max_batch)
    with atomic_output(program_path) as tmp:  # complete or absent
        torch.export.save(program, tmp)
    print(f'torch.export program: {program_path} (input (B, 3, {shape[0]}, '
          f'{shape[1]}), B in 1..{args.max_batch})')
    onnx_path = None
    if args.onnx:
        # written in place: ONNX names its external data files (models
        # over 2 GB) after the file, so a temporary name would break them
        onnx_path = export_onnx(model, shape, onnx[0])
        print(f'ONNX: {onnx_path}')
    return program_path, onnx_path, model, shape


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.max_batch < 2:
        raise SystemExit('error: --max-batch must be >= 2 (torch.export '
                         'specialises a batch of 1 to a constant).')
    from sapiens2_mm.utils.output_paths import (
        OutputPathError,
        check_output_file,
        check_writable_dir,
    )
    try:  # before the model is built and exported, which takes minutes
        check_writable_dir(args.output, '--output folder')
        for path in output_paths(args):  # an earlier export is kept
            check_output_file(path, [args.config, args.checkpoint or ''],
                              overwrite=args.overwrite, what='export')
    except OutputPathError as err:
        raise SystemExit(f'error: {err}') from None
    from sapiens2_mm.utils.cli_errors import user_errors_as_exit
    # wrong paths, checkpoints of another task or size, a missing ONNX
    # package: one error line, as train/test/infer print
    with user_errors_as_exit(extra=(ImportError, )):
        program_path, onnx_path, model, shape = _export(args)
    if args.verify:
        diffs = verify(model, shape, program_path, onnx_path)
        for name, diff in diffs.items():
            print(f'verify {name}: max |exported - eager| = {diff:.3g}')
        if max(diffs.values()) > args.tolerance:
            print(f'error: exported output differs by more than '
                  f'{args.tolerance}', file=sys.stderr)
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
