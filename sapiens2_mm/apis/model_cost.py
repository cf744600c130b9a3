"""Parameters, MACs and FLOPs of a config's model at its test input size.

Used by ``tools/analysis_tools/get_flops.py`` and ``compare_models.py``, for
configs of any scope (sapiens2_mm, stock mmpose / mmseg / mmpretrain).

Two conventions, both printed (docs/baselines.md):

* **MACs**: multiply-accumulates of every convolution (transposed and
  grouped too) and matrix product (linear layers *and* the attention matmuls
  QK^T and AV). The mmpose / mmseg / mmpretrain model zoos print this number
  as "FLOPs" (mmengine's counter, one per multiply-accumulate; it also counts
  one per element of norms and upsampling, which adds a few percent).
* **FLOPs = 2 x MACs** (a multiply and an add): ``torch.utils.flop_counter``'s
  and the Sapiens2 model card's convention.

Element-wise ops, norms, softmax, pooling and interpolation are counted in
neither. One forward pass of the network (``mode='tensor'``: no flip test,
no decoding) on a (1, 3, H, W) input, where (H, W) is read from the config
(:func:`config_input_shape`), never assumed.
"""
import copy
from typing import Dict, Optional, Sequence, Tuple

import torch
from mmengine.config import Config
from torch import nn

from ..registry import MODELS
from ..utils.setup_env import in_config_scope

ATTENTION_OPS = ('bmm', 'baddbmm', 'scaled_dot_product')
Shape = Tuple[int, int]
# Test-pipeline steps that fix the network input, and how to read (H, W).
HW_STEPS = ('SegResize', 'DenseResizePad')  # height=, width=
WH_STEPS = ('TopdownAffine', 'Sapiens2TopdownAffine')  # input_size=(w, h)


def _short_type(step: dict) -> str:
    kind = step.get('type', '')
    kind = getattr(kind, '__name__', kind)
    return str(kind).split('.')[-1]


def _step_shape(step: dict) -> Optional[Shape]:
    """(H, W) a pipeline step resizes to, or None (a step that does not fix
    the size, e.g. a keep-ratio resize)."""
    kind = _short_type(step)
    if kind in HW_STEPS and 'height' in step and 'width' in step:
        return int(step['height']), int(step['width'])
    if kind in WH_STEPS and 'input_size' in step:
        w, h = step['input_size']
        return int(h), int(w)
    if kind == 'Resize' and not step.get('keep_ratio', False) and \
            step.get('scale') is not None:
        scale = step['scale']  # mmcv / mmseg: (w, h)
        if isinstance(scale, int):
            return scale, scale
        return int(scale[1]), int(scale[0])
    return None


def eval_pipeline(cfg: Config) -> Sequence[dict]:
    """The steps the test set goes through: ``test_dataloader.dataset``'s
    pipeline (inside dataset wrappers too), else ``test_pipeline``."""
    dataset = (cfg.get('test_dataloader') or {}).get('dataset') or {}
    while isinstance(dataset, dict) and 'pipeline' not in dataset and \
            isinstance(dataset.get('dataset'), dict):
        dataset = dataset['dataset']
    pipeline = (dataset.get('pipeline') if isinstance(dataset, dict) else
                None) or cfg.get('test_pipeline') or []
    return [s for s in pipeline if isinstance(s, dict)]


def config_input_shape(cfg: Config) -> Tuple[Shape, str]:
    """The (H, W) a config's model is tested at, and where it was read.

    In order: a test-pipeline step that fixes the size (``SegResize``,
    ``DenseResizePad``, ``TopdownAffine`` ``input_size``, a resize without
    keep-ratio), the pose codec's ``input_size`` (``model.head.decoder``),
    the data preprocessor's ``size``, the backbone's ``img_size``.

    Raises:
        ValueError: none of these is in the config (pass the shape).
    """
    for index, step in enumerate(eval_pipeline(cfg)):
        shape = _step_shape(step)
        if shape is not None:
            return shape, f'test pipeline step {index} ({_short_type(step)})'
    model = cfg.get('model') or {}
    decoder = (model.get('head') or {}).get('decoder') or {}
    if decoder.get('input_size') is not None:
        w, h = decoder['input_size']
        return (int(h), int(w)), 'codec input_size (model.head.decoder)'
    size = (model.get('data_preprocessor') or {}).get('size')
    if size is not None:
        return (int(size[0]), int(size[1])), 'model.data_preprocessor.size'
    backbone = model.get('backbone', model)
    size = backbone.get('img_size') if isinstance(backbone, dict) else None
    if size is not None:
        size = (size, size) if isinstance(size, int) else tuple(size)
        return (int(size[0]), int(size[1])), 'model.backbone.img_size'
    raise ValueError(
        f'{cfg.filename or "The config"}: no test input size found (no '
        'resizing test-pipeline step, codec input_size, data preprocessor '
        'size or backbone img_size); pass the shape (--shape H W).')


def drop_pretrained(cfg) -> None:
    """No checkpoint is read to count: ``Pretrained`` init_cfgs and mmseg's
    ``pretrained=`` are cleared in place."""
    if isinstance(cfg, dict):
        if isinstance(cfg.get('init_cfg'), dict) and \
                cfg['init_cfg'].get('type') == 'Pretrained':
            cfg['init_cfg'] = None
        if isinstance(cfg.get('pretrained'), str):
            cfg['pretrained'] = None
        for value in cfg.values():
            drop_pretrained(value)
    elif isinstance(cfg, (list, tuple)):
        for value in cfg:
            drop_pretrained(value)


def build_for_counting(cfg: Config,
                       model_cfg: Optional[dict] = None
                       ) -> Tuple[nn.Module, str]:
    """Build the config's model (or ``model_cfg``) on the meta device, in
    the config's scope, without pretrained weights.

    A model whose constructor reads tensor values (mmseg's SegFormer:
    ``Tensor.item()`` on the drop-path rates) cannot be built on the meta
    device; it is built normally on the CPU and then moved to it.

    Returns:
        ``(model in eval mode on the meta device, how it was built)``.
    """
    model_cfg = copy.deepcopy(dict(model_cfg if model_cfg is not None else
                                   cfg.model))
    drop_pretrained(model_cfg)
    with in_config_scope(cfg):
        try:
            with torch.device('meta'):
                model = MODELS.build(model_cfg)
            how = 'built on the meta device'
        except (RuntimeError, NotImplementedError) as err:
            if 'meta' not in str(err):
                raise
            model = MODELS.build(model_cfg).to('meta')
            how = ('built on the CPU, then moved to the meta device (the meta '
                   f'build failed: {str(err).splitlines()[0]})')
    return model.eval(), how


def network_forward(model: nn.Module, inputs: torch.Tensor):
    """The network alone: estimators in ``mode='tensor'`` (head outputs, no
    decoding or flip test), plain modules called directly."""
    from mmengine.model import BaseModel
    if isinstance(model, BaseModel):
        # data_samples is a required positional argument of mmpose's
        # BasePoseEstimator.forward (optional in mmseg / mmpretrain)
        return model(inputs, None, mode='tensor')
    return model(inputs)


def count_cost(model: nn.Module, shape: Shape) -> Dict:
    """Parameters and multiply-accumulates of one forward of ``model`` on a
    (1, 3, H, W) input.

    torch's ``nn.MultiheadAttention`` fast path (one fused kernel the FLOP
    counter does not see into) is switched off while counting, so the
    attention of mmcv / mmseg transformers is counted like any other.

    Returns:
        dict with ``params``, ``backbone_params``, ``macs`` (all),
        ``flops`` (2 x ``macs``), ``linear_macs`` (linear + conv),
        ``attention_macs`` (QK^T and AV) and ``shape`` (H, W).
    """
    from torch.utils.flop_counter import FlopCounterMode
    device = next(model.parameters()).device
    inputs = torch.empty(1, 3, *shape, device=device)
    fast_path = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            network_forward(model, inputs)
    finally:
        torch.backends.mha.set_fastpath_enabled(fast_path)
    per_op = {str(k): v for k, v in counter.get_flop_counts()['Global'].items()}
    attention = sum(v for k, v in per_op.items()
                    if any(op in k for op in ATTENTION_OPS))
    total = counter.get_total_flops()
    backbone = getattr(model, 'backbone', model)
    return dict(params=sum(p.numel() for p in model.parameters()),
                backbone_params=sum(p.numel() for p in backbone.parameters()),
                macs=total // 2, flops=total,
                linear_macs=(total - attention) // 2,
                attention_macs=attention // 2, shape=tuple(shape))


def config_cost(cfg: Config, shape: Optional[Shape] = None) -> Dict:
    """:func:`count_cost` of the config's model at ``shape`` or at the
    config's test input size (:func:`config_input_shape`); the result also
    holds ``shape_source`` and ``build`` (how the model was built)."""
    source = 'given'
    if shape is None:
        shape, source = config_input_shape(cfg)
    model, how = build_for_counting(cfg)
    result = count_cost(model, tuple(shape))
    result.update(shape_source=source, build=how)
    return result
