"""Pose losses.

The official pose loss is exactly mmpose's ``KeypointMSELoss(use_target_weight=
True, loss_weight=10)`` (``10 * mean((pred - gt)^2 * w)`` over all B*K*H*W
elements), and the optional OHKM variant is mmpose's ``KeypointOHKMMSELoss``;
both are reused as ``mmpose.KeypointMSELoss`` / ``mmpose.KeypointOHKMMSELoss``
(tests/test_models/test_losses/test_pose_losses.py checks them against the
official loss values), so nothing is reimplemented here.
"""
