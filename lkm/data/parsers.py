"""One reader per file format, selected by the ``parser`` name of a registry entry.

Every reader has the signature ``reader(paths, *, part=None, **options) -> Table``: it
reads the given files (already sha256-verified) and stacks their rows. :func:`parse`
applies a reader to a dataset's files; the ``parts`` option maps each part of an official
partition (``train``, ``test``) to its files, in order, and the row ranges of the parts
become ``predefined_split``. Readers raise :class:`ParseError` (a one-line message naming
the file); the loader prefixes the dataset name and re-raises it as ``DataError``.
"""

from __future__ import annotations

import contextlib
import gzip
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lkm.errors import did_you_mean
from lkm.numerics.kernels import env_bytes, format_bytes


class ParseError(Exception):
    """A file could not be turned into features and labels (message names the file)."""


@dataclass
class Table:
    """Parsed rows: float64 features, labels, optional feature names."""

    X: np.ndarray
    y: np.ndarray
    feature_names: list[str] | None = None


@dataclass
class Parsed(Table):
    """A dataset's rows with its official partition (index arrays), if any."""

    predefined_split: dict[str, np.ndarray] | None = None


def display_path(path: Path) -> str:
    """``<dir>/<file>``: the same in a mirror and in the cache."""
    return f"{path.parent.name}/{path.name}"


@contextlib.contextmanager
def reading(path: Path) -> Iterator[None]:
    """Turn any failure while reading ``path`` into a one-line :class:`ParseError`."""
    try:
        yield
    except ParseError:
        raise
    except Exception as exc:  # noqa: BLE001 - a corrupt file can fail in many ways
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ParseError(f"could not parse {display_path(path)}: {detail}") from exc


def check_finite(X: np.ndarray, origin: str) -> None:
    """Raise :class:`ParseError` if ``X`` holds NaN or infinite values."""
    n_nan = int(np.isnan(X).sum())
    n_inf = int(np.isinf(X).sum())
    if n_nan or n_inf:
        counts = " and ".join(
            f"{n} {what} values" for n, what in ((n_nan, "NaN"), (n_inf, "infinite")) if n
        )
        raise ParseError(f"{counts} in features parsed from {origin}")


def as_labels(values: np.ndarray) -> np.ndarray:
    """Labels as int64 when every value is integral, else as strings."""
    values = np.asarray(values).ravel()
    if values.dtype.kind in "iub":
        return values.astype(np.int64)
    if values.dtype.kind == "f":
        if np.all(np.isfinite(values)) and np.all(values == np.round(values)):
            return values.astype(np.int64)
        raise ParseError("labels are non-integral numbers")
    strings = [s.strip() for s in values.astype(str).tolist()]
    try:
        return np.array([int(s) for s in strings], dtype=np.int64)
    except ValueError:
        return np.array(strings, dtype=str)  # as narrow a dtype as the longest label


def _table(X: np.ndarray, y: np.ndarray, path: Path, names: list[str] | None = None) -> Table:
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2 or len(X) != len(y):
        raise ParseError(f"{display_path(path)}: {X.shape} features for {len(y)} labels")
    check_finite(X, display_path(path))
    try:
        labels = as_labels(y)
    except ParseError as exc:
        raise ParseError(f"{display_path(path)}: {exc}") from None
    return Table(X, labels, names)


def _stack(tables: Sequence[Table]) -> Table:
    if len(tables) == 1:
        return tables[0]
    widths = {t.X.shape[1] for t in tables}
    if len(widths) > 1:
        raise ParseError(f"files have different feature counts {sorted(widths)}")
    return Table(
        np.ascontiguousarray(np.vstack([t.X for t in tables])),
        np.concatenate([t.y for t in tables]),
        tables[0].feature_names,
    )


#: Values of a user dataset's ``impute`` option: fill a missing or non-finite feature
#: value with its column's mean or median over the file, or drop the row.
IMPUTE = ("mean", "median", "drop")
_IMPUTE_HINT = "set impute: mean, median or drop to fill or drop such rows"


def _cell_where(path: Path, r: int, c: int, names: Sequence[str] | None, rows: np.ndarray | None) -> str:
    """``<file>: row N, column 'name'`` (N the line in the file, when known; else the
    data row), the place of one cell in an error message."""
    row = f"row {int(rows[r])}" if rows is not None else f"data row {r + 1}"
    column = f"column {names[c]!r}" if names is not None else f"feature {c + 1}"
    return f"{display_path(path)}: {row}, {column}"


def _bad_cell(
    cells: np.ndarray, path: Path, names: Sequence[str] | None = None, rows: np.ndarray | None = None
) -> ParseError:
    """Locate the first cell that is not a number (called only once conversion failed)."""
    for r, row in enumerate(cells):
        for c, value in enumerate(row):
            try:
                float(value)
            except (TypeError, ValueError):
                what = "empty cell" if str(value) == "" else f"{str(value)!r} is not a number"
                hint = f" ({_IMPUTE_HINT})" if str(value) == "" else ""
                return ParseError(f"{_cell_where(path, r, c, names, rows)}: {what}{hint}")
    return ParseError(f"{display_path(path)}: features are not numbers")  # pragma: no cover


def _impute(X: np.ndarray, y: np.ndarray, missing: np.ndarray, how: str, path: Path,
            names: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray]:
    """``X`` and ``y`` with every ``missing`` cell filled by its column's mean or median
    over the finite values of the file (``how``), or with those rows dropped."""
    if how == "drop":
        keep = ~missing.any(axis=1)
        if not keep.any():
            raise ParseError(f"{display_path(path)}: every row has a missing value (impute: drop keeps none)")
        return X[keep], y[keep]
    X = X.copy()
    for c in np.flatnonzero(missing.any(axis=0)):
        finite = X[~missing[:, c], c]
        if not len(finite):
            column = f"column {names[int(c)]!r}" if names is not None else f"feature {c + 1}"
            raise ParseError(f"{display_path(path)}: {column} has no finite value to impute from")
        X[missing[:, c], c] = np.mean(finite) if how == "mean" else np.median(finite)
    return X, y


#: The largest feature magnitude a user's file may hold: squared distances of larger
#: values overflow float64 (1.8e308), and every fit would fail on infinities.
LARGEST_FEATURE = 1e150
#: More distinct non-integer labels than this: a continuous target, not classes.
MAX_FRACTIONAL_CLASSES = 20


def _check_labels(y: np.ndarray, path: Path) -> None:
    """Refuse labels that are not classes: a continuous target (many distinct non-integer
    numbers) or one class written two ways ("1" and "1.0")."""
    if y.dtype.kind in "fiub":
        values = np.unique(y.astype(np.float64))
    else:
        text = np.unique(np.char.strip(y.astype(str)))
        try:
            numbers = text.astype(np.float64)
        except ValueError:
            return  # names, not numbers: any distinct strings are distinct classes
        _, first, counts = np.unique(numbers, return_index=True, return_counts=True)
        if (counts > 1).any():
            same = text[numbers == numbers[first[counts > 1][0]]]
            raise ParseError(f"{display_path(path)}: the labels {', '.join(repr(str(v)) for v in same)} are the same "
                             "number written differently; write each class one way")
        values = np.unique(numbers)
    fractional = values[values != np.round(values)]
    if fractional.size and values.size > MAX_FRACTIONAL_CLASSES:
        shown = ", ".join(f"{v:g}" for v in values[:3])
        raise ParseError(f"{display_path(path)}: the target holds {values.size} distinct numbers, not all whole "
                         f"({shown}, …): a continuous target, and lkm's methods are classifiers; give the class "
                         "column as target, or bin the values into classes first")


def _user_table(X: np.ndarray, y: np.ndarray, path: Path, names: Sequence[str] | None,
                rows: np.ndarray | None, impute: str | None) -> Table:
    """:func:`_table` for a user's file: a NaN or infinite feature value is refused with
    its row and column unless ``impute`` (one of :data:`IMPUTE`) says what to do; a value
    beyond :data:`LARGEST_FEATURE` in magnitude, and labels that are not classes
    (:func:`_check_labels`), are refused."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y).ravel()
    if impute is not None and impute not in IMPUTE:
        raise ParseError(f"impute must be one of {', '.join(IMPUTE)}, got {impute!r}")
    if X.ndim == 2:
        missing = ~np.isfinite(X)
        if missing.any():
            if impute is None:
                r, c = (int(i[0]) for i in np.nonzero(missing))
                value = "NaN (a missing value)" if np.isnan(X[r, c]) else f"{X[r, c]} (infinite)"
                raise ParseError(f"{_cell_where(path, r, c, names, rows)}: {value}; {_IMPUTE_HINT}")
            X, y = _impute(X, y, missing, impute, path, names)
        huge = np.abs(X) > LARGEST_FEATURE
        if huge.any():
            r, c = (int(i[0]) for i in np.nonzero(huge))
            raise ParseError(f"{_cell_where(path, r, c, names, rows)}: {X[r, c]:g} is beyond ±{LARGEST_FEATURE:g}: "
                             "squared distances would overflow; rescale the column before adding the file")
    _check_labels(y, path)
    return _table(X, y, path, list(names) if names is not None else None)


def _header_cells(line: str, delimiter: str) -> list[str]:
    """The cells of a header line, split like the data rows (quotes honoured)."""
    import csv as csv_module

    if delimiter == "whitespace":
        return line.split()
    return [cell.strip() for cell in next(csv_module.reader([line], delimiter=delimiter), [])]


def _data_line_numbers(path: Path, skip: int) -> list[int]:
    """1-based line numbers in ``path`` of the rows a reader sees after ``skip`` lines
    (blank lines are not rows); only computed to name a bad row."""
    with open(path, encoding="utf-8") as fh:
        return [i + 1 for i, line in enumerate(fh) if i >= skip and line.strip()]


def _feature_names(header: list[str], n_columns: int, keep: list[int], path: Path) -> list[str]:
    """Feature names from a header that names every column or only the features."""
    if len(header) == n_columns:
        return [header[c] for c in keep]
    if len(header) == len(keep):
        return header
    raise ParseError(
        f"{display_path(path)}: the header names {len(header)} columns but the rows have {n_columns}"
    )


def csv(
    paths: Sequence[Path],
    *,
    part: str | None = None,
    delimiter: str = ",",
    skip_lines: int = 0,
    feature_names_line: int | None = None,
    label_column: int = -1,
    drop_columns: Sequence[int] = (),
    drop_rows_with: str | None = None,
    feature_names: Sequence[str] | None = None,
    target: str | None = None,
    impute: str | None = None,
) -> Table:
    """Delimited text: one row per sample (UCI ``.data`` files, or a user's CSV/TSV).

    ``delimiter`` is a character or ``whitespace``; ``skip_lines`` leading lines are
    ignored; ``feature_names_line`` (0-based) is a header line split like the rows — it
    is never read as data, and it may name every column (the label's name is dropped) or
    only the features; ``label_column`` and ``drop_columns`` index the original columns
    (negative from the end); ``target`` names the label column in the header instead
    (a user's file: bad cells are then reported by file line and column name, and
    missing values follow ``impute``, see :func:`_user_table`); rows containing the
    token ``drop_rows_with`` (e.g. ``?``) are dropped; blank lines are ignored.
    """
    import pandas as pd

    if target is not None and feature_names_line is None:
        raise ParseError("the target column is named, so the file needs a header (feature_names_line)")
    skip = skip_lines if feature_names_line is None else max(skip_lines, feature_names_line + 1)
    tables = []
    for path in paths:
        with reading(path):
            header: list[str] | None = None
            if feature_names_line is not None:
                with open(path, encoding="utf-8") as fh:
                    lines = [line for _, line in zip(range(feature_names_line + 1), fh, strict=False)]
                if len(lines) <= feature_names_line:
                    raise ParseError(f"{display_path(path)}: no header line (the file is empty)")
                header = _header_cells(lines[feature_names_line].removeprefix("\ufeff"), delimiter)
            try:
                frame = pd.read_csv(
                    path,
                    header=None,
                    skiprows=skip,
                    dtype=str,
                    keep_default_na=False,
                    na_filter=False,
                    skip_blank_lines=True,
                    sep=r"\s+" if delimiter == "whitespace" else delimiter,
                )
            except pd.errors.EmptyDataError:
                raise ParseError(f"{display_path(path)}: no data rows") from None
            cells = np.char.strip(frame.to_numpy(dtype=str))
            n_columns = cells.shape[1]
            if target is not None:
                assert header is not None
                twice = sorted({cell for cell in header if header.count(cell) > 1})
                if twice:
                    raise ParseError(f"{display_path(path)}: the header names the column {twice[0]!r} "
                                     f"{header.count(twice[0])} times; give each column its own name")
                if target not in header:
                    raise ParseError(
                        f"{display_path(path)}: no column {target!r} in the header{did_you_mean(target, header)}"
                    )
                if len(header) != n_columns:
                    raise ParseError(
                        f"{display_path(path)}: the header names {len(header)} columns but the rows have {n_columns}"
                    )
                label_at = header.index(target)
            else:
                label_at = label_column % n_columns
            dropped = {c % n_columns for c in drop_columns} | {label_at}
            keep = [c for c in range(n_columns) if c not in dropped]
            names = list(feature_names) if feature_names else None
            if header is not None:
                names = _feature_names(header, n_columns, keep, path)
            rows = np.arange(len(cells))
            if drop_rows_with is not None:
                kept = ~np.any(cells[:, keep] == drop_rows_with, axis=1)
                cells, rows = cells[kept], rows[kept]
            if target is None:
                try:
                    X = cells[:, keep].astype(np.float64)
                except ValueError:
                    raise _bad_cell(cells[:, keep], path) from None
                if names is not None and len(names) != X.shape[1]:
                    raise ParseError(
                        f"{display_path(path)}: {len(names)} feature names for {X.shape[1]} features"
                    )
                tables.append(_table(X, cells[:, label_at], path, names))
                continue
            assert names is not None
            line_of = _data_line_numbers(path, skip)
            file_rows = np.asarray([line_of[r] for r in rows], dtype=np.int64)
            features = cells[:, keep]
            if impute is not None:
                features = np.where(features == "", "nan", features)
            try:
                X = features.astype(np.float64)
            except ValueError:
                raise _bad_cell(features, path, names, file_rows) from None
            empty = np.flatnonzero(cells[:, label_at] == "")
            if len(empty):
                raise ParseError(
                    f"{display_path(path)}: row {file_rows[empty[0]]}, column {target!r}: the label is empty"
                )
            tables.append(_user_table(X, cells[:, label_at], path, names, file_rows, impute))
    return _stack(tables)


def mat(
    paths: Sequence[Path],
    *,
    part: str | None = None,
    data_key: str = "data",
    target_key: str = "target",
) -> Table:
    """MATLAB files read with :func:`scipy.io.loadmat`: ``data_key`` (n × p) and
    ``target_key`` (n × 1) variables (IDA benchmarks: data/target; Deng Cai: fea/gnd)."""
    import scipy.io

    tables = []
    for path in paths:
        with reading(path):
            contents = scipy.io.loadmat(path)
            missing = [k for k in (data_key, target_key) if k not in contents]
            if missing:
                present = sorted(k for k in contents if not k.startswith("__"))
                raise ParseError(
                    f"{display_path(path)}: no variable {missing[0]!r} (has {present})"
                )
            tables.append(_table(contents[data_key], contents[target_key].ravel(), path))
    return _stack(tables)


def hdf5(
    paths: Sequence[Path],
    *,
    part: str | None = None,
    group: str | None = None,
    data_key: str = "data",
    target_key: str = "target",
) -> Table:
    """HDF5 files read with h5py: datasets ``<group>/<data_key>`` and ``<group>/<target_key>``;
    ``group`` defaults to the part name (Kaggle ``usps.h5``: groups train and test)."""
    import h5py

    group = group or part or ""
    tables = []
    for path in paths:
        with reading(path), h5py.File(path, "r") as h5:
            base = h5[group] if group else h5
            for key in (data_key, target_key):
                if key not in base:
                    raise ParseError(f"{display_path(path)}: no HDF5 dataset '{group}/{key}'")
            tables.append(_table(base[data_key][()], base[target_key][()], path))
    return _stack(tables)


_IDX_IMAGES, _IDX_LABELS = 2051, 2049


_GZIP_MAGIC = b"\x1f\x8b"


def _read_idx(path: Path) -> tuple[int, np.ndarray]:
    """(magic number, array) of an IDX file (LeCun et al., MNIST page), gzip-compressed
    (the canonical ``.gz``) or raw (its decompressed form); told apart by the gzip magic
    bytes, not by the file name."""
    with open(path, "rb") as fh:
        compressed = fh.read(2) == _GZIP_MAGIC
    if compressed:
        with gzip.open(path, "rb") as fh:
            raw = fh.read()
    else:
        raw = path.read_bytes()
    magic = int.from_bytes(raw[:4], "big")
    n_dims = magic & 0xFF
    if magic >> 8 != 0x08 or n_dims not in (1, 3):  # unsigned-byte data, 1 or 3 dims
        raise ParseError(f"{display_path(path)}: not an unsigned-byte IDX file (magic {magic})")
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(n_dims))
    offset = 4 + 4 * n_dims
    if len(raw) - offset != int(np.prod(shape)):
        raise ParseError(f"{display_path(path)}: {len(raw) - offset} data bytes for shape {shape}")
    return magic, np.frombuffer(raw, dtype=np.uint8, offset=offset).reshape(shape)


#: ``label_map`` values of :func:`idx`: digit -> new label.
IDX_LABEL_MAPS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "parity": lambda digits: (digits % 2).astype(np.int64),  # 0 = even, 1 = odd
}


def idx(paths: Sequence[Path], *, part: str | None = None, label_map: str | None = None) -> Table:
    """An MNIST images file and its labels file (IDX, gzip or raw); told apart by magic number.
    Images become rows of ``rows × cols`` raw pixel values 0–255. ``label_map: parity``
    replaces each digit by 0 (even) or 1 (odd)."""
    if label_map is not None and label_map not in IDX_LABEL_MAPS:
        raise ParseError(f"unknown label_map {label_map!r} (known: {', '.join(IDX_LABEL_MAPS)})")
    arrays: dict[int, tuple[Path, np.ndarray]] = {}
    for path in paths:
        with reading(path):
            magic, array = _read_idx(path)
            arrays[magic] = (path, array)
    if set(arrays) != {_IDX_IMAGES, _IDX_LABELS}:
        shown = ", ".join(display_path(p) for p in paths)
        raise ParseError(f"expected one IDX images file and one labels file, got {shown}")
    images_path, images = arrays[_IDX_IMAGES]
    labels = arrays[_IDX_LABELS][1]
    if label_map is not None:
        labels = IDX_LABEL_MAPS[label_map](labels.astype(np.int64))
    return _table(images.reshape(len(images), -1), labels, images_path)


#: The largest dense array (bytes) a sparse file may become: rows x features x 8 bytes
#: (float64). ``LKM_MAX_DENSE_BYTES`` overrides it (a size: ``4GiB``, ``2e9``).
MAX_DENSE_BYTES = 2 * 1024**3


def max_dense_bytes() -> int:
    """:data:`MAX_DENSE_BYTES`, or ``$LKM_MAX_DENSE_BYTES`` when set (a size: ``4GiB``, ``2e9``)."""
    return env_bytes("LKM_MAX_DENSE_BYTES", MAX_DENSE_BYTES)


def check_dense_size(rows: int, features: int, path: Path) -> None:
    """Refuse, before allocating, a sparse file whose dense form (``rows x features x 8``
    bytes) exceeds :func:`max_dense_bytes`: one line naming the file and the sizes."""
    need, bound = rows * features * 8, max_dense_bytes()
    if need > bound:
        raise ParseError(f"{display_path(path)}: {rows} rows x {features} features would be a dense array of "
                         f"{format_bytes(need)}, over the limit of {format_bytes(bound)} (LKM_MAX_DENSE_BYTES raises it)")


def svmlight(paths: Sequence[Path], *, part: str | None = None, impute: str | None = None) -> Table:
    """svmlight / LIBSVM text (``label index:value ...``) read with
    :func:`sklearn.datasets.load_svmlight_file`; absent entries are 0, features are named
    ``x1``, ``x2``, ... by index (0- or 1-based as the file is). A file whose dense form
    would exceed :func:`max_dense_bytes` is refused before it is made dense."""
    from sklearn.datasets import load_svmlight_file

    tables = []
    for path in paths:
        with reading(path):
            X, y = load_svmlight_file(str(path))
            rows, features = X.shape
            check_dense_size(rows, features, path)
            X = X.toarray()
            tables.append(_user_table(X, y, path, None, None, impute))
    return _stack(tables)


def arff(paths: Sequence[Path], *, part: str | None = None, target: str | None = None,
         impute: str | None = None) -> Table:
    """ARFF (Weka) read with :func:`scipy.io.arff.loadarff`: numeric attributes are the
    features, ``target`` (default: the last attribute, Weka's convention) the labels;
    ``?`` is a missing value (see ``impute``). A nominal or string feature is refused."""
    from scipy.io import arff as scipy_arff

    tables = []
    for path in paths:
        with reading(path):
            data, meta = scipy_arff.loadarff(str(path))
            names = list(meta.names())
            label = target if target is not None else names[-1]
            if label not in names:
                raise ParseError(f"{display_path(path)}: no attribute {label!r}{did_you_mean(label, names)}")
            features = [n for n in names if n != label]
            for n in features:
                kind = meta[n][0]
                if kind != "numeric":
                    raise ParseError(
                        f"{display_path(path)}: attribute {n!r} is {kind}, not numeric; "
                        "convert it to numbers or remove it"
                    )
            X = np.column_stack([data[n].astype(np.float64) for n in features]) if features else np.empty((len(data), 0))
            y = data[label]
            if y.dtype.kind == "S":
                y = np.char.decode(y, "utf-8")
            if y.dtype.kind == "U" and np.any(y == "?"):
                r = int(np.flatnonzero(y == "?")[0])
                raise ParseError(f"{display_path(path)}: data row {r + 1}, attribute {label!r}: the label is missing ('?')")
            if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
                r = int(np.flatnonzero(~np.isfinite(y))[0])
                raise ParseError(f"{display_path(path)}: data row {r + 1}, attribute {label!r}: the label is missing")
            tables.append(_user_table(X, y, path, features, None, impute))
    return _stack(tables)


def npz(paths: Sequence[Path], *, part: str | None = None, target: str | None = None,
        features: str | None = None, impute: str | None = None) -> Table:
    """NumPy ``.npz`` archives (no pickles): the labels are the array ``target`` (default
    ``y``), the features the array ``features`` (default ``X``, or the only other array),
    one row per sample."""
    tables = []
    for path in paths:
        with reading(path), np.load(path, allow_pickle=False) as archive:
            keys = list(archive.files)
            label = target or "y"
            if label not in keys:
                raise ParseError(f"{display_path(path)}: no array {label!r} for the labels{did_you_mean(label, keys)}")
            others = [k for k in keys if k != label]
            data = features or ("X" if "X" in others or len(others) != 1 else others[0])
            if data not in others:
                raise ParseError(f"{display_path(path)}: no array {data!r} for the features{did_you_mean(data, others)}")
            X, y = archive[data], archive[label]
            if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
                raise ParseError(
                    f"{display_path(path)}: expected features {data!r} of shape (n, p) and labels "
                    f"{label!r} of shape (n,), got {X.shape} and {y.shape}"
                )
            if X.dtype.kind not in "iufb":
                raise ParseError(f"{display_path(path)}: array {data!r} holds {X.dtype}, not numbers")
            tables.append(_user_table(X, y, path, None, None, impute))
    return _stack(tables)


def openml(paths: Sequence[Path], *, part: str | None = None, dataset: str | int = "",
           version: int | str = "active", target: str | None = None, impute: str | None = None) -> Table:
    """An OpenML dataset from the cache :func:`sklearn.datasets.fetch_openml` leaves in
    its ``data_home`` (the one path given). Offline: scikit-learn's ``urlopen`` is
    replaced by a refusal while reading, so a file missing from the cache is an error,
    never a download. ``dataset`` is the OpenML name or numeric id; ``target`` defaults
    to OpenML's default target."""
    import warnings
    from unittest import mock

    import sklearn.datasets._openml as sklearn_openml

    def offline(*args: object, **kwargs: object) -> None:
        raise OSError("not in the cache (lkm reads OpenML caches offline)")

    (home,) = paths
    by_id = isinstance(dataset, int) or str(dataset).isdigit()
    try:
        with mock.patch.object(sklearn_openml, "urlopen", offline), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "multiple active versions", "invalid cache"
            bunch = sklearn_openml.fetch_openml(
                name=None if by_id else str(dataset), data_id=int(dataset) if by_id else None,
                version=version if not by_id else "active", data_home=str(home),
                target_column=target or "default-target", as_frame=True, parser="auto",
            )
    except Exception as exc:  # noqa: BLE001 - sklearn raises OSError, ValueError, URLError...
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ParseError(
            f"{home}: OpenML dataset {dataset!r} is not in this fetch_openml cache ({detail}); "
            f"fetch it once online with sklearn.datasets.fetch_openml(..., data_home={str(home)!r})"
        ) from None
    frame = bunch.data
    non_numeric = [str(c) for c in frame.columns if frame[c].dtype.kind not in "iufb"]
    if non_numeric:
        raise ParseError(f"{home}: OpenML dataset {dataset!r}: feature {non_numeric[0]!r} is not numeric")
    y = np.asarray(bunch.target).ravel()
    if y.dtype.kind == "O":
        y = y.astype(str)
    return _user_table(frame.to_numpy(dtype=np.float64), y, Path(home) / str(dataset),
                       [str(c) for c in frame.columns], None, impute)


Reader = Callable[..., Table]
#: Parser name in the registry -> reader.
PARSERS: dict[str, Reader] = {
    "csv": csv, "mat": mat, "hdf5": hdf5, "idx": idx,
    "svmlight": svmlight, "arff": arff, "npz": npz, "openml": openml,
}


def _seeded_split(y: np.ndarray, how: Mapping) -> dict[str, np.ndarray]:
    """A stratified random train/test partition of a file's rows (``seeded_split``:
    ``{train: fraction, seed: int}``), for files that come without an official one."""
    from sklearn.model_selection import train_test_split

    train, test = train_test_split(
        np.arange(len(y)), train_size=float(how["train"]), random_state=int(how["seed"]), stratify=y
    )
    return {"train": np.sort(train), "test": np.sort(test)}


def parse(parser: str, files: Mapping[str, Path], options: Mapping) -> Parsed:
    """Read a dataset's ``files`` (file name -> verified path) with the named parser.

    ``options["parts"]`` (part name -> file names) stacks the parts in order and records
    their row ranges as the official partition; ``options["seeded_split"]`` (``{train,
    seed}``, files without parts) records a seeded stratified partition instead; the
    other options go to the reader.
    """
    if parser not in PARSERS:
        raise ParseError(f"unknown parser {parser!r} (known: {', '.join(PARSERS)})")
    reader = PARSERS[parser]
    reader_options = {k: v for k, v in options.items() if k not in ("parts", "seeded_split")}
    parts: Mapping[str, Sequence[str]] | None = options.get("parts")
    if not parts:
        table = reader(list(files.values()), **reader_options)
        split = _seeded_split(table.y, options["seeded_split"]) if options.get("seeded_split") else None
        return Parsed(table.X, table.y, table.feature_names, split)
    tables = [
        reader([files[f] for f in names], part=part, **reader_options)
        for part, names in parts.items()
    ]
    stacked = _stack(tables)
    bounds = np.cumsum([0] + [len(t.y) for t in tables])
    split = {part: np.arange(bounds[i], bounds[i + 1]) for i, part in enumerate(parts)}
    return Parsed(stacked.X, stacked.y, stacked.feature_names, split)
