"""Layer-wise learning-rate decay of the official Sapiens2 fine-tuning recipe."""
from typing import Dict, List, Optional, Tuple

from mmengine.optim import DefaultOptimWrapperConstructor
from torch import nn

from ...registry import OPTIM_WRAPPER_CONSTRUCTORS
from ..fsdp_shapes import full_shape, plain_name

# Parameters of the stem: layer id 0 (lowest lr).
STEM_NAMES = ('cls_token', 'storage_tokens', 'mask_token', 'pos_embed')
STEM_MODULES = ('patch_embed.', 'tokenizer.')
BLOCK_PREFIXES = ('blocks.', 'layers.')


def sapiens2_layer_id(name: str, num_layers: int) -> int:
    """Layer id of a parameter under the official Sapiens2 fine-tuning rule.

    Args:
        name: parameter name in the task model, e.g.
            ``backbone.blocks.3.attn.wq.weight``. Names of a bare backbone
            (no ``backbone.``) are accepted too.
        num_layers: L, the number of transformer blocks.

    Raises:
        ValueError: a block index >= ``num_layers``.

    Returns:
        0 for the stem (tokens, patch embed, tokenizer), i + 1 for block i, and
        L + 1 for everything else (final norm, neck, heads).
    """
    local = name.removeprefix('backbone.')
    if local in STEM_NAMES or local.startswith(STEM_MODULES):
        return 0
    index = _block_index(local)
    if index is None:
        return num_layers + 1
    if int(index) >= num_layers:
        raise ValueError(
            f'Parameter {name} belongs to block {index} but '
            f'paramwise_cfg.num_layers={num_layers}; set num_layers to '
            "the backbone's block count.")
    return int(index) + 1


def _block_index(local: str) -> Optional[str]:
    """``<i>`` of a backbone-local name ``blocks.<i>.*`` / ``layers.<i>.*``."""
    for prefix in BLOCK_PREFIXES:
        if local.startswith(prefix):
            return local[len(prefix):].split('.', 1)[0]
    return None


def count_blocks(module: nn.Module) -> int:
    """Number of transformer blocks of the (task model's) backbone.

    Counted from the parameter names ``[backbone.]blocks.<i>.*`` (or
    ``layers.<i>``), frozen parameters included; the tokenizer's own blocks
    belong to the stem and are not counted.

    Returns:
        1 + the highest block index, or 0 when the module has no blocks.
    """
    indices = [_block_index(plain_name(name).removeprefix('backbone.'))
               for name, _ in module.named_parameters()]
    return 1 + max((int(i) for i in indices if i is not None and i.isdigit()),
                   default=-1)


# Learned tokens are exempt from decay in the official recipe although they are
# 3-D tensors; the tokenizer's shared CLS ``w_cls`` is treated as a token too.
NO_DECAY_TOKENS = ('cls_token', 'storage_tokens', 'mask_token', 'w_cls')


def no_weight_decay(name: str, param: nn.Parameter) -> bool:
    """1-D parameters, biases, position embeddings and tokens get no decay.

    Upstream defect (torch FSDP with ``use_orig_params=True``, as mmengine
    builds the optimizer after wrapping): every parameter is then a 1-D flat
    shard, so ``param.ndim == 1`` matched all of them and FSDP trained with
    weight decay off. The shape recorded before wrapping is used instead
    (:func:`~sapiens2_mm.engine.fsdp_shapes.full_shape`).
    """
    return (len(full_shape(param)) == 1 or name.endswith('.bias')
            or 'pos_embed' in name
            or name.rsplit('.', 1)[-1] in NO_DECAY_TOKENS)


@OPTIM_WRAPPER_CONSTRUCTORS.register_module()
class Sapiens2LayerDecayOptimWrapperConstructor(DefaultOptimWrapperConstructor):
    """AdamW groups with ``lr * rate ** (L + 1 - layer_id)`` as in Sapiens2.

    mmpretrain's ``LearningRateDecayOptimWrapperConstructor`` asks the backbone
    for layer depths and applies its own decay exemptions, which give different
    groups from the official recipe (e.g. it decays 1-D tokens and counts depth
    from the model's ``get_layer_depth``); this one reproduces the official
    grouping exactly.

    ``paramwise_cfg`` keys:
        layer_decay_rate (float): 0.8 (0.4b), 0.85 (0.8b), 0.9 (1b), 0.94 (5b).
        num_layers (int, optional): L, the backbone's block count. Counted
            from the model when left out; when given it must equal that count
            (a value inherited from a base config for another size would
            otherwise give every block the wrong lr).

    Parameters with ``requires_grad=False`` are left out. Groups are formed per
    (lr, weight decay) pair and carry ``lr_scale``/``layer_id`` for logging.
    """

    def add_params(self, params: List[dict], module: nn.Module,
                   **kwargs) -> None:
        """Fill ``params`` with one group per (lr, weight decay) pair."""
        cfg = self.paramwise_cfg
        if 'layer_decay_rate' not in cfg:
            raise KeyError(
                f'paramwise_cfg of {type(self).__name__} needs '
                f"['layer_decay_rate']; got {dict(cfg)}. Example: "
                'paramwise_cfg=dict(layer_decay_rate=0.9).')
        num_layers = count_blocks(module)
        if num_layers == 0:
            raise ValueError(
                f'{type(self).__name__} found no transformer blocks '
                "('backbone.blocks.<i>' parameters) in "
                f'{type(module).__name__}; it is meant for Sapiens2 backbones.')
        if 'num_layers' in cfg and int(cfg['num_layers']) != num_layers:
            raise ValueError(
                f"paramwise_cfg.num_layers={cfg['num_layers']} but the model's "
                f'backbone has {num_layers} blocks; remove num_layers from '
                f'paramwise_cfg (it is counted from the model) or set it to '
                f'{num_layers}.')
        rate = float(cfg['layer_decay_rate'])
        top = num_layers + 1
        base_wd = self.base_wd or 0.0
        groups: Dict[Tuple[int, bool], dict] = {}
        for name, param in module.named_parameters():
            if not param.requires_grad:
                continue
            name = plain_name(name)  # names FSDP / checkpointing insert
            layer_id = sapiens2_layer_id(name, num_layers)
            decay_off = no_weight_decay(name, param)
            key = (layer_id, decay_off)
            if key not in groups:
                scale = rate**(top - layer_id)
                groups[key] = dict(
                    params=[], param_names=[], lr=self.base_lr * scale,
                    weight_decay=0.0 if decay_off else base_wd,
                    lr_scale=scale, layer_id=layer_id)
            groups[key]['params'].append(param)
            groups[key]['param_names'].append(name)
        params.extend(groups[key] for key in sorted(groups))
