"""Official train/test realizations of the IDA benchmarks (Raetsch, Onoda, Mueller 2001).

The benchmark repository's ``benchmarks.mat`` holds, per benchmark, a struct with the
unique patterns ``x``, targets ``t`` and 1-based index matrices ``train`` and ``test``
(one row per realization: 100, or 20 for image and splice). Each ida-* registry entry
names that file in ``meta.official_split_file`` and its struct in ``meta.benchmark_key``.
The file is never downloaded implicitly: when a verified copy sits in the data directory
or the cache, :func:`official_realizations` maps its indices onto the mirrored rows and
``load_dataset`` attaches them as :attr:`Dataset.realizations`; otherwise the
``realizations`` protocol draws seeded random realizations of the official sizes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lkm.data.fetch import resolve_data_dir
from lkm.data.registry import DatasetInfo, FileEntry, list_datasets
from lkm.errors import DataError
from lkm.files import cache_dir, file_sha256

Realizations = list[tuple[np.ndarray, np.ndarray]]


def official_split_entry(info: DatasetInfo) -> FileEntry | None:
    """The registered official split file of ``info`` (``meta.official_split_file``), if any."""
    raw = info.meta.get("official_split_file")
    if not raw:
        return None
    return FileEntry(
        name=str(raw["name"]), url=raw.get("url") or None, sha256=str(raw["sha256"]).lower(),
        size=int(raw["size"]), dir=str(raw["dir"]), origin=str(raw.get("origin") or ""),
    )


def find_official_split(entry: FileEntry, data_dir: str | Path | None = None) -> Path | None:
    """A local copy of ``entry`` (data directory, then cache), sha256-verified; None if absent."""
    root = resolve_data_dir(data_dir)
    for base in ([root] if root is not None else []) + [cache_dir()]:
        path = base / entry.relpath
        if path.is_file():
            if file_sha256(path) != entry.sha256:
                raise DataError(
                    f"{path}: sha256 {file_sha256(path)} differs from the registered {entry.sha256} "
                    f"of the official split file {entry.name}"
                )
            return path
    return None


def official_split_file_present(data_dir: str | Path | None = None) -> bool:
    """True when the official split file of some registered dataset is available locally."""
    entries = {e.relpath: e for e in (official_split_entry(info) for info in list_datasets()) if e}
    try:
        return any(find_official_split(e, data_dir) is not None for e in entries.values())
    except DataError:
        return False


def read_realizations(path: Path, key: str, X: np.ndarray, y: np.ndarray, dataset: str = "") -> Realizations:
    """The (train, test) index pairs of benchmark ``key`` in ``path``, as 0-based indices into
    the rows of ``X``/``y`` (the mirrored patterns, matched to the file's ``x``/``t`` rows)."""
    from scipy.io import loadmat

    try:
        struct = loadmat(path)[key][0, 0]
        x, t = np.asarray(struct["x"], dtype=np.float64), np.asarray(struct["t"]).ravel()
        train, test = np.asarray(struct["train"], dtype=np.int64), np.asarray(struct["test"], dtype=np.int64)
    except (KeyError, ValueError, IndexError) as exc:
        raise DataError(f"dataset '{dataset}': {path.name} has no benchmark struct {key!r} ({exc})") from None
    rows = _row_map(x, t, X, np.asarray(y), dataset, path.name)
    return [(rows[tr - 1], rows[te - 1]) for tr, te in zip(train, test, strict=True)]


def _row_map(x: np.ndarray, t: np.ndarray, X: np.ndarray, y: np.ndarray, dataset: str, file: str) -> np.ndarray:
    """``rows[i]`` = the mirrored row holding the file's pattern i (identical patterns are
    interchangeable, so any consistent pairing is the same data)."""
    if x.shape == X.shape and np.array_equal(x, X) and np.array_equal(t, y.astype(t.dtype)):
        return np.arange(len(X))
    if x.shape != X.shape or len(t) != len(y):
        raise DataError(f"dataset '{dataset}': {file} has {x.shape} patterns, the mirror {X.shape}")
    a = np.column_stack([x, t.astype(np.float64)])
    b = np.column_stack([X, y.astype(np.float64)])
    order_a, order_b = np.lexsort(a.T[::-1]), np.lexsort(b.T[::-1])
    if not np.allclose(a[order_a], b[order_b]):
        raise DataError(f"dataset '{dataset}': the patterns of {file} are not those of the mirror")
    rows = np.empty(len(X), dtype=np.int64)
    rows[order_a] = order_b
    return rows


def official_realizations(
    info: DatasetInfo, X: np.ndarray, y: np.ndarray, data_dir: str | Path | None = None
) -> Realizations | None:
    """The official realizations of ``info`` when its split file is present, else None."""
    entry = official_split_entry(info)
    if entry is None:
        return None
    path = find_official_split(entry, data_dir)
    if path is None:
        return None
    return read_realizations(path, str(info.meta.get("benchmark_key", info.name)), X, y, info.name)
