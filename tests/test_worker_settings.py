"""A run's ``LKM_*`` settings reach its workers, also workers an earlier run started
(the pool is reused across runs with the same thread settings)."""

from __future__ import annotations

import os

import pytest

from lkm.engine.workers import run_calls


def _setting(name: str) -> str | None:
    return os.environ.get(name)


def _settings_seen(jobs: int) -> set[str | None]:
    seen: list[str | None] = []
    run_calls([(_setting, ("LKM_TEST_SETTING",)) for _ in range(4 * jobs)], jobs=jobs, on_result=seen.append)
    return set(seen)


def test_each_run_calls_gives_its_workers_the_lkm_settings_of_its_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LKM_TEST_SETTING", "first")
    assert _settings_seen(2) == {"first"}
    monkeypatch.setenv("LKM_TEST_SETTING", "second")
    assert _settings_seen(2) == {"second"}
    monkeypatch.delenv("LKM_TEST_SETTING")
    assert _settings_seen(2) == {None}
