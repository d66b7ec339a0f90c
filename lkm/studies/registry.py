"""The study registry: study functions by key (:func:`study`), what is known of each
(:class:`StudyInfo`), and the outputs that read study records. Kept apart from
:mod:`lkm.studies` so that a study module registers itself without importing its package."""

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
