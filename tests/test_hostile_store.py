"""Hostile inputs and faults in the run folder (issue 9, part 6 and the run-folder cases of
part 1): lkm writes only into folders it created and deletes only its own files there, one
process writes a folder at a time, malformed records are skipped and counted, a record
missing its metric is recomputed, `lkm report` never mixes spec versions, "current" means
the files exist, provenance keeps a history, and a full disk leaves results intact."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from processes import CEILING
from typer.testing import CliRunner

import lkm.engine.store
from lkm.cli import app
from lkm.engine.store import MARKER, RunStore, StoreWarning

runner = CliRunner()

TINY = textwrap.dedent("""\
    name: tiny
    datasets: [moons]
    protocol: {kind: kfold, folds: 3, seed: 0}
    methods: [{name: SVM, estimator: svm}]
    sweep: {sigma: [1.0]}
""")

HOLD_LOCK = textwrap.dedent("""\
    import sys, time
    from lkm.engine.store import RunStore
    with RunStore(sys.argv[1]).lock():
        print("locked", flush=True)
        time.sleep(float(sys.argv[2]))
""")


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def error_line(res) -> str:
    """The one line of error output (asserting there is exactly one)."""
    lines = [ln for ln in res.stderr.splitlines() if ln.strip() and not ln.startswith("warning: ")]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def spec(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


@pytest.fixture
def run_dir(spec: Path, tmp_path: Path) -> Path:
    """A finished run of the tiny spec (3 fits)."""
    out = tmp_path / "run"
    res = invoke("run", str(spec), "--out", str(out), "--no-progress")
    assert res.exit_code == 0, res.output
    return out


def hold_lock(folder: Path, seconds: float = CEILING) -> subprocess.Popen:
    """A separate process holding ``folder``'s lock (started and locked when this returns)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(folder), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


# -- ownership: --out and --fresh ------------------------------------------------------
def test_fresh_on_a_foreign_folder_refuses_and_leaves_the_users_files(spec, tmp_path):
    """Case: `--out ~/Documents --fresh` (or `name: /some/folder`) deleted a user file and
    overwrote its results.csv."""
    docs = tmp_path / "Documents"
    docs.mkdir()
    (docs / "thesis.txt").write_text("years of work")
    (docs / "results.csv").write_text("mine\n")
    (docs / "records").mkdir()
    (docs / "records" / "part-mine.jsonl").write_text("{}\n")
    before = tree(docs)
    res = invoke("run", str(spec), "--out", str(docs), "--fresh", "--no-progress")
    assert res.exit_code == 2
    line = error_line(res)
    assert str(docs) in line and "not created by lkm" in line and "--out" in line
    assert tree(docs) == before and not (docs / MARKER).exists()


def test_fresh_deletes_only_lkms_own_files(run_dir, spec):
    """Case: --fresh in an lkm folder keeps a file the user put there, and refits."""
    (run_dir / "my-notes.md").write_text("keep me")
    (run_dir / "figures" / "best.png").write_bytes(b"stale")
    res = invoke("run", str(spec), "--out", str(run_dir), "--fresh", "--no-progress")
    assert res.exit_code == 0, res.output
    assert (run_dir / "my-notes.md").read_text() == "keep me"
    assert "3 fits (0 already recorded)" in res.stdout
    assert (run_dir / "figures" / "best.png").read_bytes() != b"stale"
    assert len(list(RunStore(run_dir).iter_records())) == 3


def test_out_pointing_at_a_file_is_one_line(spec, tmp_path):
    """Case: `--out` pointing at a file gave a traceback."""
    target = tmp_path / "report.pdf"
    target.write_bytes(b"%PDF user file")
    res = invoke("run", str(spec), "--out", str(target), "--no-progress")
    assert res.exit_code == 2
    line = error_line(res)
    assert str(target) in line and "is a file" in line
    assert target.read_bytes() == b"%PDF user file"


def test_an_empty_existing_folder_is_used_and_marked(spec, tmp_path):
    """Case: an existing empty folder as --out is fine (it gets lkm's marker)."""
    out = tmp_path / "empty"
    out.mkdir()
    res = invoke("run", str(spec), "--out", str(out), "--no-progress")
    assert res.exit_code == 0, res.output
    assert json.loads((out / MARKER).read_text())["created_at"]


def test_a_run_folder_from_before_markers_is_adopted(run_dir, spec):
    """Case: results/<name>/ written by an lkm without markers still resumes."""
    (run_dir / MARKER).unlink()
    res = invoke("run", str(spec), "--out", str(run_dir), "--no-progress")
    assert res.exit_code == 0, res.output
    assert "3 already recorded" in res.stdout and (run_dir / MARKER).is_file()


# -- the lock -------------------------------------------------------------------------
def test_a_second_run_on_a_locked_folder_exits_2_naming_the_holder(run_dir, spec):
    """Case: two concurrent runs on one folder did all the work twice, with no lock or warning."""
    proc = hold_lock(run_dir)
    try:
        before = tree(run_dir)
        res = invoke("run", str(spec), "--out", str(run_dir), "--no-progress")
        assert res.exit_code == 2
        line = error_line(res)
        assert f"is being written by pid {proc.pid} (" in line and "since " in line
        assert str(run_dir) in line and "another --out" in line
        assert tree(run_dir) == before  # nothing written, not even spec.yaml or plan.json
        res = invoke("report", str(run_dir))  # a report writes too: it waits its turn
        assert res.exit_code == 2 and f"pid {proc.pid}" in error_line(res)
    finally:
        proc.kill()
        proc.wait(timeout=CEILING)


def test_a_lock_left_by_a_killed_process_does_not_block(run_dir, spec):
    """Case: kill -9 of the writing process; its lock file stays but the lock is gone."""
    proc = hold_lock(run_dir)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=CEILING)
    assert str(proc.pid) in (run_dir / lkm.engine.store.LOCK_FILE).read_text()  # the stale file is there
    res = invoke("run", str(spec), "--out", str(run_dir), "--no-progress")
    assert res.exit_code == 0, res.stderr
    assert "3 already recorded" in res.stdout


# -- records --------------------------------------------------------------------------
def test_lines_that_are_not_record_objects_are_skipped_with_one_counted_warning(tmp_path):
    """Case: a record line that is valid JSON but not an object crashed every later run."""
    store = RunStore(tmp_path / "r")
    store.prepare()
    store.append([{"task_id": "a", "status": "ok", "accuracy": 0.5}])
    part = next(store.records_dir.glob("part-*.jsonl"))
    with open(part, "a") as fh:
        fh.write('[1, 2]\n"text"\n42\nnull\n{"status": "ok"}\n{"task_id": ["x"]}\n{"task_id": "p", "params": [1]}\n')
    store.append([{"task_id": "b", "status": "ok", "accuracy": 0.75}])
    with pytest.warns(StoreWarning) as caught:
        assert store.completed_ids() == {"a", "b"}
    assert [str(w.message) for w in caught] == [f"{part}: 7 malformed lines skipped"]
    assert set(store.records_frame()["task_id"]) == {"a", "b"}


@pytest.mark.parametrize("enabled", [True, False])
def test_reading_records_leaves_the_garbage_collector_as_it_found_it(tmp_path, enabled):
    """The records are parsed with the cyclic collector paused (a speed-up): afterwards it
    runs again if it ran before, and stays off for a caller who had turned it off, also
    when a part cannot be read."""
    import gc

    store = RunStore(tmp_path / "r")
    store.prepare()
    store.append([{"task_id": "a", "status": "ok", "accuracy": 0.5, "errors": [[1, "x"], [2, "y"]]}])
    (store.records_dir / "part-cut.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00")  # a gzip header, then nothing
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with pytest.warns(StoreWarning):
            records = list(store.iter_records())
        assert gc.isenabled() is enabled
        assert records == [{"task_id": "a", "status": "ok", "accuracy": 0.5, "errors": [[1, "x"], [2, "y"]]}]
    finally:
        gc.enable() if was else gc.disable()


def test_a_cut_line_inside_a_part_is_counted_and_the_run_resumes(run_dir, spec):
    """Case: a truncated (invalid JSON) line in the middle of a part, as a kill and a
    reused pid leave it: skipped and counted, the other records kept, the run goes on."""
    part = next((run_dir / "records").glob("part-*.jsonl"))
    lines = part.read_text().splitlines(keepends=True)
    part.write_text(lines[0] + lines[1][: len(lines[1]) // 2] + "\n" + lines[2])
    with pytest.warns(StoreWarning, match="1 malformed line skipped"):
        assert len(RunStore(run_dir).completed_ids()) == 2
    res = invoke("run", str(spec), "--out", str(run_dir), "--no-progress")
    assert res.exit_code == 0, res.stderr
    assert "3 fits (2 already recorded)" in res.stdout
    assert len(RunStore(run_dir).completed_ids()) == 3


def test_an_ok_record_without_its_accuracy_is_recomputed(run_dir, spec):
    """Case: a record marked ok without an accuracy was never recomputed."""
    part = next((run_dir / "records").glob("part-*.jsonl"))
    recs = [json.loads(line) for line in part.read_text().splitlines()]
    del recs[0]["accuracy"]
    part.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert len(RunStore(run_dir).completed_ids()) == 2
    res = invoke("run", str(spec), "--out", str(run_dir), "--no-progress")
    assert res.exit_code == 0, res.stderr
    assert "3 fits (2 already recorded)" in res.stdout
    frame = RunStore(run_dir).records_frame()
    assert len(frame) == 3 and frame["accuracy"].notna().all()  # the recomputed record wins


# -- lkm report: one spec version, current means the files exist ------------------------
def test_report_refuses_a_spec_edited_after_the_run(run_dir):
    """Case: spec.yaml edited (folds 3→5), then `lkm report` captioned 3-fold numbers as 5-fold."""
    spec_file = run_dir / "spec.yaml"
    spec_file.write_text(spec_file.read_text().replace("folds: 3", "folds: 5"))
    before = tree(run_dir)
    res = invoke("report", str(run_dir))
    assert res.exit_code == 2
    line = error_line(res)
    assert f"{spec_file} changed since the run (protocol.folds 3→5)" in line and "rerun `lkm run" in line
    assert tree(run_dir) == before


def test_report_refuses_a_run_folder_without_plan_json(run_dir):
    """Case: deleting plan.json made `lkm report` mix the records of two spec versions."""
    (run_dir / "plan.json").unlink()
    before = tree(run_dir)
    res = invoke("report", str(run_dir))
    assert res.exit_code == 2
    line = error_line(res)
    assert f"{run_dir / 'plan.json'}: missing" in line and "rerun `lkm run" in line
    assert tree(run_dir) == before


def test_report_of_an_unchanged_run_rebuilds_and_is_current(run_dir, spec):
    """The refusals above do not hit a clean folder; a report marks the tables current."""
    (run_dir / "tables" / "summary.md").unlink()
    res = invoke("report", str(run_dir))
    assert res.exit_code == 0, res.stderr
    assert (run_dir / "tables" / "summary.md").is_file()
    res = invoke("run", str(spec), "--out", str(run_dir), "--no-progress")
    assert "are current" in res.stdout


def test_a_deleted_figure_is_not_current_and_is_rebuilt(run_dir, spec):
    """Case: deleted figures were reported as "current"."""
    (run_dir / "figures" / "best.png").unlink()
    res = invoke("run", str(spec), "--out", str(run_dir), "--no-progress")
    assert res.exit_code == 0, res.stderr
    assert "are current" not in res.stdout
    assert (run_dir / "figures" / "best.png").is_file()
    res = invoke("run", str(spec), "--out", str(run_dir), "--no-progress")
    assert "are current" in res.stdout


def test_provenance_keeps_the_earlier_runs_after_a_rerun_with_nothing_to_do(run_dir, spec):
    """Case: a rerun with nothing to do overwrote provenance.json."""
    first = json.loads((run_dir / "provenance.json").read_text())
    assert first["history"] == [] and first["tasks"]["ran"] == 3
    res = invoke("run", str(spec), "--out", str(run_dir), "--no-progress")
    assert res.exit_code == 0, res.stderr
    latest = json.loads((run_dir / "provenance.json").read_text())
    assert latest["tasks"]["ran"] == 0 and len(latest["history"]) == 1
    earlier = latest["history"][0]
    assert earlier["tasks"] == first["tasks"] and earlier["started_at"] == first["started_at"]
    assert earlier["command"] == first["command"] and earlier["git_commit"] == first["git"]["commit"]


# -- faults while writing ------------------------------------------------------------------
def test_a_full_disk_while_writing_tables_is_one_line_and_keeps_results_csv(run_dir, monkeypatch):
    """Case: a full disk gave 25 lines of traceback and left a truncated results.csv."""
    before = tree(run_dir)
    real_replace = os.replace

    def full_disk(src, dst, *args, **kwargs):
        if str(dst).startswith(str(run_dir)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", full_disk)
    res = invoke("report", str(run_dir))
    assert res.exit_code == 2
    line = error_line(res)
    assert line == f"error: cannot write {run_dir / 'results.csv'}: No space left on device"
    after = tree(run_dir)
    assert not [name for name in after if lkm.engine.store.TMP_PREFIX in name]  # no temporary left behind
    assert {k: v for k, v in after.items() if k != lkm.engine.store.LOCK_FILE} == \
        {k: v for k, v in before.items() if k != lkm.engine.store.LOCK_FILE}  # results.csv, records intact


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    """A writer that fails half-way leaves the previous file, and no temporary."""
    target = tmp_path / "results.csv"
    target.write_text("a,b\n1,2\n")

    def half(tmp: Path) -> None:
        tmp.write_text("a,")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(lkm.engine.store.LkmError, match="cannot write .*results.csv: No space left on device"):
        lkm.engine.store.atomic_save(target, half)
    assert target.read_text() == "a,b\n1,2\n" and sorted(p.name for p in tmp_path.iterdir()) == ["results.csv"]
