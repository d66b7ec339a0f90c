"""Shared fixtures. Real data comes from the read-only mirror ../shared/datasets
(or wherever LKM_DATA_DIR points)."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--refit-shipped", action="store_true",
                     help="also re-fit every shipped record of the runs a solver route touches "
                          "(the shipped_refit tests; tens of minutes; `make check-shipped`)")


def pytest_configure(config: pytest.Config) -> None:
    """A suite started as a background job of a non-interactive shell (``cmd &``,
    ``nohup``) inherits SIGINT ignored, and so would every ``lkm`` it starts: the tests of
    Ctrl-C would fail for the shell's reason. Restore Python's own handler first."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _share_the_cores_between_workers()


def _share_the_cores_between_workers() -> None:
    """Under pytest-xdist, give each worker (and every process its tests start) its share of
    the cores for BLAS and OpenMP, as lkm gives its own workers
    (:func:`lkm.engine.workers.worker_env`); a setting already in the environment is kept.
    With two BLAS threads in each of two workers on two cores, small LAPACK calls waited
    for descheduled threads: a 175 x 175 LU took 140 ms instead of 0.5 ms. Runs before any
    test imports numpy, so OpenBLAS starts with these settings."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers < 2:
        return
    from lkm.engine.workers import threads_per_worker, worker_env

    os.environ.update(worker_env(threads_per_worker(workers)))


#: Test modules whose few tests are among the longest of the suite (tens of seconds each, in
#: subprocesses) and wait for no other worker: collected first, so that pytest-xdist hands
#: them out at the start rather than last, where the other worker would sit idle meanwhile.
LONG_FIRST = ("test_wheel.py",)


@pytest.hookimpl(trylast=True)  # after -k / -m deselected theirs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _note_smoke_keys(items)
    items[:] = sorted(items, key=lambda item: item.path.name not in LONG_FIRST)  # stable: otherwise as collected
    if config.getoption("--refit-shipped"):
        return
    skip = pytest.mark.skip(reason="re-fits every shipped record: `pytest --refit-shipped` (make check-shipped)")
    for item in items:
        if "shipped_refit" in item.keywords:
            item.add_marker(skip)


def mirror_dir() -> Path | None:
    """The dataset mirror: $LKM_DATA_DIR, else ../shared/datasets beside the repo."""
    env = os.environ.get("LKM_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared" / "datasets")
    for c in candidates:
        if (c / "MANIFEST.json").is_file():
            return c
    return None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = mirror_dir()
    if d is None:
        pytest.skip("dataset mirror not found (set LKM_DATA_DIR or place ../shared/datasets)")
    return d


@pytest.fixture(scope="session")
def smoke_root(tmp_path_factory) -> Path:
    """The folder of the smoke reproductions (`lkm reproduce KEY --smoke`), one per test
    session: under pytest-xdist the workers of a session share it (the session's base
    temporary folder), so each paper's smoke runs are made once, not once per worker."""
    root = session_base(tmp_path_factory) / "reproduce-smoke"
    root.mkdir(exist_ok=True)
    return root


def session_base(tmp_path_factory) -> Path:
    """The base temporary folder of the test session, shared by its pytest-xdist workers
    (each worker's own base is ``<session>/popen-gwN``)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(folder: Path, key: str, make, meanwhile=None, wait: bool = True) -> bool:
    """Call ``make()`` once per test session for ``key``: whichever pytest-xdist worker
    asks first runs it, the others wait on a lock in ``folder`` (the pattern pytest-xdist
    documents) and reuse what it made. A ``make`` that fails is tried again by the next
    worker that asks, so each of its tests fails with the error.

    A worker that finds ``key`` being made by another calls ``meanwhile()`` first (work
    the session needs anyway, instead of idling on the lock), then waits. With
    ``wait=False`` it returns False at once instead; True once ``key`` is made."""
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / f".{key}.done"
    with open(folder / f".{key}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when the file closes
        except BlockingIOError:
            if not wait:
                return False
            if meanwhile is not None:
                meanwhile()
            fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file():
            return True
        make()
        done.write_text("ok\n")
    return True


def made_once(tmp_path_factory, key: str, make) -> Path:
    """``<session>/shared/KEY``, a folder ``make(folder)`` fills once per test session,
    whichever worker asks first (:func:`once`); the tests read it, and copy it to edit."""
    root = session_base(tmp_path_factory) / "shared"
    folder = root / key

    def fresh() -> None:
        if folder.exists():  # left by a failed attempt
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        make(folder)

    once(root, key, fresh)
    return folder


def lkm_once(smoke_root: Path, data_dir: Path, key: str, args: list[str], meanwhile=None,
             wait: bool = True) -> bool:
    """Run `lkm ARGS` from the repository once per test session: whichever pytest-xdist
    worker asks first runs it, the others wait on a lock in ``smoke_root`` and reuse it
    (``meanwhile`` and ``wait``: :func:`once`)."""
    from typer.testing import CliRunner

    from lkm.cli import app

    def run() -> None:
        mp = pytest.MonkeyPatch()
        mp.chdir(REPO)
        mp.setenv("LKM_DATA_DIR", str(data_dir))
        try:
            res = CliRunner().invoke(app, [*args, "--jobs", "2", "--no-progress"], catch_exceptions=False)
        finally:
            mp.undo()
        assert res.exit_code == 0, res.output

    return once(smoke_root, key, run, meanwhile, wait)


#: The papers whose smoke reproductions the collected tests need (pytest_collection_modifyitems):
#: a worker waiting for one that another worker is making makes one of these meanwhile.
SMOKE_KEYS_NEEDED: list[str] = []


def _note_smoke_keys(items: list[pytest.Item]) -> None:
    """Fill :data:`SMOKE_KEYS_NEEDED` from the tests collected (and not deselected)."""
    from lkm.papers import PAPERS

    needed: set[str] = set()
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "smoke_all" in names:
            needed |= set(PAPERS)
        elif "smoke_results" in names and (key := getattr(item, "callspec", None) and item.callspec.params.get("key")):
            needed.add(key)
    SMOKE_KEYS_NEEDED[:] = [k for k in PAPERS if k in needed]


@pytest.fixture(scope="session")
def smoke_results(smoke_root: Path, data_dir: Path):
    """``run(key)`` runs `lkm reproduce KEY --smoke` into smoke_root once per session
    (:func:`lkm_once`) and returns smoke_root. A worker that finds KEY being made by another
    first makes those of :data:`SMOKE_KEYS_NEEDED` no worker has started, instead of idling."""

    def args(key: str) -> list[str]:
        return ["reproduce", key, "--smoke", "--results", str(smoke_root)]

    def meanwhile(key: str) -> None:
        for other in SMOKE_KEYS_NEEDED:
            if (smoke_root / f".{key}.done").is_file():
                return  # made meanwhile: this test need not wait longer
            if other != key:
                try:
                    lkm_once(smoke_root, data_dir, other, args(other), wait=False)
                except Exception:  # noqa: BLE001 - its own tests make it again and fail with the error
                    pass

    def run(key: str) -> Path:
        lkm_once(smoke_root, data_dir, key, args(key), meanwhile=lambda: meanwhile(key))
        return smoke_root

    return run


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Never touch the user's download cache from tests."""
    monkeypatch.setenv("LKM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "lkm-cache"))


@pytest.fixture(autouse=True)
def _restored_data_dir(monkeypatch):
    """`--data-dir` sets LKM_DATA_DIR in the process (its workers read it): put it back
    after each test, so a CLI test's mirror does not leak into the next test."""
    value = os.environ.get("LKM_DATA_DIR")
    if value is None:
        monkeypatch.delenv("LKM_DATA_DIR", raising=False)
    else:
        monkeypatch.setenv("LKM_DATA_DIR", value)


@pytest.fixture(autouse=True)
def _isolated_user_registry(tmp_path, monkeypatch):
    """Never read or write the user's own dataset registry (`lkm datasets add`) from tests."""
    monkeypatch.setenv("LKM_USER_REGISTRY", str(tmp_path / "lkm-user-registry.yaml"))


@pytest.fixture(scope="session")
def benchmark_smoke(smoke_root: Path, data_dir: Path) -> Path:
    """`lkm run cross_paper --smoke` (3 sets, 3 folds, 19 methods), made once per session
    (:func:`lkm_once`). Read only: a test copies it to edit or to write its summaries."""
    from lkm.papers import CROSS_SPEC

    run = smoke_root / "benchmark" / "cross_paper-smoke"
    lkm_once(smoke_root, data_dir, "benchmark", ["run", CROSS_SPEC, "--smoke", "--out", str(run)])
    return run
