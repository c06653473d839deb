"""profscope: a TensorBoard plugin for reading ML job profiles fast and honestly."""

from profscope.version import __version__

__all__ = ["__version__"]
