"""Keep mmpretrain 1.2's multimodal models from breaking imports on transformers 5.

``mmpretrain.models`` imports its BLIP/CLIP/... models whenever transformers
>= 4.28 is installed. Their transformers imports are wrapped in a bare
``except`` that sets the base classes to None, and with transformers 5 (which
moved ``apply_chunking_to_forward`` and friends) the class statements then fail
with ``TypeError: NoneType takes no arguments``. mmdet's ``models.reid`` imports
``mmpretrain.models`` and catches only ImportError, and mmseg imports mmdet, so
``import mmseg.models`` (and every sapiens2_mm registry lookup) fails although
none of those models is used here.

When that combination is installed, :func:`guard_mmpretrain_multimodal` adds a
one-shot import hook: just before ``mmpretrain.models`` is imported it sets
mmpretrain's own ``WITH_MULTIMODAL`` switch to False (read by
``models.multimodal`` and ``models.utils``), so mmpretrain registers its
placeholders (which raise a clear error if one is built) instead of the
crashing classes. Nothing is imported until then, and with transformers
4 nothing is changed.
"""
import importlib.abc
import importlib.metadata
import logging
import sys
from typing import Optional

logger = logging.getLogger(__name__)
_TARGET = 'mmpretrain.models'


def _major_minor(version: str):
    parts = (version.split('.') + ['0'])[:2]
    return tuple(int(''.join(c for c in p if c.isdigit()) or 0) for p in parts)


def incompatible_transformers() -> Optional[str]:
    """The transformers version if it breaks the installed mmpretrain's imports.

    Returns:
        The version string when transformers >= 5 and mmpretrain <= 1.2 are both
        installed, else None.
    """
    try:
        transformers = importlib.metadata.version('transformers')
        mmpretrain = importlib.metadata.version('mmpretrain')
    except importlib.metadata.PackageNotFoundError:
        return None
    if _major_minor(transformers)[0] >= 5 and _major_minor(mmpretrain) <= (1, 2):
        return transformers
    return None


class _DisableMultimodal(importlib.abc.MetaPathFinder):
    """Turns mmpretrain's multimodal switch off right before it is read."""

    def __init__(self, transformers_version: str):
        self.transformers_version = transformers_version

    def find_spec(self, fullname, path=None, target=None):
        if fullname == _TARGET:
            sys.meta_path.remove(self)
            from mmpretrain.utils import dependency
            dependency.WITH_MULTIMODAL = False
            logger.info(
                'transformers %s cannot load the multimodal models of '
                'mmpretrain 1.2; they are registered as placeholders.',
                self.transformers_version)
        return None  # the regular finders import the module


def guard_mmpretrain_multimodal() -> bool:
    """Install the hook if transformers >= 5 meets mmpretrain <= 1.2.

    Returns:
        True if the hook is (now) installed.
    """
    if any(isinstance(f, _DisableMultimodal) for f in sys.meta_path):
        return True
    version = incompatible_transformers()
    if version is None or _TARGET in sys.modules:
        return False
    sys.meta_path.insert(0, _DisableMultimodal(version))
    return True
