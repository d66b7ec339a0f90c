"""Data and outputs of the NPPS reproduction (Shin and Cho 2004): the artificial problems'
generators, MNIST (real, its parity substitute for DMEF4, the test-image stand-ins), and
smoke runs of the NPPS specs via the CLI."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from lkm.cli import app
from lkm.data import load_dataset
from lkm.errors import DatasetUnavailable
from lkm.papers import packaged_specs
from lkm.spec.protocols import HoldoutProtocol

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()

NPPS_SYNTHETIC = {"npps-xor": 600, "npps-sine": 500, "npps-checkerboard": 1000}


@pytest.mark.parametrize("name", sorted(NPPS_SYNTHETIC))
def test_npps_generators_are_seeded_and_give_the_papers_training_counts(name):
    a, b = load_dataset(name), load_dataset(name)
    assert a.X.tobytes() == b.X.tobytes() and np.array_equal(a.y, b.y)
    assert a.classes == [-1, 1] and a.X.shape == (a.info.n_samples, 2)
    assert dict(Counter(a.y.tolist())) == a.info.class_counts
    (split,) = HoldoutProtocol(train_size=0.8, seed=0).splits(a)
    assert len(split.train) == NPPS_SYNTHETIC[name]  # the paper's Table 2 count
    assert not set(split.train) & set(split.test)


def test_npps_generators_follow_their_designs():
    xor = load_dataset("npps-xor", n_samples=20000, random_state=1)
    bayes = np.where(xor.X[:, 0] * xor.X[:, 1] > 0, 1, -1)
    assert 0.08 < np.mean(bayes != xor.y) < 0.10  # 2p(1-p), p = Phi(-1/0.6)
    board = load_dataset("npps-checkerboard", n_samples=2000, random_state=1)
    assert board.X.min() >= 0 and board.X.max() <= 4
    parity = (np.floor(board.X[:, 0]) + np.floor(board.X[:, 1])) % 2
    assert np.array_equal(board.y, np.where(parity == 0, 1, -1))
    sine = load_dataset("npps-sine", noise=0.0, n_samples=2000, random_state=1)
    assert np.array_equal(sine.y, np.where(sine.X[:, 1] > np.sin(sine.X[:, 0]), 1, -1))
    near = load_dataset("npps-overlap", separation=0.5, n_samples=2000, random_state=1)
    far = load_dataset("npps-overlap", separation=8.0, n_samples=2000, random_state=1)
    assert np.mean((near.X[:, 0] > 0.25) != (near.y == 1)) > 0.3
    assert np.mean((far.X[:, 0] > 4.0) != (far.y == 1)) < 0.001


def test_mnist_test_standin_loads_from_the_mirror_with_a_seeded_80_20_split(data_dir):
    ds = load_dataset("mnist-test", data_dir=data_dir, classes=[3, 8])
    assert ds.X.shape == (1010 + 974, 784) and dict(Counter(ds.y.tolist())) == {3: 1010, 8: 974}
    train, test = ds.predefined_split["train"], ds.predefined_split["test"]
    assert len(train) + len(test) == 1984 and not set(train) & set(test)
    assert abs(len(train) / 1984 - 0.8) < 0.01
    again = load_dataset("mnist-test", data_dir=data_dir, classes=[3, 8])
    assert np.array_equal(again.predefined_split["train"], train)
    parity = load_dataset("mnist-test-even-odd", data_dir=data_dir)
    assert dict(Counter(parity.y.tolist())) == {0: 4926, 1: 5074}
    assert len(parity.predefined_split["train"]) == 8000


def test_dmef4_substitute_is_mnist_parity_on_all_60000_training_images(data_dir):
    ds = load_dataset("mnist-even-odd", data_dir=data_dir)
    assert ds.X.shape == (70000, 784) and ds.classes == [0, 1]
    assert {k: len(v) for k, v in ds.predefined_split.items()} == {"train": 60000, "test": 10000}
    assert dict(Counter(ds.y.tolist())) == ds.info.class_counts
    digits = load_dataset("mnist", data_dir=data_dir).y
    assert np.array_equal(ds.y, digits % 2)


def _mirror_without_mnist_training_images(tmp_path: Path, data_dir: Path) -> Path:
    """A mirror with every MNIST file except both forms of the training images."""
    mirror = tmp_path / "mirror"
    (mirror / "mnist").mkdir(parents=True)
    for f in (data_dir / "mnist").iterdir():
        if not f.name.startswith("train-images"):
            (mirror / "mnist" / f.name).symlink_to(f)
    (mirror / "MANIFEST.json").symlink_to(data_dir / "MANIFEST.json")
    return mirror


def test_dmef4_substitute_without_training_images_is_unavailable(tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("LKM_OFFLINE", "1")
    with pytest.raises(DatasetUnavailable, match="train-images-idx3-ubyte.gz .or its accepted form"):
        load_dataset("mnist-even-odd", data_dir=_mirror_without_mnist_training_images(tmp_path, data_dir))


def _run(spec: str, out: Path, data_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("LKM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("LKM_OFFLINE", "1")
    res = runner.invoke(app, ["run", str(packaged_specs()[spec.removesuffix(".yaml")]), "--smoke", "--out", str(out), "--no-progress"],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output


def _smoke_run(smoke_results, spec: str) -> Path:
    """The folder of ``spec``'s smoke run inside the session's `lkm reproduce npps --smoke`
    (tests/conftest.smoke_results: made once per session, shared with tests/test_reproduce.py
    and tests/test_outputs_as_data.py). Read only."""
    return smoke_results("npps") / f"{spec}-smoke"


def test_smoke_table2_writes_every_output(smoke_results):
    out = _smoke_run(smoke_results, "npps_table2")
    for name in ("npps_table2", "npps_k_sweep", "dataset_stats"):
        for ext in ("md", "csv", "tex"):
            assert (out / "tables" / f"{name}.{ext}").is_file(), name
    for ext in ("png", "pdf"):
        assert (out / "figures" / f"npps_boundaries.{ext}").is_file()
    table = (out / "tables" / "npps_table2.md").read_text()
    assert "600 (600)" in table and "(454.83)" in table and "not run" not in table
    # C, sigma (and k for SELECTED) chosen by CV per split: the most frequent choice is shown.
    assert "setting ALL" in table and "setting SELECTED" in table
    (xor,) = [line for line in table.splitlines() if line.startswith("| continuous-xor")]
    assert "C=10 (2/2)" in xor and "σ=" in xor and "k=" in xor
    sweep = (out / "tables" / "npps_k_sweep.md").read_text()
    assert "K-uci" in sweep and "SELECTED-uci" in sweep


def test_smoke_fast_vs_naive_writes_every_output(smoke_results):
    out = _smoke_run(smoke_results, "npps_fast_vs_naive")
    for ext in ("md", "csv", "tex"):
        assert (out / "tables" / f"npps_selection_time.{ext}").is_file()
    for ext in ("png", "pdf"):
        assert (out / "figures" / f"npps_selection_time.{ext}").is_file()
    assert "slopes" in (out / "tables" / "npps_selection_time.md").read_text()


def test_mnist_smoke_runs_the_standin_with_settings_chosen_by_cv(smoke_results):
    out = _smoke_run(smoke_results, "npps_table2_mnist")
    table = (out / "tables" / "npps_table2.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| mnist")}
    modern = "mnist-3-8-standin, ALL on a modern solver (scikit-learn-intelex)"
    # the real rows are not part of the smoke run; the modern solver's row needs scikit-learn-intelex
    assert set(rows) == {"mnist-3-8-standin", *([modern] if importlib.util.find_spec("sklearnex") else [])}
    row = rows["mnist-3-8-standin"]
    assert "stand-in (MNIST test images, 80/20)" in row and "(11982)" in row
    assert "C=10 (1/1)" in row and "k=" in row and "(1/1)" in row
    if modern in rows:  # our SELECTED cells of the LIBSVM row, no paper numbers ("–")
        header = [c.strip() for c in table.splitlines()[2].split("|")]
        col = header.index("patterns SELECTED")
        ours, repeated = row.split("|")[col].strip(), rows[modern].split("|")[col].strip()
        assert ours == f"{repeated.removesuffix(' (–)')} (4089)" and "not in the paper" in rows[modern]


def test_mnist_rows_without_training_images_are_skipped_with_a_hint(tmp_path, data_dir, monkeypatch):
    mirror = _mirror_without_mnist_training_images(tmp_path, data_dir)
    monkeypatch.setenv("LKM_DATA_DIR", str(mirror))
    monkeypatch.setenv("LKM_OFFLINE", "1")
    out = tmp_path / "mn"
    res = runner.invoke(app, ["run", str(packaged_specs()["npps_table2_mnist"]), "--out", str(out),
                              "--no-progress"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    for pair in ("3-8", "6-8", "9-8"):
        assert f"skipped mnist-{pair}: dataset 'mnist': file train-images-idx3-ubyte.gz (or its accepted" in said


def test_large_set_spec_smoke_runs_the_even_odd_standin(tmp_path, data_dir, monkeypatch):
    out = tmp_path / "eo"
    _run("npps_mnist_even_odd.yaml", out, data_dir, monkeypatch)
    table = (out / "tables" / "npps_table2.md").read_text()
    (row,) = [line for line in table.splitlines() if line.startswith("| mnist-even-odd-standin")]
    assert "substitute for DMEF4" in row and "(81226)" in row and "C=10 (1/1)" in row
