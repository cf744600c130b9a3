"""mmengine runners with a quiet console (see quiet_runner), and how the
tools build and run them (see launch)."""
from .launch import (
    InterruptFlag,
    build_runner,
    cleanup_distributed,
    exit_launched_process,
    global_rank,
    prepare_cpu_distributed,
    wait_for_all_ranks,
)
from .quiet_runner import Sapiens2FlexibleRunner, Sapiens2Runner

__all__ = [
    'Sapiens2Runner', 'Sapiens2FlexibleRunner', 'build_runner',
    'prepare_cpu_distributed', 'wait_for_all_ranks', 'cleanup_distributed',
    'exit_launched_process',
    'global_rank', 'InterruptFlag'
]
