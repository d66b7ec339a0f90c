"""The grid language of a spec: how a parameter's values are written.

A grid is a list, a scalar, ``"a:b:n"`` (n log-spaced values), ``"a,b,c"``, or
``"default"`` / ``"paper"`` (resolved by the caller from :data:`DEFAULT_GRIDS`).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from lkm.spec.names import short_repr

#: The paper's sigma grid (Tsuji et al., Sec. 9.2): 39 log-spaced values in [0.01, 100].
PAPER_SIGMA_GRID = "0.01:100:39"

#: Grids a bare ``--NAME`` on ``lkm sweep`` stands for: the paper's sigma grid, and the
#: neighbour counts of its Fig. 8 (``auto`` = ⌊log₁₀ ℓ + 1⌋).
DEFAULT_GRIDS: dict[str, str] = {"sigma": PAPER_SIGMA_GRID, "k": "auto,5,9,13,17"}

Scalar = float | int | str | bool | None

#: Most values in one parameter grid.
MAX_GRID_VALUES = 10_000


def parse_grid(value: Any) -> list[Scalar]:
    """Parse a parameter grid.

    Accepts a list (``[0.5, 1, 2]``), a scalar, ``"a:b:n"`` (n log-spaced values from a
    to b inclusive, the paper's way of writing its sigma grid), ``"a,b,c"``, or
    ``"default"`` / ``"paper"`` for the grid of :data:`DEFAULT_GRIDS` (resolved by the caller).
    """
    if isinstance(value, (list, tuple)):
        _check_grid_length(len(value), value)
        for v in value:
            _check_scalar(v, value)
        return [_finite(_coerce(v), value) for v in value]
    _check_scalar(value, value)
    if isinstance(value, str):
        s = value.strip()
        if ":" in s and s.count(":") != 2 and _all_numbers(s.split(":")):
            raise ValueError(_not_a_range(value, s.split(":")))
        written_as_range = _RANGE.fullmatch(s)
        if written_as_range:  # '0.1-10', '0.1..10', '0.1 to 10': a range, not a value
            raise ValueError(_not_a_range(value, list(written_as_range.groups())))
        if s.count(":") == 2:
            a, b, n = (p.strip() for p in s.split(":"))
            try:
                lo, hi, num = float(a), float(b), int(n)
            except ValueError:
                raise ValueError(f"grid {short_repr(value)}: expected 'start:stop:count' with numbers") from None
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi <= 0 or num < 1:
                raise ValueError(f"grid {short_repr(value)}: log-spaced grids need finite start, stop > 0 and count >= 1")
            _check_grid_length(num, value)  # before np.logspace allocates
            return [float(f"{v:.6g}") for v in np.logspace(math.log10(lo), math.log10(hi), num)]
        if "," in s:
            parts = [v.strip() for v in s.split(",") if v.strip()]
            _check_grid_length(len(parts), value)
            return [_finite(_coerce(v), value) for v in parts]
        return [_finite(_coerce(s), value)]
    return [_finite(_coerce(value), value)]


#: A number in a grid string, for :data:`_RANGE`.
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
#: A range written as other tools write one (``0.1-10``, ``0.1..10``, ``0.1 to 10``): refused, with how a grid is written.
_RANGE = re.compile(rf"\s*({_NUMBER})\s*(?:\.\.\.?|-|\u2013|\u2014|\bto\b)\s*({_NUMBER})\s*")


def _not_a_range(value: str, parts: list[str]) -> str:
    """The message on a range written without its count (``0.1:10``) or not as a grid
    (``0.1-10``): how a grid is written, with an example from its own numbers."""
    start, stop = (p.strip() for p in parts[:2]) if len(parts) >= 2 else ("0.1", "10")
    return (f"grid {short_repr(value)}: write a range as START:STOP:COUNT, COUNT log-spaced values "
            f"({start}:{stop}:9), or list the values with commas ({start},{stop})")


#: How a grid can be written, for the message on anything else.
GRID_FORMS = "a value, a list of values ([0.5, 1, 2]), 'start:stop:count' or 'a,b,c'"


def _check_scalar(v: Any, grid: Any) -> None:
    """A grid value is one number, word, boolean or null: a mapping or a list inside a
    grid is a mistake (pydantic would report it as ``[0].float``)."""
    if isinstance(v, (dict, list, tuple, set)):
        what = "a mapping" if isinstance(v, dict) else "a list"
        where = f"grid {short_repr(grid)}" if v is grid else f"grid {short_repr(grid)}: value {short_repr(v)}"
        raise ValueError(f"{where} is {what}; a grid is {GRID_FORMS}")


def _all_numbers(parts: list[str]) -> bool:
    try:
        [float(p) for p in parts]
    except ValueError:
        return False
    return True


def _check_grid_length(n: int, value: Any) -> None:
    if n > MAX_GRID_VALUES:
        shown = short_repr(value) if isinstance(value, str) else "list"
        raise ValueError(f"grid {shown} has {n} values (at most {MAX_GRID_VALUES} per grid)")


def _finite(v: Scalar, grid: Any) -> Scalar:
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"grid value {v!r} is not a finite number")
    return v


def unique_values(values: list[Any]) -> list[Any]:
    """``values`` without repeats, first occurrence kept (``[1, 1.0, 1]`` -> ``[1]``;
    ``True`` and ``1`` stay distinct)."""
    seen: set[Any] = set()
    out = []
    for v in values:
        try:
            key = (type(v) is bool, v)
            hash(key)
        except TypeError:
            key = (False, repr(v))
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def _coerce(v: Any) -> Scalar:
    """Turn '5' into 5 and '0.5' into 0.5; leave other strings (e.g. 'auto') alone."""
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            pass
        try:
            return float(v)
        except ValueError:
            return v
    scalar: Scalar = v  # a number, bool or None as YAML read it
    return scalar
