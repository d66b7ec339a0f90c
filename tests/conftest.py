"""Shared fixtures. Real data comes from the read-only mirror ../shared/datasets
(or wherever LKM_DATA_DIR points)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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
