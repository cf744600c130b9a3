"""Decoding network outputs: keypoint codecs that differ from mmpose's
(registered in mmpose's registry) and the seg logits -> label map resize."""
from .dark_udp import decode_udp_heatmaps, heatmap_argmax, refine_dark_udp
from .keypoint_codecs import KEYPOINT_CODECS
from .label_resize import nonfinite_pixels, resize_argmax
from .udp_heatmap import Sapiens2UDPHeatmap

__all__ = [
    'KEYPOINT_CODECS', 'Sapiens2UDPHeatmap', 'decode_udp_heatmaps',
    'heatmap_argmax', 'refine_dark_udp', 'resize_argmax', 'nonfinite_pixels'
]
