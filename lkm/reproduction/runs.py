"""A reproduction's experiments and their finished run folders: :class:`Experiment` (one
spec a paper runs), :class:`Run` (a run folder's spec, records and selected settings,
with the paired comparisons the claims read) and the loaders of the run folders."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib.resources import files
from pathlib import Path
from typing import Any

import pandas as pd

from lkm.engine.store import RunStore
from lkm.numerics.stats import Paired
from lkm.report.aggregation import aggregate, select_best
from lkm.report.formatting import format_value
from lkm.report.registry import ReportContext
from lkm.reproduction.paired import compare, compare_scores, setting_scores, split_scores
from lkm.spec import Spec, load_spec


@dataclass(frozen=True)
class Experiment:
    """One spec of a reproduction; ``jobs`` caps its parallel workers.

    Timing experiments run with the same 2 workers as the others: each joblib worker
    gets one BLAS thread, which keeps timings stable on a shared machine (in one process
    with two BLAS threads, small solves slow down many-fold when the other core is busy).
    """

    spec: str
    jobs: int | None = None

    @property
    def name(self) -> str:
        """The spec's file stem, which is also its run folder's name."""
        return Path(self.spec).stem


#: The folder of a paper package that holds its specs (package data).
SPECS_FOLDER = "specs"


def spec_folder(package: str) -> Path:
    """The specs folder of a paper package (``lkm.papers.lpl`` -> ``.../lkm/papers/lpl/specs``)."""
    return Path(str(files(package) / SPECS_FOLDER))


def packaged_specs(package: str) -> dict[str, Path]:
    """Every spec a papers package ships, by name (its file stem): each paper
    subpackage's ``specs/`` and the package's own (:func:`discover_papers`). `lkm run
    NAME`, `lkm specs` and :func:`lkm.api.run` read these."""
    from lkm.reproduction.paper import discover_papers

    folders = [spec_folder(module.__name__) for module in discover_papers(package).values()] + [spec_folder(package)]
    return {p.stem: p for folder in folders if folder.is_dir() for p in sorted(folder.glob("*.yaml"))}


def shown_path(spec: str) -> str:
    """A shipped spec's path as a reader finds it in the source (``lkm/papers/lpl/specs/
    lpl_vs_svm.yaml``) wherever lkm is installed; any other path as given."""
    package_root = Path(str(files("lkm"))).resolve().parent  # a regular package: its folder
    try:
        return Path(spec).resolve().relative_to(package_root).as_posix()
    except ValueError:
        return spec


def experiments(package: str, *names: str) -> list[Experiment]:
    """The experiments of a paper package in run order: ``specs/<name>.yaml`` beside its code."""
    folder = spec_folder(package)
    return [Experiment(str(folder / f"{name}.yaml")) for name in names]


@dataclass
class Run:
    """A finished run folder: its spec, records and aggregates."""

    name: str
    spec: Spec
    records: pd.DataFrame
    agg: pd.DataFrame
    best: pd.DataFrame
    store: RunStore

    def best_rate(self, dataset: str, method: str, others: dict[str, Any] | None = None) -> float:
        rows = self.best[(self.best["dataset"] == dataset) & (self.best["method"] == method)]
        if others:
            rows = rows[rows["params"].map(lambda p: all(str(p.get(k)) == str(v) for k, v in others.items()))]
        return float(rows["accuracy"].iloc[0]) if not rows.empty else math.nan

    def context(self) -> ReportContext:
        """The report context of this run, for reusing an output builder's computations."""
        return ReportContext(self.store, self.spec, self.records, self.agg, self.best, {})

    @property
    def ok(self) -> pd.DataFrame:
        """Finished fits (study records left out)."""
        ok = self.records[self.records["status"] == "ok"]
        return ok[ok["kind"] != "study"] if "kind" in ok.columns else ok

    def scores(self, dataset: str, method: str, others: dict[str, Any] | None = None) -> pd.DataFrame:
        """Accuracy, n_train, n_test per split of ``method`` at its selected setting."""
        return split_scores(self.ok, self.best, dataset, method, others)

    def setting(self, dataset: str, method: str, params: dict[str, Any]) -> pd.DataFrame:
        """Accuracy, n_train, n_test per split of one parameter setting."""
        return setting_scores(self.ok, dataset, method, params)

    def compare(self, dataset: str, a: str, b: str, a_others: dict[str, Any] | None = None,
                b_others: dict[str, Any] | None = None) -> Paired:
        """Accuracy of ``a`` − ``b`` on ``dataset`` at their selected settings, paired over splits."""
        return compare(self.ok, self.best, dataset, a, b, a_others, b_others)

    def datasets(self) -> list[str]:
        return list(dict.fromkeys(self.best["dataset"])) if not self.best.empty else []

    def selected_from(self, plain: Run) -> Run:
        """This (perturbed) run with ``plain``'s selected settings instead of its own: a
        fragility check compares the same settings, not a new selection."""
        key = ["dataset", "method", "setting"]
        chosen = plain.best[key].drop_duplicates()
        best = self.agg.merge(chosen, on=key, how="inner") if not self.agg.empty else self.agg
        return Run(self.name, self.spec, self.records, self.agg, best, self.store)


    def with_methods_of(self, variant: Run) -> Run:
        """This run with the methods a reading's variant run holds taken from it (records,
        aggregates and selections): a claim is evaluated under a reading on every method it
        reads, the variant's where it has them."""
        replaced = set(variant.records["method"])
        keep = ~self.records["method"].isin(replaced)
        agg = pd.concat([self.agg[~self.agg["method"].isin(replaced)], variant.agg], ignore_index=True)
        best = pd.concat([self.best[~self.best["method"].isin(replaced)], variant.best], ignore_index=True)
        records = pd.concat([self.records[keep], variant.records], ignore_index=True)
        return Run(variant.name, self.spec, records, agg, best, self.store)


def paired_over(scores: dict[str, tuple[pd.DataFrame, pd.DataFrame]]) -> dict[str, Paired]:
    """``{dataset: paired test of a − b}`` from per-split score frames."""
    return {ds: compare_scores(a, b) for ds, (a, b) in scores.items() if len(a.index.intersection(b.index))}


def load_run(root: Path, name: str, smoke: bool = False, perturbed: bool = False) -> Run | None:
    """The run folder ``root/name`` (``name-smoke`` with ``smoke``, then ``-perturbed``
    for the fragility variant), or None if absent."""
    path = root / (f"{name}-smoke" if smoke else name)
    if perturbed:
        path = path.with_name(path.name + "-perturbed")
    if not (path / "spec.yaml").is_file():
        return None
    store = RunStore(path)
    spec_stat = (path / "spec.yaml").stat()
    key = (str(path.resolve()), spec_stat.st_size, spec_stat.st_mtime_ns, spec_stat.st_ino, store.parts_fingerprint())
    if key not in _RUNS:
        spec = load_spec(path / "spec.yaml")
        records = store.records_frame()
        if records.empty:
            return None
        agg = aggregate(records, spec)
        best = select_best(agg, spec) if not agg.empty else agg
        _RUNS[key] = Run(path.name, spec, records, agg, best, store)
        while len(_RUNS) > MAX_CACHED_RUNS:
            del _RUNS[next(iter(_RUNS))]
    run = _RUNS[key]
    return replace(run, records=run.records.copy(), agg=run.agg.copy(), best=run.best.copy())


#: Loaded runs by folder and the state of its spec and records on disk: the docs' blocks
#: and the report's sections load the same runs many times in one process.
_RUNS: dict[tuple, Run] = {}
MAX_CACHED_RUNS = 128


def run_loader(root: Path, smoke: bool) -> Callable[[str, bool], Run | None]:
    """A cached ``load(name, perturbed)`` over the run folders under ``root``."""
    cache: dict[tuple[str, bool], Run | None] = {}

    def load(name: str, perturbed: bool = False) -> Run | None:
        if (name, perturbed) not in cache:
            cache[(name, perturbed)] = load_run(root, name, smoke, perturbed)
        return cache[(name, perturbed)]

    return load


def most_chosen_setting(records: pd.DataFrame, rename: dict[str, str] | None = None) -> str:
    """The most chosen tuned setting over ``records`` (their ``info.tuned_params``), e.g.
    ``K=10, q=6.15 (10/10 splits)``; ties by the setting's text, not by the order fits
    finished; ``rename`` shortens parameter names (``{"n_neighbors": "K"}``)."""


    infos = [i if isinstance(i, dict) else {} for i in records["info"]] if "info" in records.columns else []
    counts = Counter(json.dumps(i["tuned_params"], sort_keys=True) for i in infos if "tuned_params" in i)
    if not counts:
        return "–"
    top, n = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{(rename or {}).get(k, k)}={format_value(v)}" for k, v in json.loads(top).items())
    return text if len(records) == 1 else f"{text} ({n}/{len(records)} splits)"
