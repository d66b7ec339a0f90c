"""`lkm sweep` and run folders (issue 10): every option of `lkm sweep --help` parses (bare
grid options included), command-line grids are the whole sweep, a parameter a method
ignores is refused, sweeps never share a folder, a different spec never runs into an
old run's folder, every run ends with the paths of its main outputs, progress is printed
as plain lines when the output is not a terminal, and help text is printed as written."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import typer
from cli_output import error_line
from rich._emoji_codes import EMOJI
from typer.testing import CliRunner

from lkm.cli import app
from lkm.cli.running import FitProgress, progress_line
from lkm.engine.runner import build_plan, execute
from lkm.engine.store import RecordTally, RunStore, seconds_left
from lkm.spec import spec_from_dict

runner = CliRunner()
SMALL = ("-m", "svm", "-d", "moons")  # 10 folds of 200 rows: a sweep of two sigmas fits in about a second


def invoke(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), catch_exceptions=False, env=env)


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _sweep_command() -> typer.core.TyperCommand:
    return typer.main.get_command(app).commands["sweep"]


# -- options -------------------------------------------------------------------------
def _option_cases(data_dir: Path) -> list[tuple[str, list[str]]]:
    """One command line per option of `lkm sweep --help`, each spelling (--fresh and --resume)."""
    values = {"method": "lpl", "dataset": "moons", "out": "elsewhere", "jobs": "2", "data_dir": str(data_dir),
              "max_fits": "5000", "param": "k=3,5", "cluster": "local:1"}
    cases = []
    for p in _sweep_command().params:
        if not isinstance(p, typer.core.TyperOption) or p.name == "help":
            continue
        for opt in [*p.opts, *p.secondary_opts]:
            if p.is_flag or p.name in _sweep_command().bare_values:
                cases.append((opt, [opt]))  # flags, and grid options written bare
            else:
                cases.append((opt, [opt, values[p.name]]))
    return cases


def test_every_option_in_the_help_parses(workdir, data_dir):
    cases = _option_cases(data_dir)
    help_text = " ".join(invoke("sweep", "--help").output.split())
    for opt, _ in cases:
        assert opt in help_text
    assert {"--sigma", "--k", "--resume", "--progress", "--no-progress", "--fresh", "--max-fits"} <= {o for o, _ in cases}
    for opt, args in cases:
        base = ["sweep", *(["-m", "lpl", "-d", "moons"] if opt not in ("--method", "-m", "--dataset", "-d") else [])]
        grid = [] if opt in ("--sigma", "--k", "--param") else ["--sigma", "1,2"]
        res = invoke(*base, *grid, *args, "--dry-run")
        assert res.exit_code == 0, (opt, res.output)
        assert "give a grid" not in res.output and "fits in all" in res.output, (opt, res.output)


@pytest.mark.parametrize("args, fits", [
    (("--sigma",), 390),                      # the paper's 39 sigmas x 10 folds
    (("--sigma", "--k", "3,5"), 780),         # bare, followed by another option
    (("--k", "3,5", "--sigma"), 780),         # bare at the end of the line
    (("--sigma=0.5,1", "--k"), 100),          # --NAME=GRID, and bare --k: the paper's auto,5,9,13,17
    (("--sigma", "-1e-0,0.5",), None),        # a value that starts with '-' is a value, not an option
])
def test_bare_grid_options_mean_the_papers_grids(workdir, args, fits):
    res = invoke("sweep", "-m", "lpl", "-d", "moons", *args, "--dry-run")
    if fits is None:
        assert res.exit_code == 2 and "--sigma" in error_line(res) and "-1" in error_line(res)
        return
    assert res.exit_code == 0, res.output
    assert f"{fits} fits in all" in res.output


def test_an_adhoc_grid_replaces_the_base_sweep(workdir):
    # LRR has no 5-sigma default sweep any more: 3 betas x 10 folds, not 15 settings per split.
    res = invoke("sweep", "-m", "lrr", "-d", "moons", "--beta", "0.1:10:3", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "30 fits in all" in res.output
    assert "sigma" not in res.output.split("fits in all")[0].split("->")[0]
    # --param NAME=GRID is the same sweep (the same folder: same spec).
    same = invoke("sweep", "-m", "lrr", "-d", "moons", "--param", "beta=0.1:10:3", "--dry-run")
    assert same.output == res.output
    # A spec's sweep goes too: quickstart's sigma sweep is replaced by k alone (LPL 2 settings, PL and SVM 1).
    res = invoke("sweep", str(Path(__file__).parents[1] / "configs" / "quickstart.yaml"), "--k", "3,5", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "120 fits in all" in res.output  # 3 datasets x 10 folds x (1 + 2 + 1)


@pytest.mark.parametrize("args, words", [
    (("-m", "lrr", "--sigma", "1,2"), ["method lrr (lrr) ignores sigma", "kernel='heat'", "--kernel gaussian"]),
    (("-m", "lpl", "--n_trees", "5,10"), ["method LPL (lpl) ignores n_trees", "neighbors='exact'", "--neighbors annoy"]),
    (("-m", "svm", "--beta", "1,2"), ["--beta: not an option of `lkm sweep` and no method of this sweep has a parameter 'beta'"]),
    (("-m", "svm", "--dryrun"), ["--dryrun", "did you mean 'dry-run'"]),
    (("-m", "svm", "--param", "beta"), ["--param 'beta': write NAME=GRID"]),
])
def test_a_parameter_the_method_ignores_or_lacks_is_refused_in_one_line(workdir, args, words):
    res = invoke("sweep", "-d", "moons", *args, "--dry-run")
    assert res.exit_code == 2, res.output
    line = error_line(res)
    for w in words:
        assert w in line


def test_a_parameter_used_by_some_settings_is_swept(workdir):
    res = invoke("sweep", "-m", "lrr", "-d", "moons", "--sigma", "1,2", "--kernel", "gaussian", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "20 fits in all" in res.output


# -- run folders ---------------------------------------------------------------------
def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lkm-lock"}


def test_two_sweeps_that_collided_land_in_two_folders(workdir):
    first = invoke("sweep", *SMALL, "--sigma", "1,2", "--no-progress")
    assert first.exit_code == 0, first.output
    folders = [p for p in (workdir / "results").iterdir()]
    assert len(folders) == 1
    name = folders[0].name
    assert name.startswith("sweep-svm-moons-sigma-") and "sweep-sweep" not in name
    before = _files(folders[0])
    second = invoke("sweep", *SMALL, "--sigma", "1,4", "--no-progress")
    assert second.exit_code == 0, second.output
    assert len(list((workdir / "results").iterdir())) == 2
    assert _files(folders[0]) == before  # the first sweep's files are untouched
    # The same sweep again resumes in its own folder.
    again = invoke("sweep", *SMALL, "--sigma", "1,2", "--no-progress")
    assert again.exit_code == 0 and "nothing new to fit" in again.output
    assert len(list((workdir / "results").iterdir())) == 2


def test_a_different_spec_into_an_old_folder_is_refused_and_fresh_replaces_it(workdir):
    out = workdir / "mine"
    assert invoke("sweep", *SMALL, "--sigma", "1,2", "--out", str(out), "--no-progress").exit_code == 0
    before = _files(out)
    res = invoke("sweep", *SMALL, "--sigma", "1,4", "--out", str(out), "--no-progress")
    assert res.exit_code == 2
    line = error_line(res)
    assert f"{out} holds the run of a different spec" in line and "--fresh" in line and "--out" in line
    assert "sweep.sigma" in line  # what differs
    assert _files(out) == before  # nothing deleted, nothing written
    dry = invoke("sweep", *SMALL, "--sigma", "1,4", "--out", str(out), "--dry-run")
    assert dry.exit_code == 2 and "different spec" in error_line(dry)
    res = invoke("sweep", *SMALL, "--sigma", "1,4", "--out", str(out), "--no-progress", "--fresh")
    assert res.exit_code == 0, res.output
    assert "- 4" in (out / "spec.yaml").read_text()


def test_a_named_spec_keeps_its_folder_and_refuses_a_changed_spec(workdir):
    spec = workdir / "mine.yaml"
    spec.write_text("name: mine\ndatasets: [moons]\nprotocol: {kind: kfold, folds: 3}\n"
                    "methods: [{name: S, estimator: svm}]\nsweep: {sigma: [1, 2]}\n")
    assert invoke("run", str(spec), "--no-progress").exit_code == 0
    assert (workdir / "results" / "mine" / "spec.yaml").is_file()
    # A change in how the results are reported only (the same fits) rebuilds the report.
    spec.write_text(spec.read_text() + "outputs: {tables: [summary], figures: [sweep]}\n")
    res = invoke("run", str(spec), "--no-progress")
    assert res.exit_code == 0, res.output
    spec.write_text(spec.read_text().replace("sigma: [1, 2]", "sigma: [1, 3]"))
    res = invoke("run", str(spec), "--no-progress")
    assert res.exit_code == 2
    assert "results/mine holds the run of a different spec (sweep.sigma" in error_line(res)


def test_every_run_ends_with_its_folder_table_and_figure(workdir):
    res = invoke("sweep", *SMALL, "--sigma", "1,2", "--no-progress")
    assert res.exit_code == 0, res.output
    paths = {}
    for line in res.output.splitlines():
        label, _, path = line.strip().partition(": ")
        if label in ("run folder", "table", "figure"):
            paths[label] = Path(path.strip())
    assert set(paths) == {"run folder", "table", "figure"}, res.output
    assert paths["table"].is_file() and paths["table"].name == "summary.md"
    assert paths["figure"].is_file() and paths["figure"].suffix == ".png"
    assert paths["run folder"].is_dir()


# -- progress ------------------------------------------------------------------------
def test_progress_line_says_fits_share_elapsed_and_left():
    assert progress_line(120, 390, 130) == "[lkm] 120/390 fits (30%), 2m10s elapsed, ~4m52s left"
    assert progress_line(0, 390, 5) == "[lkm] 0/390 fits (0%), 5s elapsed"
    assert progress_line(390, 390, 7300) == "[lkm] 390/390 fits (100%), 2h01m elapsed"


def test_seconds_left_weighs_each_remaining_fit_by_its_methods_mean_seconds():
    """A run mixing cheap and costly methods: counting fits would put the 9 costly fits
    left at the pace of the 11 done, mostly cheap; each method's own mean does not."""
    fits, seconds = {("kNN", "d"): 10, ("HistGB", "d"): 1}, {("kNN", "d"): 10.0, ("HistGB", "d"): 100.0}
    left = seconds_left({("kNN", "d"): 10, ("HistGB", "d"): 9, ("NEW", "d"): 2}, fits, seconds, workers=2)
    assert left == pytest.approx((10 * 1.0 + 9 * 100.0 + 2 * 110.0 / 11) / 2)
    assert seconds_left({("kNN", "d"): 0, ("HistGB", "d"): -1}, fits, seconds, workers=2) == 0.0
    assert seconds_left({("kNN", "d"): 3}, {}, {}, workers=2) is None


def test_seconds_left_prices_a_small_set_after_a_costly_one_by_the_set_not_the_methods_mean():
    """The benchmark's costly sets come first: late in the run a method's mean is theirs.
    A pair already recorded costs its own mean; a set other methods ran on, the method's
    mean times the set's relative cost among those methods; a set no method ran on yet,
    the relative cost its size gives by the power law of the recorded sets."""
    fits = {("SVM", "big"): 5, ("SVM", "small"): 5, ("HistGB", "big"): 5, ("HistGB", "mid"): 5, ("kNN", "small"): 5}
    seconds = {("SVM", "big"): 500.0, ("SVM", "small"): 5.0, ("HistGB", "big"): 5000.0, ("HistGB", "mid"): 500.0,
               ("kNN", "small"): 0.5}
    sizes = {"big": 4000, "mid": 1000, "small": 100, "tiny": 10}
    # a pair seen: its own mean, whatever the method's other sets cost
    assert seconds_left({("SVM", "small"): 10}, fits, seconds, workers=1, sizes=sizes) == pytest.approx(10 * 1.0)
    # HistGB on "small": its mean (550 s) times small's cost relative to the methods seen
    # there and elsewhere (SVM: 1 / 50.5; kNN ran on "small" alone and says nothing)
    left = seconds_left({("HistGB", "small"): 1}, fits, seconds, workers=1, sizes=sizes)
    assert left == pytest.approx(550.0 / 50.5)
    # a set no method ran on yet: extrapolated from its size, cheaper than every recorded set
    tiny = seconds_left({("HistGB", "tiny"): 1}, fits, seconds, workers=1, sizes=sizes)
    assert tiny < left
    # without sizes an unseen set is priced at the method's mean, as before
    assert seconds_left({("HistGB", "tiny"): 1}, fits, seconds, workers=1) == pytest.approx(550.0)


def test_progress_line_counts_down_the_runners_estimate():
    made = time.monotonic() - 60.0  # an estimate of 10 minutes made a minute ago
    assert progress_line(10, 100, 30, (600.0, made)).endswith("~9m00s left")
    assert progress_line(10, 100, 30, (30.0, made)).endswith("~0s left")  # overdue: never negative
    assert progress_line(10, 100, 30).endswith("~4m30s left")  # no estimate: the pace of fits


def test_the_tally_sums_each_methods_seconds_even_when_a_line_arrives_in_two_writes(tmp_path):
    store = RunStore(tmp_path / "r")
    store.prepare()
    tally = RecordTally(store.records_dir)
    part = store.records_dir / "part-test.jsonl"
    first = json.dumps({"task_id": "a", "method": "SVM", "dataset": "d", "fit_seconds": 1.5, "predict_seconds": 0.5}) + "\n"
    second = json.dumps({"task_id": "b", "method": "SVM", "dataset": "d", "fit_seconds": 3.0, "predict_seconds": 0.0}) + "\n"
    part.write_text(first + second[:20])
    assert tally.update() == 1 and tally.fits == {("SVM", "d"): 1} and tally.seconds == {("SVM", "d"): 2.0}
    with open(part, "a") as fh:
        fh.write(second[20:])
    assert tally.update() == 2 and tally.fits == {("SVM", "d"): 2} and tally.seconds == {("SVM", "d"): 5.0}


def test_a_run_estimates_the_time_left_from_its_recorded_seconds(tmp_path):
    spec = spec_from_dict({"name": "p", "datasets": ["moons"], "protocol": {"kind": "kfold", "folds": 2},
                           "methods": [{"name": "S", "estimator": "svm"}, {"name": "P", "estimator": "pl"}],
                           "sweep": {"sigma": [1, 2, 3]}})
    store = RunStore(tmp_path / "r")
    store.prepare()
    estimates: list[float] = []
    summary = execute(build_plan(spec), store, jobs=1, on_progress=lambda n: None, on_estimate=estimates.append)
    assert summary.ran > 0 and estimates and all(e >= 0 for e in estimates)
    assert estimates[-1] == 0.0  # every fit recorded: nothing left


def test_plain_progress_prints_a_line_per_interval_and_at_the_end(capsys):
    with FitProgress(3, interval=0) as bar:  # not a terminal under pytest: plain lines
        bar.advance(1)
        bar.advance(1)
        bar.advance(1)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("[lkm]")]
    assert [ln.split(" fits")[0] for ln in lines] == ["[lkm] 1/3", "[lkm] 2/3", "[lkm] 3/3"]
    with FitProgress(3, interval=3600) as bar:
        bar.advance(3)
    assert [ln.split(" fits")[0] for ln in capsys.readouterr().out.splitlines()] == ["[lkm] 3/3"]


def test_a_run_without_a_terminal_prints_plain_progress_lines(workdir):
    res = invoke("sweep", *SMALL, "--sigma", "1,2", env={"LKM_PROGRESS_SECONDS": "0"})
    assert res.exit_code == 0, res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("[lkm] ")]
    assert lines and lines[-1].startswith("[lkm] 20/20 fits (100%), ")
    assert "\x1b[" not in res.output  # no bar, no cursor movement


def test_progress_counts_every_fit_as_its_record_is_written(tmp_path):
    spec = spec_from_dict({"name": "p", "datasets": ["moons"], "protocol": {"kind": "kfold", "folds": 2},
                           "methods": [{"name": "S", "estimator": "svm"}], "sweep": {"sigma": [1, 2, 3]}})
    plan = build_plan(spec)
    store = RunStore(tmp_path / "r")
    store.prepare()
    tally = RecordTally(store.records_dir)
    calls: list[int] = []
    summary = execute(plan, store, jobs=1, on_progress=calls.append)
    assert sum(calls) == summary.ran == 6
    assert tally.update() == 6  # one line per fit, counted as written
    store.append([{"task_id": "x"}])
    assert tally.update() == 7


# -- help ----------------------------------------------------------------------------
def _commands(group, path=()):
    for name, cmd in group.commands.items():
        yield (*path, name)
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*path, name))


def test_help_text_is_printed_as_written():
    emoji = set(EMOJI.values())
    for path in [(), *_commands(typer.main.get_command(app))]:
        res = invoke(*path, "--help")
        assert res.exit_code == 0, (path, res.output)
        assert not emoji & set(res.output), (path, sorted(emoji & set(res.output)))
        assert "[/" not in res.output and "[bold" not in res.output, path
    text = " ".join(invoke("sweep", "--help").output.split())
    assert "0.01:100:39" in text and "💯" not in text


def test_the_end_of_a_run_shows_a_failed_method_with_its_first_error(workdir):
    spec = workdir / "fails.yaml"
    spec.write_text("name: fails\ndatasets: [moons]\nprotocol: {kind: kfold, folds: 3}\nmethods:\n"
                    "  - {name: S, estimator: svm}\n"
                    "  - {name: KNN, estimator: sklearn.neighbors.KNeighborsClassifier, params: {n_neighbors: 1000}}\n")
    res = invoke("run", str(spec), "--no-progress")
    assert res.exit_code == 1
    failed = [ln for ln in res.stdout.splitlines() if ln.startswith("KNN: failed")]
    assert len(failed) == 1 and "3 of 3 fits; first error: moons/" in failed[0] and "n_neighbors" in failed[0], res.output
    assert not any(ln.startswith("S: ") for ln in res.stdout.splitlines())
    assert len([ln for ln in res.stderr.splitlines() if ln.strip()]) == 1  # the run's one error line
