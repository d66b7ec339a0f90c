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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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


def once(folder: Path, key: str, make) -> None:
    """Call ``make()`` once per test session for ``key``: whichever pytest-xdist worker
    asks first runs it, the others wait on a lock in ``folder`` (the pattern pytest-xdist
    documents) and reuse what it made. A ``make`` that fails is tried again by the next
    worker that asks, so each of its tests fails with the error."""
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / f".{key}.done"
    with open(folder / f".{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if done.is_file():
            return
        make()
        done.write_text("ok\n")


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


def lkm_once(smoke_root: Path, data_dir: Path, key: str, args: list[str]) -> None:
    """Run `lkm ARGS` from the repository once per test session: whichever pytest-xdist
    worker asks first runs it, the others wait on a lock in ``smoke_root`` and reuse it."""
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

    once(smoke_root, key, run)


@pytest.fixture(scope="session")
def smoke_results(smoke_root: Path, data_dir: Path):
    """``run(key)`` runs `lkm reproduce KEY --smoke` into smoke_root once per session
    (:func:`lkm_once`) and returns smoke_root."""

    def run(key: str) -> Path:
        lkm_once(smoke_root, data_dir, key, ["reproduce", key, "--smoke", "--results", str(smoke_root)])
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
