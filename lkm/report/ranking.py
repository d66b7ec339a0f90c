"""The cross-paper comparison (issue 16, "A cross-paper view"): every method of the five
reproduced papers on the data sets they share, under one protocol
(``lkm/papers/specs/cross_paper.yaml``: stratified 10-fold CV, every method tuned by the same inner
CV on the training part), ranked as Demšar (2006, "Statistical comparisons of
classifiers over multiple data sets", JMLR 7) recommends: average ranks, the Friedman
test with Iman and Davenport's F_F, and the Nemenyi critical difference drawn as a
critical-difference diagram (:mod:`lkm.numerics.stats`, ``friedman`` and ``nemenyi_cd``).

:func:`write_cross_paper` reads the run folder ``<root>/cross_paper`` (``-smoke`` with
``smoke``) and writes ``<root>/cross_paper_summary``:

- ``ranking.md/.csv/.tex``: per data set each method's mean accuracy (%) over the outer
  folds and its rank on that data set; a last row of average ranks; methods ordered by
  average rank. A method without a complete result on every data set (a failed or
  missing fold) is left out of the ranking, and the caption says which and why.
- ``friedman.json``: N, k, the average ranks, χ²_F and its p, F_F and its p, the
  critical difference and α, the groups the diagram joins.
- ``critical_difference.png`` / ``.pdf``: the diagram (Demšar's Fig. 1 style).

This module reads stored records only (nothing is fitted) and imports no paper.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.errors import LkmError
from lkm.numerics.stats import (
    ALPHA,
    Friedman,
    format_p,
    friedman,
    nemenyi_cd,
    nemenyi_q,
    rank_matrix,
)
from lkm.report.core import RATE, aggregate, load_pyplot, save_figure, select_best, write_table

#: The name of the comparison's spec (shipped as lkm/papers/specs/cross_paper.yaml) and
#: of its run folder (``results/cross_paper``).
RUN_NAME = "cross_paper"
#: Where :func:`write_cross_paper` writes, beside the run folder.
SUMMARY_NAME = "cross_paper_summary"
#: Accuracies equal to this many decimals (of a percentage) are ties: two methods that
#: make the same predictions get bit-identical means, but a mean formed in another order
#: may differ in the last bit.
TIE_DECIMALS = 9


def _load(run_dir: Path) -> tuple[Any, pd.DataFrame, pd.DataFrame]:
    """The run's spec, its records, and the selected (here: the one tuned) setting per
    data set and method."""
    from lkm.engine.store import RunStore
    from lkm.spec import load_spec

    run_dir = Path(run_dir)
    if not (run_dir / "spec.yaml").is_file():
        raise LkmError(f"{run_dir}: no run folder here (no spec.yaml); run `lkm run {RUN_NAME} --out {run_dir}` first")
    spec = load_spec(run_dir / "spec.yaml")
    records = RunStore(run_dir).records_frame()
    if records.empty:
        raise LkmError(f"{run_dir}: the run has no records yet; run `lkm run {RUN_NAME} --out {run_dir}`")
    agg = aggregate(records, spec)
    best = select_best(agg, spec) if not agg.empty else agg
    return spec, records, best


def _planned_splits(run_dir: Path) -> dict[str, int]:
    """Outer splits per data set as the run planned them (plan.json), if it says."""
    try:
        splits = json.loads((run_dir / "plan.json").read_text(encoding="utf-8")).get("splits") or {}
        return {str(d): int(n) for d, n in splits.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def _completeness(spec: Any, records: pd.DataFrame, planned: dict[str, int]) -> dict[tuple[str, str], str]:
    """``{(dataset, method): why}`` for every cell without a result on every outer split
    (``planned``, or as many as any method has): a failed fit (its first error), or
    splits not recorded (a run still going or killed)."""
    fits = records[records["kind"] != "study"] if "kind" in records.columns else records
    expected = fits.groupby("dataset")["split"].nunique().to_dict()
    expected = {d: max(int(expected.get(d, 0)), planned.get(d, 0)) for d in set(expected) | set(planned)}
    out: dict[tuple[str, str], str] = {}
    for d in spec.datasets:
        for m in spec.methods:
            sub = fits[(fits["dataset"] == d.id) & (fits["method"] == m.name)]
            ok = sub[sub["status"] == "ok"]
            n = int(expected.get(d.id, 0))
            failed = sub[sub["status"] != "ok"]
            if not failed.empty:
                error = str(failed["error"].dropna().iloc[0]) if "error" in failed and failed["error"].notna().any() else "error"
                out[(d.id, m.name)] = f"{len(failed)} of {n} folds failed: {error.splitlines()[0][:160]}"
            elif ok["split"].nunique() < n or n == 0:
                out[(d.id, m.name)] = f"{ok['split'].nunique()} of {n} folds recorded"
    return out


def cross_paper_table(run_dir: Path) -> pd.DataFrame:
    """Rows = data sets, columns = methods (both in the spec's order): the mean accuracy
    (%) over the outer folds at the tuned setting. A cell is NaN unless the method has a
    successful fit on every outer fold of that data set (``attrs["missing"]``:
    ``{(dataset, method): why}``)."""
    return _table(Path(run_dir), *_load(Path(run_dir)))


def _table(run_dir: Path, spec: Any, records: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    """:func:`cross_paper_table` from a run already loaded (:func:`_load`)."""
    missing = _completeness(spec, records, _planned_splits(run_dir))
    table = pd.DataFrame(np.nan, index=pd.Index([d.id for d in spec.datasets], name="dataset"),
                         columns=[m.name for m in spec.methods])
    for r in best.itertuples():
        if (r.dataset, r.method) not in missing and r.dataset in table.index and r.method in table.columns:
            table.loc[r.dataset, r.method] = RATE * float(r.accuracy)
    table.attrs["missing"] = missing
    return table


def _usable(table: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str], dict[str, str]]:
    """The table without data sets on which no method has a result, then without methods
    missing on any remaining data set; and why each dropped one was dropped."""
    missing = table.attrs.get("missing", {})
    empty = [d for d in table.index if table.loc[d].isna().all()]
    dropped_sets = {d: "no method has a result (data unavailable or not run)" for d in empty}
    kept = table.drop(index=empty)
    dropped_methods = {}
    for m in kept.columns:
        gaps = [d for d in kept.index if pd.isna(kept.loc[d, m])]
        if gaps:
            dropped_methods[m] = "; ".join(f"{d}: {missing.get((d, m), 'no result')}" for d in gaps)
    return kept.drop(columns=list(dropped_methods)), dropped_methods, dropped_sets


def nemenyi_groups(ranks: dict[str, float], cd: float) -> list[list[str]]:
    """Maximal runs of methods (sorted by average rank) whose ranks span less than ``cd``:
    the groups a critical-difference diagram joins with a bar (no two of them differ
    significantly by the Nemenyi test). Runs of a single method are not groups."""
    order = sorted(ranks, key=lambda m: ranks[m])
    groups: list[list[str]] = []
    last_end = -1
    for i in range(len(order)):
        j = i
        while j + 1 < len(order) and ranks[order[j + 1]] - ranks[order[i]] < cd:
            j += 1
        if j > i and j > last_end:
            groups.append(order[i:j + 1])
            last_end = j
    return groups


def _fmt_rank(r: float) -> str:
    return f"{r:g}" if float(r).is_integer() or float(r * 2).is_integer() else f"{r:.2f}"


def ranking_table(scores: pd.DataFrame) -> tuple[pd.DataFrame, Friedman, list[str]]:
    """The ranking table of complete ``scores`` (data sets × methods, accuracy %): one
    column per method ordered by average rank (ties: the spec's order), cells
    ``accuracy (rank)``, a last row of average ranks; the Friedman result; the order."""
    rounded = scores.round(TIE_DECIMALS)
    ranks = pd.DataFrame(rank_matrix(rounded), index=scores.index, columns=scores.columns)
    result = friedman(rounded)
    avg = result.ranks
    order = sorted(scores.columns, key=lambda m: (avg[m], list(scores.columns).index(m)))
    rows = []
    for d in scores.index:
        rows.append({"dataset": d, **{m: f"{scores.loc[d, m]:.2f} ({_fmt_rank(ranks.loc[d, m])})" for m in order}})
    rows.append({"dataset": "average rank", **{m: f"{avg[m]:.2f}" for m in order}})
    return pd.DataFrame(rows, columns=["dataset", *order]), result, order


def _inner_cv_words(spec: Any) -> str:
    folds = {m.tune.cv for m in spec.methods if m.tune is not None}
    untuned = [m.name for m in spec.methods if m.tune is None]
    words = f"each method tuned by {folds.pop()}-fold CV on the training part" if len(folds) == 1 else \
        "each method tuned by inner CV on the training part"
    return words + (f" (fixed settings: {', '.join(untuned)})" if untuned else "")


def critical_difference_figure(ranks: dict[str, float], cd: float, n_datasets: int, base: Path,
                               alpha: float = ALPHA, title: str | None = None,
                               formats: tuple[str, ...] = ("png", "pdf")) -> list[Path]:
    """Demšar's critical-difference diagram (JMLR 7, 2006, Fig. 1): an axis of ranks 1..k
    (1, the best, on the left); each method a line from its average rank to its name
    and rank, the better half on the left, the rest on the right; thick bars join
    groups of methods whose average ranks differ by less than the critical difference
    (:func:`nemenyi_groups`); the CD interval is drawn above the axis."""
    plt = load_pyplot()
    k = len(ranks)
    order = sorted(ranks, key=lambda m: ranks[m])
    groups = nemenyi_groups(ranks, cd)
    # each bar on the first level where it overlaps no other bar (disjoint groups share one)
    levels: list[float] = []  # per level, the right end (in ranks) of its last bar
    level_of = []
    for members in groups:
        lo = ranks[members[0]]
        free = next((i for i, end in enumerate(levels) if lo > end + 0.1), None)
        if free is None:
            levels.append(0.0)
            free = len(levels) - 1
        levels[free] = ranks[members[-1]]
        level_of.append(free)
    n_left = (k + 1) // 2
    left, right = order[:n_left], order[n_left:]

    label = {m: f"{m} ({ranks[m]:.2f})" for m in order}
    char_w = 0.068  # inches per character at 9 pt (wide enough for digits and capitals)
    text_w = max(len(s) for s in label.values()) * char_w + 0.25
    axis_w = max(4.2, 0.36 * (k - 1))
    width = 2 * text_w + axis_w + 0.3
    row_h, top = 0.24, 0.95  # inches between method rows; axis height from the top
    bars_top = top + 0.22
    bars_h = 0.14 * len(levels)
    first_row = bars_top + bars_h + 0.18
    height = first_row + row_h * max(len(left), len(right)) + 0.1

    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    ax.grid(False)
    x0 = text_w + 0.15

    def xr(r: float) -> float:
        return x0 + axis_w * (r - 1) / max(k - 1, 1)

    line = {"color": "black", "linewidth": 0.9, "solid_capstyle": "butt"}
    # the rank axis, ticks and numbers above it
    ax.plot([xr(1), xr(k)], [top, top], **line)
    for r in range(1, k + 1):
        ax.plot([xr(r), xr(r)], [top - 0.07, top], **line)
        ax.text(xr(r), top - 0.1, str(r), ha="center", va="bottom", fontsize=8)
    for r in np.arange(1.5, k, 1.0):
        ax.plot([xr(r), xr(r)], [top - 0.035, top], **line)

    # the critical difference, from rank 1, above the tick numbers
    cd_y = top - 0.5
    span = min(cd, k - 1)
    ax.plot([xr(1), xr(1 + span)], [cd_y, cd_y], color="black", linewidth=1.4)
    for x in (xr(1), xr(1 + span)):
        ax.plot([x, x], [cd_y - 0.05, cd_y + 0.05], color="black", linewidth=1.0)
    cd_text = f"CD = {cd:.2f}" + (" (wider than the axis: no two methods can differ)" if cd > k - 1 else "")
    ax.text(xr(1), cd_y - 0.09, cd_text, ha="left", va="bottom", fontsize=8.5)

    # each method: a line down from its rank, then out to its name
    for i, m in enumerate(left):
        y = first_row + row_h * i
        ax.plot([xr(ranks[m]), xr(ranks[m]), x0 - 0.1], [top, y, y], **line)
        ax.text(x0 - 0.15, y, label[m], ha="right", va="center", fontsize=9)
    for i, m in enumerate(reversed(right)):
        y = first_row + row_h * i
        ax.plot([xr(ranks[m]), xr(ranks[m]), x0 + axis_w + 0.1], [top, y, y], **line)
        ax.text(x0 + axis_w + 0.15, y, label[m], ha="left", va="center", fontsize=9)

    # groups not significantly different: thick bars just below the axis
    for members, level in zip(groups, level_of, strict=True):
        y = bars_top + 0.14 * level
        lo, hi = ranks[members[0]], ranks[members[-1]]
        ax.plot([xr(lo) - 0.05, xr(hi) + 0.05], [y, y], color="black", linewidth=3.2, solid_capstyle="butt", zorder=3)

    import textwrap

    heading = title or f"Critical difference (Nemenyi, α = {alpha:g}), k = {k} methods, N = {n_datasets} data sets"
    fig.text(0.5, 1.0, "\n".join(textwrap.wrap(heading, width=int(width * 12))), ha="center", va="bottom", fontsize=9.5)
    return save_figure(fig, base, list(formats))


def write_cross_paper(root: Path, smoke: bool = False, alpha: float = ALPHA) -> list[Path]:
    """Read the run ``root/cross_paper`` (``root/cross_paper-smoke`` with ``smoke``) and
    write the ranking table, ``friedman.json`` and the critical-difference diagram into
    ``root/cross_paper_summary`` (``-smoke``); returns the written paths."""
    from lkm.files import atomic_write

    root = Path(root)
    suffix = "-smoke" if smoke else ""
    run_dir = root / f"{RUN_NAME}{suffix}"
    out = root / f"{SUMMARY_NAME}{suffix}"
    spec, records, best = _load(run_dir)
    table = _table(run_dir, spec, records, best)
    scores, dropped_methods, dropped_sets = _usable(table)
    if scores.shape[1] < 2 or scores.shape[0] < 1:
        raise LkmError(f"{run_dir}: fewer than two methods have a result on every data set "
                       f"({len(dropped_methods)} dropped: {'; '.join(f'{m}: {w}' for m, w in dropped_methods.items())}); "
                       "nothing to rank")
    out.mkdir(parents=True, exist_ok=True)
    ranking, result, order = ranking_table(scores)
    k, n = result.n_methods, result.n_datasets
    cd, q = nemenyi_cd(k, n, alpha), nemenyi_q(k, alpha)
    groups = nemenyi_groups(result.ranks, cd)

    caption = (f"Cross-paper ranking{' — SMOKE RUN (2 data sets, 3 folds, tiny grids): not evidence' if smoke else ''}: "
               f"{k} methods of the five papers on {n} shared data sets, mean accuracy (%) over "
               f"{spec.describe_protocol()}, {_inner_cv_words(spec)}; (rank on the data set, 1 = best, ties "
               "share the average rank); last row: average rank (Demšar 2006)")
    if dropped_methods:
        caption += "; left out, no result on every data set: " + "; ".join(f"{m} ({w})" for m, w in dropped_methods.items())
    if dropped_sets:
        caption += "; data sets left out: " + ", ".join(f"{d} ({w})" for d, w in dropped_sets.items())
    verdict = "reject" if result.significant(alpha) else "do not reject"
    notes = [
        f"Friedman chi²_F = {result.chi2:.2f} (df {result.df1}), p = {format_p(result.p_chi2)}; Iman–Davenport "
        f"F_F = {result.f_f:.2f} (df {result.df1}, {result.df2}), p = {format_p(result.p_f)}: {verdict} "
        f"'all methods are equivalent' at α = {alpha:g}.",
        f"Nemenyi critical difference CD = q_α·sqrt(k(k+1)/(6N)) = {q:.3f}·sqrt({k}·{k + 1}/(6·{n})) = {cd:.2f}: "
        "average ranks closer than CD are not significantly different (critical_difference.png joins them).",
    ]
    paths = write_table(ranking, out / "ranking", caption, notes)

    payload = {
        "run": run_dir.name, "spec": spec.name, "smoke": smoke, "protocol": spec.describe_protocol(),
        **result.as_dict(), "alpha": alpha, "q_alpha": q, "cd": cd, "significant": result.significant(alpha),
        "methods_by_rank": order, "datasets": list(scores.index), "nemenyi_groups": groups,
        "dropped_methods": dropped_methods, "dropped_datasets": dropped_sets,
        "reference": "J. Demšar, Statistical comparisons of classifiers over multiple data sets, JMLR 7 (2006) 1-30, Sec. 3.2.2",
    }
    paths.append(atomic_write(out / "friedman.json", json.dumps(payload, indent=1, ensure_ascii=False) + "\n"))
    title = (f"{'SMOKE RUN (not evidence) — ' if smoke else ''}Cross-paper ranking: average ranks of k = {k} methods "
             f"over N = {n} data sets (1 = best); Friedman test (Iman–Davenport F_F) p = {format_p(result.p_f)}; "
             f"bars join methods within the Nemenyi critical difference at α = {alpha:g}")
    paths += critical_difference_figure({m: result.ranks[m] for m in order}, cd, n, out / "critical_difference",
                                        alpha=alpha, title=title)
    return paths
