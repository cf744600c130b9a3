"""Base of the Sapiens2 dense heads: decoder, loss plumbing, post-processing."""
import copy
from abc import ABCMeta, abstractmethod
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from mmengine.logging import print_log
from mmengine.model import BaseModule
from torch import Tensor, nn

from ....registry import MODELS
from ....structures import DenseField, dense_field
from ...layers.conv_stacks import build_conv_stack
from .letterbox import unflip
from .pixel_shuffle_decoder import (
    build_input_conv,
    build_norm2d,
    build_upsample_blocks,
)

# The official init of every dense head: Conv2d kaiming-normal (fan_out, relu),
# Linear kaiming-normal (fan_in, linear), all biases 0.
DENSE_HEAD_INIT = [
    dict(type='Kaiming', layer='Conv2d', mode='fan_out', nonlinearity='relu',
         distribution='normal', bias=0),
    dict(type='Kaiming', layer='Linear', mode='fan_in', nonlinearity='linear',
         distribution='normal', bias=0),
]

HeadOutputs = Union[Tensor, Tuple[Tensor, Tensor]]


def check_option(name: str, value, choices: Sequence):
    """``value`` if it is one of ``choices``, else a ValueError naming both."""
    if value not in choices:
        raise ValueError(f'{name} must be one of {tuple(choices)}, got '
                         f'{value!r}.')
    return value


def stack_pixel_field(data_samples: Sequence, name: str,
                      owner: str) -> Tensor:
    """Stack the ``name`` PixelData of each sample into (B, C, H, W).

    Raises:
        KeyError: a sample lacks the field (the pipeline did not pack it).
    """
    maps = []
    for index, sample in enumerate(data_samples):
        if name not in sample:
            raise KeyError(
                f'{owner}: data sample {index} '
                f'({sample.metainfo.get("img_path", "no img_path")}) has no '
                f'{name!r}; the training pipeline must pack it (see '
                'DenseDataSample).')
        data = getattr(sample, name).data
        maps.append(torch.as_tensor(data))
    return torch.stack(maps)


def stack_metainfo(data_samples: Sequence, key: str, owner: str,
                   device: torch.device) -> Tensor:
    """Stack one metainfo entry per sample as float32 tensors on ``device``.

    Raises:
        KeyError: a sample lacks the entry.
    """
    values = []
    for index, sample in enumerate(data_samples):
        if key not in sample.metainfo:
            raise KeyError(
                f'{owner}: data sample {index} '
                f'({sample.metainfo.get("img_path", "no img_path")}) has no '
                f'metainfo {key!r}; the training pipeline must set it (see '
                'DenseDataSample).')
        values.append(torch.as_tensor(sample.metainfo[key],
                                      dtype=torch.float32))
    return torch.stack(values).to(device)


class DenseHeadBase(BaseModule, metaclass=ABCMeta):
    """Pixel-shuffle decoder to a C-channel map plus the dense loss plumbing.

    Subclasses set the class attributes ``output_conv_name`` (official name of
    the final 1x1 conv), ``norm`` (``'instance'`` / ``'rms'``) and
    ``target_field`` (the DenseDataSample GT field ``gt_<name>`` of a map
    declared in :mod:`sapiens2_mm.structures.dense_outputs`, whose
    ``channels`` and ``flip`` rule the head follows), and implement
    :meth:`postprocess_sample`.

    Args:
        in_channels: backbone channels C.
        upsample_channels: output channels of each x2 pixel-shuffle stage.
        conv_out_channels: channels of the convs after the upsampling.
        conv_kernel_sizes: their (odd) kernels.
        loss_decode: one loss config or a list; each built module is called
            ``loss(pred, target, valid_mask, **context)`` and its value stored
            under its ``loss_name`` (equal names are added).
        in_index: which backbone output to decode when given a tuple.
        init_cfg: the official init by default.

    Shapes:
        input: (B, C, h, w) or a tuple of them; output (B, C_out, h * 2^n,
        w * 2^n) for n upsampling stages, C_out the declared channels.
    """

    output_conv_name = 'conv_out'
    norm = 'instance'
    target_field = ''
    #: post-processing options of the task: attribute -> allowed values
    #: (the first is the official demo's); see :meth:`set_postprocess`.
    postprocess_options: Dict[str, Sequence] = {}

    def __init__(self,
                 in_channels: int,
                 upsample_channels: Sequence[int] = (768, 512, 256, 128),
                 conv_out_channels: Sequence[int] = (64, 32, 16),
                 conv_kernel_sizes: Sequence[int] = (3, 3, 3),
                 loss_decode: Union[dict, Sequence[dict], None] = None,
                 in_index: int = -1,
                 init_cfg: Optional[Union[dict, list]] = None):
        super().__init__(copy.deepcopy(
            DENSE_HEAD_INIT if init_cfg is None else init_cfg))
        self.in_channels = in_channels
        self.in_index = in_index
        channels = self.declared_map().channels
        # mmseg's EncoderDecoder reads these three attributes of its head.
        self.align_corners = False
        self.num_classes = channels
        self.out_channels = channels
        self.input_conv = build_input_conv(in_channels, self.norm)
        self.upsample_blocks = build_upsample_blocks(
            in_channels, upsample_channels, self.norm)
        mid = upsample_channels[-1] if upsample_channels else in_channels
        self.conv_layers = build_conv_stack(
            mid, conv_out_channels, conv_kernel_sizes,
            make_norm=lambda channels: build_norm2d(self.norm, channels))
        last = conv_out_channels[-1] if conv_out_channels else mid
        setattr(self, self.output_conv_name,
                nn.Conv2d(last, channels, kernel_size=1))
        if loss_decode is None:
            loss_decode = []
        if isinstance(loss_decode, dict):
            loss_decode = [loss_decode]
        self.loss_decode = nn.ModuleList(
            [MODELS.build(copy.deepcopy(cfg)) for cfg in loss_decode])
        self._warned_resize = False

    @classmethod
    def declared_map(cls) -> DenseField:
        """The declared map of ``target_field``.

        Raises:
            ValueError: ``target_field`` names no declared map.
        """
        field = dense_field(cls.target_field)
        if field is None:
            raise ValueError(
                f'{cls.__name__}.target_field = {cls.target_field!r} is no '
                'declared dense map; declare it with sapiens2_mm.structures.'
                'declare_dense_task.')
        return field

    @property
    def negate_x_on_flip(self) -> bool:
        """Whether a mirror negates channel 0 (the map's flip rule)."""
        return self.declared_map().flip == 'negate_x'

    # ------------------------------------------------------------- forward
    def _transform_inputs(self, inputs: Union[Tensor, Sequence[Tensor]]
                          ) -> Tensor:
        if isinstance(inputs, Tensor):
            return inputs
        return inputs[self.in_index]

    def decode(self, feat: Tensor) -> Tensor:
        """(B, C, h, w) backbone feature -> (B, C_out, h * 2^n, w * 2^n)."""
        x = self.input_conv(feat)
        x = self.upsample_blocks(x)
        x = self.conv_layers(x)
        return getattr(self, self.output_conv_name)(x)

    def forward(self, inputs: Union[Tensor, Sequence[Tensor]]) -> HeadOutputs:
        """Official output: the raw (B, C_out, H, W) map (no activation)."""
        return self.decode(self._transform_inputs(inputs))

    def predict(self, inputs, batch_img_metas=None, test_cfg=None
                ) -> HeadOutputs:
        """Raw outputs (mmseg's ``encode_decode`` calls heads this way)."""
        return self.forward(inputs)

    # ---------------------------------------------------------------- loss
    def split_outputs(self, outputs: HeadOutputs
                      ) -> Tuple[Tensor, Dict[str, Tensor]]:
        """The dense map and the loss context taken from the outputs."""
        return outputs, {}

    def loss_context(self, data_samples: Sequence,
                     device: torch.device) -> Dict[str, Tensor]:
        """Task context of the losses from the data samples (none here)."""
        return {}

    def loss(self, inputs, batch_data_samples: Sequence,
             train_cfg: Optional[dict] = None) -> Dict[str, Tensor]:
        """Forward and :meth:`loss_by_feat` (mmseg's decode-head call)."""
        return self.loss_by_feat(self.forward(inputs), batch_data_samples)

    def loss_by_feat(self, outputs: HeadOutputs,
                     batch_data_samples: Sequence) -> Dict[str, Tensor]:
        """Named loss values of the head outputs against the samples' GT.

        Args:
            outputs: what :meth:`forward` returned.
            batch_data_samples: DenseDataSamples with ``target_field`` and
                ``gt_mask`` (and the task metainfo).

        Returns:
            ``{loss_name: scalar}`` in the order of ``loss_decode``.
        """
        owner = type(self).__name__
        pred, extra = self.split_outputs(outputs)
        target = stack_pixel_field(batch_data_samples, self.target_field,
                                   owner).to(pred.device)
        mask = stack_pixel_field(batch_data_samples, 'gt_mask',
                                 owner).to(pred.device)
        if pred.shape[2:] != target.shape[2:]:
            if not self._warned_resize:
                print_log(
                    f'{owner}: prediction {tuple(pred.shape[2:])} resized to '
                    f'the target size {tuple(target.shape[2:])} for the loss '
                    '(official behavior; training inputs should match).',
                    logger='current', level=30)
                self._warned_resize = True
            pred = F.interpolate(pred, size=target.shape[2:], mode='bilinear',
                                 align_corners=False)
        context = self.loss_context(batch_data_samples, pred.device)
        context.update(extra)
        losses: Dict[str, Tensor] = {}
        for loss_module in self.loss_decode:
            value = loss_module(pred, target, mask, **context)
            name = loss_module.loss_name
            losses[name] = losses[name] + value if name in losses else value
        return losses

    # ------------------------------------------------------ test-time flip
    def merge_flipped(self, outputs: HeadOutputs,
                      flipped: HeadOutputs) -> HeadOutputs:
        """Average the outputs of an image and of its horizontal mirror.

        The mirror's map is flipped back (and its x component negated for
        camera-frame vectors: the map's declared flip rule) before
        averaging.
        """
        return (outputs + unflip(flipped, 'horizontal',
                                 self.negate_x_on_flip)) / 2

    # ----------------------------------------------------- post-processing
    def set_postprocess(self, **options) -> None:
        """Change post-processing options after construction (the
        inferencers' and ``tools/infer.py``'s per-task options).

        Raises:
            ValueError: an option this head does not have, or a value not
                allowed (both named).
        """
        for name, value in options.items():
            if name not in self.postprocess_options:
                raise ValueError(
                    f'{type(self).__name__} has no post-processing option '
                    f'{name!r}; it has {sorted(self.postprocess_options)}.')
            setattr(self, name, check_option(
                name, value, self.postprocess_options[name]))

    @abstractmethod
    def postprocess_sample(self, outputs: HeadOutputs, index: int,
                           meta: dict) -> Tuple[Dict[str, Tensor], dict]:
        """Prediction fields and metainfo of sample ``index``; per task."""

    def postprocess(self, outputs: HeadOutputs, batch_img_metas: List[dict]
                    ) -> List[Tuple[Dict[str, Tensor], dict]]:
        """:meth:`postprocess_sample` for every sample of the batch."""
        return [self.postprocess_sample(outputs, i, meta)
                for i, meta in enumerate(batch_img_metas)]
