"""The machine and software a run used, for provenance.json and the run's lock file.

- :func:`blas_info`: the BLAS / OpenMP libraries loaded in this process (threadpoolctl),
  with versions and thread counts, and the same as seen inside lkm's worker processes,
  which get their own limit (``max(1, cpu_count // jobs)``, :mod:`lkm.engine.workers`).
- :func:`cpu_info`: CPU model (``/proc/cpuinfo`` "model name", else :mod:`platform`),
  logical CPUs and the CPUs this process may use.
- :func:`frozen_requirements`: ``pip freeze``-style pins of every installed distribution
  (``name==version``), from :mod:`importlib.metadata`; editable or direct-URL installs
  (lkm itself in a checkout) are comments, as ``pip freeze --exclude-editable`` leaves
  them out, so ``pip install -r`` of the result reinstalls the same versions.
"""

from __future__ import annotations

import json
import os
import platform
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

#: pip freeze leaves these out too (packaging tools, not the run's software).
_FREEZE_SKIP = {"pip", "setuptools", "wheel", "distribute"}


def _pools() -> list[dict[str, Any]]:
    # LIBSVM's OpenMP runtime (the system libgomp): loaded here so that this process and
    # a fresh worker list the same libraries, whatever else has been imported before.
    import libsvm.svm  # noqa: F401
    import numpy  # noqa: F401  (threadpoolctl lists only libraries already loaded)
    import scipy.linalg  # noqa: F401
    import sklearn.utils  # noqa: F401  (its OpenMP runtime)
    from threadpoolctl import threadpool_info

    return [{
        "library": p.get("internal_api"), "api": p.get("user_api"), "version": p.get("version"),
        "num_threads": int(p["num_threads"]), "file": Path(p.get("filepath") or "").name,
        "threading_layer": p.get("threading_layer"), "architecture": p.get("architecture"),
    } for p in threadpool_info()]


def _worker_threads(jobs: int) -> list[dict[str, Any]]:
    """The pools seen inside the ``jobs`` workers the runner uses (:mod:`lkm.engine.workers`; reused)."""
    from lkm.engine.workers import run_calls

    per_worker: list[list[dict[str, Any]]] = []
    run_calls([(_pools, ())] * jobs, jobs=jobs, on_result=per_worker.append)
    return per_worker[0]


def blas_info(jobs: int | None = None) -> dict[str, Any]:
    """BLAS/OpenMP libraries, versions and thread counts in this process and, for
    ``jobs`` given, inside lkm's worker processes (where the fits ran)."""
    main = _pools()
    info: dict[str, Any] = {"libraries": main}
    if jobs is not None:
        try:
            workers = _worker_threads(jobs if jobs > 0 else os.cpu_count() or 1)
        except Exception as exc:  # noqa: BLE001 - provenance must not fail a finished run
            info["worker_threads"] = f"not measured: {exc}"
        else:
            info["worker_threads"] = {f"{p['library']} ({p['file']})": p["num_threads"] for p in workers}
    else:
        info["worker_threads"] = {f"{p['library']} ({p['file']})": p["num_threads"] for p in main}
    return info


def cpu_info() -> dict[str, Any]:
    """CPU model, logical CPUs and the CPUs this process may run on."""
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    model = model or platform.processor() or platform.machine() or None
    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    return {"model": model, "architecture": platform.machine(), "logical_cpus": os.cpu_count(), "usable_cpus": usable}


#: :func:`prefetch_provenance`'s result, taken by the next :func:`frozen_requirements`.
_prefetched: dict[str, str] = {}


def prefetch_provenance() -> None:
    """Do now what recording provenance costs regardless of the run (reading ~200
    installed distributions' metadata, loading LIBSVM's OpenMP runtime): a command calls
    this in a thread while its workers fit, and the next :func:`frozen_requirements`
    returns the pins read here."""
    _pools()
    _prefetched["requirements"] = _read_requirements()


def frozen_requirements() -> str:
    """``pip freeze``-style pins of every installed distribution, sorted by name."""
    prefetched = _prefetched.pop("requirements", None)
    return prefetched if prefetched is not None else _read_requirements()


def _read_requirements() -> str:
    pins, notes = {}, {}
    for dist in distributions():
        name = dist.metadata["Name"]
        if not name or name.lower() in _FREEZE_SKIP:
            continue
        direct = dist.read_text("direct_url.json")
        if direct:
            url = json.loads(direct)
            editable = url.get("dir_info", {}).get("editable", False)
            notes[name.lower()] = f"# {name}=={dist.version} ({'editable' if editable else 'direct'} install from {url.get('url')})"
        else:
            pins[name.lower()] = f"{name}=={dist.version}"
    # a checkout's stray *.egg-info shadows the editable install's metadata: the note wins
    lines = [pins[k] for k in sorted(pins) if k not in notes] + [notes[k] for k in sorted(notes)]
    return "\n".join(lines) + "\n"
