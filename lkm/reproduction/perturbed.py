"""The fragility check: the runs an accuracy claim reads are rerun with
:data:`PERTURBATION` (training rows permuted, another BLAS thread count), restricted to
the settings the claims read (``PERTURBED`` of each paper; ``<run>-perturbed``
folders); a claim whose verdict differs between the two is labelled *fragile*."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lkm.reproduction.runs import Run, load_run
from lkm.spec import Spec, load_spec, spec_from_dict

#: The fragility check's perturbation (:class:`lkm.spec.PerturbSpec`): a seeded
#: permutation of every split's training rows, and two BLAS threads per fit (joblib's
#: workers otherwise run with one each: loky limits them to cores / jobs).
PERTURBATION = {"permute_train": 1, "blas_threads": 2}


PERTURBATION_WORDS = "permuted training rows, 2 BLAS threads"


@dataclass(frozen=True)
class Perturbed:
    """Which part of a run the fragility check reruns: ``methods`` (None: all); with
    ``selected_only`` each swept parameter keeps only the values selected on some data
    set in the plain run, plus ``extra`` values (e.g. sigma = 1 for a sensitivity claim);
    ``only`` fixes a swept parameter to the given values instead."""

    methods: tuple[str, ...] | None = None
    selected_only: bool = True
    extra: dict[str, list[Any]] = field(default_factory=dict)
    only: dict[str, list[Any]] = field(default_factory=dict)


def perturbed_spec(spec: Spec, plain: Run | None, what: Perturbed) -> Spec:
    """``spec`` with :data:`PERTURBATION`, named ``<name>-perturbed``, restricted to what
    the claims read (``what``; the selected values come from the finished ``plain``
    run), writing only its summary table."""
    data = spec.model_dump(mode="json")
    data.pop("smoke", None)
    data["name"] = f"{spec.name}-perturbed"
    data["perturb"] = dict(PERTURBATION)
    data["outputs"] = {"tables": ["summary"], "figures": [], "formats": ["png"]}
    data["paper"] = {}
    methods = [m for m in spec.methods if what.methods is None or m.name in what.methods]
    new_methods = []
    for m in methods:
        md = m.model_dump(mode="json")
        if what.selected_only:
            sweep = {}
            for p in spec.swept_params(m):
                grid = m.sweep.get(p, spec.sweep.get(p, []))
                chosen = set()
                if plain is not None and not plain.best.empty:
                    rows = plain.best[plain.best["method"] == m.name]
                    chosen = {json.dumps(r.get(p)) for r in rows["params"]}
                chosen |= {json.dumps(v) for v in what.extra.get(p, [])}
                if p in what.only:
                    chosen = {json.dumps(v) for v in what.only[p]}
                keep = [v for v in grid if json.dumps(v) in chosen] or grid
                sweep[p] = keep
            md["sweep"] = sweep
        new_methods.append(md)
    data["methods"] = new_methods
    if what.selected_only:
        data["sweep"] = {}
    if data.get("selection", {}).get("over"):
        swept = {p for m in new_methods for p in m.get("sweep", {})}
        data["selection"]["over"] = [p for p in data["selection"]["over"] if p in swept] or None
    return spec_from_dict(data, f"{spec.name} (perturbed)")


def perturbed_experiments(module: Any, root: Path, smoke: bool = False) -> list[tuple[Spec, str]]:
    """``(perturbed spec, source)`` for every run of a paper module's ``PERTURBED``,
    from its spec file and its finished plain run under ``root``."""
    out = []
    for experiment in module.SPECS:
        base = load_spec(experiment.spec)
        what = getattr(module, "PERTURBED", {}).get(base.name)
        if what is None:
            continue
        spec = load_spec(experiment.spec, smoke=smoke)
        out.append((perturbed_spec(spec, load_run(root, base.name, smoke), what), experiment.spec))
    return out
