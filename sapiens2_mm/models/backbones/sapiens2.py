"""Sapiens2 backbone (Khirodkar et al., "Sapiens2", ICLR 2026).

A plain ViT with the refinements of recent frontier models: RMSNorm pre-norm
blocks, QK-norm, SwiGLU FFN, grouped-query attention in the middle blocks, 2-D
RoPE, a CLS token plus 8 storage (register) tokens, and for the 4K model a
windowed tokenizer stem. Parameter names equal the official ones, so official
``.safetensors`` files load with ``load_state_dict(strict=True)``.
"""
import logging
from typing import Optional, Sequence, Tuple, Union

import torch
from mmengine.logging import print_log
from mmengine.model import BaseModule
from torch import nn
from torch.utils.checkpoint import checkpoint

from ...registry import MODELS
from ..layers import (
    LayerScale,
    PatchEmbed,
    RopePositionEmbedding,
    Sapiens2Block,
    WindowTokenizer,
    build_rms_norm,
)
from ..layers.patch_masking import (
    PatchMask,
    gather_rope,
    gather_tokens,
    ids_keep_from_mask,
    random_patch_mask,
)
from .arch_zoo import num_kv_heads_of_block, resolve_arch

OUT_TYPES = ('raw', 'cls_token', 'featmap')


def _trunc_normal(tensor: torch.Tensor) -> None:
    nn.init.trunc_normal_(tensor, std=0.02)


@MODELS.register_module()
class Sapiens2(BaseModule):
    """Sapiens2 vision transformer.

    Args:
        arch: ``'sapiens2_0.1b'``, ``'sapiens2_0.4b'``, ``'sapiens2_0.8b'``,
            ``'sapiens2_1b'``, ``'sapiens2_5b'``, or a dict with keys
            ``embed_dims``, ``num_layers``, ``num_heads``,
            ``feedforward_channels``, ``num_tokenizer_layers``.
        img_size: nominal (H, W) input (an int means square). Only sets
            ``patch_resolution``; any size divisible by the stride runs.
        patch_size: patch side in pixels.
        in_channels: input channels.
        out_indices: block indices whose output is returned (negative counts
            from the end).
        drop_rate: dropout after each attention output projection.
        window_size: tokenizer window side in patches.
        use_tokenizer: add the 4K windowed tokenizer stem (stride 16 x
            window_size).
        use_qk_norm: RMSNorm on q and k in the trunk blocks.
        qkv_bias: biases on the q/k/v projections.
        final_norm: RMSNorm ``ln1`` after the last block.
        out_type: ``'raw'`` (B, P + h*w, C), ``'cls_token'`` (B, C) or
            ``'featmap'`` (B, C, h, w).
        with_cls_token: must be True; the official weights always hold one.
        layer_scale_init_value: attention LayerScale init; 0 disables.
        frozen_stages: freeze the stem, tokens and the first N blocks (the
            final norm too when all blocks are frozen); -1 freezes nothing.
        patch_cfg: extra keyword arguments for :class:`PatchEmbed`.
        layer_cfgs: overrides for every block (dict) or per block (list).
        pos_embed_rope_base: RoPE period base.
        pos_embed_rope_min_period: with ``max_period``, log-spaced periods
            between the two instead of the base formula.
        pos_embed_rope_max_period: see ``min_period``.
        pos_embed_rope_normalize_coords: ``'separate'``, ``'max'`` or ``'min'``.
        pos_embed_rope_shift_coords: must be None (training-time coordinate
            augmentation; unused by every official config).
        pos_embed_rope_jitter_coords: must be None (as above).
        pos_embed_rope_rescale_coords: must be None (as above).
        pos_embed_rope_dtype: ``'bf16'`` (official numerics) or ``'fp32'``.
        n_storage_tokens: register tokens after the CLS token.
        with_cp: activation checkpointing of every block while training.
        init_cfg: ``dict(type='Pretrained', checkpoint=PATH)`` loads an official
            or converted checkpoint (checked, see ``init_weights``).
    """

    num_extra_tokens_cls = 1

    def __init__(self,
                 arch: Union[str, dict] = 'sapiens2_1b',
                 img_size: Union[int, Tuple[int, int]] = (1024, 768),
                 patch_size: int = 16,
                 in_channels: int = 3,
                 out_indices: Union[int, Sequence[int]] = -1,
                 drop_rate: float = 0.0,
                 window_size: int = 4,
                 use_tokenizer: bool = False,
                 use_qk_norm: bool = True,
                 qkv_bias: bool = True,
                 final_norm: bool = True,
                 out_type: str = 'raw',
                 with_cls_token: bool = True,
                 layer_scale_init_value: float = 1e-4,
                 frozen_stages: int = -1,
                 patch_cfg: Optional[dict] = None,
                 layer_cfgs: Union[dict, Sequence[dict], None] = None,
                 pos_embed_rope_base: float = 100.0,
                 pos_embed_rope_min_period: Optional[float] = None,
                 pos_embed_rope_max_period: Optional[float] = None,
                 pos_embed_rope_normalize_coords: str = 'separate',
                 pos_embed_rope_shift_coords: Optional[float] = None,
                 pos_embed_rope_jitter_coords: Optional[float] = None,
                 pos_embed_rope_rescale_coords: Optional[float] = None,
                 pos_embed_rope_dtype: str = 'bf16',
                 n_storage_tokens: int = 8,
                 with_cp: bool = False,
                 init_cfg: Optional[dict] = None):
        super().__init__(init_cfg=init_cfg)
        settings = resolve_arch(arch)
        self.arch_settings = settings
        self.embed_dims = settings['embed_dims']
        self.num_layers = settings['num_layers']
        num_heads = settings['num_heads']
        ffn_channels = settings['feedforward_channels']
        self._check_options(out_type, with_cls_token,
                            pos_embed_rope_shift_coords,
                            pos_embed_rope_jitter_coords,
                            pos_embed_rope_rescale_coords)
        self.out_type = out_type
        self.with_cls_token = with_cls_token
        self.patch_size = patch_size
        self.in_channels = in_channels
        self.use_tokenizer = use_tokenizer
        self.window_size = window_size
        self.n_storage_tokens = n_storage_tokens
        self.num_extra_tokens = 1 + n_storage_tokens
        self.frozen_stages = frozen_stages
        self.with_cp = with_cp
        img_size = (img_size, img_size) if isinstance(img_size, int) else tuple(
            img_size)
        stride = self.stride
        self.img_size = img_size
        self.patch_resolution = (img_size[0] // stride, img_size[1] // stride)

        self.cls_token = nn.Parameter(torch.zeros(1, 1, self.embed_dims))
        self.storage_tokens = nn.Parameter(
            torch.zeros(1, n_storage_tokens, self.embed_dims))
        self.patch_embed = PatchEmbed(in_channels, self.embed_dims, patch_size,
                                      **(patch_cfg or {}))
        self.rope_embed = RopePositionEmbedding(
            self.embed_dims // num_heads, base=pos_embed_rope_base,
            min_period=pos_embed_rope_min_period,
            max_period=pos_embed_rope_max_period,
            normalize_coords=pos_embed_rope_normalize_coords,
            dtype=pos_embed_rope_dtype)
        if use_tokenizer:
            self.tokenizer = WindowTokenizer(
                self.embed_dims, num_heads, ffn_channels,
                settings['num_tokenizer_layers'], window_size)

        per_layer = self._per_layer_cfgs(layer_cfgs)
        self.blocks = nn.ModuleList()
        for index in range(self.num_layers):
            cfg = dict(
                embed_dims=self.embed_dims,
                num_heads=num_heads,
                feedforward_channels=ffn_channels,
                num_kv_heads=num_kv_heads_of_block(index, self.num_layers,
                                                   num_heads),
                qkv_bias=qkv_bias,
                use_qk_norm=use_qk_norm,
                layer_scale_init_value=layer_scale_init_value,
                drop_rate=drop_rate)
            cfg.update(per_layer[index])
            self.blocks.append(Sapiens2Block(**cfg))
        self.final_norm = final_norm
        if final_norm:
            self.ln1 = build_rms_norm(self.embed_dims)
        self.out_indices = self._normalize_out_indices(out_indices)
        self._freeze_stages()

    # ------------------------------------------------------------------ set-up
    @staticmethod
    def _check_options(out_type, with_cls_token, *rope_augmentations) -> None:
        if out_type not in OUT_TYPES:
            raise ValueError(
                f'out_type must be one of {OUT_TYPES}, got {out_type!r}')
        if not with_cls_token:
            raise ValueError(
                'Sapiens2 always has a CLS token (official checkpoints hold '
                'cls_token); with_cls_token=False is not supported. Use '
                'out_type="featmap" to get patch features only.')
        if any(value is not None for value in rope_augmentations):
            raise ValueError(
                'pos_embed_rope_shift/jitter/rescale_coords are training-time '
                'RoPE augmentations that no official config uses; they are not '
                'supported. Leave them None.')

    def _per_layer_cfgs(self, layer_cfgs) -> list:
        if layer_cfgs is None or isinstance(layer_cfgs, dict):
            return [dict(layer_cfgs or {}) for _ in range(self.num_layers)]
        layer_cfgs = list(layer_cfgs)
        if len(layer_cfgs) != self.num_layers:
            raise ValueError(
                f'layer_cfgs as a list needs one dict per block '
                f'({self.num_layers}), got {len(layer_cfgs)}')
        return [dict(cfg) for cfg in layer_cfgs]

    def _normalize_out_indices(self, out_indices) -> list:
        if isinstance(out_indices, int):
            out_indices = [out_indices]
        result = []
        for index in out_indices:
            resolved = index + self.num_layers if index < 0 else index
            if not 0 <= resolved < self.num_layers:
                raise ValueError(
                    f'out_indices entry {index} is out of range for '
                    f'{self.num_layers} blocks (use -{self.num_layers}..'
                    f'{self.num_layers - 1}).')
            result.append(resolved)
        return result

    @property
    def stride(self) -> int:
        """Pixels per output token: patch size (x window size with tokenizer)."""
        return self.patch_size * (self.window_size if self.use_tokenizer else 1)

    def encoder_grid(self, height: int, width: int) -> Tuple[int, int]:
        """(h, w) token grid the blocks see for an H x W input."""
        return height // self.stride, width // self.stride

    def random_mask(self, x: torch.Tensor, mask_ratio: float,
                    generator: Optional[torch.Generator] = None) -> PatchMask:
        """Draw a per-sample random mask over the encoder grid of ``x``.

        With the tokenizer the grid is the window grid, so whole 4x4-patch
        windows are hidden (window-level masking).

        Args:
            x: (B, C, H, W) batch (only its shape and device are used).
            mask_ratio: fraction in [0, 1) of grid tokens to hide.
            generator: optional RNG.

        Returns:
            :class:`PatchMask` with K = floor(N * (1 - mask_ratio)) kept.
        """
        h, w = self.encoder_grid(*x.shape[-2:])
        return random_patch_mask(x.shape[0], h * w, mask_ratio,
                                 device=x.device, generator=generator)

    # -------------------------------------------------------- init and freeze
    def init_weights(self) -> None:
        """Official initialization, or a checked load of ``init_cfg``'s file.

        With ``init_cfg=dict(type='Pretrained', checkpoint=PATH)`` the file is
        read with :func:`sapiens2_mm.utils.read_checkpoint` (safetensors or
        pth; ``backbone.`` of a task checkpoint is selected) and every key
        must fit, else :class:`CheckpointMismatchError` lists the mismatches.
        The load is logged (mmengine's current logger): the file, the number
        of tensors loaded, and the keys of the file that were not used (the
        head of a task checkpoint). A backbone whose parameters are partly on
        the meta device (initialised one FSDP unit at a time, see
        ``sapiens2_mm/engine/strategies/meta_init.py``) maps the file and
        reads only the tensors of its materialised parameters.
        """
        if self.init_cfg and self.init_cfg.get('type') == 'Pretrained':
            from ...utils.checkpoint import (
                load_state_dict_checked,
                pretrained_load_message,
                read_checkpoint,
                select_prefix,
            )
            path = self.init_cfg['checkpoint']
            prefix = self.init_cfg.get('prefix', 'backbone.')
            partly_meta = any(p.is_meta for p in self.parameters())
            raw = read_checkpoint(path, lazy=partly_meta)
            state = select_prefix(raw, prefix)
            load_state_dict_checked(self, state, source=path)
            print_log(pretrained_load_message(path, raw, state, prefix),
                      logger='current', level=logging.INFO)
            self._is_init = True
            return
        self.reset_parameters()
        self._is_init = True

    def reset_parameters(self) -> None:
        """Trunc-normal(0.02) linears, convs and tokens; norms 1; LayerScale."""
        _trunc_normal(self.cls_token)
        _trunc_normal(self.storage_tokens)
        if self.use_tokenizer:
            _trunc_normal(self.tokenizer.local_pos_embed)
            _trunc_normal(self.tokenizer.w_cls)
        self.rope_embed.reset_parameters()
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Conv2d)):
                _trunc_normal(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.RMSNorm):
                nn.init.ones_(module.weight)
            elif isinstance(module, LayerScale):
                module.reset_parameters()

    def _frozen_modules(self) -> list:
        if self.frozen_stages <= 0:
            return []
        modules = [self.patch_embed]
        if self.use_tokenizer:
            modules.append(self.tokenizer)
        modules += list(self.blocks[:self.frozen_stages])
        if self.final_norm and self.frozen_stages >= self.num_layers:
            modules.append(self.ln1)
        return modules

    def _freeze_stages(self) -> None:
        if self.frozen_stages <= 0:
            return
        self.cls_token.requires_grad = False
        self.storage_tokens.requires_grad = False
        for module in self._frozen_modules():
            module.eval()
            for param in module.parameters():
                param.requires_grad = False

    def train(self, mode: bool = True):
        """Switch mode, keeping frozen stages in eval mode."""
        super().train(mode)
        self._freeze_stages()
        return self

    # ------------------------------------------------------------- forward
    def _check_input(self, x: torch.Tensor) -> None:
        if x.dim() != 4:
            raise ValueError(
                f'Sapiens2 expects a (B, C, H, W) batch, got shape '
                f'{tuple(x.shape)}')
        if x.shape[1] != self.in_channels:
            raise ValueError(
                f'Sapiens2 was built for {self.in_channels} input channels but '
                f'got {x.shape[1]} (shape {tuple(x.shape)}). Convert images to '
                'RGB, or set in_channels.')
        height, width = x.shape[-2:]
        if height % self.stride or width % self.stride:
            unit = ('patch_size x window_size'
                    if self.use_tokenizer else 'patch_size')
            raise ValueError(
                f'Input H x W = {height} x {width} is not divisible by '
                f'{unit} = {self.stride}. Resize or pad to a multiple of '
                f'{self.stride} (e.g. 1024 x 768).')

    def _format_output(self, x: torch.Tensor,
                       grid: Tuple[int, int]) -> torch.Tensor:
        if self.out_type == 'raw':
            return x
        if self.out_type == 'cls_token':
            return x[:, 0]
        patches = x[:, self.num_extra_tokens:]
        # The official permuted view (channels-last strides), not a
        # .contiguous() copy: the CPU picks its float32 convolution kernels by
        # memory layout, so only this layout gives the heads' official values
        # bit for bit.
        return patches.reshape(x.shape[0], grid[0], grid[1],
                               -1).permute(0, 3, 1, 2)

    def _check_ids_keep(self, ids_keep: torch.Tensor, batch: int,
                        num_patches: int) -> None:
        if (ids_keep.dim() != 2 or ids_keep.shape[0] != batch
                or ids_keep.dtype != torch.long):
            raise ValueError(
                f'ids_keep must be a (B={batch}, K) long tensor of grid '
                f'indices, got {tuple(ids_keep.shape)} {ids_keep.dtype}')
        if ids_keep.numel() and (ids_keep.min() < 0
                                 or ids_keep.max() >= num_patches):
            raise ValueError(
                f'ids_keep holds indices outside [0, {num_patches}) of the '
                f'{num_patches}-token grid.')

    def prepare_tokens(
        self,
        x: torch.Tensor,
        mask: Optional[torch.Tensor] = None,
        ids_keep: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor], Tuple[int,
                                                                     int]]:
        """Embed patches, drop masked ones, prepend CLS + storage tokens.

        Args:
            x: (B, in_channels, H, W) normalized images.
            mask: optional (B, N) bool over the encoder grid, True = hidden;
                every row hides the same number of patches.
            ids_keep: optional (B, K) long grid indices (row-major) of the
                tokens to encode, in this order; overrides ``mask``. The grid
                is the patch grid, or with the tokenizer the window grid
                (window-level masking: hidden windows are never tokenized).

        Returns:
            tokens (B, 9 + K, C) (K = N unmasked), RoPE (sin, cos) tables
            ((N, D) unmasked, else (B, 1, K, D) rows of the full-grid table at
            the kept positions) and the encoder grid (h, w).
        """
        self._check_input(x)
        if ids_keep is None and mask is not None:
            ids_keep = ids_keep_from_mask(mask)
        tokens, grid = self.patch_embed(x)
        if self.use_tokenizer:
            if ids_keep is not None:
                gh, gw = (grid[0] // self.window_size,
                          grid[1] // self.window_size)
                self._check_ids_keep(ids_keep, tokens.shape[0], gh * gw)
            tokens, grid = self.tokenizer(tokens, grid, ids_keep=ids_keep)
        elif ids_keep is not None:
            self._check_ids_keep(ids_keep, tokens.shape[0],
                                 grid[0] * grid[1])
            tokens = gather_tokens(tokens, ids_keep)
        batch = tokens.shape[0]
        x = torch.cat((self.cls_token.expand(batch, -1, -1),
                       self.storage_tokens.expand(batch, -1, -1), tokens),
                      dim=1)
        rope = self.rope_embed(*grid)
        if ids_keep is not None:
            rope = gather_rope(rope, ids_keep)
        return x, rope, grid

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None,
                ids_keep: Optional[torch.Tensor] = None
                ) -> Tuple[torch.Tensor, ...]:
        """Extract features, optionally of the visible patches only.

        Args:
            x: (B, in_channels, H, W) normalized images, H and W divisible by
                ``stride``.
            mask: optional (B, N) bool, True = patch hidden from the encoder
                (see :meth:`prepare_tokens`).
            ids_keep: optional (B, K) long kept grid indices (overrides mask).

        Returns:
            One tensor per ``out_indices`` entry, shaped by ``out_type``:
            raw (B, 9 + h*w, C), cls_token (B, C) or featmap (B, C, h, w) with
            (h, w) = (H, W) / stride. Masked: raw is (B, 9 + K, C) with the
            kept tokens in ``ids_keep`` order; featmap is refused.
        """
        if (mask is not None or ids_keep is not None) and (self.out_type
                                                           == 'featmap'):
            raise ValueError(
                'out_type="featmap" needs every patch; a masked forward keeps '
                'only some. Use out_type="raw" (B, 9 + K, C) or "cls_token".')
        x, rope, grid = self.prepare_tokens(x, mask=mask, ids_keep=ids_keep)
        outs = []
        for index, block in enumerate(self.blocks):
            if self.with_cp and self.training and torch.is_grad_enabled():
                x = checkpoint(block, x, rope, use_reentrant=False)
            else:
                x = block(x, rope)
            if index == self.num_layers - 1 and self.final_norm:
                x = self.ln1(x)
            if index in self.out_indices:
                outs.append(self._format_output(x, grid))
        return tuple(outs)
