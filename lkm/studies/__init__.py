"""Studies: experiments that measure something other than a classifier's accuracy.

A study is a function ``(X, y, **params) -> list[dict]`` registered under a key with
:func:`study`. Each returned row is a flat dict of numbers and strings (one line of a
result table). A spec lists studies under ``studies:`` (``name``, ``study`` = the key,
``params``, ``sweep``); the runner plans one task per (dataset, study, parameter
setting) on the **whole dataset** (after the spec's ``preprocessing``, fitted on all
rows) -- not per split, since a study does not train and test anything -- and stores
one record per task with ``kind: "study"`` and the rows under ``rows``.

Parameter *names* are checked against the function's signature when a spec is
loaded; parameter *values* by the study's optional ``check`` function, which raises
``ValueError`` naming the parameter. A study may name the tables and figures
(registered with ``@table`` / ``@figure`` in :mod:`lkm.report`) that read its records;
a spec that lists a study but no ``outputs`` writes those.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

StudyFn = Callable[..., list[dict[str, Any]]]

#: Study functions by the key a spec's ``studies[].study`` uses.
STUDIES: dict[str, StudyFn] = {}


@dataclass(frozen=True)
class StudyInfo:
    """What the registry knows about a study besides its function."""

    check: Callable[[dict[str, Any]], None] | None = None  # raises ValueError on a bad value
    tables: tuple[str, ...] = ()  # outputs reading this study's records
    figures: tuple[str, ...] = ()
    doc: str = field(default="")


STUDY_INFO: dict[str, StudyInfo] = {}


def study(
    key: str,
    *,
    check: Callable[[dict[str, Any]], None] | None = None,
    tables: tuple[str, ...] = (),
    figures: tuple[str, ...] = (),
) -> Callable[[StudyFn], StudyFn]:
    """Register a study function under ``key``."""

    def register(fn: StudyFn) -> StudyFn:
        STUDIES[key] = fn
        doc = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        STUDY_INFO[key] = StudyInfo(check, tuple(tables), tuple(figures), doc)
        return fn

    return register


def study_params(key: str) -> dict[str, Any]:
    """The keyword parameters of study ``key`` with their defaults (X and y left out)."""
    sig = inspect.signature(STUDIES[key])
    return {
        name: p.default
        for name, p in list(sig.parameters.items())[2:]
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }


def study_outputs() -> tuple[set[str], set[str]]:
    """Names of the tables and figures that read study records (rather than accuracy)."""
    tables = {t for info in STUDY_INFO.values() for t in info.tables}
    figures = {f for info in STUDY_INFO.values() for f in info.figures}
    return tables, figures


from lkm.studies import invariance  # noqa: E402,F401  (registers knn_invariance)

__all__ = ["STUDIES", "STUDY_INFO", "StudyInfo", "study", "study_outputs", "study_params"]
