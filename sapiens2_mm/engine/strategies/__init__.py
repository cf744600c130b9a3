"""Training strategies (FlexibleRunner) for the large models."""
from .fsdp_strategy import Sapiens2FSDPStrategy, fsdp_device_id

__all__ = ['Sapiens2FSDPStrategy', 'fsdp_device_id']
