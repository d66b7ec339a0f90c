"""The protocol's seed for randomized estimators: the same spec gives the same numbers."""

from __future__ import annotations

from typing import Any

from lkm.methods import estimator_param_names, resolve_estimator
from lkm.spec.model import MethodSpec, Spec


def with_seed(method: MethodSpec, params: dict[str, Any], spec: Spec) -> dict[str, Any]:
    """Give randomized estimators the protocol's seed, so the same spec gives the same numbers."""
    if "random_state" in estimator_param_names(resolve_estimator(method.estimator)) and params.get("random_state") is None:
        params = {**params, "random_state": getattr(spec.protocol, "seed", 0)}
    return params
