"""What the HTML page and report.md both show, as text (each template marks it up): the
settings and data versions of a run, the Friedman test, the environment of the runs;
links dropped from Markdown text."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from lkm.reproduction.site.tables import DASH, Table
from lkm.reproduction.site.views import Site, duration, provenance_seconds

TITLE = "Local kernel methods: five papers reproduced"
#: The templates of both renderings, the page's stylesheet and script (package data).
TEMPLATES = Path(__file__).with_name("templates")


class Setting(NamedTuple):
    """One line of a run's settings: a label, its text and whether the text is code."""

    label: str
    text: str
    code: bool = False


def strip_links(text: str) -> str:
    """Markdown links and images as their text only: the report never links outside itself."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)


def datasets_rows(prov: dict[str, Any]) -> list[list[str]]:
    """One row per dataset name and file set (a paper's many binary tasks of one set: one row)."""
    groups: dict[tuple, list[str]] = {}
    info: dict[tuple, dict[str, Any]] = {}
    for ds_id, d in (prov.get("datasets") or {}).items():
        if not isinstance(d, dict) or "unavailable" in d:
            continue
        files = tuple((f.get("name", ""), f.get("sha256") or "") for f in d.get("files") or [] if isinstance(f, dict))
        key = (d.get("name", ds_id), files)
        groups.setdefault(key, []).append(str(ds_id))
        info.setdefault(key, d)
    rows = []
    for key, ids in groups.items():
        d = info[key]
        name = key[0] + (f" ({len(ids)} tasks)" if len(ids) > 1 else "")
        listed = "; ".join(f"{n} sha256 {s}" if s else n for n, s in key[1]) or d.get("source", "")
        rows.append([name, f"{d.get('rows', '')} × {d.get('features', '')}", listed])
    return rows


def datasets_table(prov: dict[str, Any]) -> Table:
    """The data versions of a run (:func:`datasets_rows`) as a table."""
    return Table("datasets", "data versions", ["dataset", "rows × features", "files"], datasets_rows(prov))


def settings_pairs(prov: dict[str, Any], perturbed: dict[str, Any] | None) -> list[Setting]:
    """A run's settings (its provenance) and its fragility rerun."""
    git = prov.get("git") or {}
    hist = [h for h in prov.get("history") or [] if isinstance(h, dict)]
    pairs = [
        Setting("command", str(prov.get("command", DASH)), True),
        Setting("spec", str(prov.get("spec_source", DASH)), True),
        Setting("started", str(prov.get("started_at", DASH))),
        Setting("wall time", f"{duration(float(prov.get('seconds') or 0))} this run"
                + (f"; {duration(provenance_seconds(prov))} with {len(hist)} earlier run(s)" if hist else "")),
        Setting("jobs", str(prov.get("jobs", DASH) if prov.get("jobs") is not None else "cluster" if prov.get("cluster") else DASH)),
        Setting("seeds", json.dumps(prov.get("seeds", {}))),
        Setting("fits", ", ".join(f"{k} {v}" for k, v in (prov.get("tasks") or {}).items())),
        Setting("commit", f"{str(git.get('commit') or DASH)[:12]}{' (uncommitted changes)' if git.get('dirty') else ''}"),
    ]
    if perturbed is not None:
        state = (f"{perturbed['name']}/, {duration(perturbed['seconds'])}" if perturbed["exists"]
                 else f"{perturbed['name']}/ not run yet")
        pairs.append(Setting("fragility rerun", state))
    return pairs


def friedman_pairs(friedman: dict[str, Any]) -> list[Setting]:
    """The cross-paper ranking's friedman.json, one line per key."""
    def fmt(v: Any) -> str:
        if isinstance(v, bool) or v is None:
            return {True: "yes", False: "no", None: DASH}[v]
        if isinstance(v, float):
            return f"{v:.4g}"
        if isinstance(v, dict | list) and not v:
            return DASH
        if isinstance(v, dict):
            return ", ".join(f"{k} {fmt(x)}" for k, x in v.items())
        if isinstance(v, list):
            return ", ".join(f"[{fmt(x)}]" if isinstance(x, list) else fmt(x) for x in v)
        return str(v)
    return [Setting(str(k), fmt(v)) for k, v in friedman.items()]


def _versions(items: list[tuple[str, int]]) -> str:
    if not items:
        return DASH
    if len(items) == 1:
        return items[0][0]
    return "; ".join(f"{v} ({n} runs)" for v, n in items)


def environment_rows(site: Site) -> tuple[list[Setting], Table, Table, Table]:
    """The environment section: its settings, then the package, BLAS and wall time tables."""
    env = site.environment
    now = env["now"] or {}
    pairs = [
        Setting("runs read", str(env["runs"])),
        Setting("commit of the runs", _versions(env["commits"])),
        Setting("commit now", f"{str(now.get('commit') or DASH)[:12]}{' (uncommitted changes)' if now.get('dirty') else ''}"),
        Setting("lkm", _versions(env["lkm_version"])),
        Setting("Python", _versions(env["python"])),
        Setting("platform", _versions(env["platform"])),
        Setting("CPU", _versions(env["cpu"])),
        Setting("BLAS threads per worker", ", ".join(f"{k}: {v}" for k, v in env["worker_threads"].items()) or DASH),
    ]
    packages = Table("packages", "package versions", ["package", "version"],
                     [[k, _versions(v)] for k, v in env["packages"].items()])
    blas = Table("blas", "BLAS and OpenMP libraries (newest run)", ["library", "api", "version", "threading", "architecture", "file"],
                 [[str(lib.get(k) or DASH) for k in ("library", "api", "version", "threading_layer", "architecture", "file")]
                  for lib in env["blas"]])
    total = sum(env["seconds"].values())
    wall = Table("wall", "wall time of the recorded runs (each run folder's provenance and its history, fragility reruns included)",
                 ["paper", "wall time"],
                 [[p.key, duration(env["seconds"][p.key]) if p.key in env["seconds"] else f"{DASH} (not run yet)"]
                  for p in site.papers]
                 + ([["cross-paper", duration(env["seconds"]["cross-paper"])]] if "cross-paper" in env["seconds"] else [])
                 + [["all", duration(total)]])
    return pairs, packages, blas, wall
