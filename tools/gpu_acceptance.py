"""The GPU acceptance run: one command of at most 8 minutes on one H100/H200.

Run through ``tools/gpu_acceptance.sh OUT_DIR`` (which first unpacks the
carried wheels); on a machine that has the packages already::

    python tools/gpu_acceptance.py OUT_DIR [--dry-run] [--budget-s 450]
        [--stages NAME ...]

Stages, in this order, each a process of its own with a time cap; a stage
starts only if its cap fits what is left of the budget (the clock starts
with the command, the wheel unpacking included), and a stage past its cap is
killed with its whole process group (torchrun and its workers included):

* ``imports``: the stack and sapiens2_mm import (versions, what is missing);
* ``parity``: the tiny18 models against the official vectors, the GPU
  against the CPU, bf16 autocast against fp32 within the documented
  tolerance;
* ``speed_0_4b`` / ``speed_1b``: per task at 1024x768, training images per
  second and peak memory at the config's per-GPU batch with the inputs on the
  GPU (with the memory estimate beside), inference images per second eager
  in fp32 and bf16, and the official backbone's forward on the same inputs
  (from a snapshot carried in .official/sapiens2, never committed);
* ``fsdp_checkpoints``: FSDP with CPU offload saves and resumes, a sharded
  checkpoint round trip;
* ``compile_0_4b`` / ``compile_1b``: the backbone compiled (compile time on
  its own), compiled against eager images per second per task.

Each row is written to ``OUT_DIR/rows/STAGE.jsonl`` when measured; each
stage's result is appended to ``OUT_DIR/stages.jsonl`` as soon as it ends,
and ``OUT_DIR/summary.json`` / ``OUT_DIR/summary.md`` are rewritten then, so
a run cut short still leaves every finished stage. Exit status 1 when a
stage is not ok (skipped stages are listed, not failures).

``--dry-run`` runs every stage with tiny shapes on the CPU (what CI runs:
tests/test_tools/test_gpu_acceptance.py).
"""
import argparse
import json
import os
import os.path as osp
import signal
import subprocess
import sys
import time

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
if ROOT not in sys.path:  # sapiens2_mm from this checkout
    sys.path.insert(0, ROOT)
sys.path.insert(0, osp.join(ROOT, 'tools', 'acceptance'))
# stage -> seconds it may take on one H100 / H200 (its process's cap)
CAPS = dict(imports=60, parity=60, speed_0_4b=150, speed_1b=200,
            fsdp_checkpoints=120, compile_0_4b=100, compile_1b=130)
BUDGET_S = 450  # 8 minutes less a margin for the driver and the wheels
#: with --dry-run these would repeat the 0.4b stages (the same tiny configs)
SAME_WHEN_TINY = ('speed_1b', 'compile_1b')
# --dry-run on a loaded 2-core CPU: per stage and in all
DRY_RUN_CAP, DRY_RUN_BUDGET_S = 900, 3600


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('out_dir', nargs='?',
                        help='folder for the results (created)')
    parser.add_argument('--dry-run', action='store_true',
                        help='tiny shapes on the CPU (what CI runs)')
    parser.add_argument('--budget-s', type=float,
                        help=f'overall time limit (default {BUDGET_S} s; '
                        f'{DRY_RUN_BUDGET_S} s with --dry-run)')
    parser.add_argument('--stages', nargs='+', choices=list(CAPS),
                        help='run only these stages')
    parser.add_argument('--stage', help=argparse.SUPPRESS)
    parser.add_argument('--check-imports', action='store_true',
                        help='import every package, print versions, exit')
    return parser.parse_args(argv)


# module -> the PyPI package that provides it (for the missing list)
STACK = dict(
    torch='torch', torchvision='torchvision', numpy='numpy',
    cv2='opencv-python-headless', yaml='pyyaml', PIL='pillow',
    matplotlib='matplotlib', scipy='scipy', rich='rich', addict='addict',
    termcolor='termcolor', yapf='yapf', shapely='shapely', tqdm='tqdm',
    terminaltables='terminaltables', prettytable='prettytable', ftfy='ftfy',
    regex='regex', json_tricks='json-tricks', munkres='munkres',
    einops='einops', mat4py='mat4py', modelindex='model-index',
    pycocotools='pycocotools', xtcocotools='xtcocotools',
    safetensors='safetensors', mmengine='mmengine', mmcv='mmcv-lite',
    mmpretrain='mmpretrain', mmpose='mmpose', mmseg='mmsegmentation',
    mmdet='mmdet')
PINS = dict(torch='2.14.1', numpy='1.')  # requirements/runtime.txt
#: modules the stages import beyond the stack's top level (mmdet's shapely
#: import happens only in these)
DEEP_IMPORTS = ('mmdet.apis', 'mmpose.apis', 'mmseg.apis',
                'mmpretrain.models', 'sapiens2_mm.apis',
                'torch.distributed.checkpoint', 'torch._inductor')


def check_imports():
    """Import the stack and sapiens2_mm; versions, what is missing (as pip
    package names, for tools/fetch_acceptance_wheels.sh) and the pins that
    differ from requirements/runtime.txt."""
    import importlib
    versions, missing = {}, []
    for name, package in STACK.items():
        try:
            module = importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 - listed, not raised
            missing.append(f'{package} ({type(err).__name__}: {err})'[:200])
            continue
        versions[name] = str(getattr(module, '__version__', None) or
                             getattr(module, 'STAND_IN', 'present'))
    report = dict(versions=versions, missing=missing,
                  differ_from_pins={k: versions[k] for k, v in PINS.items()
                                    if k in versions
                                    and not versions[k].startswith(v)})
    if not missing:
        try:
            from sapiens2_mm.utils import register_all_modules
            register_all_modules()
            for name in DEEP_IMPORTS:
                importlib.import_module(name)
            report['sapiens2_mm'] = 'imports'
        except Exception as err:  # noqa: BLE001
            report['sapiens2_mm'] = f'{type(err).__name__}: {err}'[:500]
    return report


# ------------------------------------------------------------------ stages
def stage_imports(args, rows):
    report = check_imports()
    rows.add(item='imports', **report,
             ok=not report['missing'] and report.get('sapiens2_mm') ==
             'imports')


def _stages():
    from checkpoints import stage_fsdp_checkpoints
    from parity import stage_parity
    from speed import stage_compiled, stage_speed
    return dict(
        imports=stage_imports,
        parity=stage_parity,
        speed_0_4b=lambda a, r: stage_speed(a, r, '0.4b'),
        speed_1b=lambda a, r: stage_speed(a, r, '1b'),
        fsdp_checkpoints=stage_fsdp_checkpoints,
        compile_0_4b=lambda a, r: stage_compiled(a, r, '0.4b'),
        compile_1b=lambda a, r: stage_compiled(a, r, '1b'),
    )


def run_stage_child(args) -> None:
    """In the stage's own process: run it, its rows written as they come."""
    from common import Rows

    from sapiens2_mm.utils import register_all_modules
    if args.stage != 'imports':
        register_all_modules()
    _stages()[args.stage](args, Rows(args.out_dir, args.stage))


# ------------------------------------------------------------------ driver
def run_limited(cmd, cap_s: float, log_path: str, cwd: str = ROOT):
    """Run ``cmd`` in a session of its own for at most ``cap_s`` seconds;
    past that, kill its whole process group (grandchildren included).

    Returns:
        ``(returncode or None when killed, seconds)``.
    """
    start = time.monotonic()
    with open(log_path, 'w') as log:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=log,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=cap_s)
        except subprocess.TimeoutExpired:
            code = None
        # a finished stage's leftovers go too (torchrun workers, loaders)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    return code, time.monotonic() - start


class Results:
    """``OUT/stages.jsonl`` (appended per stage) and the summaries."""

    def __init__(self, out_dir: str, mode: str):
        self.out_dir = out_dir
        self.summary = dict(mode=mode, stages={})
        os.makedirs(out_dir, exist_ok=True)

    def add(self, name: str, result: dict) -> None:
        with open(osp.join(self.out_dir, 'stages.jsonl'), 'a') as f:
            f.write(json.dumps(dict(stage=name, **result)) + '\n')
            f.flush()
            os.fsync(f.fileno())
        self.summary['stages'][name] = result
        self.write()

    def write(self) -> None:
        for name, text in (('summary.json', json.dumps(self.summary,
                                                       indent=2)),
                           ('summary.md', summary_table(self.summary))):
            tmp = osp.join(self.out_dir, f'.{name}.tmp')
            with open(tmp, 'w') as f:
                f.write(text)
            os.replace(tmp, osp.join(self.out_dir, name))


def summary_table(summary: dict) -> str:
    lines = [f'GPU acceptance ({summary["mode"]}), '
             f'{summary.get("seconds", "...")} s', '',
             '| stage | status | seconds | item | figures |',
             '|---|---|---|---|---|']
    for name, stage in summary['stages'].items():
        rows = stage.get('rows') or [{}]
        for i, row in enumerate(rows):
            figures = ', '.join(
                f'{k}={v:.4g}' if isinstance(v, float) else f'{k}={v}'
                for k, v in row.items() if k not in ('item', 'versions'))
            lines.append('| ' + ' | '.join([
                name if i == 0 else '', stage['status'] if i == 0 else '',
                str(stage.get('seconds', '')) if i == 0 else '',
                str(row.get('item', '')),
                figures or stage.get('reason', '')]) + ' |')
    return '\n'.join(lines) + '\n'


def main(argv=None):
    args = parse_args(argv)
    if args.check_imports:
        report = check_imports()
        print(json.dumps(report, indent=2))
        return report
    if not args.out_dir:
        sys.exit('error: give the folder for the results: '
                 'tools/gpu_acceptance.sh OUT_DIR')
    args.out_dir = osp.abspath(args.out_dir)
    if args.budget_s is None:
        args.budget_s = DRY_RUN_BUDGET_S if args.dry_run else BUDGET_S
    if args.stage:
        run_stage_child(args)
        return None
    from common import read_rows
    # the clock of the whole command (gpu_acceptance.sh sets it first)
    start = float(os.environ.get('ACCEPTANCE_START', time.time()))
    results = Results(args.out_dir, 'dry-run (CPU, tiny)' if args.dry_run
                      else 'GPU')
    os.makedirs(osp.join(args.out_dir, 'logs'), exist_ok=True)
    names = args.stages or list(CAPS)
    for name in names:
        if args.dry_run and name in SAME_WHEN_TINY:
            results.add(name, dict(status='skipped', reason=(
                '--dry-run: the same tiny configs as the 0.4b stage'),
                rows=[]))
            continue
        left = args.budget_s - (time.time() - start)
        cap = DRY_RUN_CAP if args.dry_run else CAPS[name]
        if cap > left:
            results.add(name, dict(status='skipped', reason=(
                f'its cap of {cap:.0f} s does not fit the {left:.0f} s left '
                f'of the {args.budget_s:.0f} s budget'), rows=[]))
            continue
        cmd = [sys.executable, __file__, args.out_dir, '--stage', name] + (
            ['--dry-run'] if args.dry_run else [])
        log = osp.join(args.out_dir, 'logs', f'{name}.log')
        code, seconds = run_limited(cmd, cap, log)
        rows = read_rows(args.out_dir, name)
        if code is None:
            status = 'timeout'
        elif code:
            status = 'error'
        else:
            status = 'ok' if all(r.get('ok', True) for r in rows) else 'FAIL'
        result = dict(status=status, seconds=round(seconds, 1), cap_s=cap,
                      rows=rows)
        if status in ('timeout', 'error'):
            with open(log) as f:
                result['log_tail'] = f.read()[-1500:]
        results.add(name, result)
        if name == 'imports' and status != 'ok':
            break  # nothing else can run
    results.summary['seconds'] = round(time.time() - start, 1)
    results.write()
    print(summary_table(results.summary))
    print(f'results in {args.out_dir} (stages.jsonl, summary.json, '
          'summary.md, rows/, logs/)')
    failed = [n for n, s in results.summary['stages'].items()
              if s['status'] not in ('ok', 'skipped')]
    if failed:
        sys.exit(f'not ok: {", ".join(failed)}')
    return results.summary


if __name__ == '__main__':
    main()
