"""RNGStateHook: a resumed run equals the uninterrupted one, with workers too.

The toy dataset draws a jitter per sample inside the data-loader workers and
the model applies dropout in the main process, so the final weights depend on
both random streams.
"""
import shutil

import pytest
import torch

from .toy_runner import toy_runner

HOOKS = [dict(type='sapiens2_mm.RNGStateHook')]


def _weights(path):
    return torch.load(path, map_location='cpu',
                      weights_only=True)['state_dict']


@pytest.mark.parametrize('num_workers', [0, 2])
def test_resume_with_workers_matches_straight_run(tmp_path, num_workers):
    ckpt = dict(max_keep_ckpts=4)
    straight = tmp_path / 'straight'
    toy_runner(straight, max_iters=4, checkpoint=ckpt, custom_hooks=HOOKS,
               num_workers=num_workers, name=f'rng_straight{num_workers}'
               ).train()
    resumed = tmp_path / 'resumed'
    resumed.mkdir()
    shutil.copy(straight / 'iter_2.pth', resumed / 'iter_2.pth')
    toy_runner(resumed, max_iters=4, checkpoint=ckpt, custom_hooks=HOOKS,
               num_workers=num_workers, resume=True,
               load_from=str(resumed / 'iter_2.pth'),
               name=f'rng_resumed{num_workers}').train()
    a, b = _weights(straight / 'iter_4.pth'), _weights(resumed / 'iter_4.pth')
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=0, atol=0, msg=key)
    # controls: the result differs without the main-process RNG state, and
    # (with workers) when the workers' streams differ
    control = tmp_path / 'control'
    control.mkdir()
    state = torch.load(straight / 'iter_2.pth', weights_only=True)
    del state['rng_state']
    torch.save(state, control / 'iter_2.pth')
    controls = [dict(path=control / 'iter_2.pth')]
    if num_workers:
        controls.append(dict(path=resumed / 'iter_2.pth', worker_seed=1))
    for i, control in enumerate(controls):
        work = tmp_path / f'control{i}'
        work.mkdir()
        toy_runner(work, max_iters=4, checkpoint=ckpt, custom_hooks=HOOKS,
                   num_workers=num_workers, resume=True,
                   load_from=str(control['path']),
                   worker_seed=control.get('worker_seed'),
                   name=f'rng_control{num_workers}_{i}').train()
        c = _weights(work / 'iter_4.pth')
        assert any((c[k] - a[k]).abs().max() > 1e-6 for k in a), control
