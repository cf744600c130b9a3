"""Sharded FSDP checkpoints (``state_dict_cfg='sharded'``) on 2 gloo ranks.

Every training run is ``tools/dist_train.sh CONFIG 2`` (torchrun, separate
processes) of the tiny seg FSDP config, widened so that parameters outweigh
the per-tensor overhead of the files, from one init checkpoint. The
independent reference is the same run with ``state_dict_cfg='full'`` (one
checkpoint gathered on rank 0, whose resume is tested to be exact in
test_fsdp_strategy.py).
"""
import os
import os.path as osp
import shutil

import pytest
import torch

from sapiens2_mm.apis import run_config, test_config, train_config
from sapiens2_mm.utils.checkpoint import load_state_dict_checked
from sapiens2_mm.utils.sharded_checkpoint import (
    METADATA,
    read_metadata,
    read_sharded_checkpoint,
)
from sapiens2_mm.utils.work_dir import checkpoint_problem
from tests.conftest import REPO_DIR, TESTS_DIR, subprocess_budget

from ..test_tools.workflow_utils import DIST_TRAIN, make_data, run_tool

pytestmark = pytest.mark.slow

FSDP_CFG = osp.join(TESTS_DIR, 'configs', 'workflow', 'tiny_seg_fsdp.py')
CONVERTERS = osp.join(REPO_DIR, 'tools', 'model_converters')
# wider and deeper than the workflow model, so that parameters outweigh the
# per-tensor overhead of the files (about 1 kB per tensor and shard, and the
# optimizer's param_groups and step counts, which one rank writes): 1.2M
# parameters, 4 FSDP block units
WIDER = ('model = dict(backbone=dict(arch=dict(embed_dims=128, num_layers=4, '
         'feedforward_channels=512)), decode_head=dict(in_channels=128, '
         'channels=32))\n')


def _leaf(root, kind):
    path = root / f'tiny_seg_fsdp_{kind}.py'
    path.write_text(f'_base_ = [{FSDP_CFG!r}]\n{WIDER}'
                    f'strategy = dict(state_dict_cfg={kind!r})\n')
    return str(path)


def _build(config):
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    return MODELS.build(Config.fromfile(config).model)


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """``runs.train(name, kind, *extra)``: a 4-iteration run (checkpoints at
    2 and 4) in ``root/name``, once per module."""
    root = tmp_path_factory.mktemp('sharded')
    data = make_data(str(root / 'data'))
    configs = {k: _leaf(root, k) for k in ('sharded', 'full')}
    torch.manual_seed(0)
    model = _build(configs['sharded'])
    model.init_weights()
    init = str(root / 'init.pth')
    torch.save(dict(state_dict=model.state_dict()), init)

    class Runs:
        root_dir = root
        data_root = data
        cache = {}

        def __init__(self):
            self.configs = configs

        def train(self, name, kind, *extra):
            work = str(root / name)
            if name not in self.cache:
                args = [DIST_TRAIN, self.configs[kind], '2', '--work-dir',
                        work, *extra]
                if '--resume' not in extra:
                    args += ['--cfg-options', f'load_from={init}']
                self.cache[name] = run_tool(args, data,
                                            timeout=subprocess_budget(100))
            return work

    return Runs()


def _state(checkpoint):
    """(weights, optimizer state by parameter name) of a checkpoint dict."""
    optim = checkpoint['optimizer']
    return checkpoint['state_dict'], optim['state']


def _assert_equal(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            _assert_equal(a[key], b[key])
        else:
            assert torch.equal(a[key], b[key]), key


def test_sharded_run_writes_per_rank_files_equal_to_the_full_run(runs):
    """Each rank writes its own file, holding about half of every
    parameter; gathered, the weights and optimizer state equal the 'full'
    run's checkpoint bit for bit."""
    sharded = osp.join(runs.train('sharded', 'sharded'), 'iter_4.pth')
    full = osp.join(runs.train('full', 'full'), 'iter_4.pth')
    assert osp.isdir(sharded) and checkpoint_problem(sharded) is None
    files = sorted(f for f in os.listdir(sharded) if f.endswith('.distcp'))
    assert files == ['__0_0.distcp', '__1_0.distcp']

    # the parameters really are sharded: elements of the weights per file
    metadata = read_metadata(sharded)
    per_file, total = {}, 0
    for index, info in metadata.storage_data.items():
        if not index.fqn.startswith('state_dict.'):
            continue
        sizes = next(c.sizes for c in metadata.state_dict_metadata[
            index.fqn].chunks if c.offsets == index.offset)
        per_file[info.relative_path] = per_file.get(
            info.relative_path, 0) + sizes.numel()
    for fqn, meta in metadata.state_dict_metadata.items():
        if fqn.startswith('state_dict.') and hasattr(meta, 'size'):
            total += meta.size.numel()
    assert sum(per_file.values()) == total
    assert max(per_file.values()) <= 0.55 * total, (per_file, total)

    reference = torch.load(full, map_location='cpu', weights_only=False)
    gathered = read_sharded_checkpoint(sharded, with_optimizer=True)
    weights, optim = _state(gathered)
    ref_weights, ref_optim = _state(reference)
    _assert_equal(weights, ref_weights)
    _assert_equal(optim, ref_optim)
    assert gathered['meta']['iter'] == reference['meta']['iter'] == 4

    consolidated = osp.getsize(full)
    for name in files:
        size = osp.getsize(osp.join(sharded, name))
        assert size < 0.6 * consolidated, (name, size, consolidated)


def test_resume_path_and_auto_equal_the_straight_run(runs):
    """2 iterations + --resume PATH + 2, and --resume auto past a damaged
    newest checkpoint, both equal 4 straight iterations in weights and
    optimizer state (exp_avg, exp_avg_sq, step)."""
    straight = runs.train('sharded', 'sharded')
    expected = read_sharded_checkpoint(osp.join(straight, 'iter_4.pth'),
                                       with_optimizer=True)

    explicit = runs.train('resumed', 'sharded', '--resume',
                          osp.join(straight, 'iter_2.pth'))
    # auto: the straight work dir with iter_4 damaged (rank 1 died while
    # writing its shards): it is skipped, iter_2 is resumed
    auto = str(runs.root_dir / 'auto')
    shutil.copytree(straight, auto)
    for entry in os.listdir(auto):  # the straight run's logs
        if entry[:8].isdigit():
            shutil.rmtree(osp.join(auto, entry))
    shard = osp.join(auto, 'iter_4.pth', '__1_0.distcp')
    with open(shard, 'r+b') as f:
        f.truncate(100)
    assert 'truncated' in checkpoint_problem(osp.join(auto, 'iter_4.pth'))
    runs.train('auto', 'sharded', '--resume')
    with open(_log(auto)) as f:
        log = f.read()
    assert 'iter_4.pth: shard file __1_0.distcp truncated' in log
    assert f'Resume checkpoint from {osp.join(auto, "iter_2.pth")}' in log

    for work in (explicit, auto):
        got = read_sharded_checkpoint(osp.join(work, 'iter_4.pth'),
                                      with_optimizer=True)
        _assert_equal(got['state_dict'], expected['state_dict'])
        _assert_equal(got['optimizer']['state'],
                      expected['optimizer']['state'])
        assert got['meta']['iter'] == 4


def _log(work_dir):
    logs = sorted(osp.join(work_dir, d, f'{d}.log') for d in os.listdir(
        work_dir) if osp.isfile(osp.join(work_dir, d, f'{d}.log')))
    return logs[-1]


def test_consolidated_checkpoint_resumes_full_and_converts(runs, tmp_path):
    """The consolidation tool's .pth (with the optimizer state) resumes
    under state_dict_cfg='full' to the straight run's iteration 4; its
    .safetensors is the official layout, which the converters read back
    and which loads strictly into the model."""
    straight = runs.train('sharded', 'sharded')
    mid = osp.join(straight, 'iter_2.pth')
    out = str(tmp_path / 'iter_2_full.pth')
    tool = osp.join(CONVERTERS, 'consolidate_sharded_checkpoint.py')
    run_tool([tool, mid, out, '--with-optimizer'], runs.data_root)
    resumed = runs.train('full_from_consolidated', 'full', '--resume', out)
    got = torch.load(osp.join(resumed, 'iter_4.pth'), map_location='cpu',
                     weights_only=False)
    expected = read_sharded_checkpoint(osp.join(straight, 'iter_4.pth'),
                                       with_optimizer=True)
    _assert_equal(got['state_dict'], expected['state_dict'])
    _assert_equal(got['optimizer']['state'], expected['optimizer']['state'])

    final = osp.join(straight, 'iter_4.pth')
    official = str(tmp_path / 'seg.safetensors')
    run_tool([tool, final, official], runs.data_root)
    again = str(tmp_path / 'again.safetensors')
    weights = str(tmp_path / 'weights.pth')
    run_tool([tool, final, weights], runs.data_root)
    run_tool([osp.join(CONVERTERS, 'sapiens2_mm_to_official.py'), weights,
              again], runs.data_root)
    back = str(tmp_path / 'back.pth')
    run_tool([osp.join(CONVERTERS, 'sapiens2_official_to_mm.py'), official,
              back], runs.data_root)
    from safetensors.torch import load_file
    _assert_equal(load_file(official), load_file(again))

    model = _build(runs.configs['sharded'])
    state = torch.load(back, map_location='cpu', weights_only=True)
    load_state_dict_checked(model, state['state_dict'], source=back)
    _assert_equal(model.state_dict(), expected['state_dict'])


def test_unreadable_sharded_checkpoints_are_refused(runs, tmp_path):
    """A folder without index, a missing shard, a sharded checkpoint for a
    non-FSDP config or for testing: refused with the reason, never a fresh
    start."""
    straight = runs.train('sharded', 'sharded')
    broken = str(tmp_path / 'iter_2.pth')
    shutil.copytree(osp.join(straight, 'iter_2.pth'), broken)
    os.remove(osp.join(broken, '__0_0.distcp'))
    assert checkpoint_problem(broken) == 'shard file __0_0.distcp missing'
    no_index = str(tmp_path / 'iter_3.pth')
    shutil.copytree(osp.join(straight, 'iter_2.pth'), no_index)
    os.remove(osp.join(no_index, METADATA))
    assert 'no .metadata' in checkpoint_problem(no_index)

    from mmengine.config import Config
    cfg = Config.fromfile(runs.configs['sharded'])
    cfg.work_dir = str(tmp_path / 'w')
    for path in (broken, no_index):
        with pytest.raises(run_config.RunConfigError,
                           match='cannot be read as a sharded checkpoint'):
            train_config.set_resume(cfg, path)
    # a work dir whose only checkpoints are unreadable: no fresh start
    os.makedirs(cfg.work_dir)
    shutil.move(broken, cfg.work_dir)
    with pytest.raises(run_config.RunConfigError,
                       match='no checkpoint of .* can be read'):
        train_config.set_resume(cfg, 'auto')

    good = osp.join(straight, 'iter_2.pth')
    plain = Config.fromfile(osp.join(TESTS_DIR, 'configs', 'workflow',
                                     'tiny_seg_layer_decay.py'))
    plain.work_dir = str(tmp_path / 'p')
    with pytest.raises(run_config.RunConfigError,
                       match='consolidate_sharded_checkpoint.py'):
        train_config.set_resume(plain, good)
    with pytest.raises(run_config.RunConfigError,
                       match='consolidate_sharded_checkpoint.py'):
        test_config.set_checkpoint(cfg, good)
    cfg.load_from = good
    with pytest.raises(run_config.RunConfigError,
                       match='consolidate_sharded_checkpoint.py'):
        train_config.route_load_from(cfg)
