"""Errors a user can cause. The CLI prints them as one line, without a traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class LkmError(Exception):
    """Base class for every error a user can cause (bad spec, missing data, ...).

    The message must be one line that names the file, key path or dataset involved.
    """


class SpecError(LkmError):
    """A malformed or invalid experiment spec."""


class DataError(LkmError):
    """A dataset is unknown, unavailable, corrupt or contains invalid values."""


class DatasetUnavailable(DataError):
    """A dataset's files are missing and cannot be downloaded."""


class ChecksumError(DataError):
    """A data file does not match the sha256 recorded in the registry."""


class NotApplicable(DataError):
    """A method cannot be applied at this setting to this data, by its definition (LDCV
    with C·(K−1) ≥ d has no within-class null space). The runner records such a task as
    ``status: "n/a"`` with the message, not as a failure, and does not retry it."""


class NumericalError(LkmError, ValueError):
    """A parameter value or feature scale that float64 cannot evaluate (a kernel width
    whose square overflows, features whose squared distances overflow, non-finite
    decision values). The message names the parameter or data and its value."""


class InsufficientMemory(LkmError, MemoryError):
    """A computation would need more memory than is available, found before allocating it
    (:func:`lkm.numerics.kernels.check_memory`). The message names the problem size, the bytes
    needed and the bytes available, and where the available figure came from."""


class ParameterClipped(UserWarning):
    """A parameter asked for more than the training data holds (LPL's or NPPS's k above the
    rows, HKNN's K above d + 1, LDCV's K leaving no null space) and the estimator used the
    largest value the data takes; its ``info_`` records both. A tuning search over a wide
    range meets this on purpose, so :func:`lkm.engine.runner.fit_tuned` silences it there."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ' (did you mean 'x'?)' for the closest choice, or a list of valid choices."""
    choices = sorted(set(choices))
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    if close:
        return f" (did you mean '{close[0]}'?)"
    shown = ", ".join(choices[:12]) + (", ..." if len(choices) > 12 else "")
    return f" (choose from: {shown})"
