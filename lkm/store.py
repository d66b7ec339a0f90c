"""The run directory: append-only task records, tidy results, provenance.

Layout of a run directory::

    spec.yaml              the validated spec the run used
    provenance.json        lkm version, git commit, packages, BLAS and its threads, CPU model,
                           dataset checksums, seeds, command
    requirements.lock.txt  the installed packages, pinned (``pip install -r`` reinstalls them)
    records/part-*.jsonl   one JSON record per finished task, appended and flushed at once
    results.csv/.parquet   the tidy table of all records of the current plan
    tables/  figures/      written by lkm.report

Records are only ever appended. Each carries a deterministic ``task_id``; a rerun skips
ids already present, so a run killed at any moment (even ``kill -9``) resumes with
nothing lost and nothing duplicated. A partly written last line is ignored on reading.
Gzipped parts (``part-*.jsonl.gz``, as in the committed snapshots under ``docs/runs/``)
are read the same way.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pandas as pd

PROVENANCE_PACKAGES = [
    "lkm", "numpy", "scipy", "scikit-learn", "libsvm-official", "annoy", "pandas",
    "joblib", "matplotlib", "pydantic", "pooch", "pyyaml", "typer", "rich",
]


def task_id(payload: dict[str, Any]) -> str:
    """A short stable hash of everything that determines a task's result."""
    blob = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


class RunStore:
    """Reads and appends the records of one run directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.records_dir = self.root / "records"

    # -- setup ------------------------------------------------------------------
    def prepare(self, *, fresh: bool = False) -> None:
        """Create the directory; ``fresh`` discards earlier records of this run directory."""
        if fresh and self.records_dir.exists():
            shutil.rmtree(self.records_dir)
        self.records_dir.mkdir(parents=True, exist_ok=True)

    # -- records ----------------------------------------------------------------
    def append(self, records: Iterable[dict[str, Any]]) -> None:
        """Append records to this process's part file, flushing after each line."""
        self.records_dir.mkdir(parents=True, exist_ok=True)
        path = self.records_dir / f"part-{socket.gethostname()}-{os.getpid()}.jsonl"
        with open(path, "a+b") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() > 0:  # a line cut by a kill must not swallow the next record
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")
            for rec in records:
                fh.write((json.dumps(rec, default=_json_default) + "\n").encode())
                fh.flush()

    def iter_records(self) -> Iterable[dict[str, Any]]:
        """All complete records, first occurrence of each task id only."""
        seen: set[str] = set()
        parts = [*self.records_dir.glob("part-*.jsonl"), *self.records_dir.glob("part-*.jsonl.gz")]
        for path in sorted(parts):
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if not line.endswith("\n"):
                        continue  # cut by a kill
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    tid = rec.get("task_id")
                    if tid and tid not in seen:
                        seen.add(tid)
                        yield rec

    def completed_ids(self) -> set[str]:
        """Task ids with a successful record (failed tasks are retried on resume)."""
        return {r["task_id"] for r in self.iter_records() if r.get("status") == "ok"}

    def records_frame(self, task_ids: set[str] | None = None) -> pd.DataFrame:
        """Records as a tidy DataFrame (one row per task), optionally restricted to a plan."""
        recs = [r for r in self.iter_records() if task_ids is None or r["task_id"] in task_ids]
        if not recs:
            return pd.DataFrame()
        df = pd.DataFrame.from_records(recs)
        # One column per parameter as well, for filtering and plotting; ``params`` keeps the dict.
        params = pd.DataFrame.from_records([r.get("params") or {} for r in recs], index=df.index)
        return pd.concat([df, params.add_prefix("param_")], axis=1)

    # -- derived files ----------------------------------------------------------
    def write_results(self, df: pd.DataFrame) -> list[Path]:
        """Write the tidy results table as CSV and Parquet."""
        csv, parquet = self.root / "results.csv", self.root / "results.parquet"
        df.to_csv(csv, index=False)
        flat = df.copy()
        for col in flat.columns:  # parquet needs one type per column
            if flat[col].dtype == object:
                flat[col] = flat[col].map(lambda v: v if v is None or isinstance(v, str) else json.dumps(v, default=_json_default))
        flat.to_parquet(parquet, index=False)
        return [csv, parquet]

    # -- report freshness -------------------------------------------------------------
    def report_stamp(self, spec_yaml: str, task_ids: set[str]) -> str:
        """What the tables and figures were built from: lkm version, spec, recorded tasks."""
        h = hashlib.sha1(_pkg_version("lkm").encode() if _pkg_version("lkm") else b"")
        h.update(spec_yaml.encode())
        h.update("\n".join(sorted(self.completed_ids() & task_ids)).encode())
        return h.hexdigest()

    def report_is_current(self, stamp: str) -> bool:
        """True when the report was last built from exactly this stamp and its files exist."""
        path = self.root / "tables" / ".report-stamp"
        return path.is_file() and path.read_text().strip() == stamp

    def mark_report(self, stamp: str) -> None:
        (self.root / "tables").mkdir(parents=True, exist_ok=True)
        (self.root / "tables" / ".report-stamp").write_text(stamp + "\n")

    def write_spec(self, spec_yaml: str) -> Path:
        path = self.root / "spec.yaml"
        path.write_text(spec_yaml)
        return path

    def write_provenance(self, extra: dict[str, Any]) -> Path:
        """Record what produced the results: versions, commit, machine (CPU model, BLAS
        libraries and their thread counts in the workers that ran the fits), data
        checksums; and pin the installed packages in ``requirements.lock.txt``."""
        from lkm.environment import blas_info, cpu_info, frozen_requirements

        jobs = extra.get("jobs")
        prov = {
            "lkm_version": _pkg_version("lkm"),
            "git": git_state(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "machine": {"hostname": socket.gethostname(), "cpus": os.cpu_count()},
            "cpu": cpu_info(),
            "blas": blas_info(jobs if isinstance(jobs, int) else None),
            "requirements": "requirements.lock.txt",
            "packages": {p: _pkg_version(p) for p in PROVENANCE_PACKAGES},
            "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            **extra,
        }
        (self.root / "requirements.lock.txt").write_text(frozen_requirements())
        path = self.root / "provenance.json"
        path.write_text(json.dumps(prov, indent=2, default=_json_default) + "\n")
        return path


def git_state() -> dict[str, Any]:
    """Commit and dirty flag of the source tree lkm runs from, when it is a git checkout."""
    src = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None}
    return {"commit": commit or None, "dirty": bool(dirty)}


def _pkg_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    return str(o)
