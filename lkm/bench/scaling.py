"""``lkm bench --scaling``: how fit+predict time and memory grow with the training size n.

Times PL, LPL (exact and annoy neighbours), lkm's SVM, NPPS+SVM and scikit-learn's SVC
(the reference, same C and gamma) and KernelRidge (PL's reference,
:class:`KernelRidgeClassifier`) on three large problems, at n = 1,000, 2,000, 4,000, …
up to the largest n each method can do within a time limit:

* ``mnist-3-8``: MNIST 3 vs 8, the official training digits (11,982), tested on 2,000
  of the official test 3s and 8s (a seeded subset);
* ``mnist-even-odd``: MNIST digit parity, the 60,000 official training images, tested
  on 2,000 of the official test images;
* ``letter``: letter-recognition, 26 classes, the first 16,000 rows for training,
  2,000 of the last 4,000 for testing.

Features are scaled to [-1, 1] by the whole training pool's min and max (the papers'
preprocessing, done once so that every n sees the same features). The training set of
size n is the first n rows of one seeded permutation of the pool, so the sets are
nested. Parameters are fixed per problem (:data:`PROBLEMS`), not tuned.

Each (problem, method) runs its cells in a fresh Python process, so a crash (e.g. a
BLAS segmentation fault), a memory error or a hung cell ends that method only, and the
peak resident memory is the method's own: for each cell the child loads the arrays,
returns freed memory to the system, resets the kernel's high-water mark
(``/proc/self/clear_refs``) and reports ``VmHWM`` after predicting, i.e. the peak
during fit+predict, the process's data and libraries included. A method stops growing after a failed cell, or when its
next size is predicted (at the log-log slope measured so far, at least 1) to exceed
the time limit. Slopes are least-squares fits of log seconds on log n over the cells
with n ≥ 2,000 (smaller ones are dominated by fixed costs).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

#: Training sizes tried (each problem stops at its pool size, which is always tried last).
SIZES = (500, 1000, 2000, 4000, 8000, 16000, 20000, 32000, 60000)
#: Methods, in the order they are shown (``svm_intelex``: ``SVMClassifier(backend="intelex")``,
#: scikit-learn-intelex's SVC; its cells fail with a note where it is not installed).
METHODS = ("svc", "svm", "svm_intelex", "npps_svm", "pl", "lpl_exact", "lpl_annoy", "kernel_ridge")
#: Time ratios shown per n below each problem's table: (ours, reference, target).
RATIOS = (("svm", "svc", 1.1), ("pl", "kernel_ridge", 1.2))
#: Rows of each problem's test set.
TEST_ROWS = 2000
#: Cells below this n are left out of the slope fit.
SLOPE_MIN_N = 2000
#: Seconds one cell may take (fit+predict, process start and data loading included).
MAX_SECONDS = 300.0


@dataclass(frozen=True)
class Problem:
    """One scaling problem: the dataset, how it is split, and the fixed parameters."""

    name: str
    description: str
    sigma: float
    C: float
    npps_k: int


PROBLEMS: dict[str, Problem] = {
    p.name: p
    for p in (
        # C = 10, sigma = 10, k = 20: the setting docs/reproductions/npps.md compares at.
        Problem("mnist-3-8", "MNIST 3 vs 8 (11,982 training digits)", sigma=10.0, C=10.0, npps_k=20),
        Problem("mnist-even-odd", "MNIST even vs odd (60,000 training digits)", sigma=10.0, C=10.0, npps_k=20),
        # sigma = 1 is about sqrt(p Var / 2) of the scaled features (gamma='scale').
        Problem("letter", "letter-recognition, 26 classes (16,000 training rows)", sigma=1.0, C=10.0, npps_k=20),
    )
}


def load_problem(name: str, data_dir: str | Path | None = None) -> dict[str, np.ndarray]:
    """The problem's arrays: ``X_pool``, ``y_pool`` (the training pool in its seeded
    order, scaled to [-1, 1]), ``X_test``, ``y_test`` (:data:`TEST_ROWS` rows, same scaling)."""
    from lkm.data import load_dataset, select_classes
    from lkm.numerics.preprocessing import preprocess

    if name == "letter":
        data = load_dataset("letter-recognition", data_dir=data_dir)
        train, test = np.arange(16000), np.arange(16000, data.X.shape[0])
    else:
        data = load_dataset("mnist-even-odd" if name == "mnist-even-odd" else "mnist", data_dir=data_dir)
        if name == "mnist-3-8":
            data = select_classes(data, [3, 8])
        split = data.predefined_split
        assert split is not None  # MNIST ships its train/test split
        train = np.asarray(split["train"])
        test = np.asarray(split["test"])
    rng = np.random.default_rng(0)
    train = rng.permutation(train)
    test = np.sort(rng.choice(test, min(TEST_ROWS, test.size), replace=False))
    X, y = np.asarray(data.X, dtype=np.float64), np.asarray(data.y)
    X_pool, X_test = preprocess("scale", X[train], X[test])
    return {"X_pool": X_pool, "y_pool": y[train], "X_test": X_test, "y_test": y[test]}


class KernelRidgeClassifier:
    """PL's reference: scikit-learn's KernelRidge (rbf, gamma = 1/(2σ²), alpha = 1e-8, as
    in ``lkm bench``'s PL comparison) on ±1 targets, one column for two classes, else one
    per class; predicts the class of the largest output (the sign for two classes)."""

    def __init__(self, sigma: float, alpha: float = 1e-8) -> None:
        self.sigma = sigma
        self.alpha = alpha

    def fit(self, X: np.ndarray, y: np.ndarray) -> KernelRidgeClassifier:
        from sklearn.kernel_ridge import KernelRidge

        self.classes_ = np.unique(y)
        columns = self.classes_[1:] if self.classes_.size == 2 else self.classes_
        targets = np.where(np.asarray(y)[:, None] == columns[None, :], 1.0, -1.0)
        self.model_ = KernelRidge(kernel="rbf", gamma=1.0 / (2.0 * self.sigma**2), alpha=self.alpha)
        self.model_.fit(X, targets)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        outputs = self.model_.predict(X)
        if self.classes_.size == 2:
            return self.classes_[(outputs[:, 0] > 0).astype(int)]
        return self.classes_[np.argmax(outputs, axis=1)]


def make_estimator(method: str, problem: Problem, n: int) -> Any:
    """The estimator of ``method`` with the problem's fixed parameters."""
    from sklearn.svm import SVC

    from lkm.methods import NPPSSVM, LocalizedProjectionLearning, ProjectionLearning, SVMClassifier

    s, C = problem.sigma, problem.C
    if method == "svc":
        return SVC(C=C, gamma=1.0 / (2.0 * s * s))
    if method == "svm":
        return SVMClassifier(C=C, sigma=s)
    if method == "svm_intelex":
        return SVMClassifier(C=C, sigma=s, backend="intelex")
    if method == "npps_svm":
        return NPPSSVM(k=problem.npps_k, beta=0.5, method="fast", initial_fraction=0.1, random_state=0, C=C, sigma=s)
    if method == "pl":
        return ProjectionLearning(sigma=s)
    if method == "lpl_exact":
        return LocalizedProjectionLearning(sigma=s)
    if method == "lpl_annoy":
        return LocalizedProjectionLearning(sigma=s, neighbors="annoy", random_state=0)
    if method == "kernel_ridge":
        return KernelRidgeClassifier(sigma=s)
    raise ValueError(f"unknown scaling method {method!r}; known: {', '.join(METHODS)}")


def reset_peak_memory() -> bool:
    """Return freed heap to the system, then reset this process's resident-memory
    high-water mark (Linux ≥ 4.0); False if the reset is not possible."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    try:
        ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def status_bytes(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (e.g. VmHWM, VmRSS) in bytes."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def run_cell(arrays_path: str | Path, problem_name: str, method: str, n: int) -> dict[str, Any]:
    """Fit ``method`` on the first ``n`` pool rows and predict the test rows, in this
    process; seconds, accuracy and peak memory (run it in a fresh process: see the module doc)."""
    import resource

    problem = PROBLEMS[problem_name]
    with np.load(arrays_path) as arrays:
        X, y = np.ascontiguousarray(arrays["X_pool"][:n]), arrays["y_pool"][:n]
        X_test, y_test = arrays["X_test"], arrays["y_test"]
    estimator = make_estimator(method, problem, n)
    reset = reset_peak_memory()
    before = status_bytes("VmRSS")
    t0 = time.perf_counter()
    estimator.fit(X, y)
    t1 = time.perf_counter()
    accuracy = float(np.mean(estimator.predict(X_test) == y_test))
    t2 = time.perf_counter()
    peak = status_bytes("VmHWM") if reset else None
    if peak is None:  # ru_maxrss: kilobytes on Linux, the whole process's peak
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    info = getattr(estimator, "info_", {}) or {}
    extra = {key: info[key] for key in ("route", "n_selected", "selection_seconds", "svm_seconds") if key in info}
    return {
        "status": "ok", "fit_seconds": t1 - t0, "predict_seconds": t2 - t1, "seconds": t2 - t0,
        "accuracy": accuracy, "peak_bytes": int(peak), "data_bytes": before, "info": extra,
    }


def _sizes(pool: int, sizes: Sequence[int]) -> list[int]:
    """``sizes`` below the pool size, then the pool size itself."""
    return [s for s in sizes if s < pool] + [pool]


def loglog_slope(ns: Sequence[int], seconds: Sequence[float], min_n: int = SLOPE_MIN_N) -> float | None:
    """Least-squares slope of log(seconds) on log(n) over the points with n ≥ ``min_n``
    (None with fewer than two)."""
    points = [(math.log(n), math.log(s)) for n, s in zip(ns, seconds, strict=True) if n >= min_n and s > 0]
    if len(points) < 2:
        return None
    x, t = np.array(points).T
    return float(np.polyfit(x, t, 1)[0])


def predicted_seconds(ns: Sequence[int], seconds: Sequence[float], n: int) -> float:
    """Seconds a cell of size ``n`` should take, extrapolated from the last cell done at
    the log-log slope of all cells done (at least 1: no method gets cheaper with n)."""
    slope = max(1.0, loglog_slope(ns, seconds, min_n=0) or 1.0)
    return seconds[-1] * (n / ns[-1]) ** slope


class CellProcess:
    """A fresh interpreter that answers one JSON line for each request line written to its
    stdin: the benches' cell workers (:class:`_Worker` here, :class:`lkm.bench.cost.CellWorker`).
    One process per chain of cells keeps interpreter start-up out of the cells and lets a
    crash or a hung cell end that chain only; failures become a status, never an exception.
    The child's stderr goes to a temporary file, not a pipe: nobody reads it while cells
    run, and a pipe's 64 KiB of warnings would block the child (seen with scikit-learn's
    "Scoring failed" tracebacks)."""

    def __init__(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self.stderr_file = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        self.process = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.stderr_file, text=True, bufsize=1, env=env)

    def stderr_tail(self) -> str:
        """The last line the child wrote to stderr (at most 300 characters)."""
        self.stderr_file.seek(0)
        lines = self.stderr_file.read().strip().splitlines()
        return (lines or [""])[-1][:300]

    def stdout_pipe(self) -> IO[str]:
        """The child's stdout (opened with PIPE, so never None)."""
        stdout = self.process.stdout
        assert stdout is not None
        return stdout

    def send(self, request: str) -> dict[str, Any] | None:
        """Write one request line; the failure status if the process is gone, else None."""
        stdin = self.process.stdin
        assert stdin is not None  # opened with PIPE
        try:
            stdin.write(request + "\n")
            stdin.flush()
        except (BrokenPipeError, OSError):
            return self.failure()
        return None

    def answer(self) -> dict[str, Any]:
        """The answer line once readable (the caller waited for it), or the failure status."""
        line = self.stdout_pipe().readline()
        if not line.startswith("{"):
            return self.failure()
        return json.loads(line)

    def failure(self) -> dict[str, Any]:
        """Kill the process and say why it ended: "crashed" (a signal) or "error" (stderr's last line)."""
        proc = self.process
        proc.kill()
        proc.communicate()
        tail = self.stderr_tail()
        if proc.returncode < 0:
            return {"status": "crashed",
                    "message": f"killed by signal {-proc.returncode}" + (f": {tail}" if tail else "")}
        return {"status": "error", "message": tail or f"exit code {proc.returncode}"}

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()
        self.stderr_file.close()


class _Worker(CellProcess):
    """The cells of one (problem, method) on request: the parent writes n, the child
    answers one JSON line (:func:`run_cell`)."""

    def __init__(self, arrays_path: Path, problem: str, method: str) -> None:
        super().__init__([sys.executable, "-m", "lkm.bench.scaling", str(arrays_path), problem, method])

    def run(self, n: int, max_seconds: float) -> dict[str, Any]:
        """One cell; failures become a status, never an exception."""
        import selectors

        sent = self.send(f"{n}")
        if sent is not None:
            return sent
        with selectors.DefaultSelector() as sel:
            sel.register(self.stdout_pipe(), selectors.EVENT_READ)
            if not sel.select(timeout=max_seconds):
                self.close()
                return {"status": "timeout", "message": f"over {max_seconds:g} s"}
        return self.answer()

    def failure(self) -> dict[str, Any]:
        """As :meth:`CellProcess.failure`, with "memory" for a memory error."""
        out = super().failure()
        if out["status"] == "error" and "memory" in out["message"].lower():
            out["status"] = "memory"
        return out


def run_scaling(
    problems: Sequence[str] = tuple(PROBLEMS),
    methods: Sequence[str] = METHODS,
    sizes: Sequence[int] = SIZES,
    max_seconds: float = MAX_SECONDS,
    data_dir: str | Path | None = None,
    max_n: int | None = None,
    on_cell: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run the scaling benchmark; one dict per cell tried or skipped (see the module doc).

    Keys: problem, method, n, status ("ok", "timeout", "memory", "crashed", "error",
    "skipped"), and for "ok" fit_seconds, predict_seconds, seconds, accuracy, peak_bytes,
    data_bytes, info; otherwise message. ``max_n`` caps every pool (a quick run);
    ``on_cell`` is called after each cell.
    """
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"unknown scaling method {m!r}; known: {', '.join(METHODS)}")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lkm-scaling-") as tmp:
        for name in problems:
            if name not in PROBLEMS:
                raise ValueError(f"unknown scaling problem {name!r}; known: {', '.join(PROBLEMS)}")
            arrays: dict[str, Any] = load_problem(name, data_dir)  # Any: np.savez's stub reads ** as allow_pickle
            path = Path(tmp) / f"{name}.npz"
            np.savez(path, **arrays)
            pool = arrays["y_pool"].size if max_n is None else min(max_n, arrays["y_pool"].size)
            del arrays
            for method in methods:
                worker = _Worker(path, name, method)
                done_n: list[int] = []
                done_s: list[float] = []
                stopped: str | None = None
                for n in _sizes(pool, sizes):
                    cell: dict[str, Any] = {"problem": name, "method": method, "n": n}
                    if stopped is None and done_n:
                        predicted = predicted_seconds(done_n, done_s, n)
                        if predicted > max_seconds:
                            stopped = f"predicted {predicted:.0f} s > limit {max_seconds:g} s"
                    if stopped is not None:
                        cell.update(status="skipped", message=stopped)
                    else:
                        cell.update(worker.run(n, max_seconds))
                        if cell["status"] == "ok":
                            done_n.append(n)
                            done_s.append(cell["seconds"])
                        else:
                            stopped = f"{cell['status']} at n = {n}"
                    results.append(cell)
                    if on_cell is not None:
                        on_cell(cell)
                worker.close()
    return results


def slopes(results: Sequence[dict[str, Any]]) -> dict[tuple[str, str], float | None]:
    """Log-log slope of fit+predict seconds per (problem, method)."""
    out: dict[tuple[str, str], float | None] = {}
    for key in dict.fromkeys((r["problem"], r["method"]) for r in results):
        ok = [r for r in results if (r["problem"], r["method"]) == key and r["status"] == "ok"]
        out[key] = loglog_slope([r["n"] for r in ok], [r["seconds"] for r in ok])
    return out


def _cell_text(r: dict[str, Any]) -> str:
    if r["status"] == "ok":
        return f"{r['seconds']:.2f} s / {r['peak_bytes'] / 2**20:.0f} MiB"
    return r["status"]


def scaling_markdown(results: Sequence[dict[str, Any]]) -> str:
    """A Markdown table per problem: method × n cells (seconds / peak MiB), the slope, and
    the accuracy at the largest n done; failures and skips named, explained below."""
    lines: list[str] = []
    fitted = slopes(results)
    for name in dict.fromkeys(r["problem"] for r in results):
        rows = [r for r in results if r["problem"] == name]
        ns = sorted({r["n"] for r in rows})
        lines += [f"**{PROBLEMS[name].description}** — fit+predict seconds / peak MiB", ""]
        lines.append("| method | " + " | ".join(f"n = {n:,}" for n in ns) + " | slope | accuracy (largest n) |")
        lines.append("|---" * (len(ns) + 3) + "|")
        notes = []
        for method in dict.fromkeys(r["method"] for r in rows):
            cells = {r["n"]: r for r in rows if r["method"] == method}
            ok = [r for r in cells.values() if r["status"] == "ok"]
            slope = fitted.get((name, method))
            acc = f"{ok[-1]['accuracy']:.4f} (n = {ok[-1]['n']:,})" if ok else "–"
            text = [(_cell_text(cells[n]) if n in cells else "") for n in ns]
            lines.append(f"| {method} | " + " | ".join(text) + f" | {'–' if slope is None else f'{slope:.2f}'} | {acc} |")
            notes += [f"{method} at n = {r['n']:,}: {r['status']} ({r.get('message', '')})"
                      for r in cells.values() if r["status"] not in ("ok", "skipped")]
        lines += [""] + [f"- {note}" for note in notes] + ([""] if notes else [])
        lines += ratio_lines(rows, ns)
    return "\n".join(lines)


def ratio_lines(rows: Sequence[dict[str, Any]], ns: Sequence[int]) -> list[str]:
    """Markdown lines of the :data:`RATIOS` (ours / reference seconds) at each n both did."""
    lines = []
    for ours, reference, target in RATIOS:
        done = {(r["method"], r["n"]): r["seconds"] for r in rows if r["status"] == "ok"}
        cells = [f"{n:,}: {done[ours, n] / done[reference, n]:.2f}" for n in ns
                 if (ours, n) in done and (reference, n) in done]
        if cells:
            lines += [f"- {ours} / {reference} (target <= {target:g}): " + ", ".join(cells), ""]
    return lines


def scaling_figure(results: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Log-log seconds (top) and peak memory (bottom) against n, one column per problem."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    problems = list(dict.fromkeys(r["problem"] for r in results))
    methods = list(dict.fromkeys(r["method"] for r in results))
    tab10 = plt.get_cmap("tab10")
    assert isinstance(tab10, ListedColormap) and isinstance(tab10.colors, (list, tuple))  # a qualitative map: its ten colours
    colors = dict(zip(METHODS, tab10.colors, strict=False))
    fig, axes = plt.subplots(2, len(problems), figsize=(4.6 * len(problems), 7.2), squeeze=False, sharex="col")
    fitted = slopes(results)
    for col, name in enumerate(problems):
        top, bottom = axes[0, col], axes[1, col]
        for method in methods:
            ok = sorted((r for r in results if r["problem"] == name and r["method"] == method
                         and r["status"] == "ok"), key=lambda r: r["n"])
            if not ok:
                continue
            n = [r["n"] for r in ok]
            slope = fitted.get((name, method))
            label = method + (f" (slope {slope:.2f})" if slope is not None else "")
            style = {"color": colors.get(method), "marker": "o", "markersize": 4}
            if method == "svc":
                style.update(linestyle="--", color="black")
            top.plot(n, [r["seconds"] for r in ok], label=label, **style)
            bottom.plot(n, [r["peak_bytes"] / 2**20 for r in ok], label=method, **style)
            failed = [r for r in results if r["problem"] == name and r["method"] == method
                      and r["status"] not in ("ok", "skipped")]
            for r in failed:  # a cross at the failed size, on the line's last height
                top.plot([r["n"]], [ok[-1]["seconds"]], marker="x", markersize=7, linestyle="none",
                         color=style["color"])
                top.annotate(r["status"], (r["n"], ok[-1]["seconds"]), fontsize=7,
                             color=style["color"], ha="left", va="center", xytext=(6, 0),
                             textcoords="offset points")
        top.set_title(PROBLEMS[name].description, fontsize=10)
        for ax in (top, bottom):
            ax.set_xscale("log")
            ax.set_yscale("log")
            for axis in (ax.xaxis, ax.yaxis):  # plain numbers at 1, 2, 5 × 10^k
                axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
                axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.6g}"))
                axis.set_minor_formatter(NullFormatter())
            ax.grid(True, which="both", alpha=0.3)
        top.set_ylabel("fit + predict seconds")
        bottom.set_ylabel("peak resident MiB (data included)")
        bottom.set_xlabel("training patterns n")
        top.legend(fontsize=7, loc="upper left")
    fig.suptitle("lkm bench --scaling: time and memory against n (log-log)", fontsize=11)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


if __name__ == "__main__":  # a worker (see _Worker): one cell per n read from stdin
    os.environ.setdefault("LKM_DISTANCE_CACHE", "off")  # time the distances, not a read-back
    arrays_path, problem_name, method_name = sys.argv[1:4]
    for request in sys.stdin:
        print(json.dumps(run_cell(arrays_path, problem_name, method_name, int(request))), flush=True)
