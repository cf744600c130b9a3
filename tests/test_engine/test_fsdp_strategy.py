"""FSDP (Sapiens2FSDPStrategy) on 2 gloo processes equals DDP, on the CPU.

Each run is tools/train.py (or tools/test.py) in two forked processes of a
2-rank gloo group (the main FSDP run through tools/dist_train.sh), 4
iterations of a tiny model, from one init checkpoint the test writes, so that
the DDP and FSDP runs start equal. References are computed independently: a
DDP run of the same config (mmengine's DistributedDataParallel), a run
without the option under test, or a plain-Runner test of the same
checkpoint. Runs are cached per module: several tests read the same FSDP run.
"""
import glob
import json
import math
import os
import os.path as osp

import pytest
import torch
import torch.multiprocessing as mp

from tests.conftest import load_tool

from ..test_tools.workflow_utils import (
    DIST_TRAIN,
    REPO_DIR,
    TESTS_DIR,
    free_port,
    make_data,
    run_tool,
    scalars,
)

WORKFLOW_DIR = osp.join(TESTS_DIR, 'configs', 'workflow')
DDP_CFG = osp.join(WORKFLOW_DIR, 'tiny_seg_layer_decay.py')
FSDP_CFG = osp.join(WORKFLOW_DIR, 'tiny_seg_fsdp.py')
STRATEGY = osp.join(REPO_DIR, 'configs', '_base_', 'strategies',
                    'fsdp_bf16.py')
PRETRAIN_CFG = osp.join(REPO_DIR, 'configs', 'pretrain',
                        'sapiens2-tiny_pretrain-cpu-64x48.py')

pytestmark = pytest.mark.slow


def _worker(rank, world, port, tool, argv, env):
    # forked after the parent used torch's thread pool: stay single-threaded
    torch.set_num_threads(1)
    # A fork also inherits the parent's mmengine visualizer instances. The
    # workflow config names its visualizer 'visualizer', and get_instance
    # returns an existing instance of that name: after an earlier in-process
    # run in this pytest worker, the child's scalars.json went to that run's
    # folder (the full suite failed here, the file alone passed).
    from mmengine.visualization import Visualizer
    stack = [Visualizer]
    while stack:
        cls = stack.pop()
        cls._instance_dict.clear()
        stack.extend(cls.__subclasses__())
    os.environ.update(env, MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port),
                      RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    load_tool(tool).main([*argv, '--launcher', 'pytorch'])


def run2(tool, argv, env=None):
    """``tools/<tool>.py argv`` on 2 forked gloo ranks (train.py and test.py
    end with a barrier, so neither rank closes mid-collective)."""
    # Forked, not spawned: see tests/test_models/test_heads/
    # test_dino_loss_distributed.py (pytorch#190489).
    mp.start_processes(_worker, nprocs=2, join=True, start_method='fork',
                       args=(2, free_port(), tool, list(argv), env or {}))


def state(path):
    """(model state, optimizer state) of a checkpoint, keyed by name."""
    ckpt = torch.load(path, map_location='cpu', weights_only=False)
    optim = ckpt['optimizer']
    by_name = {}
    for group in optim['param_groups']:
        for ref, name in zip(group['params'], group['param_names']):
            by_name[name] = optim['state'].get(ref, {})
    return ckpt['state_dict'], by_name, optim


def groups(optim):
    return [(tuple(g['param_names']), g['lr'], g['weight_decay'])
            for g in optim['param_groups']]


def assert_same_tensors(a, b, atol=1e-6):
    assert a.keys() == b.keys()
    worst = max(float((a[k].float() - b[k].float()).abs().max())
                for k in a if a[k].numel())
    assert worst <= atol, worst
    return worst


def grad_norms(work_dir):
    return [e['grad_norm'] for e in scalars(work_dir) if 'grad_norm' in e]


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """Shared runs: ``runs.get(name)`` trains once per module."""
    root = tmp_path_factory.mktemp('fsdp')
    data = make_data(str(root / 'data'))
    env = dict(SAPIENS2_WORKFLOW_DATA=data)
    # one init for every run: a plain build of the model, saved
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()  # module fixtures run before conftest's
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(DDP_CFG).model)
    model.init_weights()
    init = str(root / 'init.pth')
    torch.save(dict(state_dict=model.state_dict()), init)

    class Runs:
        root_dir = root
        data_root = data
        cache = {}

        def get(self, name, config, *extra):
            if name not in self.cache:
                work = str(root / name)
                args = [config, '--work-dir', work, '--cfg-options',
                        f'load_from={init}', *extra]
                if name == 'fsdp':  # the documented launcher, as a user runs it
                    run_tool([DIST_TRAIN, args[0], '2', *args[1:]], data)
                else:
                    run2('train', args, env)
                self.cache[name] = work
            return self.cache[name]

    return Runs()


def test_fsdp_equals_ddp_with_weight_decay_and_layer_groups(runs):
    """Layer-decay groups and weight decay under FSDP equal DDP's; so do the
    parameters after 4 iterations (fp32, wd 0.1, clipping active).

    Before: every FSDP parameter was a 1-D shard when the optimizer was
    built, so all groups got weight_decay=0 (6 groups against DDP's 12).
    """
    ddp = runs.get('ddp', DDP_CFG)
    fsdp = runs.get('fsdp', FSDP_CFG)
    ddp_model, ddp_optim, ddp_raw = state(osp.join(ddp, 'iter_4.pth'))
    fsdp_model, fsdp_optim, fsdp_raw = state(osp.join(fsdp, 'iter_4.pth'))
    assert groups(fsdp_raw) == groups(ddp_raw)
    assert len(ddp_raw['param_groups']) == 8  # 4 layer ids x (decay, none)
    assert sum(g['weight_decay'] > 0 for g in ddp_raw['param_groups']) == 4
    # AdamW turns last-bit gradient differences (FSDP pre/post-divides the
    # reduce-scatter, DDP averages after the all-reduce) into ~1e-6 steps of
    # near-zero-gradient elements; weight decay off would move parameters
    # by lr * wd * |p| ~ 1e-3 per step, the updates themselves are ~3e-2
    assert_same_tensors(fsdp_model, ddp_model, atol=1e-5)
    for name in ddp_optim:
        for key in ('exp_avg', 'exp_avg_sq'):
            torch.testing.assert_close(fsdp_optim[name][key].float(),
                                       ddp_optim[name][key].float(),
                                       rtol=1e-5, atol=1e-8)


def test_fsdp_clips_by_global_norm_and_logs_it(runs):
    """The logged grad_norm is DDP's global norm, above max_norm (0.05), so
    clipping was active; the parameters agree (previous test).

    Before: each rank clipped by and logged its own shard's norm.
    """
    ddp = grad_norms(runs.get('ddp', DDP_CFG))
    fsdp = grad_norms(runs.get('fsdp', FSDP_CFG))
    assert len(ddp) == len(fsdp) == 4
    assert min(ddp) > 0.05
    for a, b in zip(fsdp, ddp):
        assert a == pytest.approx(b, rel=1e-4)


def test_fsdp_resume_equals_straight_run(runs):
    """2 iterations + --resume + 2 equals 4 straight, parameters, optimizer
    state and the logged base_lr.

    Before: mmengine's optim_state_dict_to_load argument order failed
    ("unhashable type: 'dict'"); exp_avg was saved equal to exp_avg_sq.
    """
    straight = runs.get('fsdp', FSDP_CFG)
    resumed = str(runs.root_dir / 'resumed')
    run2('train', [FSDP_CFG, '--work-dir', resumed, '--resume',
                   osp.join(straight, 'iter_2.pth')],
         dict(SAPIENS2_WORKFLOW_DATA=runs.data_root))
    a_model, a_optim, _ = state(osp.join(straight, 'iter_4.pth'))
    b_model, b_optim, _ = state(osp.join(resumed, 'iter_4.pth'))
    assert_same_tensors(b_model, a_model, atol=0)
    for name in a_optim:
        for key in ('exp_avg', 'exp_avg_sq', 'step'):
            assert torch.equal(b_optim[name][key], a_optim[name][key])
    mid = state(osp.join(straight, 'iter_2.pth'))[1]
    assert not all(torch.equal(v['exp_avg'], v['exp_avg_sq'])
                   for v in mid.values())  # the aliasing on CPU
    logged = {e['step']: e for e in scalars(straight) if 'base_lr' in e}
    again = {e['step']: e for e in scalars(resumed) if 'base_lr' in e}
    for step in (3, 4):
        assert again[step]['base_lr'] == pytest.approx(logged[step]['base_lr'])
        assert again[step]['lr'] == pytest.approx(logged[step]['lr'])


def test_fsdp_test_tool_equals_plain_runner(runs, tmp_path, monkeypatch):
    """tools/test.py with the FSDP config (2 ranks) gives the plain test's
    metrics for the same checkpoint, also when the config's backbone
    init_cfg names a pretrain file that is absent.

    Before: the checkpoint was loaded into the wrapped model (shape
    mismatch) and FlexibleRunner's init_weights read the init_cfg file.
    """
    ckpt = osp.join(runs.get('fsdp', FSDP_CFG), 'iter_4.pth')
    leaf = tmp_path / 'fsdp_with_pretrain_init.py'
    leaf.write_text(
        f'_base_ = [{FSDP_CFG!r}]\n'
        'model = dict(backbone=dict(init_cfg=dict(_delete_=True, '
        'type="Pretrained", '
        f'checkpoint={str(tmp_path / "absent.safetensors")!r})))\n')
    run2('test', [str(leaf), ckpt, '--work-dir', str(tmp_path / 'f')],
         dict(SAPIENS2_WORKFLOW_DATA=runs.data_root))
    monkeypatch.setenv('SAPIENS2_WORKFLOW_DATA', runs.data_root)
    load_tool('test').main([DDP_CFG, ckpt, '--work-dir',
                            str(tmp_path / 'p')])
    with open(tmp_path / 'f' / 'test_metrics.json') as f:
        fsdp = json.load(f)
    with open(tmp_path / 'p' / 'test_metrics.json') as f:
        plain = json.load(f)
    assert fsdp == plain
    assert plain['mIoU'] > 0


def test_fsdp_activation_checkpointing_leaf_override_equals_plain(runs,
                                                                   tmp_path):
    """A leaf config setting strategy.activation_checkpointing builds and
    trains to the parameters of the run without checkpointing.

    Before: "activation_checkpointing is a dict in the child config but is
    of type NoneType in base config".
    """
    leaf = tmp_path / 'fsdp_ckpt.py'
    leaf.write_text(
        f'_base_ = [{FSDP_CFG!r}]\n'
        'strategy = dict(activation_checkpointing=dict('
        'check_fn="sapiens2_block_checkpoint_fn"))\n')
    plain = runs.get('fsdp', FSDP_CFG)
    checkpointed = runs.get('fsdp_cp', str(leaf))
    log = open(sorted(
        p for p in (osp.join(checkpointed, d, f'{d}.log')
                    for d in os.listdir(checkpointed)) if osp.isfile(p))[0]
    ).read()
    assert 'sapiens2_block_checkpoint_fn' in log
    assert_same_tensors(state(osp.join(checkpointed, 'iter_4.pth'))[0],
                        state(osp.join(plain, 'iter_4.pth'))[0], atol=1e-6)


def test_fsdp_pretraining_teacher_equals_ddp(tmp_path):
    """Every EMA teacher parameter under FSDP equals the DDP teacher after 3
    steps of tiny pretraining (fp32, SGD, layer decay, clipping active),
    and the teacher moved from the init in every part, root unit included.

    Before: the teacher parameters in FSDP's root unit (patch embed, tokens,
    final norm, DINO head) never changed.
    """
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    out = {}
    for name, strategy in (('ddp', ''), ('fsdp', STRATEGY)):
        leaf = tmp_path / f'{name}.py'
        bases = [PRETRAIN_CFG] + ([strategy] if strategy else [])
        leaf.write_text(
            f'_base_ = {bases!r}\n'
            'train_cfg = dict(max_iters=3)\n'
            # prototypes frozen in iteration 0 only, so that they move too
            'custom_hooks = [dict(type="PretrainScheduleHook", '
            'momentum_start=0.9, momentum_end=1.0, teacher_temp_start=0.04, '
            'teacher_temp_end=0.07, teacher_temp_warmup_iters=10, '
            'freeze_prototypes_iters=1), dict(type="RNGStateHook")]\n'
            # SGD: AdamW turns rounding-level differences of near-zero
            # gradients (reduce-scatter vs all-reduce order) into full steps
            'optim_wrapper = dict(optimizer=dict(_delete_=True, type="SGD", '
            'lr=0.1, momentum=0.9, weight_decay=0.05))\n'
            'param_scheduler = [dict(type="ConstantLR", factor=1.0, '
            'by_epoch=False, begin=0, end=3)]\n'
            'train_dataloader = dict(batch_size=4, dataset=dict(data_root='
            f'{osp.join(TESTS_DIR, "data")!r}))\n'
            'default_hooks = dict(checkpoint=dict(interval=3), '
            'logger=dict(interval=1))\n' +
            # init_on_meta=False: the random masks come from the global RNG,
            # which DDP's plain build leaves after the constructors' and
            # init's draws; a meta build draws nothing (same init values
            # here, from load_from, but other masks)
            ('strategy = dict(model_wrapper=dict(mixed_precision=None), '
             'init_on_meta=False)\n' if strategy else ''))
        if name == 'ddp':  # one init for both
            torch.manual_seed(0)
            model = MODELS.build(Config.fromfile(str(leaf)).model)
            model.init_weights()
            init_state = model.state_dict()
            teacher = ['teacher.module.' + k
                       for k, _ in model.teacher.module.named_parameters()]
            init = str(tmp_path / 'init.pth')
            torch.save(dict(state_dict=init_state), init)
        work = str(tmp_path / name)
        run2('train', [str(leaf), '--work-dir', work, '--cfg-options',
                       f'load_from={init}'])
        out[name] = torch.load(osp.join(work, 'iter_3.pth'),
                               map_location='cpu',
                               weights_only=False)['state_dict']
        out[name + '_norms'] = grad_norms(work)
    assert len(teacher) == 46  # parameters (not buffers) of the teacher
    for key in teacher:
        moved = float((out['ddp'][key] - init_state[key]).abs().max())
        diff = float((out['fsdp'][key] - out['ddp'][key]).abs().max())
        # a teacher part left at its init (the defect) has diff == moved
        assert diff <= 1e-6 and diff < moved / 3, (key, diff, moved)
    # students: rounding-level differences (reduce-scatter vs all-reduce
    # order, KoLeo's nearest neighbours) after moves of up to ~0.4
    assert_same_tensors(out['fsdp'], out['ddp'], atol=1e-4)
    assert min(out['ddp_norms']) > 3.0  # clipping at 3 was active
    for a, b in zip(out['fsdp_norms'], out['ddp_norms']):
        assert a == pytest.approx(b, rel=1e-4)


def test_fsdp_bf16_snippet_pretrains_unchanged_with_reconstructions(tmp_path):
    """The shipped snippet as it is (bf16 parameters) pretrains the tiny
    model on 2 CPU ranks, and the reconstruction hook draws under FSDP.

    Before: the hook called ``reconstruct`` on the unwrapped model: fp32
    input against bf16 parameters ("Input type (float) and bias type
    (c10::BFloat16) should be the same"), and root-unit parameters sharded.
    """
    leaf = tmp_path / 'pretrain_fsdp_bf16.py'
    leaf.write_text(
        f'_base_ = {[PRETRAIN_CFG, STRATEGY]!r}\n'
        'train_cfg = dict(max_iters=2)\n'
        'train_dataloader = dict(batch_size=4, dataset=dict(data_root='
        f'{osp.join(TESTS_DIR, "data")!r}))\n'
        'custom_hooks = [dict(type="PretrainScheduleHook", '
        'momentum_start=0.9, momentum_end=1.0, teacher_temp_start=0.04, '
        'teacher_temp_end=0.07, teacher_temp_warmup_iters=10, '
        'freeze_prototypes_iters=1), dict(type="RNGStateHook"), '
        'dict(type="PretrainReconstructionVisHook", interval=1, '
        'num_images=2)]\n'
        'default_hooks = dict(checkpoint=dict(interval=2), '
        'logger=dict(interval=1))\n')
    work = str(tmp_path / 'work')
    run2('train', [str(leaf), '--work-dir', work])
    images = sorted(os.path.basename(p) for p in glob.glob(
        osp.join(work, '*', 'vis_data', 'vis_image', '*.png')))
    assert images == ['pretrain_reconstruction_1.png',
                      'pretrain_reconstruction_2.png']
    losses = [e['loss'] for e in scalars(work) if 'loss' in e]
    assert len(losses) == 2 and all(map(math.isfinite, losses))
    state = torch.load(osp.join(work, 'iter_2.pth'), map_location='cpu',
                       weights_only=False)['state_dict']
    assert state['backbone.cls_token'].dtype == torch.float32  # fp32 master
