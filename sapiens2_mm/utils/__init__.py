"""Compatibility fixes, scope set-up and checkpoint loading."""
from .mmcv_ext_fallback import (MissingCompiledOpError, compiled_mmcv_available,
                                install_mmcv_ext_fallback)
from .safe_torch_load import allow_mmengine_checkpoint_globals
from .setup_env import register_all_modules

__all__ = [
    'MissingCompiledOpError', 'compiled_mmcv_available',
    'install_mmcv_ext_fallback', 'allow_mmengine_checkpoint_globals',
    'register_all_modules'
]
from .checkpoint import (CheckpointMismatchError, check_state_dict,  # noqa: E402
                         load_state_dict_checked, read_checkpoint,
                         select_prefix)

__all__ += [
    'CheckpointMismatchError', 'check_state_dict', 'load_state_dict_checked',
    'read_checkpoint', 'select_prefix'
]
from .official_keys import (TASKS, detect_task,  # noqa: E402
                            official_to_package, package_to_official)

__all__ += ['TASKS', 'detect_task', 'official_to_package', 'package_to_official']
