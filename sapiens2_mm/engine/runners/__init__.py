"""mmengine runners with a quiet console (see quiet_runner)."""
from .quiet_runner import Sapiens2FlexibleRunner, Sapiens2Runner

__all__ = ['Sapiens2Runner', 'Sapiens2FlexibleRunner']
