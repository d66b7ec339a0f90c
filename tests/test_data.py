"""lkm.data: the registry against the mirror's MANIFEST.json, loading, class selection,
aliases, checksum and parse failures, synthetic determinism. No network: every test
here runs with LKM_OFFLINE=1 (downloads are exercised in test_fetch.py on 127.0.0.1)."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import os
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

import lkm.data
from lkm.data import (
    DatasetInfo,
    FileEntry,
    cache_dir,
    dataset_info,
    fetch,
    list_datasets,
    load_dataset,
    resolve_data_dir,
    verify,
)
from lkm.data.parsers import PARSERS
from lkm.data.registry import REGISTRY_PATH, AlternativeFile
from lkm.data.synthetic import GENERATORS
from lkm.errors import ChecksumError, DataError, DatasetUnavailable

REPO = Path(__file__).resolve().parents[1]
MNIST_TRAIN_IMAGES = "train-images-idx3-ubyte.gz"


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("LKM_OFFLINE", "1")


@pytest.fixture(scope="session")
def manifest(data_dir: Path) -> dict:
    return json.loads((data_dir / "MANIFEST.json").read_text())


def _manifest_files_by_dataset() -> dict[str, list[dict]]:
    """Manifest entries grouped by dataset, read at collection time (empty without mirror)."""
    from conftest import mirror_dir

    root = mirror_dir()
    if root is None:
        return {}
    grouped: dict[str, list[dict]] = defaultdict(list)
    for entry in json.loads((root / "MANIFEST.json").read_text())["files"]:
        grouped[entry["dataset"]].append(entry)
    return dict(grouped)


MANIFEST_DATASETS = _manifest_files_by_dataset()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _counts(y: np.ndarray) -> dict[str, int]:
    """Class counts keyed by str(label), as MANIFEST.json writes them."""
    return {str(k): v for k, v in Counter(y.tolist()).items()}


def _mirror_with(
    tmp_path: Path, data_dir: Path, relpath: str, content: bytes | None = None
) -> Path:
    """A temporary mirror holding one file: ``content`` or a copy of the real one."""
    target = tmp_path / "mirror" / relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        shutil.copyfile(data_dir / relpath, target)
    else:
        target.write_bytes(content)
    return tmp_path / "mirror"


def _with_file(info: DatasetInfo, path: Path) -> DatasetInfo:
    """``info`` whose (only or same-named) file entry is re-registered with ``path``'s hash."""
    files = tuple(
        dataclasses.replace(f, sha256=_sha256(path), size=path.stat().st_size)
        if f.name == path.name
        else f
        for f in info.files
    )
    return dataclasses.replace(info, files=files)


# -- the registry itself -------------------------------------------------------------------
def test_registry_yaml_ships_through_the_package_symlink():
    assert REGISTRY_PATH == Path(lkm.data.__file__).with_name("registry.yaml")
    assert REGISTRY_PATH.is_symlink()
    assert REGISTRY_PATH.resolve() == (REPO / "datasets" / "registry.yaml").resolve()


def test_every_entry_is_complete_and_its_reader_exists():
    import sklearn.datasets

    infos = list_datasets()
    assert len({i.name for i in infos}) == len(infos) >= 30
    for info in infos:
        assert info.description and info.citation, info.name
        assert info.n_samples and info.n_features, info.name
        if info.meta.get("targets") != "real":  # a regression toy set has no classes to count
            assert info.class_counts and sum(info.class_counts.values()) == info.n_samples, info.name
        if info.source == "file":
            assert info.reader in PARSERS, info.name
            for f in info.files:
                assert len(f.sha256) == 64 and f.size > 0
                assert f.url or f.origin, f"{info.name}/{f.name}: neither url nor origin"
            parts = info.options.get("parts", {})
            assert {n for names in parts.values() for n in names} <= {f.name for f in info.files}
        elif info.source == "sklearn":
            assert hasattr(sklearn.datasets, info.reader)
        else:
            assert info.source == "synthetic" and info.reader in GENERATORS


def test_registry_files_match_the_manifest(manifest):
    """Every mirror file is a registered file or one of its accepted alternative forms."""
    registered = {(f.dir, f.name): f for info in list_datasets() for e in info.files for f in e.forms()}
    for entry in manifest["files"]:
        directory, name = entry["path"].split("/")
        f = registered.get((directory, name))
        assert f is not None, f"{entry['path']} is in MANIFEST.json but not registered"
        assert (f.sha256, f.size) == (entry["sha256"], entry["size_bytes"]), entry["path"]
        origin = entry["origin_url"]
        if f.origin.startswith("an accepted alternative form of "):  # its canonical file has the URL
            canonical = f.origin.removeprefix("an accepted alternative form of ")
            assert registered[(directory, canonical)].url == origin, entry["path"]
        elif origin.startswith("http") and " " not in origin:  # a direct download URL
            assert f.url == origin, entry["path"]
        else:  # a description (Kaggle page, repackaging): no direct download
            assert f.url is None and f.origin, entry["path"]
        assert dataset_info(entry["dataset"]).name == entry["dataset"]


def test_mnist_training_images_accept_the_gz_or_the_decompressed_file(manifest):
    """The canonical .gz (downloadable) and the mirror's decompressed form, each with its
    own published sha256; MANIFEST.json's entry for the decompressed file is the latter."""
    for name in ("mnist", "mnist-even-odd"):
        (f,) = [f for f in dataset_info(name).files if f.name == MNIST_TRAIN_IMAGES]
        assert f.url == "http://yann.lecun.com/exdb/mnist/" + MNIST_TRAIN_IMAGES and f.size == 9912422
        assert f.sha256 == "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"
        (alt,) = f.alternatives
        (entry,) = [e for e in manifest["files"] if e["path"] == f"mnist/{alt.name}"]
        assert (alt.name, alt.sha256, alt.size) == (
            MNIST_TRAIN_IMAGES.removesuffix(".gz"), entry["sha256"], entry["size_bytes"])
        assert alt.sha256 == "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"
    assert not [m for m in manifest["missing"] if m.get("dataset") == "mnist"]


# -- every mirrored dataset against MANIFEST.json's verified statistics ---------------------
def _part_of(info: DatasetInfo, file_name: str) -> str | None:
    return next(
        (p for p, names in info.options.get("parts", {}).items() if file_name in names), None
    )


@pytest.mark.parametrize("name", sorted(set(MANIFEST_DATASETS) - {"mnist"}))
def test_mirrored_dataset_has_the_verified_shape_and_classes(name, data_dir):
    info = dataset_info(name)
    ds = load_dataset(name, data_dir=data_dir)
    assert ds.X.dtype == np.float64 and ds.X.flags.c_contiguous and np.isfinite(ds.X).all()
    assert ds.y.shape == (ds.X.shape[0],)
    assert ds.classes == sorted(set(ds.y.tolist()))

    rows: Counter = Counter()
    counts: dict[str | None, Counter] = defaultdict(Counter)
    for entry in MANIFEST_DATASETS[name]:
        v = entry["verified"]
        assert v["features"] == ds.X.shape[1]
        if isinstance(v["rows"], dict):  # one file holding both parts (usps.h5)
            rows.update(v["rows"])
            for part, cc in v["class_counts"].items():
                counts[part].update(cc)
            continue
        part = _part_of(info, entry["file"])
        rows[part] += v["rows"]
        cc = v.get("class_counts") or v.get("class_counts_by_selector")
        if cc:
            counts[part].update(cc)
        elif "classes" in v:
            assert len(ds.classes) == v["classes"]

    verified = [entry["verified"] for entry in MANIFEST_DATASETS[name]]
    dropped = sum(v.get("rows_with_missing", 0) for v in verified)
    if dropped:  # breast-cancer-wisconsin: the 16 rows with '?' are dropped
        assert len(ds.y) == sum(rows.values()) - dropped == 683
        loaded = _counts(ds.y)
        assert all(loaded[k] <= v for k, v in counts[None].items())
        assert sum(counts[None].values()) - len(ds.y) == dropped
        assert "16 rows" in info.description
    else:
        assert len(ds.y) == sum(rows.values())
    if ds.predefined_split is None:
        assert set(rows) == {None}
        if counts and not dropped:
            assert _counts(ds.y) == dict(counts[None])
    else:
        split = ds.predefined_split
        assert {p: len(idx) for p, idx in split.items()} == dict(rows)
        assert np.array_equal(np.sort(np.concatenate(list(split.values()))), np.arange(len(ds.y)))
        for part, cc in counts.items():
            assert _counts(ds.y[split[part]]) == dict(cc), part
    sizes = [v["official_train_test_sizes"] for v in verified if "official_train_test_sizes" in v]
    if sizes:  # IDA: official sizes recorded, split indices not available
        assert info.meta["official_train_test_sizes"] == sizes[0]
        assert ds.predefined_split is None and "NOT available" in info.description

    assert ds.X.shape == (info.n_samples, info.n_features)
    assert _counts(ds.y) == {str(k): v for k, v in info.class_counts.items()}


@pytest.mark.parametrize(
    "name,sizes",
    [
        ("image-segmentation", {"train": 210, "test": 2100}),
        ("usps", {"train": 7291, "test": 2007}),
        ("isolet", {"train": 6238, "test": 1559}),
    ],
)
def test_official_partitions(name, sizes, data_dir):
    ds = load_dataset(name, data_dir=data_dir)
    assert {k: len(v) for k, v in ds.predefined_split.items()} == sizes
    assert np.array_equal(ds.predefined_split["train"], np.arange(sizes["train"]))
    assert ds.info.meta["official_train_test_sizes"] == [sizes["train"], sizes["test"]]


def test_mnist_without_training_images_is_unavailable_with_a_hint(tmp_path, data_dir):
    """A mirror with neither form of the training images: one line naming both forms."""
    mirror = tmp_path / "mirror" / "mnist"
    mirror.mkdir(parents=True)
    for name in ("train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        (mirror / name).symlink_to(data_dir / "mnist" / name)
    with pytest.raises(DatasetUnavailable) as err:
        load_dataset("mnist", data_dir=tmp_path / "mirror", classes=[3, 8])
    message = str(err.value)
    assert "\n" not in message
    assert "dataset 'mnist'" in message and MNIST_TRAIN_IMAGES in message
    assert "(or its accepted form train-images-idx3-ubyte)" in message
    assert "yann.lecun.com" in message and "LKM_OFFLINE" in message
    assert f"place it at {tmp_path / 'mirror'}/mnist/{MNIST_TRAIN_IMAGES}" in message


def test_real_mnist_from_the_mirror_has_the_official_split(data_dir):
    """The mirror's decompressed training images: 60000 training rows, 10000 test rows,
    and the paper's 3-8 / 6-8 / 9-8 training sizes (Shin and Cho, Table 2)."""
    ds = load_dataset("mnist", data_dir=data_dir)
    assert ds.X.shape == (70000, 784) and ds.X.min() == 0 and ds.X.max() == 255
    assert {k: len(v) for k, v in ds.predefined_split.items()} == {"train": 60000, "test": 10000}
    assert np.array_equal(ds.predefined_split["train"], np.arange(60000))
    assert _counts(ds.y) == {str(k): v for k, v in ds.info.class_counts.items()}
    (labels,) = [e for e in MANIFEST_DATASETS["mnist"] if e["file"].startswith("train-labels")]
    assert _counts(ds.y[:60000]) == labels["verified"]["class_counts"]
    train = ds.y[:60000]
    assert [int(np.isin(train, pair).sum()) for pair in ([3, 8], [6, 8], [9, 8])] == [11982, 11769, 11800]


def _idx_bytes(magic: int, array: np.ndarray) -> bytes:
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


@pytest.mark.parametrize("form", ["gz", "raw"])
def test_idx_file_is_accepted_as_gz_or_raw_each_with_its_own_sha256(tmp_path, form):
    """A tiny IDX pair registered with a .gz images file whose decompressed form is an
    accepted alternative: either one alone in the mirror loads to the same rows; a raw
    file with the wrong bytes fails its own checksum."""
    rng = np.random.default_rng(0)
    images, labels = rng.integers(0, 256, (12, 4, 5)), np.arange(12) % 3
    raw = _idx_bytes(2051, images)
    packed = gzip.compress(raw, mtime=0)
    lab = gzip.compress(_idx_bytes(2049, labels), mtime=0)
    mirror = tmp_path / "mirror" / "tiny"
    mirror.mkdir(parents=True)
    (mirror / "labels.gz").write_bytes(lab)
    (mirror / ("images.gz" if form == "gz" else "images")).write_bytes(packed if form == "gz" else raw)
    sha = lambda b: hashlib.sha256(b).hexdigest()  # noqa: E731
    alt = AlternativeFile("images", sha(raw), len(raw))
    info = DatasetInfo(
        name="tiny-idx", description="tiny", citation="none", source="file", reader="idx",
        files=(FileEntry("images.gz", "http://127.0.0.1:9/images.gz", sha(packed), len(packed), "tiny",
                         alternatives=(alt,)),
               FileEntry("labels.gz", None, sha(lab), len(lab), "tiny", origin="test")),
    )
    ds = load_dataset(info, data_dir=tmp_path / "mirror")
    assert np.array_equal(ds.X, images.reshape(12, 20)) and np.array_equal(ds.y, labels)
    path = lkm.data.fetch_file(info.files[0], tmp_path / "mirror")
    assert path.name == ("images.gz" if form == "gz" else "images")
    if form == "raw":
        (mirror / "images").write_bytes(raw[:-1] + b"\x00")
        with pytest.raises(ChecksumError, match=f"expects {sha(raw)}"):
            load_dataset(info, data_dir=tmp_path / "mirror")


def _gzip_idx(path: Path, magic: int, array: np.ndarray) -> Path:
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
    path.write_bytes(gzip.compress(header + array.astype(np.uint8).tobytes(), mtime=0))
    return path


def test_mnist_parses_idx_files_into_train_and_test_parts(tmp_path, data_dir):
    """The real test files plus a small stand-in training set registered by hand."""
    mirror = tmp_path / "mirror" / "mnist"
    mirror.mkdir(parents=True)
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        (mirror / name).symlink_to(data_dir / "mnist" / name)
    rng = np.random.default_rng(0)
    train_y = np.arange(30) % 10
    _gzip_idx(mirror / MNIST_TRAIN_IMAGES, 2051, rng.integers(0, 256, (30, 28, 28)))
    _gzip_idx(mirror / "train-labels-idx1-ubyte.gz", 2049, train_y)
    info = _with_file(
        _with_file(dataset_info("mnist"), mirror / MNIST_TRAIN_IMAGES),
        mirror / "train-labels-idx1-ubyte.gz",
    )
    ds = load_dataset(info, data_dir=tmp_path / "mirror")
    assert ds.X.shape == (10030, 784) and ds.X.max() <= 255
    assert {k: len(v) for k, v in ds.predefined_split.items()} == {"train": 30, "test": 10000}
    assert np.array_equal(ds.y[:30], train_y)
    (test_labels,) = [e for e in MANIFEST_DATASETS["mnist"] if e["file"].startswith("t10k-labels")]
    assert _counts(ds.y[ds.predefined_split["test"]]) == test_labels["verified"]["class_counts"]
    three_eight = load_dataset(info, data_dir=tmp_path / "mirror", classes=[3, 8])
    assert three_eight.classes == [3, 8]
    assert len(three_eight.predefined_split["train"]) == 6
    assert len(three_eight.predefined_split["test"]) == 1010 + 974


@pytest.mark.parametrize(
    "name",
    [
        "sklearn-breast-cancer",
        "sklearn-iris",
        "sklearn-wine",
        "sklearn-digits",
        "moons",
        "gaussians",
        "xor",
        "ring",
    ],
)
def test_offline_dataset_matches_its_registry_statistics(name):
    ds = load_dataset(name)
    assert ds.X.dtype == np.float64 and ds.X.flags.c_contiguous
    assert ds.X.shape == (ds.info.n_samples, ds.info.n_features)
    assert dict(Counter(ds.y.tolist())) == ds.info.class_counts
    assert fetch(name) == []


def test_sklearn_breast_cancer_equals_wdbc(data_dir):
    wdbc = load_dataset("wdbc", data_dir=data_dir)
    bundled = load_dataset("sklearn-breast-cancer")
    assert np.array_equal(wdbc.X, bundled.X)
    assert np.array_equal(wdbc.y == "B", bundled.y == 1)


def test_feature_names_from_the_segmentation_header(data_dir):
    ds = load_dataset("segmentation", data_dir=data_dir)
    assert ds.feature_names[0] == "REGION-CENTROID-COL" and len(ds.feature_names) == 19
    assert ds.classes == ["BRICKFACE", "CEMENT", "FOLIAGE", "GRASS", "PATH", "SKY", "WINDOW"]


# -- names, aliases, classes ----------------------------------------------------------------
@pytest.mark.parametrize(
    "alias,name",
    [
        ("diabetes", "pima-indians-diabetes"),
        ("pima", "pima-indians-diabetes"),
        ("bupa", "liver-disorders"),
        ("heart", "heart-statlog"),
        ("letter", "letter-recognition"),
        ("IDA_Breast_Cancer", "ida-breast-cancer"),
        ("banana", "ida-banana"),
        ("Sonar", "sonar"),
    ],
)
def test_aliases_and_spelling_variants(alias, name):
    assert dataset_info(alias).name == name


def test_alias_loads_under_the_registered_name(data_dir):
    assert load_dataset("bupa", data_dir=data_dir).name == "liver-disorders"


def test_unknown_name_suggests_the_closest():
    with pytest.raises(DataError, match=r"unknown dataset 'sonr' \(did you mean 'sonar'\?\)"):
        dataset_info("sonr")
    with pytest.raises(DataError, match="did you mean 'ionosphere'"):
        load_dataset("ionosphre")


def test_classes_keeps_rows_in_order_and_reindexes_the_split(data_dir):
    full = load_dataset("image-segmentation", data_dir=data_dir)
    ds = load_dataset("image-segmentation", data_dir=data_dir, classes=["SKY", "GRASS"])
    mask = np.isin(full.y, ["SKY", "GRASS"])
    assert np.array_equal(ds.X, full.X[mask]) and np.array_equal(ds.y, full.y[mask])
    assert ds.classes == ["GRASS", "SKY"] and ds.X.flags.c_contiguous
    for part, size in (("train", 60), ("test", 600)):
        idx = ds.predefined_split[part]
        assert len(idx) == size
        original = full.predefined_split[part]
        assert np.array_equal(ds.X[idx], full.X[original[mask[original]]])


def test_classes_accepts_strings_of_int_labels(data_dir):
    ds = load_dataset("heart", data_dir=data_dir, classes=["2"])
    assert ds.classes == [2] and len(ds.y) == 120
    assert len(load_dataset("sklearn-digits", classes=[3, "8"]).y) == 183 + 174


@pytest.mark.parametrize("classes", [["M", "X"], [1], []])
def test_unknown_class_is_a_data_error(classes, data_dir):
    with pytest.raises(DataError, match="dataset 'sonar'"):
        load_dataset("sonar", data_dir=data_dir, classes=classes)


# -- corrupt, missing and unparsable files --------------------------------------------------
def test_modified_file_in_the_mirror_is_a_checksum_error(tmp_path, data_dir):
    content = bytearray((data_dir / "sonar" / "sonar.all-data").read_bytes())
    content[10:14] = b"9999"
    mirror = _mirror_with(tmp_path, data_dir, "sonar/sonar.all-data", bytes(content))
    with pytest.raises(ChecksumError) as err:
        load_dataset("sonar", data_dir=mirror)
    message = str(err.value)
    assert "dataset 'sonar'" in message and "sonar.all-data" in message and "\n" not in message
    assert dataset_info("sonar").files[0].sha256 in message
    assert hashlib.sha256(bytes(content)).hexdigest() in message
    (result,) = [r for r in verify(data_dir=mirror) if r.dataset == "sonar"]
    assert result.status == "mismatch" and result.actual != result.expected


def test_nan_in_features_is_a_data_error_naming_the_dataset(tmp_path, data_dir):
    lines = (data_dir / "sonar" / "sonar.all-data").read_text().splitlines(keepends=True)
    for i in (0, 5, 7):
        cells = lines[i].split(",")
        cells[3] = "nan"
        lines[i] = ",".join(cells)
    mirror = _mirror_with(tmp_path, data_dir, "sonar/sonar.all-data", "".join(lines).encode())
    info = _with_file(dataset_info("sonar"), mirror / "sonar" / "sonar.all-data")
    with pytest.raises(
        DataError,
        match=r"^dataset 'sonar': 3 NaN values in features parsed "
        r"from sonar/sonar\.all-data$",
    ):
        load_dataset(info, data_dir=mirror)


def test_unparsable_verified_files_are_data_errors(tmp_path, data_dir):
    text = (data_dir / "iris" / "iris.data").read_text().replace("5.1,3.5", "5.1,abc", 1)
    mirror = _mirror_with(tmp_path, data_dir, "iris/iris.data", text.encode())
    info = _with_file(dataset_info("iris"), mirror / "iris" / "iris.data")
    with pytest.raises(
        DataError, match=r"dataset 'iris': iris/iris\.data: data row 1, feature 2: 'abc'"
    ):
        load_dataset(info, data_dir=mirror)

    truncated = (data_dir / "ida" / "banana.mat").read_bytes()[:5000]
    mirror = _mirror_with(tmp_path, data_dir, "ida/banana.mat", truncated)
    info = _with_file(dataset_info("ida-banana"), mirror / "ida" / "banana.mat")
    with pytest.raises(DataError, match=r"^dataset 'ida-banana': could not parse ida/banana\.mat"):
        load_dataset(info, data_dir=mirror)


def test_file_missing_everywhere_names_its_origin(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetUnavailable) as err:
        load_dataset("usps", data_dir=tmp_path / "empty")
    message = str(err.value)
    assert "dataset 'usps': file usps.h5" in message and "kaggle.com" in message
    assert f"place it at {tmp_path / 'empty'}/usps/usps.h5" in message


def test_verify_reports_every_registered_file(data_dir, manifest):
    results = {(r.dataset, r.file): r for r in verify(data_dir=data_dir)}
    assert len(results) == sum(len(i.files) for i in list_datasets())
    for entry in manifest["files"]:
        r = results[(entry["dataset"], entry["file"])]
        assert r.status == "ok" and r.actual == r.expected == entry["sha256"]
        assert r.path == data_dir / entry["path"]
    decompressed = results[("mnist", MNIST_TRAIN_IMAGES.removesuffix(".gz"))]  # the accepted form
    assert decompressed.status == "ok" and decompressed.path == data_dir / "mnist" / decompressed.file


def test_fetch_uses_mirror_files_in_place(data_dir):
    assert fetch("heart", data_dir=data_dir) == [data_dir / "heart-statlog" / "heart.dat"]


# -- parameters and directories -------------------------------------------------------------
def test_parameters_are_only_for_synthetic_datasets(data_dir):
    with pytest.raises(DataError, match="dataset 'sonar' .*takes no parameters.*noise"):
        load_dataset("sonar", data_dir=data_dir, noise=0.1)
    with pytest.raises(DataError, match="dataset 'moons': unknown parameter.*'sigma'"):
        load_dataset("moons", sigma=2)
    with pytest.raises(DataError, match="random_state must be an integer"):
        load_dataset("xor", random_state=None)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_synthetic_generators_are_deterministic(name):
    a, b = load_dataset(name), load_dataset(name)
    assert a.X.tobytes() == b.X.tobytes() and np.array_equal(a.y, b.y)
    other = load_dataset(name, random_state=1)
    assert not np.array_equal(a.X, other.X)
    small = load_dataset(name, n_samples=51, random_state=3)
    if dataset_info(name).meta.get("targets") == "real":  # the regression toy set: one feature, real y
        assert small.X.shape == (51, 1) and small.y.dtype.kind == "f"
    else:
        assert small.X.shape == (51, 2) and len(small.classes) == 2
    assert load_dataset(name, n_samples=51, random_state=3).X.tobytes() == small.X.tobytes()


def test_gaussians_follow_the_published_design():
    ds = load_dataset("gaussians", n_samples=20000)
    for label, mean in ((-1, (0, 0)), (1, (2, 2))):
        X = ds.X[ds.y == label]
        assert len(X) == 10000
        assert np.allclose(X.mean(axis=0), mean, atol=0.03)
        assert np.allclose(np.cov(X.T), 0.5 * np.eye(2), atol=0.03)


def test_xor_labels_are_the_sign_of_the_product():
    ds = load_dataset("xor")
    assert np.abs(ds.X).max() <= 1
    assert np.array_equal(ds.y, np.where(ds.X[:, 0] * ds.X[:, 1] >= 0, 1, -1))


def test_data_dir_and_cache_resolution(tmp_path, monkeypatch):
    monkeypatch.delenv("LKM_DATA_DIR", raising=False)
    assert resolve_data_dir() is None
    monkeypatch.setenv("LKM_DATA_DIR", str(tmp_path))
    assert resolve_data_dir() == tmp_path
    (tmp_path / "other").mkdir()
    assert resolve_data_dir(tmp_path / "other") == tmp_path / "other"
    with pytest.raises(DataError, match="not a directory"):
        resolve_data_dir(tmp_path / "nope")
    assert cache_dir() == Path(os.environ["LKM_CACHE_DIR"])
