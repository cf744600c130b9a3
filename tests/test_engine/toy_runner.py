"""A real mmengine Runner around a two-parameter model: trains in milliseconds,
so the hooks can be tested through mmengine's own loops."""
import torch
from mmengine.model import BaseModel
from torch import nn
from torch.utils.data import Dataset


class ToyModel(BaseModel):
    """y = w x + b, mean-squared loss; dropout so that RNG state matters."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(1, 1)
        self.dropout = nn.Dropout(0.5)

    def forward(self, inputs, targets=None, mode='loss'):
        pred = self.linear(self.dropout(inputs))
        if mode == 'loss':
            return dict(loss=((pred - targets)**2).mean())
        return pred


class ToyDataset(Dataset):
    """Sixteen (x, 2x + 1) pairs, with a random jitter drawn per sample."""

    def __len__(self):
        return 16

    def __getitem__(self, idx):
        x = torch.tensor([float(idx) / 16]) + 0.01 * torch.randn(1)
        return dict(inputs=x, targets=2 * x + 1)


def toy_runner(work_dir, max_iters=3, checkpoint=None, custom_hooks=None,
               num_workers=0, resume=False, load_from=None, name='toy',
               worker_seed=None):
    """An iteration-based Runner saving a checkpoint every iteration.

    ``worker_seed`` seeds the data-loader workers with mmengine's
    ``worker_init_fn`` but another seed than the run's (a control).
    """
    from mmengine.dataset import worker_init_fn
    from mmengine.runner import Runner
    extra = {}
    if worker_seed is not None:
        extra['worker_init_fn'] = dict(type=worker_init_fn, rank=0,
                                       num_workers=num_workers,
                                       seed=worker_seed)
    checkpoint = dict(dict(type='sapiens2_mm.AtomicCheckpointHook',
                           interval=1, by_epoch=False, max_keep_ckpts=1),
                      **(checkpoint or {}))
    return Runner(
        model=ToyModel(),
        work_dir=str(work_dir),
        train_dataloader=dict(
            dataset=ToyDataset(),
            sampler=dict(type='InfiniteSampler', shuffle=True),
            batch_size=2, num_workers=num_workers,
            persistent_workers=num_workers > 0,
            collate_fn=dict(type='default_collate'), **extra),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.1)),
        train_cfg=dict(by_epoch=False, max_iters=max_iters),
        default_hooks=dict(checkpoint=checkpoint,
                           logger=dict(type='LoggerHook', interval=1)),
        custom_hooks=custom_hooks,
        randomness=dict(seed=0),
        resume=resume,
        load_from=load_from,
        default_scope='sapiens2_mm',  # Runner's default would be 'mmengine'
        experiment_name=name)
