"""Per-image albedo error terms: masked SSIM, gradient L1, si-MSE, LMSE."""
from typing import Tuple

import torch
import torch.nn.functional as F


def gaussian_window(size: int = 11, sigma: float = 1.5,
                    dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Normalized (size, size) Gaussian window."""
    ax = torch.arange(size, dtype=dtype) - (size - 1) / 2.0
    yy, xx = torch.meshgrid(ax, ax, indexing='ij')
    window = torch.exp(-(xx * xx + yy * yy) / (2 * sigma * sigma))
    return window / window.sum()


def masked_ssim_sum(pred: torch.Tensor, gt: torch.Tensor, mask: torch.Tensor,
                    data_range: float) -> Tuple[float, float]:
    """Sum and count of the masked SSIM map (official ``AlbedoEvaluator``).

    Local statistics are mask-normalized, ``conv(x m) / max(conv(m), 1e-8)``
    with an 11x11 Gaussian (sigma 1.5, zero padding); C1 = (0.01 R)^2,
    C2 = (0.03 R)^2; the SSIM map is averaged over channels and summed over
    the windows where ``conv(m) > 0.5``.

    Args:
        pred: (C, H, W) float32 prediction.
        gt: (C, H, W) float32 GT.
        mask: (H, W) bool valid pixels.
        data_range: R.

    Returns:
        ``(sum of SSIM over counted windows, number of counted windows)``.
    """
    eps = 1e-8
    c1, c2 = (0.01 * data_range)**2, (0.03 * data_range)**2
    x, y = pred[None], gt[None]
    m = mask[None, None].to(x.dtype)
    channels = x.shape[1]
    window = gaussian_window(dtype=x.dtype).to(x.device)[None, None]
    grouped = window.repeat(channels, 1, 1, 1)

    def conv(z: torch.Tensor) -> torch.Tensor:
        return F.conv2d(z, grouped, padding=5, groups=channels)

    m_conv = F.conv2d(m, window, padding=5).clamp_min(eps)
    mu_x, mu_y = conv(x * m) / m_conv, conv(y * m) / m_conv
    var_x = conv(x * x * m) / m_conv - mu_x * mu_x
    var_y = conv(y * y * m) / m_conv - mu_y * mu_y
    cov = conv(x * y * m) / m_conv - mu_x * mu_y
    num = (2 * mu_x * mu_y + c1) * (2 * cov + c2)
    den = (mu_x * mu_x + mu_y * mu_y + c1) * (var_x + var_y + c2)
    ssim = (num / (den + eps)).mean(dim=1)[0]
    counted = m_conv[0, 0] > 0.5
    return float(ssim[counted].double().sum()), float(counted.sum())


def gradient_l1_sum(pred: torch.Tensor, gt: torch.Tensor,
                    mask: torch.Tensor) -> Tuple[float, float]:
    """Sum and count of forward-difference gradient L1 errors.

    For horizontal and vertical neighbour pairs whose two pixels are valid:
    the channel mean of ``|d pred - d gt|``.

    Returns:
        ``(sum over counted pairs, number of pairs)``.
    """
    total, count = 0.0, 0.0
    for dim in (2, 1):  # x (columns), then y (rows)
        length = pred.shape[dim] - 1
        d_pred = pred.narrow(dim, 1, length) - pred.narrow(dim, 0, length)
        d_gt = gt.narrow(dim, 1, length) - gt.narrow(dim, 0, length)
        pair = mask.narrow(dim - 1, 1, length) & mask.narrow(dim - 1, 0, length)
        err = (d_pred - d_gt).abs().mean(dim=0)
        total += float(err[pair].double().sum())
        count += float(pair.sum())
    return total, count


def _best_scale(pred: torch.Tensor, gt: torch.Tensor, m: torch.Tensor,
                dims) -> torch.Tensor:
    """Least-squares k minimising sum m (k pred - gt)^2 (0 if pred is 0)."""
    den = (m * pred * pred).sum(dim=dims, keepdim=True)
    num = (m * pred * gt).sum(dim=dims, keepdim=True)
    return torch.where(den > 0, num / den.clamp_min(1e-300),
                       torch.zeros_like(den))


def scale_invariant_mse(pred: torch.Tensor, gt: torch.Tensor,
                        mask: torch.Tensor) -> float:
    """si-MSE: MSE after the least-squares scale of each channel.

    ``mean over valid pixels and channels of (k_c pred_c - gt_c)^2`` with
    ``k_c = argmin_k sum (k pred_c - gt_c)^2`` (one scale per channel, so
    a global or per-channel gain of the prediction costs nothing).

    Args:
        pred, gt: (C, H, W); mask: (H, W) bool with at least one pixel.
    """
    x, y = pred.double(), gt.double()
    m = mask.to(x.dtype)[None]
    k = _best_scale(x, y, m, dims=(1, 2))
    err = (m * (k * x - y)**2).sum()
    return float(err / (m.sum() * x.shape[0]))


def local_mse(pred: torch.Tensor, gt: torch.Tensor, mask: torch.Tensor,
              window: int = 20, stride: int = 10) -> float:
    """LMSE (Grosse et al. 2009): local si-MSE, normalized.

    Windows of ``window`` x ``window`` pixels every ``stride`` pixels (from
    the top-left corner; windows that do not fit are not used; an image
    smaller than the window is one window). Per window and channel the
    prediction gets its own least-squares scale; the score is
    ``sum_w,c sum m (k pred - gt)^2 / sum_w,c sum m gt^2`` (0 = perfect,
    1 = as bad as predicting 0).

    Args:
        pred, gt: (C, H, W); mask: (H, W) bool.
    """
    x, y = pred.double()[None], gt.double()[None]
    m = mask.to(x.dtype)[None, None]
    kh, kw = min(window, x.shape[2]), min(window, x.shape[3])
    kernel = (kh, kw)

    def window_sum(z: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(z, kernel, stride=stride) * (kh * kw)

    sxx = window_sum(m * x * x)
    sxy = window_sum(m * x * y)
    syy = window_sum(m * y * y)
    k = torch.where(sxx > 0, sxy / sxx.clamp_min(1e-300),
                    torch.zeros_like(sxx))
    err = (syy - 2 * k * sxy + k * k * sxx).clamp_min(0).sum()
    total = syy.sum()
    return float(err / total) if total > 0 else 0.0
