"""Sapiens2UDPHeatmap against mmpose's UDPHeatmap and analytic round trips."""
import numpy as np
import pytest
import torch
from mmpose.codecs import UDPHeatmap
from mmpose.registry import KEYPOINT_CODECS

from sapiens2_mm.codecs import Sapiens2UDPHeatmap

INPUT, HEATMAP = (768, 1024), (192, 256)  # official (w, h)


def _codec(mapping='official'):
    return Sapiens2UDPHeatmap(INPUT, HEATMAP, sigma=6, blur_kernel_size=11,
                              decode_mapping=mapping)


def _random_keypoints(rng, num):
    # Interior points: the Gaussian (radius 3 sigma = 18) and the DARK blur
    # (radius 5) stay on the 192x256 grid (>= 24 heatmap px = 96 input px).
    return rng.uniform([100, 100], [INPUT[0] - 101, INPUT[1] - 101],
                       size=(1, num, 2)).astype(np.float32)


def test_registered_in_mmpose_codec_registry():
    codec = KEYPOINT_CODECS.build(
        dict(type='Sapiens2UDPHeatmap', input_size=INPUT, heatmap_size=HEATMAP,
             sigma=6))
    assert isinstance(codec, Sapiens2UDPHeatmap)
    assert codec.decode_mapping == 'official'


def test_encode_is_mmpose_udp():
    rng = np.random.default_rng(0)
    kps = _random_keypoints(rng, 20)
    vis = (rng.uniform(size=(1, 20)) > 0.2).astype(np.float32)
    ours = _codec().encode(kps, vis)
    ref = UDPHeatmap(INPUT, HEATMAP, sigma=6).encode(kps, vis)
    np.testing.assert_array_equal(ours['heatmaps'], ref['heatmaps'])
    np.testing.assert_array_equal(ours['keypoint_weights'],
                                  ref['keypoint_weights'])


def test_official_mapping_roundtrip_is_off_by_up_to_one_pixel():
    """The documented quirk: encode /((in-1)/(hm-1)), decode *in/(hm-1)."""
    rng = np.random.default_rng(1)
    kps = _random_keypoints(rng, 200)
    codec = _codec('official')
    decoded, _ = codec.decode(codec.encode(kps)['heatmaps'])
    err = decoded[0] - kps[0]
    # analytic bias: kp * (in / (in - 1) - 1) = kp / (in - 1)
    expected = kps[0] / (np.array(INPUT, dtype=np.float32) - 1)
    np.testing.assert_allclose(err, expected, atol=0.05)
    assert np.abs(err).max() < 1.01 and np.abs(err).max() > 0.8


def test_consistent_mapping_roundtrip_below_005_px():
    rng = np.random.default_rng(2)
    kps = _random_keypoints(rng, 200)
    codec = _codec('consistent')
    decoded, scores = codec.decode(codec.encode(kps)['heatmaps'])
    assert np.abs(decoded[0] - kps[0]).max() < 0.05
    np.testing.assert_allclose(scores, 1.0, atol=0.02)


@pytest.mark.parametrize('mapping', ['official', 'consistent'])
def test_batch_decode_equals_mmpose_decode(mapping):
    """Batched torch decode == mmpose's per-person numpy decode (1e-3 px)."""
    rng = np.random.default_rng(3)
    codec = _codec(mapping)
    batch = []
    for _ in range(2):
        kps = _random_keypoints(rng, 40)
        # some keypoints near the border and some absent (noise only)
        kps[0, :4] = [[0, 0], [INPUT[0] - 1, 5], [3, INPUT[1] - 1], [400, 1]]
        vis = np.ones((1, 40), np.float32)
        vis[0, -5:] = 0
        hm = codec.encode(kps, vis)['heatmaps'] * rng.uniform(
            0.3, 1.0, size=(40, 1, 1)).astype(np.float32)
        hm += rng.normal(0, 0.01, size=hm.shape).astype(np.float32)
        batch.append(hm)
    batch = np.stack(batch)
    keypoints, scores = codec.batch_decode(torch.from_numpy(batch))
    for hm, kp, sc in zip(batch, keypoints, scores):
        ref_kp, ref_sc = codec.reference_decode(hm.copy())
        np.testing.assert_array_equal(sc, ref_sc)
        confident = ref_sc[0] > 0.1
        assert confident.sum() >= 35
        np.testing.assert_allclose(kp[0][confident], ref_kp[0][confident],
                                   atol=1e-3)
    # mmpose itself (not our reference wrapper) for the official mapping
    if mapping == 'official':
        ref_kp, _ = UDPHeatmap(INPUT, HEATMAP, sigma=6).decode(batch[0].copy())
        np.testing.assert_allclose(keypoints[0][0][:35], ref_kp[0][:35],
                                   atol=1e-3)


def test_low_peak_channels_take_the_exact_full_blur_path():
    """A faint peak makes mmpose's clip bite: the full-blur fallback is used."""
    rng = np.random.default_rng(4)
    codec = _codec()
    kps = _random_keypoints(rng, 6)
    hm = codec.encode(kps)['heatmaps'] * np.array(
        [1, 0.5, 0.01, 0.004, 0.002, 0.0015], np.float32)[:, None, None]
    kp, sc = codec.decode(hm)
    ref_kp, ref_sc = codec.reference_decode(hm.copy())
    np.testing.assert_allclose(kp, ref_kp, atol=1e-3)
    np.testing.assert_array_equal(sc, ref_sc)


def test_bad_arguments():
    with pytest.raises(ValueError, match='decode_mapping'):
        Sapiens2UDPHeatmap(INPUT, HEATMAP, decode_mapping='exact')
    with pytest.raises(ValueError, match='odd'):
        Sapiens2UDPHeatmap(INPUT, HEATMAP, blur_kernel_size=10).decode(
            np.zeros((2, 256, 192), np.float32) + 0.5)
    with pytest.raises(ValueError, match=r'\(N, K, H, W\)'):
        from sapiens2_mm.codecs import decode_udp_heatmaps
        decode_udp_heatmaps(torch.zeros(3, 4, 5), INPUT)


def test_mmpose_heatmap_type_argument():
    """An mmpose UDPHeatmap config (heatmap_type, radius_factor given) builds
    and encodes as mmpose; 'combined' is refused with a pointer to mmpose."""
    cfg = dict(input_size=INPUT, heatmap_size=HEATMAP, heatmap_type='gaussian',
               sigma=6, radius_factor=0.0546875, blur_kernel_size=11)
    ours = KEYPOINT_CODECS.build(dict(type='Sapiens2UDPHeatmap', **cfg))
    ref = KEYPOINT_CODECS.build(dict(type='UDPHeatmap', **cfg))
    kps = _random_keypoints(np.random.default_rng(3), 5)
    np.testing.assert_array_equal(ours.encode(kps)['heatmaps'],
                                  ref.encode(kps)['heatmaps'])
    with pytest.raises(ValueError, match="'combined'.*UDPHeatmap"):
        Sapiens2UDPHeatmap(INPUT, HEATMAP, heatmap_type='combined')
