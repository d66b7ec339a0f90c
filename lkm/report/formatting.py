"""How report tables and figures write numbers: rates in percent, mean ± std, 95 %
intervals, parameter settings, and the marks a cell may carry (:data:`EDGE_MARK`,
:data:`WARNING_MARK`)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from lkm.numerics.stats import rate_interval

RATE = 100.0  # accuracies are shown in percent, as the papers do


#: The level of every interval a table shows beside our number.
CI_LEVEL = 0.95


def ci_column(column: str) -> str:
    """The name of the column holding the 95 % interval of ``column``'s numbers; the
    report compares the paper's number with it (:mod:`lkm.reproduction.site.tables`)."""
    return f"{column} [95% CI]"


def format_interval(low: float, high: float, scale: float = RATE, error: bool = False) -> str:
    """``[93.12, 95.60]`` in percent (of the error rate, 1 − accuracy, when ``error``); "–" if unknown."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "–"
    if error:
        low, high = 1.0 - high, 1.0 - low
    return f"[{scale * low:.2f}, {scale * high:.2f}]"


def records_interval(records: pd.DataFrame, column: str = "accuracy", resampled: bool = True,
                     error: bool = False) -> str:
    """:func:`format_interval` of ``column`` over the splits of ``records`` (one row per split)."""
    if records.empty or column not in records.columns:
        return "–"
    return format_interval(*rate_interval(records[column].astype(float), records["n_test"].astype(float),
                                          records["n_train"].astype(float), resampled=resampled), error=error)


def format_rate(mean: float | None, std: float | None = None) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    s = f"{RATE * mean:.2f}"
    return s if std is None else f"{s} ± {RATE * std:.2f}"


def format_params(p: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{k}={format_value(p.get(k))}" for k in keys) if keys else "–"


def format_value(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-6)
    return str(a) == str(b)


#: The mark a summary cell gets when its selected value is at the edge of its grid.
EDGE_MARK = "†"


def format_selected(p: dict[str, Any], keys: list[str], at_edge: set[str]) -> str:
    """The selected setting, each value at the edge of its grid followed by :data:`EDGE_MARK`."""
    if not keys:
        return "–"
    return ", ".join(f"{k}={format_value(p.get(k))}" + (f" {EDGE_MARK}" if k in at_edge else "") for k in keys)


#: Marks a score at the selected setting some of whose fits carry a warning (a record's
#: ``warnings``: e.g. one class predicted for a test part holding several).
WARNING_MARK = "‡"
