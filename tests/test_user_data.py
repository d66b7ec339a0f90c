"""A user's own data: files named in a spec, `lkm datasets add`, one-line errors, listings."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from lkm.cli import app
from lkm.data import load_dataset
from lkm.data.user import user_dataset
from lkm.errors import ChecksumError, DataError
from lkm.spec import load_spec

runner = CliRunner()


@pytest.fixture(autouse=True)
def _user_registry(tmp_path, monkeypatch):
    """Every test gets its own empty user registry."""
    monkeypatch.setenv("LKM_USER_REGISTRY", str(tmp_path / "user-registry.yaml"))


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def error_line(res) -> str:
    """The one line a failed command printed (and proof there was no traceback)."""
    text = res.stderr if res.stderr else res.output
    assert "Traceback" not in res.output and "Traceback" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


def write_csv(path: Path, n: int = 60, seed: int = 0, header: str = "width,height,colour,label") -> Path:
    """A separable two-class CSV with a header and string labels."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(size=(n, 3)) + 3.0 * y[:, None]
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [header] + [",".join(f"{v:.5f}" for v in row) + f",{'yes' if c else 'no'}" for row, c in zip(X, y, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_spec(path: Path, dataset: str, folds: int = 3) -> Path:
    path.write_text(
        f"name: mine\ndatasets: [{dataset}]\nprotocol: {{kind: kfold, folds: {folds}}}\n"
        "methods: [{name: SVM, estimator: svm, params: {sigma: 2.0}}]\n"
    )
    return path


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for part in sorted((run_dir / "records").glob("*.jsonl")) for line in part.read_text().splitlines()]


# -- files named in a spec ---------------------------------------------------------------
def test_a_csv_named_by_path_runs_end_to_end(tmp_path):
    write_csv(tmp_path / "data" / "my.csv")
    spec = write_spec(tmp_path / "spec.yaml", "{path: data/my.csv, target: label}")
    res = invoke("run", str(spec), "--out", str(tmp_path / "run"))
    assert res.exit_code == 0, res.output
    recs = records(tmp_path / "run")
    assert len(recs) == 3 and {r["dataset"] for r in recs} == {"my"}
    assert all(r["status"] == "ok" for r in recs)
    assert np.mean([r["accuracy"] for r in recs]) > 0.9  # two well-separated blobs
    saved = load_spec(tmp_path / "run" / "spec.yaml").datasets[0]
    assert saved.path == str(tmp_path / "data" / "my.csv")  # absolute: the run folder can move
    assert saved.sha256 == hashlib.sha256((tmp_path / "data" / "my.csv").read_bytes()).hexdigest()


def test_a_changed_file_gets_new_task_ids(tmp_path):
    from lkm.engine.runner import build_plan

    csv = write_csv(tmp_path / "my.csv")
    spec = write_spec(tmp_path / "spec.yaml", "{path: my.csv, target: label}")
    before = {t.id for t in build_plan(load_spec(spec)).tasks}
    write_csv(csv, seed=1)
    after = {t.id for t in build_plan(load_spec(spec)).tasks}
    assert before and not before & after


def test_registered_datasets_keep_their_dump_and_task_ids():
    from lkm.spec import DatasetSpec

    assert DatasetSpec(name="sonar").model_dump() == {
        "name": "sonar", "label": None, "classes": None, "params": {}, "protocol": None,
    }


def test_sha256_pin_mismatch_is_one_line_naming_the_file(tmp_path):
    csv = write_csv(tmp_path / "my.csv")
    wrong = hashlib.sha256(b"another file").hexdigest()
    spec = write_spec(tmp_path / "spec.yaml", f"{{path: my.csv, target: label, sha256: '{wrong}'}}")
    res = invoke("run", str(spec), "--out", str(tmp_path / "run"))
    assert res.exit_code == 2
    line = error_line(res)
    assert str(csv) in line and f"but {wrong} is pinned" in line
    with pytest.raises(ChecksumError, match=f"^dataset 'my': {csv} has sha256 [0-9a-f]{{64}} but {wrong} is pinned"):
        load_dataset(user_dataset("my", csv, target="label", sha256=wrong))


def test_a_bad_cell_names_file_row_and_column(tmp_path):
    csv = write_csv(tmp_path / "my.csv")
    lines = csv.read_text().splitlines()
    cells = lines[4].split(",")
    cells[1] = "12.5x"
    lines[4] = ",".join(cells)
    csv.write_text("\n".join(lines) + "\n")
    spec = write_spec(tmp_path / "spec.yaml", "{path: my.csv, target: label}")
    res = invoke("run", str(spec), "--out", str(tmp_path / "run"))
    assert res.exit_code == 2
    # line 5 of the file (the header is line 1), the second column
    assert error_line(res) == (
        f"error: {spec}: datasets[0]: dataset 'my': {csv}: row 5, column 'height': '12.5x' is not a number"
    )
    assert not (tmp_path / "run" / "records").exists()


def test_a_missing_target_column_suggests_the_closest(tmp_path):
    csv = write_csv(tmp_path / "my.csv")
    with pytest.raises(DataError, match=f"^dataset 'my': {csv}: no column 'lable' in the header \\(did you mean 'label'\\?\\)$"):
        load_dataset(user_dataset("my", csv, target="lable"))


def test_nan_is_refused_then_imputed_or_dropped(tmp_path):
    csv = write_csv(tmp_path / "my.csv", n=10)
    lines = csv.read_text().splitlines()
    cells = lines[3].split(",")
    cells[0] = ""  # an empty cell on line 4
    lines[3] = ",".join(cells)
    lines[6] = lines[6].replace(lines[6].split(",")[2], "nan", 1)  # NaN on line 7
    csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=f"^dataset 'my': {csv}: row 4, column 'width': empty cell \\(set impute: mean, median or drop"):
        load_dataset(user_dataset("my", csv, target="label"))
    expected_mean = np.mean([float(line.split(",")[0]) for i, line in enumerate(lines[1:], start=2) if i != 4])
    filled = load_dataset(user_dataset("my", csv, target="label", impute="mean"))
    assert filled.X.shape == (10, 3) and np.all(np.isfinite(filled.X))
    assert filled.X[2, 0] == pytest.approx(expected_mean)
    dropped = load_dataset(user_dataset("my", csv, target="label", impute="drop"))
    assert dropped.X.shape == (8, 3)


def test_nan_in_an_npz_names_row_and_feature(tmp_path):
    X = np.ones((6, 2))
    X[3, 1] = np.inf
    np.savez(tmp_path / "a.npz", X=X, y=np.array([0, 1] * 3))
    with pytest.raises(DataError, match=r"a\.npz: data row 4, feature 2: inf \(infinite\); set impute"):
        load_dataset(user_dataset("a", tmp_path / "a.npz"))


def test_a_single_class_is_refused(tmp_path):
    csv = tmp_path / "one.csv"
    csv.write_text("a,b,label\n1,2,x\n3,4,x\n5,6,x\n")
    with pytest.raises(DataError, match=f"^dataset 'one': {csv}: column 'label' holds a single class 'x' in all 3 rows"):
        load_dataset(user_dataset("one", csv, target="label"))


def test_fewer_rows_of_a_class_than_folds_is_one_line(tmp_path):
    write_csv(tmp_path / "my.csv", n=8)  # 4 rows per class
    spec = write_spec(tmp_path / "spec.yaml", "{path: my.csv, target: label}", folds=5)
    res = invoke("run", str(spec), "--out", str(tmp_path / "run"))
    assert res.exit_code == 2
    line = error_line(res)
    assert "5 folds" in line and "'my'" in line and "only 4" in line


def test_an_empty_file_and_a_header_without_rows(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match=r"empty\.csv is empty$"):
        load_dataset(user_dataset("empty", tmp_path / "empty.csv", target="label"))
    (tmp_path / "head.csv").write_text("a,b,label\n")
    with pytest.raises(DataError, match=r"head\.csv: no data rows$"):
        load_dataset(user_dataset("head", tmp_path / "head.csv", target="label"))


def test_a_file_named_like_a_packaged_dataset_needs_a_name(tmp_path):
    write_csv(tmp_path / "sonar.csv")
    spec = write_spec(tmp_path / "spec.yaml", "{path: sonar.csv, target: label}")
    res = invoke("run", str(spec), "--dry-run")
    assert res.exit_code == 2 and "give the entry a name: of its own" in error_line(res)
    write_spec(spec, "{path: sonar.csv, target: label, name: my-sonar}")
    assert load_spec(spec).datasets[0].id == "my-sonar"


def test_a_missing_file_is_a_spec_error(tmp_path):
    spec = write_spec(tmp_path / "spec.yaml", "{path: nowhere.csv, target: label}")
    res = invoke("run", str(spec), "--dry-run")
    assert res.exit_code == 2
    assert error_line(res) == f"error: {spec}: datasets[0]: path: {tmp_path / 'nowhere.csv'}: no such file"


# -- other formats -------------------------------------------------------------------------
def _blobs(n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    y = np.arange(n) % 2
    return rng.normal(size=(n, 3)) + 2.0 * y[:, None], y


def test_svmlight_round_trip(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    X, y = _blobs()
    dump_svmlight_file(X, y, str(tmp_path / "d.svm"), zero_based=False)
    ds = load_dataset(user_dataset("d", tmp_path / "d.svm"))
    np.testing.assert_allclose(ds.X, X, rtol=1e-12)
    np.testing.assert_array_equal(ds.y, y)


def test_arff_round_trip_with_a_named_target(tmp_path):
    X, y = _blobs()
    rows = "\n".join(f"{a:.17g},{'pos' if c else 'neg'},{b:.17g},{d:.17g}" for (a, b, d), c in zip(X, y, strict=True))
    (tmp_path / "d.arff").write_text(
        "@relation blobs\n@attribute a numeric\n@attribute kind {neg,pos}\n@attribute b numeric\n"
        f"@attribute c numeric\n@data\n{rows}\n"
    )
    ds = load_dataset(user_dataset("d", tmp_path / "d.arff", target="kind"))
    np.testing.assert_allclose(ds.X, X)
    assert ds.feature_names == ["a", "b", "c"]
    np.testing.assert_array_equal(ds.y, np.where(y == 1, "pos", "neg"))


def test_npz_round_trip_with_named_arrays(tmp_path):
    X, y = _blobs()
    np.savez(tmp_path / "d.npz", features=X, labels=y)
    ds = load_dataset(user_dataset("d", tmp_path / "d.npz", target="labels"))
    np.testing.assert_array_equal(ds.X, X)
    with pytest.raises(DataError, match=r"no array 'y' for the labels"):
        load_dataset(user_dataset("d", tmp_path / "d.npz"))


def test_tsv_with_an_explicit_format(tmp_path):
    (tmp_path / "d.txt").write_text("a\tb\tlabel\n1\t2\tx\n3\t4\ty\n")
    ds = load_dataset(user_dataset("d", tmp_path / "d.txt", target="label", fmt="tsv"))
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4]])
    with pytest.raises(DataError, match=r"cannot tell the format from the suffix '\.txt'"):
        user_dataset("d", tmp_path / "d.txt", target="label")


def test_feature_names_line_reads_an_ordinary_header(tmp_path):
    """feature_names_line: 0 on a header naming every column (the label's too)."""
    from lkm.data.parsers import csv

    path = tmp_path / "d.csv"
    path.write_text("a,b,label\n1,2,0\n3,4,1\n")
    table = csv([path], feature_names_line=0)
    assert table.feature_names == ["a", "b"]
    np.testing.assert_array_equal(table.X, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(table.y, [0, 1])


# -- the user registry and the listings -----------------------------------------------------
def test_datasets_add_then_a_spec_names_it(tmp_path):
    csv = write_csv(tmp_path / "my-data.csv")
    res = invoke("datasets", "add", str(csv), "--target", "label", "--name", "mine")
    assert res.exit_code == 0, res.output
    assert "mine: 60 rows, 3 features" in res.output
    assert "name: mine" in (tmp_path / "user-registry.yaml").read_text()
    spec = write_spec(tmp_path / "spec.yaml", "mine")
    res = invoke("run", str(spec), "--out", str(tmp_path / "run"))
    assert res.exit_code == 0, res.output
    assert {r["dataset"] for r in records(tmp_path / "run")} == {"mine"}
    assert load_spec(tmp_path / "run" / "spec.yaml").datasets[0].sha256 == hashlib.sha256(csv.read_bytes()).hexdigest()

    res = invoke("datasets", "add", str(csv), "--target", "label", "--name", "mine")
    assert res.exit_code == 2 and "already registered (--replace" in error_line(res)
    res = invoke("datasets", "add", str(csv), "--target", "label", "--name", "Sonar")
    assert res.exit_code == 2 and "taken by the packaged dataset 'sonar'" in error_line(res)
    res = invoke("datasets", "remove", "mine")
    assert res.exit_code == 0
    res = invoke("datasets", "info", "mine")
    assert res.exit_code == 2 and "unknown dataset 'mine'" in error_line(res)


def test_datasets_add_refuses_bad_data_in_one_line(tmp_path):
    csv = tmp_path / "bad.csv"
    csv.write_text("a,b,label\n1,2,x\n3,oops,y\n")
    res = invoke("datasets", "add", str(csv), "--target", "label")
    assert res.exit_code == 2
    assert error_line(res) == f"error: dataset 'bad': {csv}: row 3, column 'b': 'oops' is not a number"
    assert not (tmp_path / "user-registry.yaml").exists()


def test_datasets_list_piped_at_40_columns_never_truncates(tmp_path):
    write_csv(tmp_path / "a-rather-long-user-dataset-name.csv")
    assert invoke("datasets", "add", str(tmp_path / "a-rather-long-user-dataset-name.csv"), "--target", "label").exit_code == 0
    env = {**os.environ, "COLUMNS": "40", "LKM_USER_REGISTRY": str(tmp_path / "user-registry.yaml")}
    out = subprocess.run([sys.executable, "-m", "lkm.cli", "datasets", "list"], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert "…" not in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert "pima-indians-diabetes" in rows and "a-rather-long-user-dataset-name" in rows
    assert rows["a-rather-long-user-dataset-name"][1:7] == ["user", "60", "3", "2", "user:", "present"]
    assert rows["moons"][5] == "generated" and rows["sklearn-iris"][5] == "bundled"


def test_datasets_list_says_whether_files_need_downloading(tmp_path, monkeypatch):
    monkeypatch.delenv("LKM_DATA_DIR", raising=False)
    monkeypatch.setenv("LKM_CACHE_DIR", str(tmp_path / "empty-cache"))
    out = invoke("datasets", "list").output
    rows = {line.split()[0]: line for line in out.splitlines()[2:]}
    assert "needs download" in rows["sonar"]
    assert " missing" in rows["usps"]  # no download URL


def test_datasets_list_in_the_mirror(data_dir):
    out = invoke("datasets", "list", "--data-dir", str(data_dir)).output
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert rows["sonar"][5] == "mirror"


def test_datasets_info_says_present_or_missing(tmp_path, data_dir, monkeypatch):
    csv = write_csv(tmp_path / "my.csv")
    assert invoke("datasets", "add", str(csv), "--target", "label").exit_code == 0
    out = invoke("datasets", "info", "my").output
    assert f"present (user): {csv}" in out and "status: user: present" in out
    csv.unlink()
    out = invoke("datasets", "info", "my").output
    assert f"missing: {csv}" in out and "status: user: missing" in out
    out = invoke("datasets", "info", "sonar", "--data-dir", str(data_dir)).output
    assert f"present (mirror): {data_dir / 'sonar' / 'sonar.all-data'}" in out
    monkeypatch.delenv("LKM_DATA_DIR", raising=False)
    monkeypatch.setenv("LKM_CACHE_DIR", str(tmp_path / "empty-cache"))
    out = invoke("datasets", "info", "sonar").output
    assert f"missing: needs download to {tmp_path / 'empty-cache' / 'sonar' / 'sonar.all-data'}" in out


def _openml_cache(home: Path) -> Path:
    """A fetch_openml cache of OpenML's iris (id 61), laid out as scikit-learn leaves it,
    from the response files scikit-learn's own tests ship."""
    import shutil

    import sklearn.datasets

    fixtures = Path(sklearn.datasets.__file__).parent / "tests" / "data" / "openml" / "id_61"
    if not fixtures.is_dir():
        pytest.skip("scikit-learn's OpenML test files are not installed")
    root = home / "openml" / "openml.org"
    for name, where in {
        "api-v1-jdl-dn-iris-l-2-s-act-.json.gz": "api/v1/json/data/list/data_name/iris/limit/2/status/active/.gz",
        "api-v1-jd-61.json.gz": "api/v1/json/data/61.gz",
        "api-v1-jdf-61.json.gz": "api/v1/json/data/features/61.gz",
        "api-v1-jdq-61.json.gz": "api/v1/json/data/qualities/61.gz",
        "data-v1-dl-61.arff.gz": "data/v1/download/61/iris.arff.gz",
    }.items():
        (root / where).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(fixtures / name, root / where)
    return home


def test_an_openml_cache_is_read_offline(tmp_path):
    home = _openml_cache(tmp_path / "scikit_learn_data")
    ds = load_dataset(user_dataset("iris", home))  # a folder: an OpenML cache
    assert ds.X.shape == (150, 4) and len(ds.classes) == 3
    with pytest.raises(DataError, match=r"OpenML dataset 'wine' is not in this fetch_openml cache"):
        load_dataset(user_dataset("wine", home, fmt="openml"))


@pytest.mark.parametrize("case", ["huge", "duplicate", "continuous", "ambiguous", "slash", "dots"])
def test_datasets_add_refuses_data_every_fit_would_trip_on_in_one_line(tmp_path, case):
    """Hostile files: features near 1e300 (squared distances overflow), a header naming a
    column twice, a continuous or ambiguously written target, a name with path parts."""
    rng = np.random.default_rng(0)
    rows = [f"{a:.4f},{b:.4f},{'yes' if i % 2 else 'no'}" for i, (a, b) in enumerate(rng.normal(size=(30, 2)))]
    header, name, expected = "a,b,label", [], ""
    if case == "huge":
        rows[4] = "1e300,0.5,no"
        expected = "row 6, column 'a': 1e+300 is beyond"
    elif case == "duplicate":
        header, expected = "a,a,label", "names the column 'a' 2 times"
    elif case == "continuous":
        rows = [f"{a:.4f},{b:.4f},{c:.3f}" for a, b, c in rng.normal(size=(30, 3))]
        expected = "a continuous target"
    elif case == "ambiguous":
        rows = [f"{a:.4f},{b:.4f},{['1', '1.0', '2'][i % 3]}" for i, (a, b) in enumerate(rng.normal(size=(30, 2)))]
        expected = "the same number written differently"
    else:
        name = ["--name", "../evil" if case == "dots" else "a/b"]
        expected = "use letters, digits"
    csv = tmp_path / "data.csv"
    csv.write_text("\n".join([header, *rows]) + "\n")
    res = invoke("datasets", "add", str(csv), "--target", "label", *name)
    assert res.exit_code == 2
    assert expected in error_line(res)
    assert not (tmp_path / "user-registry.yaml").exists()
