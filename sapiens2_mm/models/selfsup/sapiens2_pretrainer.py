"""Sapiens2 pretraining: masked pixel reconstruction + DINO self-distillation.

``L = w_mae * L_mae + w_dino * L_dino + w_koleo * L_koleo`` for a batch of
multi-view crops (2 global + n_l local):

* the student encodes each global crop with a random ``mask_ratio`` of its
  patches dropped (only visible tokens, plus CLS and 8 storage tokens, enter
  the encoder); the pixel decoder restores the grid and ``L_mae`` is the MSE
  on the hidden patches;
* the student's CLS tokens (masked global crops, unmasked local crops) go
  through the DINO head; the EMA teacher sees the unmasked global crops, and
  ``L_dino`` is the cross-entropy over cross-view pairs against the teacher's
  Sinkhorn-Knopp (or centred) distributions;
* ``L_koleo`` spreads the student's global CLS features within the batch.
"""
from typing import Dict, List, Optional, Union

import torch
from mmpretrain.models.selfsup import BaseSelfSupervisor
from torch import nn

from ...registry import MODELS
from ..heads.selfsup.koleo_loss import koleo_loss
from ..layers import check_mask_ratio
from .teacher_ema import TeacherEMA


def _build(cfg: Union[dict, nn.Module, None]) -> Optional[nn.Module]:
    if cfg is None or isinstance(cfg, nn.Module):
        return cfg
    return MODELS.build(cfg)


@MODELS.register_module()
class Sapiens2Pretrainer(BaseSelfSupervisor):
    """Student/teacher masked pretraining of a Sapiens2 backbone.

    Args:
        backbone: Sapiens2 config; ``out_type`` is forced to ``'raw'`` and
            ``out_indices`` to the last block.
        neck: pixel decoder (:class:`RectMAEDecoder`).
        head: reconstruction head (:class:`RectMAEHead`).
        dino_head: CLS projection head (:class:`DINOHead`).
        dino_loss: :class:`DINOClsLoss` config.
        mask_ratio: fraction in [0, 1) of each global crop's patches dropped
            from the student encoder (0.75 by default, MAE's ratio).
        teacher_momentum: initial DINO-convention EMA momentum (scheduled by
            :class:`PretrainScheduleHook`).
        mae_loss_weight: weight of the reconstruction loss (0 skips decoder).
        dino_loss_weight: weight of the CLS distillation loss.
        koleo_loss_weight: weight of KoLeo on the student global CLS (0 off).
        num_global_crops: leading views that are global crops (2).
        data_preprocessor: defaults to ``mmpretrain.SelfSupDataPreprocessor``.
        init_cfg: mmengine init config.
    """

    def __init__(self,
                 backbone: dict,
                 neck: dict,
                 head: dict,
                 dino_head: dict,
                 dino_loss: dict,
                 mask_ratio: float = 0.75,
                 teacher_momentum: float = 0.992,
                 mae_loss_weight: float = 1.0,
                 dino_loss_weight: float = 1.0,
                 koleo_loss_weight: float = 0.1,
                 num_global_crops: int = 2,
                 data_preprocessor: Optional[Union[dict, nn.Module]] = None,
                 init_cfg: Optional[dict] = None):
        if isinstance(backbone, dict):
            backbone = dict(backbone, out_type='raw', out_indices=-1)
        if isinstance(data_preprocessor, dict) or data_preprocessor is None:
            data_preprocessor = dict(
                data_preprocessor or {},
                type=(data_preprocessor or {}).get(
                    'type', 'mmpretrain.SelfSupDataPreprocessor'))
        super().__init__(
            backbone=_build(backbone), neck=_build(neck), head=_build(head),
            data_preprocessor=_build(data_preprocessor), init_cfg=init_cfg)
        self.dino_head = _build(dino_head)
        self.dino_loss = _build(dino_loss)
        self.mask_ratio = check_mask_ratio(mask_ratio)
        if num_global_crops < 1:
            raise ValueError(
                f'num_global_crops must be >= 1, got {num_global_crops}')
        self.num_global_crops = num_global_crops
        self.mae_loss_weight = mae_loss_weight
        self.dino_loss_weight = dino_loss_weight
        self.koleo_loss_weight = koleo_loss_weight
        self.teacher = TeacherEMA(self.student_parts(), teacher_momentum)

    def student_parts(self) -> nn.ModuleDict:
        """The modules the teacher averages: backbone and DINO head."""
        return nn.ModuleDict(
            dict(backbone=self.backbone, dino_head=self.dino_head))

    def fsdp_twin_units(self) -> List[nn.Module]:
        """Modules FSDP wraps as units of their own: the teacher's modules
        and the student modules they average, so that each teacher unit's
        local shard lines up with its student twin's (see
        ``sapiens2_mm/engine/strategies/fsdp_twins.py``)."""
        return [*self.student_parts().values(),
                *self.teacher.module.values()]

    def init_weights(self) -> None:
        """Initialize the student, then restart the teacher from it.

        Resetting ``teacher.steps`` makes the first EMA update a plain copy of
        the initialized (or ``init_cfg``-loaded) student.
        """
        super().init_weights()
        self.teacher.steps.zero_()
        self.teacher.update_parameters(self.student_parts())

    def extract_feat(self, inputs: torch.Tensor):
        """Student backbone features (raw tokens) of a (B, 3, H, W) batch."""
        return self.backbone(inputs)

    def _split_views(self, inputs: Union[torch.Tensor, List[torch.Tensor]]):
        if isinstance(inputs, torch.Tensor):
            inputs = [inputs]
        views = list(inputs)
        if len(views) < self.num_global_crops:
            raise ValueError(
                f'Expected >= {self.num_global_crops} views (global crops '
                f'first), got {len(views)}. Use the MultiView pipeline of '
                'configs/pretrain/.')
        shapes = {tuple(v.shape) for v in views[:self.num_global_crops]}
        if len(shapes) != 1:
            raise ValueError(f'Global crops differ in shape: {sorted(shapes)}')
        return views[:self.num_global_crops], views[self.num_global_crops:]

    def loss(self, inputs: Union[torch.Tensor, List[torch.Tensor]],
             data_samples: Optional[list] = None,
             **kwargs) -> Dict[str, torch.Tensor]:
        """Losses of one multi-view batch.

        Args:
            inputs: list of views, each (B, 3, H_v, W_v): ``num_global_crops``
                global crops of one size, then local crops (one size).
            data_samples: unused.

        Returns:
            ``loss_mae``, ``loss_dino``, ``loss_koleo`` (when weighted), and
            two collapse monitors (logged, not optimised) of the teacher
            softmax at the current temperature: ``teacher_entropy``, the
            entropy (nats) of the batch-mean distribution (falls to 0 when
            every image picks the same prototype), and
            ``teacher_sample_entropy``, the mean per-image entropy (rises to
            log K when the teacher outputs a uniform distribution).
        """
        global_views, local_views = self._split_views(inputs)
        n_global = len(global_views)
        batch = global_views[0].shape[0]
        self.teacher.update_parameters(self.student_parts())
        globals_ = torch.cat(global_views)

        teacher = self.teacher.module
        with torch.no_grad():
            t_cls = teacher.backbone(globals_)[0][:, 0]
            t_logits = teacher.dino_head(t_cls)
            t_probs = torch.softmax(
                t_logits.float() / self.dino_loss.teacher_temp, dim=-1)
            mean_probs = t_probs.mean(dim=0)
            entropy = -(mean_probs * mean_probs.clamp_min(1e-12).log()).sum()
            sample_entropy = -(t_probs * t_probs.clamp_min(1e-12).log()).sum(
                dim=-1).mean()
            targets = self.dino_loss.teacher_targets(t_logits).chunk(n_global)

        losses: Dict[str, torch.Tensor] = {}
        grid = self.backbone.encoder_grid(*globals_.shape[-2:])
        if self.mae_loss_weight > 0 and self.mask_ratio > 0:
            mask = self.backbone.random_mask(globals_, self.mask_ratio)
            s_tokens = self.backbone(globals_, ids_keep=mask.ids_keep)[0]
            pred = self.neck(s_tokens, mask.ids_restore, grid)
            losses['loss_mae'] = self.mae_loss_weight * self.head.loss(
                pred, globals_, mask.mask)
        else:
            s_tokens = self.backbone(globals_)[0]
        s_cls_global = s_tokens[:, 0]
        student_logits = list(self.dino_head(s_cls_global).chunk(n_global))
        if local_views:
            locals_ = torch.cat(local_views)
            s_cls_local = self.backbone(locals_)[0][:, 0]
            student_logits += list(
                self.dino_head(s_cls_local).split(batch))
        losses['loss_dino'] = self.dino_loss_weight * self.dino_loss(
            student_logits, targets, n_global)
        if self.koleo_loss_weight > 0:
            losses['loss_koleo'] = self.koleo_loss_weight * sum(
                koleo_loss(chunk) for chunk in s_cls_global.chunk(n_global))
        losses['teacher_entropy'] = entropy
        losses['teacher_sample_entropy'] = sample_entropy
        return losses

    def forward(self, inputs, data_samples=None, mode: str = 'tensor',
                **kwargs):
        """mmpretrain's modes ('tensor', 'loss'), plus ``'reconstruct'``:
        :meth:`reconstruct` of ``inputs`` (``kwargs``: ``mask_ratio``,
        ``generator``). Called through the model wrapper, so that under FSDP
        the units gather their parameters and inputs get the compute dtype
        (calling ``reconstruct`` on the unwrapped model there reads sharded
        parameters)."""
        if mode == 'reconstruct':
            return self.reconstruct(inputs, **kwargs)
        return super().forward(inputs, data_samples, mode)

    def reconstruct(self, images: torch.Tensor,
                    mask_ratio: Optional[float] = None,
                    generator: Optional[torch.Generator] = None
                    ) -> Dict[str, torch.Tensor]:
        """Student reconstruction of a (B, 3, H, W) normalized batch.

        Returns:
            ``pred`` (B, N, p*p*3) in target space and ``mask`` (B, N) bool.
        """
        ratio = self.mask_ratio if mask_ratio is None else check_mask_ratio(
            mask_ratio)
        mask = self.backbone.random_mask(images, ratio, generator=generator)
        tokens = self.backbone(images, ids_keep=mask.ids_keep)[0]
        grid = self.backbone.encoder_grid(*images.shape[-2:])
        return dict(pred=self.neck(tokens, mask.ids_restore, grid),
                    mask=mask.mask)
