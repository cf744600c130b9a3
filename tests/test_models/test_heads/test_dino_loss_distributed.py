"""2-process gloo Sinkhorn-Knopp / centering equal one process on the full batch."""
import os

import torch
import torch.distributed as torch_dist
import torch.multiprocessing as mp

BATCH, PROTOTYPES = 8, 5


def _data():
    gen = torch.Generator().manual_seed(0)
    teacher = torch.randn(BATCH, PROTOTYPES, generator=gen)
    student = [torch.randn(BATCH, PROTOTYPES, generator=gen) for _ in range(3)]
    return teacher, student


def _results(teacher, student, rank=0, world=1):
    from sapiens2_mm.models.heads.selfsup import DINOClsLoss, sinkhorn_knopp
    part = slice(rank * BATCH // world, (rank + 1) * BATCH // world)
    targets = sinkhorn_knopp(teacher[part], 0.1, num_iterations=3)
    centred = DINOClsLoss(PROTOTYPES, teacher_temp=0.1,
                          teacher_norm='centering')
    centred.teacher_targets(teacher[part])
    centred.teacher_targets(teacher[part] * 2)
    loss = DINOClsLoss(PROTOTYPES)(
        [s[part] for s in student],
        list(targets.chunk(1)) * 2, num_global=2)
    return dict(targets=targets, center=centred.center.clone(), loss=loss)


def _worker(rank, world, init_file, out_dir):
    # forked after the parent used torch's thread pool: stay single-threaded
    torch.set_num_threads(1)
    torch_dist.init_process_group('gloo', init_method=f'file://{init_file}',
                                  rank=rank, world_size=world)
    try:
        teacher, student = _data()
        result = _results(teacher, student, rank, world)
        torch.save(result, os.path.join(out_dir, f'rank{rank}.pt'))
        torch_dist.barrier()  # neither rank closes its pairs mid-collective
    finally:
        torch_dist.destroy_process_group()


def test_two_process_gloo_equals_single_process(tmp_path):
    # Forked, not spawned: a forked child leaves through os._exit, so it never
    # runs interpreter finalization, in which a spawned child once aborted
    # ("terminate called without an active exception") after its work was
    # done: a background torch thread that takes the GIL while Python is
    # finalizing is ended by CPython, and the unwind hits std::terminate
    # (open upstream: pytorch/pytorch#190489). The metric tests fork too.
    mp.start_processes(_worker,
                       args=(2, str(tmp_path / 'init'), str(tmp_path)),
                       nprocs=2, join=True, start_method='fork')
    ranks = [torch.load(tmp_path / f'rank{r}.pt', weights_only=True)
             for r in range(2)]
    single = _results(*_data())
    targets = torch.cat([r['targets'] for r in ranks])
    assert torch.allclose(targets, single['targets'], atol=1e-6)
    # Per-rank sinkhorn alone would differ: the all-reduce matters.
    alone = torch.cat([_results(*_data(), rank=r, world=2)['targets']
                       for r in range(2)])
    assert not torch.allclose(alone, single['targets'], atol=1e-4)
    for r in ranks:  # the centre is the same global EMA on every rank
        assert torch.allclose(r['center'], single['center'], atol=1e-6)
    # Equal halves: the mean of the rank losses is the full-batch loss (what
    # DDP's gradient averaging optimises).
    mean_loss = (ranks[0]['loss'] + ranks[1]['loss']) / 2
    assert torch.allclose(mean_loss, single['loss'], atol=1e-6)
