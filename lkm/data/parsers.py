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


def _bad_cell(cells: np.ndarray, path: Path) -> ParseError:
    """Locate the first cell that is not a number (called only once conversion failed)."""
    for r, row in enumerate(cells):
        for c, value in enumerate(row):
            try:
                float(value)
            except (TypeError, ValueError):
                return ParseError(
                    f"{display_path(path)}: data row {r + 1}, feature {c + 1}: "
                    f"{str(value)!r} is not a number"
                )
    return ParseError(f"{display_path(path)}: features are not numbers")  # pragma: no cover


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
) -> Table:
    """Delimited text (UCI ``.data`` files): one row per sample, no header.

    ``delimiter`` is a character or ``whitespace``; ``skip_lines`` leading lines are
    ignored (``feature_names_line``, 0-based, may name the features, comma-separated);
    ``label_column`` and ``drop_columns`` index the original columns (negative from the
    end); rows containing the token ``drop_rows_with`` (e.g. ``?``) are dropped; blank
    lines are ignored.
    """
    import pandas as pd

    tables = []
    for path in paths:
        with reading(path):
            names = list(feature_names) if feature_names else None
            if feature_names_line is not None:
                with open(path, encoding="utf-8") as fh:
                    lines = [next(fh) for _ in range(feature_names_line + 1)]
                names = [n.strip() for n in lines[feature_names_line].split(",")]
            frame = pd.read_csv(
                path,
                header=None,
                skiprows=skip_lines,
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                skip_blank_lines=True,
                sep=r"\s+" if delimiter == "whitespace" else delimiter,
            )
            cells = np.char.strip(frame.to_numpy(dtype=str))
            n_columns = cells.shape[1]
            label_at = label_column % n_columns
            dropped = {c % n_columns for c in drop_columns} | {label_at}
            keep = [c for c in range(n_columns) if c not in dropped]
            if drop_rows_with is not None:
                cells = cells[~np.any(cells[:, keep] == drop_rows_with, axis=1)]
            try:
                X = cells[:, keep].astype(np.float64)
            except ValueError:
                raise _bad_cell(cells[:, keep], path) from None
            if names is not None and len(names) != X.shape[1]:
                raise ParseError(
                    f"{display_path(path)}: {len(names)} feature names for {X.shape[1]} features"
                )
            tables.append(_table(X, cells[:, label_at], path, names))
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


Reader = Callable[..., Table]
#: Parser name in the registry -> reader.
PARSERS: dict[str, Reader] = {"csv": csv, "mat": mat, "hdf5": hdf5, "idx": idx}


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
