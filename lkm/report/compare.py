"""`lkm compare`: rank one new classifier against the benchmark's recorded results
without refitting the others (issue 27).

The new method runs on the benchmark's exact splits: :func:`compare_spec` copies the
data sets (with their subsample), protocol, preprocessing and inner-CV folds from the
reference run's own ``spec.yaml`` and replaces the methods by the new one, so the task
ids, outer folds and inner folds are those the reference used. The reference is a local
run folder of ``cross_paper`` or, by default, the published results that ship with lkm:
``docs/runs/cross_paper`` of the results pack, every file checked against the pack's
manifest, whose sha256 is pinned in ``lkm/report/published.json`` (:func:`published_run`,
:mod:`lkm.report.pack`; ``lkm docs snapshot`` rewrites manifest and pin).

:func:`write_comparison` joins the two runs' tables and writes the ranking, the new
method's pairwise tests against each other method, its speed, and the two figures with
it drawn in colour (:func:`lkm.report.ranking.write_ranking`). A data set on which the new
method fails is recorded as failed and left out of the ranking, which says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from lkm.errors import LkmError

#: The benchmark's run folder inside a results pack.
BENCHMARK_RUN = "cross_paper"


def published_run(root: Path | None = None) -> Path:
    """The published benchmark run folder: ``cross_paper`` of the results pack that ships
    with lkm, verified against the pack's manifest and its pin (:mod:`lkm.report.pack`)."""
    from lkm.report.pack import published_pack

    pack = published_pack(root)
    if BENCHMARK_RUN not in pack.runs:
        raise LkmError(f"{pack.root}: the published results pack (version {pack.version}) has no {BENCHMARK_RUN}; "
                       "give a local run with --against results/cross_paper")
    return pack.root / BENCHMARK_RUN


def method_entry(estimator: str, name: str | None, grids: dict[str, list[Any]], cv: int, seed: int) -> dict[str, Any]:
    """The spec entry of the new method: parameters with one value are fixed, those with
    several are tuned by the reference's inner CV (``cv`` folds, ``seed``)."""
    fixed = {k: v[0] for k, v in grids.items() if len(v) == 1}
    tuned = {k: v for k, v in grids.items() if len(v) > 1}
    entry: dict[str, Any] = {"name": name or estimator.rsplit(".", 1)[-1], "estimator": estimator}
    if fixed:
        entry["params"] = fixed
    if tuned:
        entry["tune"] = {"grid": tuned, "cv": cv, "seed": seed}
    return entry


def compare_spec(reference: Path, entry: dict[str, Any]) -> Any:
    """The spec that runs ``entry`` (a method entry as in a spec's ``methods:``) on the
    reference run's data sets, protocol and preprocessing (its own spec.yaml)."""
    from lkm.spec import load_spec, spec_from_dict

    ref = load_spec(reference / "spec.yaml")
    if entry.get("name") in {m.name for m in ref.methods}:
        raise LkmError(f"{entry['name']}: a method of that name is in the benchmark already; give another with --name")
    data = ref.model_dump(mode="json", exclude={"smoke", "paper", "perturb"}, exclude_none=True)
    data.update(name=f"compare-{_slug(entry['name'])}", description=f"{entry['name']} on the splits of {ref.name}",
                methods=[entry], outputs={"tables": ["summary"], "figures": []})
    return spec_from_dict(data, f"compare {entry['name']}")


def inner_cv(reference: Path) -> tuple[int, int]:
    """The inner-CV folds and seed the reference's methods share (3 and 0 for the benchmark)."""
    from lkm.spec import load_spec

    tunes = {(m.tune.cv, m.tune.seed) for m in load_spec(reference / "spec.yaml").methods if m.tune is not None}
    return sorted(tunes)[0] if tunes else (3, 0)


def _slug(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "method"


def fit_count(spec: Any, n_splits: dict[str, int]) -> tuple[int, int]:
    """``(tasks, model fits per task)`` of the compare spec: one task per data set and
    outer fold; a tuned task fits every setting on every inner fold, then refits once."""
    tune = spec.methods[0].tune
    return sum(n_splits.values()), (tune.size * tune.cv + 1 if tune is not None else 1)


def write_comparison(new_run: Path, reference: Path, out: Path, smoke: bool = False) -> tuple[list[Path], dict[str, Any]]:
    """Rank the one method of run ``new_run`` among the methods of ``reference`` on the data
    sets both have (:func:`lkm.report.ranking.write_ranking` into ``out``)."""
    from lkm.report.ranking import (
        inner_cv_words,
        load_benchmark_run,
        scores_table,
        seconds_per_fold,
        write_ranking,
    )

    spec_new, rec_new, best_new = load_benchmark_run(new_run)
    spec_ref, rec_ref, best_ref = load_benchmark_run(reference)
    name = spec_new.methods[0].name
    new_sets = [d.id for d in spec_new.datasets]
    if [d.id for d in spec_ref.datasets] != new_sets or spec_ref.describe_protocol() != spec_new.describe_protocol():
        raise LkmError(f"{new_run}: its data sets or protocol are not those of {reference} "
                       "(run `lkm compare` again: it copies them from the reference)")
    table_ref = scores_table(reference, spec_ref, rec_ref, best_ref)
    table_new = scores_table(new_run, spec_new, rec_new, best_new)
    table = pd.concat([table_ref, table_new], axis=1)
    table.attrs["missing"] = {**table_ref.attrs.get("missing", {}), **table_new.attrs.get("missing", {})}
    seconds = pd.concat([seconds_per_fold(spec_ref, rec_ref), seconds_per_fold(spec_new, rec_new)], axis=1)
    return write_ranking(table, seconds, out, what=f"{name} against the benchmark",
                         protocol=spec_ref.describe_protocol(), tuning=inner_cv_words(spec_ref), smoke=smoke,
                         highlight=name, extra={"new_method": name, "new_run": str(new_run), "reference": str(reference),
                                                "failed_datasets": {d: w for (d, m), w in table_new.attrs.get("missing", {}).items()
                                                                    if m == name}})
