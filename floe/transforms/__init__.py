"""Partition transforms, public name: re-exports ``floe.spec.transforms`` (transforms are spec values;
Floe's own modules import them from there, and ``floe.spec`` never imports this package)."""

from floe.spec.transforms import *  # the same public names, listed once in floe.spec.transforms
from floe.spec.transforms import __all__ as __all__
