"""Compatibility fixes, scope set-up and checkpoint loading."""
from .checkpoint import (
                         CheckpointMismatchError,
                         check_state_dict,
                         load_state_dict_checked,
                         read_checkpoint,
                         select_prefix,
)
from .mmcv_ext_fallback import (
                         MissingCompiledOpError,
                         install_mmcv_ext_fallback,
                         require_mmcv,
)
from .official_keys import (
                         OfficialLayout,
                         detect_task,
                         official_tasks,
                         official_to_package,
                         package_to_official,
)
from .safe_torch_load import allow_mmengine_checkpoint_globals
from .setup_env import (
    config_scope,
    in_config_scope,
    qualified_type,
    register_all_modules,
)

__all__ = [
    'CheckpointMismatchError', 'check_state_dict', 'load_state_dict_checked',
    'read_checkpoint', 'select_prefix', 'MissingCompiledOpError',
    'install_mmcv_ext_fallback', 'OfficialLayout',
    'official_tasks', 'detect_task', 'official_to_package', 'package_to_official',
    'allow_mmengine_checkpoint_globals', 'register_all_modules', 'require_mmcv',
    'config_scope', 'in_config_scope', 'qualified_type'
]
