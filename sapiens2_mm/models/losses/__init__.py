"""Training losses where the upstream ones compute a different number.

Pose: the official loss is exactly mmpose's ``KeypointMSELoss(use_target_weight=
True, loss_weight=10)`` (``10 * mean((pred - gt)^2 * w)`` over all B*K*H*W
elements) and the optional OHKM variant is mmpose's ``KeypointOHKMMSELoss``;
configs use them as ``mmpose.KeypointMSELoss`` / ``mmpose.KeypointOHKMMSELoss``
(tests/test_models/test_losses/test_pose_losses.py checks them against the
official values). Seg: class-weighted CE is ``mmseg.CrossEntropyLoss`` with
``reduction='none'``; the Dice loss is our own (``seg/``). Dense tasks
(``normal/``, ``pointmap/``, ``albedo/``, ``MaskedL1Loss``): the official terms,
one module each; upstream L1/SiLog losses differ in masking and normalization.
"""
from .albedo import *  # noqa: F401,F403
from .masked_l1 import MaskedL1Loss  # noqa: F401
from .normal import *  # noqa: F401,F403
from .pointmap import *  # noqa: F401,F403
from .seg import *  # noqa: F401,F403
