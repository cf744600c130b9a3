"""Backbones."""
from .arch_zoo import ARCH_ZOO, resolve_arch
from .sapiens2 import Sapiens2

__all__ = ['ARCH_ZOO', 'resolve_arch', 'Sapiens2']
