"""tools/gpu_acceptance.sh: the stages run with tiny shapes on the CPU
(--dry-run), so that the script cannot rot before a GPU machine runs it;
the budget, the kill of a timed-out stage's process group and the results
written as each stage ends are checked on their own."""
import json
import os
import os.path as osp
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_DIR, load_tool

acceptance = load_tool('gpu_acceptance')


def _stages(out_dir):
    with open(osp.join(out_dir, 'stages.jsonl')) as f:
        return [json.loads(line) for line in f]


def test_check_imports_reports_the_stack():
    report = acceptance.check_imports()
    assert report['missing'] == []
    assert report['sapiens2_mm'] == 'imports'
    assert 'shapely' in report['versions']  # mmdet.apis imports it
    assert set(report['differ_from_pins']) <= {'torch', 'numpy'}


def test_a_stage_past_its_cap_is_killed_with_its_process_group(tmp_path):
    """The stage's own process and what it started (as torchrun starts
    workers) are gone once the cap is reached."""
    pid_file = tmp_path / 'grandchild.pid'
    code, seconds = acceptance.run_limited(
        ['bash', '-c', f'sleep 600 & echo $! > {pid_file}; sleep 600'], 2.0,
        str(tmp_path / 'log.txt'))
    assert code is None and seconds < 600
    grandchild = int(pid_file.read_text())
    start = time.monotonic()
    while True:  # reaped by init once killed: wait for that event
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() - start < 600, 'grandchild still alive'
        time.sleep(0.1)


def test_stages_that_do_not_fit_are_skipped_and_written_at_once(tmp_path):
    out = str(tmp_path / 'out')
    summary = acceptance.main([out, '--dry-run', '--budget-s', '5',
                               '--stages', 'parity', 'speed_0_4b'])
    lines = _stages(out)
    assert [line['stage'] for line in lines] == ['parity', 'speed_0_4b']
    for line in lines:
        assert line['status'] == 'skipped'
        assert 'does not fit the' in line['reason']
    with open(osp.join(out, 'summary.json')) as f:
        assert json.load(f)['stages'] == summary['stages']
    assert '| parity | skipped |' in open(osp.join(out, 'summary.md')).read()


def test_full_run_reads_the_samples_at_the_configs_batch():
    """The GPU run's configs (0.4b and 1b of each task): the train set reads
    the bundled sample at 1024x768; the batch is the config's own."""
    from common import CONFIGS, load_config, one_batch
    from mmengine.config import Config
    for size, configs in CONFIGS.items():
        for task, path in configs.items():
            cfg, used = load_config(task, size, dry_run=False)
            assert used == path and cfg.model.backbone.init_cfg is None
            assert cfg.train_dataloader.batch_size == Config.fromfile(
                osp.join(REPO_DIR, path)).train_dataloader.batch_size
    cfg, _ = load_config('pointmap', '1b', dry_run=False)
    batch = one_batch(cfg, 2)
    assert len(batch['inputs']) == 2
    assert tuple(batch['inputs'][0].shape[-2:]) == (1024, 768)


@pytest.mark.slow
def test_dry_run_every_stage(tmp_path):
    out = tmp_path / 'out'
    env = dict(os.environ, PYTHON=sys.executable, OMP_NUM_THREADS='1')
    proc = subprocess.run(
        ['bash', 'tools/gpu_acceptance.sh', str(out), '--dry-run'],
        cwd=REPO_DIR, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = _stages(out)
    assert [line['stage'] for line in lines] == list(acceptance.CAPS)
    status = {line['stage']: line['status'] for line in lines}
    assert status == {name: 'skipped' if name in acceptance.SAME_WHEN_TINY
                      else 'ok' for name in acceptance.CAPS}
    stages = {line['stage']: line for line in lines}
    parity = {r['item']: r for r in stages['parity']['rows']}
    assert set(parity) == {'backbone_1k', 'pose', 'seg', 'normal',
                           'pointmap', 'albedo'}
    for row in parity.values():  # the official vectors, on this CPU
        assert row['official_max_abs'] <= 1e-4
    speed = {r['item']: r for r in stages['speed_0_4b']['rows']}
    for task in ('pose', 'seg', 'normal', 'pointmap', 'albedo'):
        assert speed[f'0.4b {task} train']['img_s'] > 0
        assert speed[f'0.4b {task} train']['estimate_mib'] > 0
        assert speed[f'0.4b {task} infer fp32']['img_s'] > 0
    assert '0.4b official backbone' in speed
    checkpoints = {r['item']: r for r in stages['fsdp_checkpoints']['rows']}
    assert checkpoints['FSDP CPU offload save + resume'][
        'max_param_diff'] == 0.0
    compiled = [r for r in stages['compile_0_4b']['rows']
                if 'compiled' in r['item']]
    assert len(compiled) == 5 and all(r['img_s'] > 0 for r in compiled)
    # rows come back per stage as they were measured
    assert len((out / 'rows' / 'speed_0_4b.jsonl').read_text().splitlines()
               ) == len(stages['speed_0_4b']['rows'])
    assert 'GPU acceptance (dry-run' in proc.stdout
