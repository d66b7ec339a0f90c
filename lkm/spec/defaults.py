"""The embedded default spec (configs/quickstart.yaml, ad-hoc sweeps of ``lkm sweep``)."""

from __future__ import annotations

from typing import Any

from lkm.errors import SpecError, did_you_mean
from lkm.spec.schema import Spec, spec_from_dict

#: Datasets and methods of the embedded default (configs/quickstart.yaml, ad-hoc sweeps).
QUICKSTART_DATASETS = ["moons", "sklearn-breast-cancer", "sklearn-iris"]
QUICKSTART_METHODS = [("PL", "pl"), ("LPL", "lpl"), ("SVM", "svm")]


def default_spec(
    datasets: list[str] | None = None, methods: list[str] | None = None, name: str = "quickstart"
) -> Spec:
    """The embedded default: PL, LPL and SVM on offline data under 10-fold CV."""
    return spec_from_dict(default_spec_data(datasets, methods, name), "<default spec>")


def default_spec_data(
    datasets: list[str] | None = None, methods: list[str] | None = None, name: str = "quickstart",
    sweep: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The embedded default as a mapping (not validated): ``methods`` are registry keys
    (any case) or estimators' dotted paths, ``sweep`` replaces its ``{sigma: 0.1:10:5}``."""
    from lkm.methods import METHOD_PATHS

    keys = {k for _, k in QUICKSTART_METHODS}
    chosen = []
    for m in methods or [n for n, _ in QUICKSTART_METHODS]:
        key = m.lower()
        if key in METHOD_PATHS:
            chosen.append({"name": m.upper() if key in keys else m, "estimator": key})
        elif "." in m.strip(".") or ":" in m.strip(":"):  # a class's path: checked with the spec
            chosen.append({"name": m.replace(":", ".").rsplit(".", 1)[1], "estimator": m})
        else:
            raise SpecError(f"--method: unknown method {m!r}{did_you_mean(key, METHOD_PATHS)}; give a key "
                            "(`lkm methods`) or a classifier's dotted path, e.g. sklearn.neighbors.KNeighborsClassifier")
    return {
        "name": name,
        "description": "Embedded default: offline data, 10-fold CV.",
        "datasets": datasets or QUICKSTART_DATASETS,
        "preprocessing": "standardize",
        "protocol": {"kind": "kfold", "folds": 10, "seed": 0},
        "methods": chosen,
        "sweep": {"sigma": "0.1:10:5"} if sweep is None else sweep,
    }
