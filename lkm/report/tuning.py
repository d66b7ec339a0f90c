"""How the benchmark's inner CV chose (issue 42, point 3, the measuring part): per
method, its tuning budget (the settings its ``tune:`` grid searches) and, per tuned
parameter, the share of its outer-fold selections (the records' ``info.tuned_params``)
at the smallest and the largest value of the parameter's grid (for settings drawn from a
``tune.space``: the smallest and largest candidate drawn, which a Latin hypercube puts in
the outermost 1/candidates of the declared range).

A selection at the edge of a range says that the best value may lie outside it, so a
method whose optimum the grid cuts off is ranked below what it could do. The kinds of
parameter:

- *range*: numeric, three or more distinct values: a selection at the smallest or the
  largest is at an edge; the method's line ``any range parameter`` counts the fits with
  at least one range parameter at an edge (the share issue 42 wants at most 10 %),
  beside the share of the *settings searched* with one at an edge: what a choice blind
  to the data would give (a Latin hypercube of 12 draws puts one setting at the smallest
  and one at the largest candidate of each range, more where integers round together:
  2 of 12 settings at an edge of one range, up to 4 of two, up to 6 of three), so a
  method whose scores are flat over its ranges reaches it with no optimum at an edge;
- *2-value grid*: every selection is at one of its two ends, so the shares only say
  which end was chosen (reported, never counted as "at an edge");
- *unordered*: values without a scale (text such as ``sqrt``, ``None``, mixed types, or
  :data:`lkm.report.aggregation.UNORDERED_PARAMS`): no edge;
- *1 value*: not tuned.

:func:`grid_edge_table` writes the table :func:`lkm.report.ranking.write_cross_paper`
saves as ``grid_edges``. Records only: nothing is fitted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from lkm.report.aggregation import UNORDERED_PARAMS
from lkm.report.formatting import format_value

#: Kinds of tuned parameter (module docstring).
RANGE, TWO_VALUES, UNORDERED, ONE_VALUE = "range", "2-value grid", "unordered", "1 value"
#: The method line of :func:`grid_edge_table`.
ANY_RANGE = "any range parameter"


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parameter_kind(name: str, values: Sequence[Any]) -> str:
    """:data:`RANGE`, :data:`TWO_VALUES`, :data:`UNORDERED` or :data:`ONE_VALUE` for the
    grid ``values`` of parameter ``name``."""
    if name in UNORDERED_PARAMS or not all(_is_number(v) for v in values):
        return UNORDERED if len({json.dumps(v, sort_keys=True, default=str) for v in values}) > 1 else ONE_VALUE
    distinct = len({float(v) for v in values})
    return ONE_VALUE if distinct < 2 else TWO_VALUES if distinct == 2 else RANGE


@dataclass(frozen=True)
class ParameterEdges:
    """One tuned parameter of one method: its grid and kind, how many selections there
    were, and how many took its smallest and its largest value (``None``: no order)."""

    method: str
    parameter: str
    values: tuple[Any, ...]
    kind: str
    fits: int
    at_min: int | None
    at_max: int | None

    @property
    def at_edge(self) -> int | None:
        """Selections at either end of a range (``None`` unless :data:`RANGE`)."""
        return self.at_min + self.at_max if self.kind == RANGE else None  # type: ignore[operator]


@dataclass(frozen=True)
class MethodEdges:
    """One method: its budget (settings its grid searches), its outer-fold selections,
    how many had some settings passed over (the data could not take them), its
    parameters, and how many selections had at least one range parameter at an edge."""

    method: str
    budget: int
    fits: int
    passed_over: int
    parameters: tuple[ParameterEdges, ...]
    any_range_at_edge: int | None  # None: no range parameter
    settings_at_edge: int | None = None  # of the settings searched; None: not known


def _any_at_edge(setting: Mapping[str, Any], ends: Mapping[str, tuple[float, float]]) -> bool:
    return any(name in setting and _is_number(setting[name]) and float(setting[name]) in lo_hi
               for name, lo_hi in ends.items())


def edge_shares(grids: Mapping[str, Mapping[str, Sequence[Any]]],
                selections: Mapping[str, Sequence[Mapping[str, Any]]],
                passed_over: Mapping[str, int] | None = None,
                budgets: Mapping[str, int] | None = None,
                settings: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> list[MethodEdges]:
    """Per method of ``grids`` (method → parameter → the values its grid searches), its
    selections (``selections[method]``: one chosen setting per outer fit) counted at the
    ends of each parameter's grid. A selection lacking a parameter is not counted for
    it; values compare as numbers (1 and 1.0 are the same value). ``budgets`` (method →
    settings searched) is needed when the settings are drawn candidates, not every
    combination of ``grids``'s values; ``settings`` (method → the settings searched)
    gives each method's ``settings_at_edge``."""
    out = []
    for method, grid in grids.items():
        chosen = list(selections.get(method, ()))
        params: list[ParameterEdges] = []
        ends: dict[str, tuple[float, float]] = {}
        at_min: int | None
        at_max: int | None
        for name, values in grid.items():
            kind = parameter_kind(name, values)
            picks = [s[name] for s in chosen if name in s]
            if kind in (RANGE, TWO_VALUES):
                lo, hi = min(float(v) for v in values), max(float(v) for v in values)
                at_min = sum(_is_number(v) and float(v) == lo for v in picks)
                at_max = sum(_is_number(v) and float(v) == hi for v in picks)
                if kind == RANGE:
                    ends[name] = (lo, hi)
            else:
                at_min = at_max = None
            params.append(ParameterEdges(method, name, tuple(values), kind, len(picks), at_min, at_max))
        budget = 1
        for values in grid.values():
            budget *= len(values)
        budget = int((budgets or {}).get(method, budget))
        searched = (settings or {}).get(method)
        out.append(MethodEdges(
            method, budget, len(chosen), int((passed_over or {}).get(method, 0)), tuple(params),
            sum(_any_at_edge(s, ends) for s in chosen) if ends else None,
            sum(_any_at_edge(s, ends) for s in searched) if ends and searched is not None else None))
    return out


def record_info(value: Any) -> dict[str, Any]:
    """A record's ``info`` as a dict, whether stored as JSON text or already parsed
    (``{}`` for anything else)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def tuned_selections(spec: Any, records: pd.DataFrame) -> tuple[dict[str, dict[str, list[Any]]],
                                                                dict[str, list[dict[str, Any]]], dict[str, int]]:
    """The grids of ``spec``'s tuned methods (a drawn space's: each parameter's candidate
    values), the settings their inner CV chose on each outer fit of ``records``
    (successful fits; study records left out), and per method how many of those fits
    passed over settings the data could not take."""
    grids = {m.name: m.tune.values() for m in spec.methods if m.tune is not None}
    fits = records[records["status"] == "ok"] if "status" in records.columns else records
    if "kind" in fits.columns:
        fits = fits[fits["kind"] != "study"]
    selections: dict[str, list[dict[str, Any]]] = {m: [] for m in grids}
    passed: dict[str, int] = dict.fromkeys(grids, 0)
    for method, info in zip(fits["method"], fits["info"] if "info" in fits.columns else [{}] * len(fits), strict=True):
        if method not in grids:
            continue
        info = record_info(info)
        if isinstance(info.get("tuned_params"), dict):
            selections[method].append(info["tuned_params"])
            passed[method] += int(bool(info.get("failed_settings")))
    return grids, selections, passed


def _share(count: int | None, total: int) -> str:
    return "–" if count is None or total == 0 else f"{100.0 * count / total:.1f}"


def _grid_text(values: Sequence[Any]) -> str:
    return ", ".join(format_value(v) for v in values)


def _range_text(declared: Mapping[str, Sequence[Any]], values: Sequence[Any]) -> str:
    """``log 0.25–256: 16 drawn, 0.264 … 191`` (a space's range and its candidates' ends)."""
    kind, args = next(iter(declared.items()))
    if kind == "choice":
        return f"choice of {_grid_text(args)}"
    numbers = sorted(float(v) for v in values if _is_number(v))
    ends = f"{format_value(numbers[0])} … {format_value(numbers[-1])}" if numbers else ""
    return f"{kind} {format_value(args[0])}–{format_value(args[1])}: {len(values)} drawn, {ends}"


def grid_edge_table(spec: Any, records: pd.DataFrame) -> pd.DataFrame:
    """The ``grid_edges`` table of a benchmark run: per tuned method (spec order) one
    line ``any range parameter`` (the share of fits with a range parameter at an edge),
    then one line per tuned parameter (its grid, kind, and the shares of fits at its
    smallest and largest value, in %)."""
    rows = []
    budgets = {m.name: m.tune.size for m in spec.methods if m.tune is not None}
    spaces = {m.name: m.tune.space for m in spec.methods if m.tune is not None and m.tune.space is not None}
    searched = {m.name: m.tune.settings() for m in spec.methods if m.tune is not None}
    for m in edge_shares(*tuned_selections(spec, records), budgets=budgets, settings=searched):
        head = {"method": m.method, "settings searched": m.budget, "outer fits": m.fits,
                "fits with settings passed over": m.passed_over}
        ranges = spaces.get(m.method, {})
        rows.append({**head, "parameter": ANY_RANGE, "grid": "", "kind": "",
                     "% at the smallest": "–", "% at the largest": "–",
                     "% at an edge": _share(m.any_range_at_edge, m.fits),
                     "% of settings searched at an edge": _share(m.settings_at_edge, m.budget)})
        for p in m.parameters:
            grid = _grid_text(p.values) if p.parameter not in ranges else _range_text(ranges[p.parameter], p.values)
            rows.append({**head, "parameter": p.parameter, "grid": grid, "kind": p.kind,
                         "% at the smallest": _share(p.at_min, p.fits), "% at the largest": _share(p.at_max, p.fits),
                         "% at an edge": _share(p.at_edge, p.fits), "% of settings searched at an edge": "–"})
    return pd.DataFrame(rows, columns=["method", "settings searched", "outer fits", "fits with settings passed over",
                                       "parameter", "grid", "kind", "% at the smallest", "% at the largest",
                                       "% at an edge", "% of settings searched at an edge"])


GRID_EDGE_CAPTION = (
    "per method, the settings its inner CV searches (the tuning budget) and, per tuned parameter, the share "
    "of its outer-fold selections (the inner CV's choice, info.tuned_params) at the smallest and at the "
    "largest value of the parameter's grid")
GRID_EDGE_NOTES = (
    f"kind: {RANGE} = numeric with three or more values (a selection at either end is at an edge: the best "
    f"value may lie outside the grid); {TWO_VALUES} = every selection is at one of its two ends, so the shares "
    f"only say which end (not counted as at an edge); {UNORDERED} = values without a scale (text, None): no "
    f"edge; {ONE_VALUE} = not tuned.",
    f"'{ANY_RANGE}': the share of outer fits with at least one range parameter at an edge (issue 42's goal: at "
    "most 10 % for every method).",
    "% of settings searched at an edge: the share of the settings searched with a range parameter at an edge, "
    "what a choice blind to the data would give; a method whose scores are flat over its ranges puts this share "
    "of its fits at an edge with no optimum there.",
    "fits with settings passed over: outer fits whose inner CV could not fit some settings (the data cannot "
    "take them) and chose among the others.",
)


def tuned_choices(records: pd.DataFrame, method: str, keys: list[str]) -> dict[str, str]:
    """Per data set, what the inner CV of ``method`` chose on its outer folds (the records'
    ``info.tuned_params``): each tuned parameter's most frequent value and on how many of
    the successful folds, ``alpha=1 (4/5)`` (ties by the value's text); empty without
    a tuned parameter."""
    ok = records[(records["status"] == "ok") & (records["method"] == method)] if not records.empty else records
    out: dict[str, str] = {}
    for dataset, group in ok.groupby("dataset", sort=False) if keys else ():
        chosen = [record_info(i).get("tuned_params") or {} for i in group["info"]] if "info" in group.columns else []
        parts = []
        for key in keys:
            counts = Counter(format_value(c[key]) for c in chosen if key in c)
            if counts:
                top, n = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
                parts.append(f"{key}={top} ({n}/{len(group)})")
        if parts:
            out[str(dataset)] = ", ".join(parts)
    return out
