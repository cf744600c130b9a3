"""One rank of an FSDP start (build, initialise, wrap), for the tests.

Run under torchrun (``python -m torch.distributed.run --nproc_per_node=N
THIS CONFIG OUT [key=value ...]``): builds ``Sapiens2FSDPStrategy`` from the
config's ``strategy`` (``key=value`` pairs override its arguments, e.g.
``init_on_meta=False``) on the gloo backend, prepares the config's model, and
writes

* ``OUT/rank<r>.json``: this rank's parameter bytes when wrapping starts and
  after it (its shards), the full model's parameter bytes, and the
  strategy's meta-init figures (``meta_init_report``);
* ``OUT/state.pth`` (rank 0): the gathered full state dict.
"""
import ast
import json
import math
import os
import os.path as osp
import sys


def main(config: str, out: str, overrides: dict) -> None:
    import torch
    import torch.distributed as dist
    from mmengine.config import Config
    from torch.distributed.fsdp import FullStateDictConfig, StateDictType
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    from sapiens2_mm.engine.fsdp_shapes import full_shape
    from sapiens2_mm.engine.strategies.meta_init import _real_parameter_bytes
    from sapiens2_mm.registry import STRATEGIES
    from sapiens2_mm.utils import register_all_modules

    torch.set_num_threads(1)
    register_all_modules()
    dist.init_process_group('gloo')
    rank = dist.get_rank()
    cfg = Config.fromfile(config)
    strategy_cfg = dict(cfg.strategy, **overrides)
    strategy_cfg.update(
        work_dir=out, env_kwargs=dict(launcher='pytorch',
                                      randomness=dict(seed=0),
                                      dist_cfg=dict(backend='gloo')))
    strategy = STRATEGIES.build(strategy_cfg)
    held = {}
    wrap = strategy._wrap_model

    def record_then_wrap(model):
        # what the rank holds when wrapping starts: the whole model built
        # and initialised (init_on_meta=False), or nothing (meta)
        held['before_wrap'] = _real_parameter_bytes(model)
        return wrap(model)

    strategy._wrap_model = record_then_wrap
    model = strategy.prepare(cfg.model)
    shard_bytes = _real_parameter_bytes(model)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT,
                              FullStateDictConfig(rank0_only=True,
                                                  offload_to_cpu=False)):
        state = model.state_dict()
    full_bytes = sum(math.prod(full_shape(p)) * p.element_size()
                     for p in model.parameters())
    if rank == 0:
        torch.save(state, osp.join(out, 'state.pth'))
    report = dict(rank=rank, world=dist.get_world_size(),
                  shard_param_bytes=shard_bytes, full_param_bytes=full_bytes,
                  before_wrap_bytes=held['before_wrap'],
                  meta_init=strategy.meta_init_report)
    with open(osp.join(out, f'rank{rank}.json'), 'w') as f:
        json.dump(report, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == '__main__':
    pairs = dict(arg.split('=', 1) for arg in sys.argv[3:])
    main(sys.argv[1], sys.argv[2],
         {k: ast.literal_eval(v) for k, v in pairs.items()})
    sys.stdout.flush()
    os._exit(0)  # pytorch#190489, see sapiens2_mm.engine.runners.launch
