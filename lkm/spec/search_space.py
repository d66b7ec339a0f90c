"""A tuning budget drawn from ranges: ``tune.space`` and ``tune.candidates`` (issue 42, point 3).

A space maps each tuned parameter to a range, written in the spec as

- ``{log: [low, high]}``: a real number, log-uniform on [low, high];
- ``{logint: [low, high]}``: an integer, log-uniform on [low, high + 1) and floored;
- ``{choice: [a, b, ...]}``: one of the listed values (categorical, uniform).

:func:`draw_candidates` turns a space into a fixed list of settings: a Latin hypercube
sample (:class:`scipy.stats.qmc.LatinHypercube`, seeded) of ``candidates`` points, each
coordinate mapped through its range, reals rounded to 3 significant digits (records stay
readable), duplicates dropped and refilled from further seeded samples (at most 50) until the
budget is reached. A Latin hypercube puts one point in each of the
``candidates`` equal strata of every parameter's (log-)range, so each range is covered end
to end: its smallest and largest candidate lie in its outermost strata. The list is
sorted by value (parameters in name order), so the inner CV's tie rule, the first
candidate in this order (:func:`lkm.engine.runner.best_setting`), favours small values of
the first parameter. The same seed gives the same candidates on every machine, data set
and fold.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: The range kinds of a space and what each takes.
RANGE_KINDS = ("log", "logint", "choice")
#: Fresh Latin hypercube samples tried before a space is declared too small for its budget.
MAX_REFILLS = 50


def parse_range(name: str, value: Any) -> dict[str, list[Any]]:
    """Check one ``space`` entry (``{log: [lo, hi]}``, ``{logint: [lo, hi]}`` or
    ``{choice: [...]}``) and return it; a one-line ValueError names what is wrong."""
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in RANGE_KINDS:
        raise ValueError(f"{name}: expected one of {{log: [low, high]}}, {{logint: [low, high]}}, "
                         f"{{choice: [values]}}, got {value!r}")
    kind, args = next(iter(value.items()))
    if not isinstance(args, list) or not args:
        raise ValueError(f"{name}.{kind}: expected a list, got {args!r}")
    if kind == "choice":
        if len({repr(a) for a in args}) < 2:
            raise ValueError(f"{name}.choice: give at least two distinct values, got {args!r}")
        return {kind: list(args)}
    if len(args) != 2 or not all(isinstance(a, int | float) and not isinstance(a, bool) for a in args):
        raise ValueError(f"{name}.{kind}: expected [low, high] numbers, got {args!r}")
    low, high = float(args[0]), float(args[1])
    if not 0 < low < high or not math.isfinite(high):
        raise ValueError(f"{name}.{kind}: need 0 < low < high (a log range), got [{args[0]}, {args[1]}]")
    if kind == "logint" and (low != int(low) or high != int(high)):
        raise ValueError(f"{name}.logint: low and high must be integers, got [{args[0]}, {args[1]}]")
    return {kind: [int(low), int(high)] if kind == "logint" else [low, high]}


def _map(kind: str, args: list[Any], u: float) -> Any:
    """The value at quantile ``u`` in [0, 1) of one range."""
    if kind == "choice":
        return args[min(int(u * len(args)), len(args) - 1)]
    low, high = float(args[0]), float(args[1]) + (1.0 if kind == "logint" else 0.0)
    x = math.exp(math.log(low) + u * (math.log(high) - math.log(low)))
    if kind == "logint":
        return min(int(math.floor(x)), int(args[1]))
    return float(f"{x:.3g}")


def _sort_key(space: dict[str, dict[str, list[Any]]], setting: dict[str, Any]) -> tuple[Any, ...]:
    key = []
    for name in sorted(space):
        kind, args = next(iter(space[name].items()))
        key.append(args.index(setting[name]) if kind == "choice" else setting[name])
    return tuple(key)


def draw_candidates(space: dict[str, dict[str, list[Any]]], candidates: int, seed: int) -> list[dict[str, Any]]:
    """The ``candidates`` settings of a space (see the module's docstring), sorted; fewer only
    when the space holds fewer distinct settings (a ValueError then says so)."""
    from scipy.stats import qmc

    names = sorted(space)
    seen: set[tuple[Any, ...]] = set()
    out: list[dict[str, Any]] = []
    for refill in range(MAX_REFILLS):
        sample = qmc.LatinHypercube(d=len(names), seed=np.random.default_rng([seed, refill])).random(candidates)
        for point in sample:
            setting = {n: _map(*next(iter(space[n].items())), float(u)) for n, u in zip(names, point, strict=True)}
            key = tuple(repr(setting[n]) for n in names)
            if key not in seen and len(out) < candidates:
                seen.add(key)
                out.append(setting)
        if len(out) == candidates:
            break
    if len(out) < candidates:
        raise ValueError(f"the space holds only {len(out)} distinct settings, fewer than candidates = {candidates}")
    return sorted(out, key=lambda s: _sort_key(space, s))
