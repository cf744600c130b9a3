"""sapiens2_mm: Sapiens2 human-centric vision transformers as an OpenMMLab plugin.

Importing the package applies three run-time fixes for the OpenMMLab stack on
current torch and transformers (see ``sapiens2_mm.utils``) and nothing else: it
does not import mmpose, mmseg or mmpretrain, so ``from sapiens2_mm.models import
Sapiens2`` stays fast.
"""
from .utils.mmcv_ext_fallback import install_mmcv_ext_fallback
from .utils.mmpretrain_compat import guard_mmpretrain_multimodal
from .utils.safe_torch_load import allow_mmengine_checkpoint_globals
from .version import __version__

install_mmcv_ext_fallback()
allow_mmengine_checkpoint_globals()
guard_mmpretrain_multimodal()

__all__ = ['__version__']
