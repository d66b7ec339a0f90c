"""Wall time of everyday `lkm` commands (`make bench-cli`): the median of N runs each.

Not a test (speed is never asserted in pytest): it prints one line per command and, with
``--write``, the table for docs/speed.md's "Command latency" section. Run it from the
repository root with the dataset mirror in $LKM_DATA_DIR; it works in a temporary folder
and never touches results/. The sweep is timed cold (a fresh folder each run: fits,
tables and figures) and recorded (the same command again: nothing to fit). `lkm report`
is timed on a copy of results/lpl_vs_svm (or docs/runs' snapshot of it).

    python scripts/bench_cli.py [-n 5] [--report-run results/lpl_vs_svm]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LKM = [sys.executable, "-m", "lkm.cli"]
SWEEP = ["sweep", "-m", "lpl", "-d", "sonar", "--sigma", "0.1:10:9", "--k", "3,7", "--no-progress"]
#: (label, command, target seconds)
COMMANDS: list[tuple[str, list[str], float]] = [
    ("lkm --help", ["--help"], 1.0),
    ("lkm methods", ["methods"], 1.0),
    ("lkm datasets list", ["datasets", "list"], 1.0),
    ("lkm sweep -m lpl -d sonar --sigma 0.1:10:9 --k 3,7 (cold)", SWEEP, 2.5),
    ("the same sweep again (recorded)", SWEEP, 2.5),
]


def timed(args: list[str], cwd: Path) -> float:
    """Wall seconds of one `lkm ARGS` (a failure stops the benchmark with its output)."""
    t0 = time.perf_counter()
    proc = subprocess.run([*LKM, *args], cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"lkm {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=5, help="runs per command (median reported)")
    default_run = next((p for p in (REPO / "results" / "lpl_vs_svm", REPO / "docs" / "runs" / "lpl_vs_svm")
                        if (p / "spec.yaml").is_file()), REPO / "results" / "lpl_vs_svm")
    ap.add_argument("--report-run", type=Path, default=default_run,
                    help="run folder whose `lkm report` is timed, on a copy (default: results/lpl_vs_svm, "
                         "else docs/runs' snapshot of it)")
    ns = ap.parse_args()
    rows: list[tuple[str, float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="lkm-bench-cli-") as tmp:
        work = Path(tmp)
        for label, args, target in COMMANDS:
            runs = []
            for _ in range(ns.n):
                if label.endswith("(cold)"):
                    shutil.rmtree(work / "results", ignore_errors=True)
                runs.append(timed(args, work))
            rows.append((label, statistics.median(runs), min(runs), target))
            print(f"{label:<62} median {rows[-1][1]:.2f} s (min {rows[-1][2]:.2f}, target < {target:g} s)", flush=True)
        if (ns.report_run / "spec.yaml").is_file():
            copy = work / "report-run"
            shutil.copytree(ns.report_run, copy)
            label = f"lkm report {ns.report_run.name} (copy)"
            runs = [timed(["report", str(copy)], work) for _ in range(ns.n)]
            rows.append((label, statistics.median(runs), min(runs), 3.0))
            print(f"{label:<62} median {rows[-1][1]:.2f} s (min {rows[-1][2]:.2f}, target < 3 s)", flush=True)
        else:
            print(f"(no {ns.report_run}/spec.yaml: `lkm report` not timed; `make reproduce-lpl` writes it)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n{platform.python_version()}, {os.cpu_count()} cores, load average {load:.1f} at the end, {ns.n} runs each\n")
    print("| command | median (s) | min (s) | target (s) |\n|---|---|---|---|")
    for label, med, low, target in rows:
        print(f"| `{label}` | {med:.2f} | {low:.2f} | < {target:g} |")


if __name__ == "__main__":
    main()
