"""A ``sapiens2_mm`` child of mmpose's ``KEYPOINT_CODECS`` registry.

mmpose builds codecs (heads' decoders, ``GenerateTarget`` encoders) with
``KEYPOINT_CODECS.build`` under the current default scope; mmengine then looks
for a registry of that scope in the tree of ``KEYPOINT_CODECS`` (a root: it has
no mmengine parent) and warns "Failed to search registry with scope
sapiens2_mm" when there is none. This child holds nothing of its own: every
codec name, ours included (registered in mmpose's node), resolves through its
parent.
"""
from mmengine.registry import Registry
from mmpose.registry import KEYPOINT_CODECS as MMPOSE_KEYPOINT_CODECS

from ..registry import SCOPE

KEYPOINT_CODECS = Registry(
    'KEYPOINT_CODECS', parent=MMPOSE_KEYPOINT_CODECS, scope=SCOPE,
    locations=['sapiens2_mm.codecs'])
