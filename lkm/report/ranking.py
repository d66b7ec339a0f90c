"""The field's benchmark (issues 16 and 27): every method of the five reproduced papers
and scikit-learn baselines on every classification set of the registry, under one
protocol (``lkm/papers/specs/cross_paper.yaml``), ranked as Demšar (2006, JMLR 7)
recommends — average ranks, the Friedman test with Iman and Davenport's F_F, the
Nemenyi critical difference drawn as a critical-difference diagram — and compared pair by
pair as the field now does: Wilcoxon signed-rank with Holm's correction and Benavoli et
al.'s Bayesian signed-rank test with a 1-point ROPE (:mod:`lkm.numerics.stats`).

:func:`write_cross_paper` reads the run folder ``<root>/cross_paper`` (``-smoke`` with
``smoke``) and :func:`write_ranking` writes ``<root>/cross_paper_summary``:

- ``ranking.md/.csv/.tex``: per data set each method's mean accuracy (%) over the outer
  folds and its rank on that data set; a last row of average ranks; methods ordered by
  average rank. Gaps (:func:`complete_scores`): a method with results on fewer than half
  the data sets is left out; then the data sets on which a remaining method has no
  result are; the caption says which and why.
- ``pairwise.md/.csv/.tex``: every pair: wins/ties/losses, mean difference, Nemenyi,
  Wilcoxon and Holm-adjusted p-values, the three Bayesian probabilities, each ± its
  Monte Carlo standard error, and the verdict.
- ``speed.md/.csv/.tex`` and ``accuracy_time.png``: fit (search + refit) + predict
  seconds per outer fold at the tuned setting, against the average rank.
- ``friedman.json``: N, k, the average ranks, χ²_F and its p, F_F and its p, the
  critical difference and α, the groups the diagram joins, and how many pairs each test
  separates.
- ``critical_difference.png`` / ``.pdf``: the diagram (Demšar's Fig. 1 style).
- ``grid_edges.md/.csv/.tex`` (the benchmark only): per method its tuning budget and
  the share of its outer-fold selections at an edge of each tuned parameter's grid
  (:mod:`lkm.report.tuning`).

:mod:`lkm.report.compare` writes the same files for one new method against these.
This module reads stored records only (nothing is fitted) and imports no paper.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.errors import LkmError
from lkm.numerics.stats import (
    ALPHA,
    BAYES_DECISION,
    BAYES_MC_MARGIN,
    BAYES_NEAR_SAMPLES,
    BAYES_SAMPLES,
    ROPE,
    Friedman,
    PairComparison,
    format_p,
    friedman,
    nemenyi_cd,
    nemenyi_q,
    pairwise_comparisons,
    rank_matrix,
)
from lkm.report.aggregation import aggregate, select_best
from lkm.report.figures import FONT_PT, SMALL_PT, TITLE_PT, load_pyplot, save_figure
from lkm.report.formatting import RATE
from lkm.report.tables import write_table

#: The name of the comparison's spec (shipped as lkm/papers/specs/cross_paper.yaml) and
#: of its run folder (``results/cross_paper``).
RUN_NAME = "cross_paper"
#: Where :func:`write_cross_paper` writes, beside the run folder.
SUMMARY_NAME = "cross_paper_summary"
#: Accuracies equal to this many decimals (of a percentage) are ties: two methods that
#: make the same predictions get bit-identical means, but a mean formed in another order
#: may differ in the last bit.
TIE_DECIMALS = 9


def load_benchmark_run(run_dir: Path, task_ids: set[str] | None = None) -> tuple[Any, pd.DataFrame, pd.DataFrame]:
    """The run's spec, its records (only those of ``task_ids`` when given: the run's
    plan), and the selected (here: the one tuned) setting per data set and method."""
    from lkm.engine.store import RunStore
    from lkm.spec import load_spec

    run_dir = Path(run_dir)
    if not (run_dir / "spec.yaml").is_file():
        raise LkmError(f"{run_dir}: no run folder here (no spec.yaml); run `lkm run {RUN_NAME} --out {run_dir}` first")
    spec = load_spec(run_dir / "spec.yaml", max_fits=sys.maxsize)  # the run it describes was already allowed
    records = RunStore(run_dir).records_frame(task_ids)
    if records.empty:
        raise LkmError(f"{run_dir}: the run has no records yet; run `lkm run {RUN_NAME} --out {run_dir}`")
    agg = aggregate(records, spec)
    best = select_best(agg, spec) if not agg.empty else agg
    return spec, records, best


def ranking_gaps(spec: Any) -> list[str]:
    """What ``spec`` lacks to be ranked as a benchmark (empty: nothing): two or more data
    sets (ranks over one set are no ranking); methods; one setting per data set and method
    chosen without the test folds (tuned by inner CV, or one fixed setting: a sweep
    without ``tune:`` is selected on the test folds, as a paper's run does); a tuned
    method, whose inner CV (folds, seed) a new method copies; one outer split per fold (a
    learning curve has several training sizes)."""
    gaps = []
    if len(spec.datasets) < 2:
        gaps.append(f"{len(spec.datasets)} data set(s), a ranking needs two or more")
    if not spec.methods:
        gaps.append("no methods")
    swept = [m.name for m in spec.methods if len(spec.method_grid(m)) > 1]
    if swept:
        gaps.append(f"settings chosen on the test folds, not by inner CV (several settings without `tune:`: "
                    f"{', '.join(swept)})")
    if spec.methods and not any(m.tune is not None for m in spec.methods):
        gaps.append("no method tuned by inner CV (`tune:`), so no inner CV to copy")
    curves = sorted({d.id for d in spec.datasets if getattr(spec.protocol_for(d.id), "kind", "") == "learning_curve"})
    if curves:
        gaps.append(f"a learning-curve protocol (several training sizes) on {', '.join(curves)}")
    return gaps


def planned_splits(run_dir: Path) -> dict[str, int]:
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
    recorded: dict[Any, int] = fits.groupby("dataset")["split"].nunique().to_dict()
    expected = {d: max(int(recorded.get(d, 0)), planned.get(d, 0)) for d in set(recorded) | set(planned)}
    # per (dataset, method) cell: its failed fits, their first error, its distinct splits fitted
    ok = fits["status"] == "ok"
    failed = fits[~ok].groupby(["dataset", "method"]).size().to_dict()
    errors = fits[~ok].groupby(["dataset", "method"])["error"].first().to_dict() if "error" in fits else {}
    splits = fits[ok].groupby(["dataset", "method"])["split"].nunique().to_dict()
    out: dict[tuple[str, str], str] = {}
    for d in spec.datasets:
        for m in spec.methods:
            cell, n = (d.id, m.name), int(expected.get(d.id, 0))
            if failed.get(cell, 0):
                error = str(errors[cell]) if pd.notna(errors.get(cell)) else "error"
                out[cell] = f"{failed[cell]} of {n} folds failed: {error.splitlines()[0][:160]}"
            elif splits.get(cell, 0) < n or n == 0:
                out[cell] = f"{splits.get(cell, 0)} of {n} folds recorded"
    return out


def cross_paper_table(run_dir: Path) -> pd.DataFrame:
    """Rows = data sets, columns = methods (both in the spec's order): the mean accuracy
    (%) over the outer folds at the tuned setting. A cell is NaN unless the method has a
    successful fit on every outer fold of that data set (``attrs["missing"]``:
    ``{(dataset, method): why}``)."""
    return scores_table(Path(run_dir), *load_benchmark_run(Path(run_dir)))


def scores_table(run_dir: Path, spec: Any, records: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    """:func:`cross_paper_table` from a run already loaded (:func:`_load`)."""
    missing = _completeness(spec, records, planned_splits(run_dir))
    table = pd.DataFrame(np.nan, index=pd.Index([d.id for d in spec.datasets], name="dataset"),
                         columns=[m.name for m in spec.methods])
    r: Any  # a row of the table (pandas-stubs types itertuples' fields as any scalar)
    for r in best.itertuples():
        if (r.dataset, r.method) not in missing and r.dataset in table.index and r.method in table.columns:
            table.loc[r.dataset, r.method] = RATE * float(r.accuracy)
    table.attrs["missing"] = missing
    return table


def complete_scores(table: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str], dict[str, str]]:
    """The complete part of ``table`` (data sets × methods, NaN where a method has no
    result) that a ranking can use, and why each dropped method or data set was dropped:
    first data sets on which no method has a result; then methods with a result on fewer
    than half of the remaining data sets; then data sets on which a remaining method
    has no result (a method that fails on a few sets, such as LDCV where C·(K-1) >= d,
    costs those sets, not its place in the ranking)."""
    missing = table.attrs.get("missing", {})
    empty = [d for d in table.index if table.loc[d].isna().all()]
    dropped_sets = {d: "no method has a result (data unavailable or not run)" for d in empty}
    kept = table.drop(index=empty)
    dropped_methods = {}
    for m in kept.columns:
        gaps = [d for d in kept.index if pd.isna(kept.loc[d, m])]
        if gaps and 2 * len(gaps) > len(kept.index):
            dropped_methods[m] = (f"results on {len(kept.index) - len(gaps)} of {len(kept.index)} data sets; "
                                  + "; ".join(f"{d}: {missing.get((d, m), 'no result')}" for d in gaps[:3])
                                  + (f"; and {len(gaps) - 3} more" if len(gaps) > 3 else ""))
    kept = kept.drop(columns=list(dropped_methods))
    for d in kept.index:
        gaps = [m for m in kept.columns if pd.isna(kept.loc[d, m])]
        if gaps:
            dropped_sets[d] = "; ".join(f"{m}: {missing.get((d, m), 'no result')}" for m in gaps)
    return kept.drop(index=[d for d in kept.index if d in dropped_sets]), dropped_methods, dropped_sets


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


def inner_cv_words(spec: Any) -> str:
    folds = {m.tune.cv for m in spec.methods if m.tune is not None}
    untuned = [m.name for m in spec.methods if m.tune is None]
    words = f"each method tuned by {folds.pop()}-fold CV on the training part" if len(folds) == 1 else \
        "each method tuned by inner CV on the training part"
    return words + (f" (fixed settings: {', '.join(untuned)})" if untuned else "")


def critical_difference_figure(ranks: dict[str, float], cd: float, n_datasets: int, base: Path,
                               alpha: float = ALPHA, title: str | None = None,
                               formats: tuple[str, ...] = ("png", "pdf"), highlight: str | None = None) -> list[Path]:
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
    text_w = max(len(s) for s in label.values()) * char_w + 0.25 + (0.3 if highlight else 0.0)  # bold is wider
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

    def mark(m: str) -> dict[str, Any]:
        return {"color": "#c0392b", "fontweight": "bold"} if m == highlight else {}

    # the rank axis, ticks and numbers above it
    ax.plot([xr(1), xr(k)], [top, top], **line)
    for r in range(1, k + 1):
        ax.plot([xr(r), xr(r)], [top - 0.07, top], **line)
        ax.text(xr(r), top - 0.1, str(r), ha="center", va="bottom", fontsize=SMALL_PT)
    for half in np.arange(1.5, k, 1.0):
        ax.plot([xr(half), xr(half)], [top - 0.035, top], **line)

    # the critical difference, from rank 1, above the tick numbers
    cd_y = top - 0.5
    span = min(cd, k - 1)
    ax.plot([xr(1), xr(1 + span)], [cd_y, cd_y], color="black", linewidth=1.4)
    for x in (xr(1), xr(1 + span)):
        ax.plot([x, x], [cd_y - 0.05, cd_y + 0.05], color="black", linewidth=1.0)
    cd_text = f"CD = {cd:.2f}" + (" (wider than the axis: no two methods can differ)" if cd > k - 1 else "")
    ax.text(xr(1), cd_y - 0.09, cd_text, ha="left", va="bottom", fontsize=SMALL_PT)

    # each method: a line down from its rank, then out to its name
    for i, m in enumerate(left):
        y = first_row + row_h * i
        ax.plot([xr(ranks[m]), xr(ranks[m]), x0 - 0.1], [top, y, y], **line)
        ax.text(x0 - 0.15, y, label[m], ha="right", va="center", fontsize=FONT_PT, **mark(m))
    for i, m in enumerate(reversed(right)):
        y = first_row + row_h * i
        ax.plot([xr(ranks[m]), xr(ranks[m]), x0 + axis_w + 0.1], [top, y, y], **line)
        ax.text(x0 + axis_w + 0.15, y, label[m], ha="left", va="center", fontsize=FONT_PT, **mark(m))

    # groups not significantly different: thick bars just below the axis
    for members, level in zip(groups, level_of, strict=True):
        y = bars_top + 0.14 * level
        lo, hi = ranks[members[0]], ranks[members[-1]]
        ax.plot([xr(lo) - 0.05, xr(hi) + 0.05], [y, y], color="black", linewidth=3.2, solid_capstyle="butt", zorder=3)

    import textwrap

    heading = title or f"Critical difference (Nemenyi, α = {alpha:g}), k = {k} methods, N = {n_datasets} data sets"
    fig.text(0.5, 1.0, "\n".join(textwrap.wrap(heading, width=int(width * 12))), ha="center", va="bottom", fontsize=TITLE_PT)
    return save_figure(fig, base, list(formats))


def _p(p: float) -> str:
    """``= 0.03`` or ``< 0.001``: a p-value after the letter p."""
    text = format_p(p)
    return text if text.startswith("<") else f"= {text}"


def seconds_per_fold(spec: Any, records: pd.DataFrame) -> pd.DataFrame:
    ok = records[records["status"] == "ok"]
    if "kind" in ok.columns:
        ok = ok[ok["kind"] != "study"]
    total = ok.assign(seconds=ok["fit_seconds"].astype(float) + ok["predict_seconds"].astype(float))
    per = total.groupby(["dataset", "method"])["seconds"].mean().unstack("method")
    return per.reindex(index=[d.id for d in spec.datasets], columns=[m.name for m in spec.methods])


#: The pairwise table's Bayesian verdict column: a probability decides when it clears
#: the decision level by more than BAYES_MC_MARGIN Monte Carlo standard errors.
BAYES_COLUMN = f"Bayes (P − {BAYES_MC_MARGIN:g}·MC error ≥ {BAYES_DECISION:g})"


def _prob(p: float, se: float) -> str:
    """A posterior probability and its Monte Carlo standard error: ``0.9496 ± 0.0002``."""
    return f"{p:.4f} ± {se:.4f}"


def pairwise_table(pairs: list[PairComparison], alpha: float = ALPHA) -> pd.DataFrame:
    """One row per pair: wins/ties/losses of ``a`` against ``b``, the mean difference,
    the Nemenyi, Wilcoxon and Holm-adjusted p-values, the Bayesian probabilities with
    their Monte Carlo standard errors, and both verdicts (for ``a``)."""
    rows = []
    for c in pairs:
        se_a, se_rope, se_b = c.bayes_mcse
        holm_word = ("better" if c.mean_difference > 0 else "worse") if c.significant(alpha) else "not separated"
        rows.append({
            "a": c.a, "b": c.b, "a wins / ties / losses": f"{c.wins} / {c.ties} / {c.losses}",
            "mean a − b (points)": f"{c.mean_difference:+.2f}",
            "Nemenyi p": format_p(c.nemenyi_p) if c.nemenyi_p is not None else "–",
            "Wilcoxon p": format_p(c.wilcoxon_p), "Holm p": format_p(c.holm_p),
            f"Wilcoxon–Holm (α = {alpha:g})": holm_word,
            "P(a better)": _prob(c.p_a_better, se_a), f"P(|a − b| < {ROPE:g})": _prob(c.p_rope, se_rope),
            "P(b better)": _prob(c.p_b_better, se_b), BAYES_COLUMN: c.bayes,
        })
    return pd.DataFrame(rows)


def separated_counts(pairs: list[PairComparison], ranks: dict[str, float], cd: float,
                     alpha: float = ALPHA) -> dict[str, int]:
    """How many of the pairs each test separates: Nemenyi (average ranks at least CD
    apart), Wilcoxon–Holm (adjusted p < alpha), Bayesian (one side's probability >=
    0.95 by more than its Monte Carlo error), how many the Bayesian test calls
    practically equivalent, and how many it leaves undecided only because a probability
    lies within its Monte Carlo error of 0.95."""
    return {
        "pairs": len(pairs),
        "nemenyi": sum(abs(ranks[c.a] - ranks[c.b]) >= cd for c in pairs),
        "wilcoxon_holm": sum(c.significant(alpha) for c in pairs),
        "bayes_decided": sum(c.bayes in ("better", "worse") for c in pairs),
        "bayes_equivalent": sum(c.bayes == "equivalent" for c in pairs),
        "bayes_near_threshold": sum(c.bayes_near_threshold for c in pairs),
    }


def speed_table(seconds: pd.DataFrame, ranks: dict[str, float], order: list[str]) -> pd.DataFrame:
    """Per method (in rank order): its average rank and the median, over the ranked data
    sets, of its mean fit + predict seconds per outer fold, and the largest."""
    rows = []
    for m in order:
        col = seconds[m].dropna() if m in seconds.columns else pd.Series(dtype=float)
        rows.append({"method": m, "average rank": f"{ranks[m]:.2f}",
                     "median seconds per fold": f"{col.median():.3g}" if len(col) else "–",
                     "slowest data set": f"{col.idxmax()} ({col.max():.3g} s)" if len(col) else "–"})
    return pd.DataFrame(rows)


Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in display pixels


def _label_place(point: tuple[float, float], others: list[tuple[float, float]], width: float, height: float,
                 placed: list[Box]) -> tuple[float, float, str, Box]:
    """Where a point's label goes: the offset (dx, dy), its alignment and its box. A reader
    joins a label to the point nearest the middle of its point-side edge (its anchor). Of
    eight places around the point (right, left, above and below each side) the first that
    overlaps no placed label and whose anchor is nearer its own point than any other by a
    clear margin; when none is, the free place with the largest margin; when every place
    overlaps a label, the first."""
    px, py = point
    places = [(5.0, 3.0, "left"), (7.0, -height / 2, "left"), (5.0, -height - 2.0, "left"),  # beside: clear the marker
              (-5.0, 3.0, "right"), (-7.0, -height / 2, "right"), (-5.0, -height - 2.0, "right"),
              (5.0, 10.0, "left"), (5.0, -height - 9.0, "left")]
    best: tuple[float, tuple[float, float, str, Box]] | None = None
    first = None
    for dx, dy, ha in places:
        x0 = px + dx if ha == "left" else px + dx - width
        box = (x0, py + dy, x0 + width, py + dy + height)
        option = (dx, dy, ha, box)
        first = first or option
        if any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
            continue
        ax_, ay = (box[0] if ha == "left" else box[2]), (box[1] + box[3]) / 2
        margin = min((math.hypot(qx - ax_, qy - ay) for qx, qy in others), default=math.inf) - math.hypot(px - ax_, py - ay)
        if margin >= 4.0:
            return option
        if best is None or margin > best[0]:
            best = (margin, option)
    assert first is not None
    return best[1] if best is not None else first


def accuracy_time_figure(ranks: dict[str, float], seconds: pd.DataFrame, base: Path, title: str,
                         highlight: str | None = None, formats: tuple[str, ...] = ("png",)) -> list[Path]:
    """Average rank (1 = best, at the top) against the median fit + predict seconds per
    outer fold (log scale), one labelled point per method; ``highlight`` in colour. Each
    label takes a place around its point that overlaps no earlier label (:func:`_label_place`),
    nearer its own point than any other, so two close points cannot read as swapped."""
    import textwrap

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(8.0, 5.6))
    points = {m: (float(seconds[m].dropna().median()), r) for m, r in ranks.items()
              if m in seconds.columns and seconds[m].notna().any()}
    for m, (sec, r) in points.items():
        ax.scatter(sec, r, s=50 if m == highlight else 24, color="#c0392b" if m == highlight else "#2c3e50", zorder=3)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("median fit (tuning search + refit) + predict seconds per outer fold, over the data sets")
    ax.set_ylabel("average rank (1 = best)")
    ax.set_title("\n".join(textwrap.wrap(title, 80)))
    ax.margins(x=0.12, y=0.06)
    fig.canvas.draw()
    placed: list[Box] = []
    char_px, line_px = 0.7 * SMALL_PT * fig.dpi / 72, 1.3 * SMALL_PT * fig.dpi / 72  # SMALL_PT text, capitals
    pixels = {m: tuple(ax.transData.transform(p)) for m, p in points.items()}
    for m, (sec, r) in sorted(points.items(), key=lambda kv: kv[1][1]):
        width = len(m) * char_px * (1.15 if m == highlight else 1.0)
        others = [q for k, q in pixels.items() if k != m]
        dx, dy, ha, box = _label_place(pixels[m], others, width, line_px, placed)
        placed.append(box)
        ax.annotate(m, (sec, r), xytext=(dx, dy), textcoords="offset pixels",
                    ha=ha, va="bottom", fontsize=SMALL_PT, color="#c0392b" if m == highlight else "#2c3e50",
                    fontweight="bold" if m == highlight else "normal")
    return save_figure(fig, base, list(formats))


@dataclass
class Ranking:
    """Everything :func:`write_ranking` writes, computed (:func:`rank_methods`)."""

    scores: pd.DataFrame  # the complete part: data sets × methods, accuracy %
    dropped_methods: dict[str, str]
    dropped_sets: dict[str, str]
    table: pd.DataFrame  # ranking_table's
    friedman: Friedman
    order: list[str]  # methods by average rank
    cd: float
    q: float
    groups: list[list[str]]
    pairs: list[PairComparison]
    counts: dict[str, int]


def rank_methods(table: pd.DataFrame, where: str, alpha: float = ALPHA, highlight: str | None = None) -> Ranking:
    """Rank the methods of ``table`` (data sets × methods, accuracy %, NaN gaps) on its
    complete part and compare them pairwise: every pair, or with ``highlight`` only its
    pairs (Holm over those k − 1). ``where`` names the run in errors."""
    scores, dropped_methods, dropped_sets = complete_scores(table)
    if scores.shape[1] < 2 or scores.shape[0] < 1:
        raise LkmError(f"{where}: fewer than two methods have results on a common data set "
                       f"({len(dropped_methods)} dropped: {'; '.join(f'{m}: {w}' for m, w in dropped_methods.items())}); "
                       "nothing to rank")
    if highlight is not None and highlight not in scores.columns:
        raise LkmError(f"{highlight}: no result on enough data sets to be ranked "
                       f"({dropped_methods.get(highlight, 'no result')})")
    ranking, result, order = ranking_table(scores)
    cd, q = nemenyi_cd(result.n_methods, result.n_datasets, alpha), nemenyi_q(result.n_methods, alpha)
    wanted = ([(highlight, m) for m in order if m != highlight] if highlight is not None else
              [(a, b) for i, a in enumerate(order) for b in order[i + 1:]])
    pairs = pairwise_comparisons(scores, wanted)
    return Ranking(scores, dropped_methods, dropped_sets, ranking, result, order, cd, q,
                   nemenyi_groups(result.ranks, cd), pairs, separated_counts(pairs, result.ranks, cd, alpha))


def benchmark_summary(run_dir: Path, alpha: float = ALPHA) -> tuple[pd.DataFrame, Ranking]:
    """One row per method of the benchmark run ``run_dir``, by average rank: its average
    rank, mean accuracy over the ranked data sets, median fit + predict seconds per outer
    fold, and how many methods Wilcoxon–Holm finds it better and worse than (README's
    table, built from the records)."""
    spec, records, best = load_benchmark_run(Path(run_dir))
    r = rank_methods(scores_table(Path(run_dir), spec, records, best), str(run_dir), alpha)
    seconds = seconds_per_fold(spec, records).reindex(index=r.scores.index)
    rows = []
    for m in r.order:
        better = sum(c.significant(alpha) and ((c.a == m) == (c.mean_difference > 0)) for c in r.pairs if m in (c.a, c.b))
        worse = sum(c.significant(alpha) and ((c.a == m) != (c.mean_difference > 0)) for c in r.pairs if m in (c.a, c.b))
        rows.append({"method": m, "average rank": f"{r.friedman.ranks[m]:.2f}",
                     "mean accuracy %": f"{r.scores[m].mean():.2f}",
                     "median s per fold": f"{seconds[m].median():.3g}",
                     "Wilcoxon–Holm: better than / worse than": f"{better} / {worse}"})
    return pd.DataFrame(rows), r


def write_ranking(table: pd.DataFrame, seconds: pd.DataFrame, out: Path, *, what: str, protocol: str,
                  tuning: str, smoke: bool = False, alpha: float = ALPHA, highlight: str | None = None,
                  extra: dict[str, Any] | None = None, timing: tuple[str, str] = ("", "")) -> tuple[list[Path], dict[str, Any]]:
    """Write the ranking, pairwise and speed tables, ``friedman.json`` and the two figures
    of ``table`` (data sets × methods, accuracy %, NaN gaps; ``attrs["missing"]`` says
    why) into ``out``. With ``highlight`` (a new method, :mod:`lkm.report.compare`) only
    its pairs with every other method are tested (Holm over those k − 1) and it is drawn
    in colour; ``timing`` says on which machines the seconds were measured: ``(note under
    the speed table, its short form in the accuracy-time figure's title)``. Returns the
    paths and the friedman.json payload."""
    from lkm.files import atomic_write

    r = rank_methods(table, str(out), alpha, highlight)
    scores, dropped_methods, dropped_sets = r.scores, r.dropped_methods, r.dropped_sets
    ranking, result, order, pairs, counts = r.table, r.friedman, r.order, r.pairs, r.counts
    k, n, cd, q, groups = result.n_methods, result.n_datasets, r.cd, r.q, r.groups
    out.mkdir(parents=True, exist_ok=True)

    smoke_words = " — SMOKE RUN (few data sets, 3 folds, tiny grids): not evidence" if smoke else ""
    caption = (f"{what}{smoke_words}: {k} methods on {n} data sets, mean accuracy (%) over {protocol}, {tuning}; "
               "(rank on the data set, 1 = best, ties share the average rank); last row: average rank (Demšar 2006)")
    if dropped_methods:
        caption += "; left out, results on fewer than half the data sets: " + "; ".join(f"{m} ({w})" for m, w in dropped_methods.items())
    if dropped_sets:
        caption += "; data sets left out (a method has no result there): " + "; ".join(f"{d} ({w})" for d, w in dropped_sets.items())
    verdict = "reject" if result.significant(alpha) else "do not reject"
    notes = [
        f"Friedman chi²_F = {result.chi2:.2f} (df {result.df1}), p {_p(result.p_chi2)}; Iman–Davenport "
        f"F_F = {result.f_f:.2f} (df {result.df1}, {result.df2}), p {_p(result.p_f)}: {verdict} "
        f"'all methods are equivalent' at α = {alpha:g}.",
        f"Nemenyi critical difference CD = q_α·sqrt(k(k+1)/(6N)) = {q:.3f}·sqrt({k}·{k + 1}/(6·{n})) = {cd:.2f}: "
        "average ranks closer than CD are not significantly different (critical_difference.png joins them).",
        f"Of {counts['pairs']} pairs{' with ' + highlight if highlight else ''}, Nemenyi separates {counts['nemenyi']}, "
        f"Wilcoxon signed-rank with Holm's correction {counts['wilcoxon_holm']} (α = {alpha:g}), and the Bayesian "
        f"signed-rank test decides {counts['bayes_decided']} (P ≥ {BAYES_DECISION:g} by more than "
        f"{BAYES_MC_MARGIN:g} Monte Carlo standard errors) and calls {counts['bayes_equivalent']} practically "
        f"equivalent (ROPE ±{ROPE:g} point); {counts['bayes_near_threshold']} pair(s) have a probability within "
        f"{BAYES_MC_MARGIN:g} standard errors of {BAYES_DECISION:g} after {BAYES_NEAR_SAMPLES:,} draws and stay "
        "undecided; pairwise.md lists them.",
    ]
    paths = write_table(ranking, out / "ranking", caption, notes)
    paths += write_table(pairwise_table(pairs, alpha), out / "pairwise",
                         f"{what}{smoke_words}: {'the new method against each other' if highlight else 'every pair of methods'}"
                         f" over the {n} ranked data sets; 'a wins' counts data sets where a's accuracy is higher; "
                         "Nemenyi p from the average ranks of all methods (scikit-posthocs); Wilcoxon signed-rank p "
                         "(scipy, zero differences split) and Holm's step-down adjustment over the pairs listed "
                         f"(statsmodels); Bayesian signed-rank (Benavoli et al. 2014, baycomp's prior, {ROPE:g}-point "
                         "ROPE): the posterior probabilities that a is better, that they are within the ROPE, that b is "
                         f"better, each ± its Monte Carlo standard error sqrt(P(1 − P)/draws) (the CSV's 'std' columns; {BAYES_SAMPLES:,} "
                         f"Dirichlet draws, {BAYES_NEAR_SAMPLES:,} for a pair with a probability within "
                         f"{BAYES_MC_MARGIN:g} standard errors of {BAYES_DECISION:g}; the data sets' differences "
                         f"drawn sorted, so the order of the data sets does not matter); a verdict needs P − "
                         f"{BAYES_MC_MARGIN:g}·MC error ≥ {BAYES_DECISION:g}", [])
    paths += write_table(speed_table(seconds.reindex(index=scores.index), result.ranks, order), out / "speed",
                         f"{what}{smoke_words}: fit (tuning search + refit on the training part) + predict seconds "
                         "per outer fold, median over the ranked data sets, one worker per fit", [timing[0]] if timing[0] else [])

    payload = {
        **(extra or {}), "smoke": smoke, "protocol": protocol,
        **result.as_dict(), "alpha": alpha, "q_alpha": q, "cd": cd, "significant": result.significant(alpha),
        "methods_by_rank": order, "datasets": list(scores.index), "nemenyi_groups": groups,
        "separated_pairs": counts, "rope": ROPE, "bayes_decision": BAYES_DECISION,
        "bayes_draws": {"every pair": BAYES_SAMPLES, "near the decision level": BAYES_NEAR_SAMPLES,
                        "margin (Monte Carlo standard errors)": BAYES_MC_MARGIN},
        "dropped_methods": dropped_methods, "dropped_datasets": dropped_sets,
        "reference": "J. Demšar, Statistical comparisons of classifiers over multiple data sets, JMLR 7 (2006) 1-30, "
                     "Sec. 3.2.2; A. Benavoli, G. Corani, J. Demšar, M. Zaffalon, Time for a change, JMLR 18 (2017)",
    }
    paths.append(atomic_write(out / "friedman.json", json.dumps(payload, indent=1, ensure_ascii=False) + "\n"))
    title = (f"{'SMOKE RUN (not evidence) — ' if smoke else ''}{what}: average ranks of k = {k} methods "
             f"over N = {n} data sets (1 = best); Friedman test (Iman–Davenport F_F) p {_p(result.p_f)}; "
             f"bars join methods within the Nemenyi critical difference at α = {alpha:g}")
    paths += critical_difference_figure({m: result.ranks[m] for m in order}, cd, n, out / "critical_difference",
                                        alpha=alpha, title=title, highlight=highlight)
    paths += accuracy_time_figure({m: result.ranks[m] for m in order}, seconds.reindex(index=scores.index),
                                  out / "accuracy_time",
                                  f"{'SMOKE RUN — ' if smoke else ''}{what}: average rank against fit + predict time "
                                  f"(N = {n} data sets){'; ' + timing[1] if timing[1] else ''}", highlight=highlight)
    return paths, payload


def write_cross_paper(root: Path, smoke: bool = False, alpha: float = ALPHA) -> list[Path]:
    """Read the run ``root/cross_paper`` (``root/cross_paper-smoke`` with ``smoke``) and
    write its ranking (:func:`write_ranking`) into ``root/cross_paper_summary``
    (``-smoke``); returns the written paths."""
    root = Path(root)
    suffix = "-smoke" if smoke else ""
    run_dir = root / f"{RUN_NAME}{suffix}"
    from lkm.report.tuning import GRID_EDGE_CAPTION, GRID_EDGE_NOTES, grid_edge_table

    spec, records, best = load_benchmark_run(run_dir)
    table = scores_table(run_dir, spec, records, best)
    out = root / f"{SUMMARY_NAME}{suffix}"
    paths, _ = write_ranking(table, seconds_per_fold(spec, records), out,
                             what="The benchmark", protocol=spec.describe_protocol(), tuning=inner_cv_words(spec),
                             smoke=smoke, alpha=alpha, extra={"run": run_dir.name, "spec": spec.name})
    smoke_words = " — SMOKE RUN (few data sets, 3 folds, tiny grids): not evidence" if smoke else ""
    paths += write_table(grid_edge_table(spec, records), out / "grid_edges",
                         f"The benchmark{smoke_words}: {GRID_EDGE_CAPTION}", list(GRID_EDGE_NOTES))
    return paths
