"""Run names and the short quoting of values in spec error messages.

A run name becomes the folder ``results/<name>/``, so it is checked as an identifier
here; :func:`short_repr` is how every spec module quotes a user's value in a one-line error.
"""

from __future__ import annotations

import re
from typing import Any

from lkm.errors import SpecError

#: Longest run name (it becomes a folder name).
MAX_NAME_LENGTH = 100

_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


def validate_run_name(name: Any, where: str, *, derived_from: str | None = None) -> str:
    """Return ``name`` if it is a safe run name (it becomes ``results/<name>/``), else raise
    a one-line SpecError starting with ``where``.

    A run name is an identifier, not a path: letters, digits, ``.``, ``_`` and ``-``, not
    starting with ``.`` or ``-`` (so never ``.`` or ``..``), at most
    :data:`MAX_NAME_LENGTH` characters. ``derived_from``: the name it was derived from
    (``<name>-smoke``, ``<name>-sweep-...``), named in the message.
    """
    origin = f" (derived from name {short_repr(derived_from)})" if derived_from is not None else ""
    if not isinstance(name, str):
        raise SpecError(f"{where}: a run name must be a string, got {type(name).__name__}")
    if not name:
        raise SpecError(f"{where}: the run name is empty{origin}")
    if len(name) > MAX_NAME_LENGTH:
        raise SpecError(f"{where}: run name {short_repr(name)}{origin} has {len(name)} characters (at most {MAX_NAME_LENGTH})")
    if not _NAME_RE.fullmatch(name):
        raise SpecError(
            f"{where}: run name {short_repr(name)}{origin} is not an identifier: use letters, digits, '.', '_' and '-', "
            "not starting with '.' or '-' (it names the folder results/<name>/)"
        )
    return name


def short_repr(value: Any, n: int = 60) -> str:
    """``repr(value)`` cut to about ``n`` characters (one line: control characters escaped)."""
    text = repr(value)
    return text if len(text) <= n else f"{text[:n]}...'"
