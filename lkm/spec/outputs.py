"""The output registry: every table and figure a spec can ask for, by name.

A builder is a function ``(ctx: lkm.report.ReportContext) -> list[Path]`` registered with
``@table("name")`` or ``@figure("name")`` in a module named by an entry point of the
group :data:`PLUGIN_GROUP` (lkm's own, in pyproject.toml: ``lkm.report.core`` for the
generic outputs, ``lkm.papers``, which imports every paper package; a third-party
package declares its own in its ``pyproject.toml``); :func:`load_plugins`
imports those modules, which registers their builders. Spec validation and
:func:`lkm.report.build_report` call it before reading the registry.

This module imports nothing else of lkm: spec validation reads it, :mod:`lkm.report`
re-exports it (:mod:`lkm.report.registry`), and neither names a paper.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

#: A builder takes the report's context (:class:`lkm.report.registry.ReportContext`, a
#: layer above this one, hence ``Any`` here) and returns the files it wrote.
OutputBuilder = Callable[[Any], list[Path]]

#: Table builders by the name a spec's ``outputs.tables`` uses.
TABLES: dict[str, OutputBuilder] = {}
#: Figure builders by the name a spec's ``outputs.figures`` uses.
FIGURES: dict[str, OutputBuilder] = {}
#: What a figure is drawn from, for figures that declare it (``@figure(name, inputs=...)``):
#: ``inputs(ctx)`` returns the data frames (or a list of frames and strings) the figure
#: reads; a report redraws the figure only when they change. Without it: all the records.
FIGURE_INPUTS: dict[str, Callable[[Any], Any]] = {}

#: Entry-point group of the modules that register outputs: ``name = "package.module"``.
PLUGIN_GROUP = "lkm.outputs"
#: The modules of :data:`PLUGIN_GROUP` imported so far, by entry-point name.
PLUGINS: dict[str, ModuleType] = {}
#: The ``sys.path`` the entry points were last scanned under: scanning reads every installed
#: distribution's metadata (~30 ms), and spec validation and each report call this.
_SCANNED_PATH: tuple[str, ...] | None = None


def load_plugins() -> dict[str, ModuleType]:
    """Import every module of the entry-point group :data:`PLUGIN_GROUP` not imported yet
    (registering its tables and figures) and return them all by entry-point name; the
    installed distributions are scanned again only when ``sys.path`` has changed."""
    global _SCANNED_PATH
    if _SCANNED_PATH != tuple(sys.path):
        for ep in entry_points(group=PLUGIN_GROUP):
            if ep.name not in PLUGINS:
                PLUGINS[ep.name] = ep.load()
        _SCANNED_PATH = tuple(sys.path)
    return PLUGINS


def table(name: str) -> Callable[[OutputBuilder], OutputBuilder]:
    """Register a table builder under ``name``."""

    def register(fn: OutputBuilder) -> OutputBuilder:
        TABLES[name] = fn
        return fn

    return register


def figure(name: str, inputs: Callable[[Any], Any] | None = None) -> Callable[[OutputBuilder], OutputBuilder]:
    """Register a figure builder under ``name``; ``inputs`` (see :data:`FIGURE_INPUTS`)
    narrows what makes it stale."""

    def register(fn: OutputBuilder) -> OutputBuilder:
        FIGURES[name] = fn
        if inputs is not None:
            FIGURE_INPUTS[name] = inputs
        return fn

    return register
