"""tools/gpu_acceptance.sh --dry-run: every stage of the GPU acceptance run,
with tiny shapes on the CPU, so that the script cannot rot before a GPU
machine runs it for real."""
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_DIR, load_tool, subprocess_budget


def test_check_imports_reports_the_stack():
    report = load_tool('gpu_acceptance').check_imports()
    assert report['missing'] == []
    assert report['sapiens2_mm'] == 'imports'
    assert set(report['differ_from_pins']) <= {'torch', 'numpy'}


@pytest.mark.slow
def test_dry_run_every_stage(tmp_path):
    out = tmp_path / 'acceptance.json'
    env = dict(os.environ, PYTHON=sys.executable, OMP_NUM_THREADS='1')
    proc = subprocess.run(
        ['bash', 'tools/gpu_acceptance.sh', '--dry-run', '--out', str(out),
         '--work-dir', str(tmp_path / 'work')],
        cwd=REPO_DIR, env=env, capture_output=True, text=True,
        timeout=subprocess_budget(300))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = json.loads(out.read_text())
    stages = table['stages']
    tool = load_tool('gpu_acceptance')
    assert set(stages) == set(tool.STAGES) - set(tool.SAME_WHEN_TINY)
    assert all(s['status'] == 'ok' for s in stages.values())
    parity = {r['item']: r for r in stages['parity']['rows']}
    assert set(parity) == {'backbone_1k', 'pose', 'seg', 'normal',
                           'pointmap', 'albedo'}
    for row in parity.values():  # the official vectors, on this CPU
        assert row['official_max_abs'] <= 1e-4
    for name in ('train_pose', 'train_seg', 'train_normal', 'fsdp_1b'):
        assert stages[name]['rows'][0]['iters'] == 2
    assert 0 <= stages['test']['rows'][0]['mIoU'] <= 100
    assert all(r['img_s'] > 0 for r in stages['bench_seg_0_4b']['rows'])
    assert 'GPU acceptance (dry-run' in proc.stdout


def test_full_run_configs_build_and_read_the_samples(tmp_path):
    """The leaf configs of the real (GPU) run: each builds, its train
    dataset reads the bundled sample at 1024x768, with the official batch."""
    from argparse import Namespace

    from mmengine.config import Config
    from mmengine.registry import DATASETS

    tool = load_tool('gpu_acceptance')
    args = Namespace(dry_run=False)
    leaves = {task: tool.train_leaf(args, str(tmp_path), task)[0]
              for task in ('pose', 'seg', 'normal')}
    leaves['fsdp'] = tool.fsdp_leaf(args, str(tmp_path))
    batches = dict(pose=6, seg=12, normal=20, fsdp=7)
    for name, leaf in leaves.items():
        cfg = Config.fromfile(leaf)
        assert cfg.train_dataloader.batch_size == batches[name]
        assert cfg.model.backbone.init_cfg is None
        dataset = DATASETS.build(cfg.train_dataloader.dataset)
        item = dataset[0]
        assert tuple(item['inputs'].shape[-2:]) == (1024, 768), name
    fsdp = Config.fromfile(leaves['fsdp'])
    assert fsdp.strategy.activation_checkpointing.check_fn == \
        'sapiens2_block_checkpoint_fn'
    assert fsdp.model.backbone.arch == 'sapiens2_1b'
