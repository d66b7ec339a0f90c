"""Plan size: the fits a spec will run, counted from grid lengths before any data is
loaded or grid listed, and the limit on them (:data:`MAX_FITS`, ``LKM_MAX_FITS``, ``--max-fits``)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from lkm.errors import LkmError, SpecError
from lkm.spec.model import MethodSpec, Spec
from lkm.spec.names import short_repr
from lkm.spec.protocols import (
    DEFAULT_REALIZATIONS,
    HoldoutProtocol,
    KFoldProtocol,
    LearningCurveProtocol,
    RealizationsProtocol,
    SemiSupervisedProtocol,
)

#: Default limit on the fits a plan may have (override: ``LKM_MAX_FITS`` or ``--max-fits``).
MAX_FITS = 100_000


def max_fits_limit(max_fits: int | None = None) -> int:
    """The plan-size limit: ``max_fits`` if given, else ``LKM_MAX_FITS``, else :data:`MAX_FITS`."""
    if max_fits is not None:
        if isinstance(max_fits, bool) or not isinstance(max_fits, int) or max_fits < 1:
            raise SpecError(f"--max-fits: expected a positive whole number, got {short_repr(max_fits)}")
        return max_fits
    env = os.environ.get("LKM_MAX_FITS")
    if env is None or not env.strip():
        return MAX_FITS
    try:
        value = int(env.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise SpecError(f"LKM_MAX_FITS: expected a positive whole number, got {short_repr(env)}")
    return value


def split_count(spec: Spec, dataset_index: int) -> int:
    """Splits the protocol of ``spec.datasets[dataset_index]`` will draw, known before
    the data is loaded (realizations without ``count``: the registry's official number)."""
    d = spec.datasets[dataset_index]
    proto = d.protocol if d.protocol is not None else spec.protocol
    if isinstance(proto, KFoldProtocol):
        return proto.folds * proto.repeats
    if isinstance(proto, (HoldoutProtocol, SemiSupervisedProtocol)):
        return proto.repeats
    if isinstance(proto, LearningCurveProtocol):
        return len(proto.sizes) * proto.repeats
    if isinstance(proto, RealizationsProtocol):
        if proto.count is not None:
            return proto.count
        return _official_realizations(d.name) or DEFAULT_REALIZATIONS
    return 1


def _official_realizations(name: str) -> int | None:
    from lkm.data import dataset_info

    try:
        n = dataset_info(name).meta.get("official_realizations")
    except LkmError:
        return None
    return int(n) if isinstance(n, int) and n > 0 else None


def method_grid_size(spec: Spec, method: MethodSpec) -> int:
    """``len(spec.method_grid(method))``, computed without listing the combinations."""
    from lkm.methods import estimator_param_names, resolve_estimator

    try:
        names = estimator_param_names(resolve_estimator(method.estimator))
    except LkmError:  # reported by validate_semantics
        names = set(spec.sweep)
    tuned = set(method.tune.params) if method.tune else set()
    axes = {k: len(g) for k, g in spec.sweep.items() if k in names and k not in tuned}
    axes.update({k: len(g) for k, g in method.sweep.items()})
    return math.prod(axes.values())


def halving_kept(settings: int, factor: int) -> int:
    """Settings a successive-halving search (``tune.halving``) keeps for its whole-fold
    round: the best ``ceil(settings / factor)`` of the small round
    (:func:`lkm.engine.runner.fit_tuned`; settings that failed there are kept too)."""
    return math.ceil(settings / factor)


def tuned_fit_count(settings: int, folds: int, kept: int = 0) -> int:
    """Model fits of one tuned task: every setting on every inner fold, then the ``kept``
    ones again on the whole inner folds when halving ran (0 otherwise), then one refit on
    the whole training part."""
    return (settings + kept) * folds + 1


def planned_fits(spec: Spec, n_splits_per_dataset: Mapping[str, int] | None = None) -> int:
    """Tasks the spec's plan will have (what ``lkm run`` reports as fits): per dataset,
    its splits x every method's parameter settings, plus one study task per dataset and
    study setting. Computed from grid lengths, before any data is loaded or grid listed;
    ``n_splits_per_dataset`` (dataset id -> splits) replaces the protocol's estimate."""
    total = 0
    for i, d in enumerate(spec.datasets):
        given = (n_splits_per_dataset or {}).get(d.id)
        n_splits = given if given is not None else split_count(spec, i)
        per_split = sum(method_grid_size(spec, m) for m in spec.methods if m.runs_on(d.id, d.task_of))
        total += n_splits * per_split if spec.methods else 0
        total += sum(math.prod(len(g) for g in st.sweep.values()) for st in spec.studies)
    return total


def check_plan_size(spec: Spec, source: str, max_fits: int | None = None) -> int:
    """Raise a one-line SpecError when the plan has more fits than the limit (see
    :func:`max_fits_limit`), or when one method's settings x its tuning grid (each
    checked while validating) do; return the planned fits."""
    limit = max_fits_limit(max_fits)
    n = planned_fits(spec)
    if n > limit:
        raise SpecError(f"{source}: plan has {n} fits (> limit {limit}): narrow the grids or pass --max-fits {n}")
    for i, m in enumerate(spec.methods):
        settings = method_grid_size(spec, m) * (m.tune.size if m.tune else 1)
        if settings > limit:
            tuned = "tune.grid" if m.tune is None or m.tune.grid is not None else "tune.space"
            raise SpecError(
                f"{source}: methods[{i}] ({m.name}): {settings} parameter settings with its {tuned} "
                f"(> limit {limit}): narrow the grids or pass --max-fits {settings}"
            )
    return n
