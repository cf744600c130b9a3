"""Models: layers, backbone, heads, losses, estimators."""
from .backbones import *  # noqa: F401,F403
