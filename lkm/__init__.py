"""lkm — local kernel machines.

An experiment runner that reproduces five papers on local kernel methods and
exposes their methods as scikit-learn estimators (see ``lkm.methods``).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("lkm")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
