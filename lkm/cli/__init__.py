"""The `lkm` command line. Thin: parses options and calls the library.

:mod:`lkm.cli.app` holds the app, the error boundary and shared options; each sibling
module registers one group of commands (imported here in the order `lkm --help` lists them).
"""

from importlib import import_module

from lkm.cli.app import app, main

for _module in ("runs", "compare", "reproduce", "specs", "methods", "datasets", "docs"):  # registers the commands
    import_module(f"lkm.cli.{_module}")

__all__ = ["app", "main"]
