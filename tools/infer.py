"""Run a Sapiens2 task model on images, folders or videos and save the outputs.

    python tools/infer.py TASK CONFIG [CHECKPOINT] --input IMG|DIR|VIDEO ... \
        --output DIR [--flip-test] [--device cpu] [--batch-size N] [--no-vis] \
        [--compile] [--dtype fp32|bf16] [--serial]
        [--cfg-options KEY=VALUE ...] [task options]

TASK is any registered task (``python tools/infer.py -h`` lists them; each
task's options: ``python tools/infer.py TASK -h``). Outputs (docs/inference.md):
visualizations under the input names (one .mp4 per input video) and the task's
files (pose: ``<label>_predictions.json``; seg: ``<stem>_seg.npy``). Every
finished frame is recorded in ``inference_index.jsonl`` at once: an
interrupted run keeps its work and the same command continues it. Unreadable
inputs and failing frames are skipped and listed at the end. Without a
CHECKPOINT the model keeps random weights: a warning says so at the start and
in the summary, and the index header records ``"weights": "random"``.
"""
import argparse
import sys

from sapiens2_mm.apis import get_task, run_inference, task_names
from sapiens2_mm.utils.cfg_options import CfgOptionsAction
from sapiens2_mm.utils.cli_errors import user_errors_as_exit


def _add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('config', help='task config file')
    parser.add_argument('checkpoint', nargs='?', default=None,
                        help='official .safetensors or mmengine .pth; '
                        'omitted = random weights (smoke tests only)')
    parser.add_argument('--input', dest='inputs', metavar='INPUT',
                        required=True, nargs='+',
                        help='image(s), folder(s) or video(s)')
    parser.add_argument('--output', required=True,
                        help='output folder (new, empty, or of an earlier '
                        'run to continue; never inside an input folder)')
    parser.add_argument('--device', default='cpu',
                        help='cpu, cuda, cuda:N or mps')
    parser.add_argument('--batch-size', type=int, default=4,
                        help='frames (or person crops) per forward')
    parser.add_argument('--flip-test', action='store_true',
                        help='average with the mirrored input')
    parser.add_argument('--no-vis', action='store_true',
                        help='do not write visualizations')
    parser.add_argument('--compile', action='store_true',
                        help='torch.compile the network (first batches '
                        'slower; eager with a warning without a compiler)')
    parser.add_argument('--dtype', choices=('fp32', 'bf16'), default='fp32',
                        help='network precision (bf16: autocast; an error '
                        'on devices without bf16)')
    parser.add_argument('--workers', type=int, default=None,
                        help='threads decoding photos and cutting crops, '
                        'and threads drawing and encoding the '
                        'visualizations (default: half the cores, 1 to 4)')
    parser.add_argument('--serial', action='store_true',
                        help='one thread: no decoding / writing overlapped '
                        'with the network (debugging)')
    parser.add_argument('--cfg-options', nargs='+', action=CfgOptionsAction,
                        metavar='KEY=VALUE',
                        help='override config keys, e.g. '
                        'model.decode_head.scale_guard=clamp (unknown keys '
                        'are refused; recorded in the index, so a re-run '
                        'with other overrides is refused)')


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    tasks = parser.add_subparsers(dest='task', metavar='TASK', required=True,
                                  help=f'one of {", ".join(task_names())}')
    for name in task_names():
        spec = get_task(name)
        sub = tasks.add_parser(name, help=spec.summary,
                               description=spec.summary)
        _add_common_arguments(sub)
        spec.add_cli_arguments(sub)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    summary = run_inference(**vars(parse_args(argv)))
    return exit_code(summary)


def exit_code(summary) -> int:
    """130 interrupted (Ctrl-C); 1 stopped early (disk full) or nothing
    finished, now or by an earlier run; else 0, also when some inputs were
    unreadable or some frames failed (the summary lists them)."""
    if summary.interrupted:
        return 130
    if summary.stopped:
        return 1
    return 0 if summary.processed or summary.resumed else 1


def cli(argv=None) -> int:
    """:func:`main` with user errors as one ``error:`` line (exit 1): bad
    paths, options or inputs, a refused output folder, a checkpoint that
    does not fit the config (a 4K checkpoint for a 1K config), a config
    that is not valid Python or names an unknown type
    (:mod:`sapiens2_mm.utils.cli_errors`)."""
    with user_errors_as_exit():
        return main(argv)


if __name__ == '__main__':
    sys.exit(cli())
