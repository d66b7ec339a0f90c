"""Datasets: the registry, verified files, parsers and generators behind :func:`load_dataset`.

>>> from lkm.data import load_dataset
>>> ds = load_dataset("moons")                      # synthetic, offline
>>> ds = load_dataset("mnist", classes=[3, 8])      # files from LKM_DATA_DIR or the cache

See ``datasets/registry.yaml`` for every name, alias, file and citation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lkm.data.catalog import dataset_info
from lkm.data.fetch import (
    VerifyResult,
    fetch,
    fetch_dataset_files,
    fetch_file,
    resolve_data_dir,
    verify,
)
from lkm.data.parsers import Parsed, ParseError, check_finite, display_path, parse
from lkm.data.realizations import official_realizations
from lkm.data.registry import DatasetInfo, FileEntry, list_datasets
from lkm.data.synthetic import generate
from lkm.errors import ChecksumError, DataError, DatasetUnavailable
from lkm.files import cache_dir

__all__ = [
    "Dataset",
    "DatasetInfo",
    "FileEntry",
    "VerifyResult",
    "cache_dir",
    "dataset_info",
    "fetch",
    "fetch_file",
    "list_datasets",
    "load_dataset",
    "resolve_data_dir",
    "verify",
]


@dataclass
class Dataset:
    """Features, labels and provenance of one dataset, as :func:`load_dataset` returns it.

    Parameters
    ----------
    name : str
        The registry's name of the dataset (``"sonar"``), or a derived name after
        :func:`select_classes` / :func:`merge_classes`.
    X : ndarray of shape (n_samples, n_features)
        Features, float64 and C-contiguous.
    y : ndarray of shape (n_samples,)
        The original class values (int or str).
    classes : list
        The sorted unique labels of ``y``.
    info : DatasetInfo
        The registry entry: description, citation, files with URL and sha256, parser.
    predefined_split : dict of str to ndarray, or None
        The official partition as index arrays (e.g. ``{"train": idx, "test": idx}``).
    feature_names : list of str, optional
        Column names, where the file has them.
    realizations : list of (ndarray, ndarray), optional
        A benchmark's official numbered (train, test) index pairs (realization r is
        ``realizations[r - 1]``); None when its split file is absent.
    row_groups : dict of str to ndarray, optional
        Per-row group ids by name (Isolet's ``speaker``; -1 where unknown).

    See Also
    --------
    load_dataset : Load a registered dataset by name.

    Examples
    --------
    >>> from lkm.data import load_dataset
    >>> iris = load_dataset("sklearn-iris")
    >>> iris
    Dataset('sklearn-iris', n=150, p=4, classes=3)
    >>> iris.X.shape, iris.classes
    ((150, 4), [0, 1, 2])
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    classes: list
    info: DatasetInfo
    predefined_split: dict[str, np.ndarray] | None
    feature_names: list[str] | None = None
    realizations: list[tuple[np.ndarray, np.ndarray]] | None = None
    row_groups: dict[str, np.ndarray] | None = None

    def __repr__(self) -> str:
        split = ", ".join(f"{k}={len(v)}" for k, v in (self.predefined_split or {}).items())
        return (
            f"Dataset({self.name!r}, n={self.X.shape[0]}, p={self.X.shape[1]}, "
            f"classes={len(self.classes)}{', ' + split if split else ''}"
            f"{f', realizations={len(self.realizations)}' if self.realizations else ''})"
        )


def _read_files(info: DatasetInfo, data_dir: str | Path | None) -> Parsed:
    files = fetch_dataset_files(info, data_dir)
    try:
        return parse(info.reader, files, info.options)
    except ParseError as exc:
        raise DataError(f"dataset '{info.name}': {exc}") from None
    except TypeError as exc:  # options in the registry that the parser does not take
        raise DataError(
            f"dataset '{info.name}': bad parser options in the registry: {exc}"
        ) from None


def _full_path(message: str, path: Path) -> str:
    """A reader's message with a user's file named by its full path, not ``<dir>/<file>``."""
    short = display_path(path)
    for prefix in (f"{short}:", f"could not parse {short}:"):
        if message.startswith(prefix):
            return message.replace(short, str(path), 1)
    return message


def _read_user_file(info: DatasetInfo) -> Parsed:
    """A user's file (:mod:`lkm.data.user`): present, with the pinned sha256, parsed by
    its format's reader; at least one row and two classes."""
    from lkm.data.user import user_file
    from lkm.files import file_sha256

    path, entry = user_file(info), info.files[0]
    if info.meta.get("format") != "openml":
        if not path.is_file():
            raise DatasetUnavailable(f"dataset '{info.name}': file {path} is missing ({entry.origin})")
        actual = file_sha256(path)
        if actual != entry.sha256:
            raise ChecksumError(
                f"dataset '{info.name}': {path} has sha256 {actual} but {entry.sha256} is pinned "
                f"({entry.origin}); the file changed since: restore it, or pin the new sha256"
            )
        if path.stat().st_size == 0:
            raise DataError(f"dataset '{info.name}': {path} is empty")
    try:
        parsed = parse(info.reader, {entry.name: path}, info.options)
    except ParseError as exc:
        raise DataError(f"dataset '{info.name}': {_full_path(str(exc), path)}") from None
    label = f"column {info.options['target']!r}" if info.options.get("target") else "the labels"
    if not len(parsed.y):
        raise DataError(f"dataset '{info.name}': {path} has no data rows")
    classes = np.unique(parsed.y)
    if len(classes) < 2:
        raise DataError(
            f"dataset '{info.name}': {path}: {label} holds a single class {classes[0].item()!r} "
            f"in all {len(parsed.y)} rows; a classifier needs at least two"
        )
    return parsed


def _load_sklearn(info: DatasetInfo) -> Parsed:
    """A dataset bundled with scikit-learn (``sklearn.datasets.load_*``, offline)."""
    import sklearn.datasets

    loader = getattr(sklearn.datasets, info.reader, None)
    if not info.reader.startswith("load_") or loader is None:
        raise DataError(f"dataset '{info.name}': sklearn.datasets has no loader {info.reader!r}")
    bunch = loader(**info.options)
    names = [str(n) for n in bunch.feature_names] if "feature_names" in bunch else None
    return Parsed(np.asarray(bunch.data), np.asarray(bunch.target, dtype=np.int64), names)


def _generate(info: DatasetInfo, params: dict) -> Parsed:
    X, y = generate(info.reader, {**info.options, **params}, dataset=info.name)
    y = np.asarray(y)  # float targets (a regression toy set) stay float; classes become int64
    return Parsed(X, y if y.dtype.kind == "f" else y.astype(np.int64), ["x1", "x2"] if X.shape[1] == 2 else None)


def _match_classes(requested: Sequence, y: np.ndarray, dataset: str) -> list:
    """The label values named by ``requested`` (ints also given as strings of ints)."""
    present = np.unique(y).tolist()
    matched = []
    for value in requested:
        candidate = value
        if y.dtype.kind in "iu" and isinstance(value, str):
            try:
                candidate = int(value.strip())
            except ValueError:
                candidate = value
        elif y.dtype.kind == "U" and not isinstance(value, str):
            candidate = None  # a number never equals a string label
        if candidate not in present:
            raise DataError(
                f"dataset '{dataset}': class {value!r} is not one of its classes {present}"
            )
        if candidate not in matched:
            matched.append(candidate)
    return matched


def select_classes(dataset: Dataset, classes: Sequence) -> Dataset:
    """The rows of ``dataset`` whose label is in ``classes``, in their original order;
    ``predefined_split`` is re-indexed to the kept rows."""
    if isinstance(classes, (str, bytes)) or not len(classes):
        raise DataError(
            f"dataset '{dataset.name}': classes must be a non-empty list, got {classes!r}"
        )
    return keep_rows(dataset, np.isin(dataset.y, _match_classes(classes, dataset.y, dataset.name)))


#: The seed of :func:`subsample_rows` (a benchmark's subsample is part of its protocol).
SUBSAMPLE_SEED = 0


def subsample_rows(dataset: Dataset, n_rows: int, seed: int = SUBSAMPLE_SEED) -> Dataset:
    """At most ``n_rows`` rows of ``dataset``: a stratified draw (each class keeps its
    share, rounded as scikit-learn's ``train_test_split(stratify=y)`` rounds) with
    ``seed``, the kept rows in their original order. A dataset of at most ``n_rows``
    rows is returned as it is."""
    if n_rows >= len(dataset.y):
        return dataset
    from sklearn.model_selection import train_test_split

    rows = np.arange(len(dataset.y))
    kept, _ = train_test_split(rows, train_size=int(n_rows), stratify=dataset.y, random_state=seed)
    keep = np.zeros(len(rows), dtype=bool)
    keep[kept] = True
    return keep_rows(dataset, keep)


def keep_rows(dataset: Dataset, keep: np.ndarray) -> Dataset:
    """The rows of ``dataset`` where the boolean mask ``keep`` is true, in their original
    order; predefined splits, realizations and row groups re-indexed to them."""
    new_index = np.cumsum(keep) - 1
    split = None
    if dataset.predefined_split is not None:
        split = {part: new_index[idx[keep[idx]]] for part, idx in dataset.predefined_split.items()}
    realizations = None
    if dataset.realizations is not None:
        realizations = [(new_index[tr[keep[tr]]], new_index[te[keep[te]]]) for tr, te in dataset.realizations]
    y = dataset.y[keep]
    return Dataset(
        dataset.name,
        np.ascontiguousarray(dataset.X[keep]),
        y,
        np.unique(y).tolist(),
        dataset.info,
        split,
        dataset.feature_names,
        realizations,
        {k: v[keep] for k, v in dataset.row_groups.items()} if dataset.row_groups else None,
    )


def row_groups_by_rank(y: np.ndarray, rank_within_class: int, blocks: Sequence[int], dataset: str) -> np.ndarray:
    """Group ids recovered from the row order: in each block of consecutive rows (sizes
    ``blocks``), the r-th row of a class (in row order) belongs to group
    ``offset + r // rank_within_class``, ``offset`` counting the groups of earlier blocks.

    Isolet1-4 (Cai's files) list each speaker's two utterances of a letter in speaker
    order, so the speaker is the rank within the letter // 2, per file. A class with
    fewer rows than the block's largest class (a missing utterance) cannot be assigned
    by rank: its rows get -1, as do rows after the last block.
    """
    if sum(blocks) > len(y):
        raise DataError(f"dataset '{dataset}': row_groups blocks cover {sum(blocks)} rows but it has {len(y)}")
    groups = np.full(len(y), -1, dtype=np.int64)
    start = offset = 0
    for size in blocks:
        block = y[start:start + size]
        classes, counts = np.unique(block, return_counts=True)
        full = counts.max()
        for c, count in zip(classes, counts, strict=True):
            if count == full:
                rows = start + np.flatnonzero(block == c)
                groups[rows] = offset + np.arange(count) // rank_within_class
        offset += -(-full // rank_within_class)
        start += size
    return groups


def _row_groups(info: DatasetInfo, y: np.ndarray) -> dict[str, np.ndarray] | None:
    if not info.row_groups:
        return None
    out = {}
    for name, rule in info.row_groups.items():
        try:
            out[name] = row_groups_by_rank(y, int(rule["rank_within_class"]), [int(b) for b in rule["blocks"]], info.name)
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"dataset '{info.name}': row_groups.{name}: give rank_within_class and blocks ({exc})") from None
    return out


def group_name(group: Sequence) -> str:
    """The label of a group of classes: ``first..last`` for three or more, else ``a+b``."""
    return f"{group[0]}..{group[-1]}" if len(group) > 2 else "+".join(str(c) for c in group)


def merge_classes(dataset: Dataset, groups: Sequence[Sequence]) -> Dataset:
    """Rows of the classes in ``groups`` relabelled by their group (:func:`group_name`),
    e.g. Isolet's letters 1-13 against 14-26 (Yang, King, Lyu Sec. 5); rows of other
    classes are dropped. Groups must be disjoint, at least two, each non-empty. The
    classes before merging stay in ``row_groups["original_class"]`` (codes in sorted
    class order), for draws per original class."""
    if isinstance(groups, (str, bytes)) or len(groups) < 2 or any(
        isinstance(g, (str, bytes)) or not len(g) for g in groups
    ):
        raise DataError(f"dataset '{dataset.name}': groups must be a list of two or more non-empty lists of classes")
    members = [_match_classes(g, dataset.y, dataset.name) for g in groups]
    flat = [c for g in members for c in g]
    if len(set(flat)) != len(flat):
        twice = sorted({str(c) for c in flat if flat.count(c) > 1})
        raise DataError(f"dataset '{dataset.name}': groups overlap in class(es) {', '.join(twice)}")
    kept = select_classes(dataset, flat)
    names = [group_name(g) for g in groups]
    y = np.empty(len(kept.y), dtype=object)
    for g, name in zip(members, names, strict=True):
        y[np.isin(kept.y, g)] = name
    y = y.astype(str)
    original = np.unique(kept.y, return_inverse=True)[1].astype(np.int64)  # the classes before merging
    row_groups = {**(kept.row_groups or {}), "original_class": original}
    return Dataset(kept.name, kept.X, y, sorted(names), kept.info, kept.predefined_split, kept.feature_names,
                   kept.realizations, row_groups)


def load_dataset(
    name: str | DatasetInfo,
    *,
    data_dir: str | Path | None = None,
    classes: Sequence | None = None,
    **params,
) -> Dataset:
    """Load a registered dataset by name or alias.

    File datasets come from ``data_dir`` / ``$LKM_DATA_DIR`` (a read-only mirror laid out
    ``<dataset>/<file>``) or the download cache, always sha256-verified; user datasets (a
    name registered with ``lkm datasets add``, or a file a validated spec named) from
    their own path, checked against their pinned sha256; scikit-learn's bundled sets and
    the seeded generators need no file. ``lkm datasets list`` lists the names.

    Parameters
    ----------
    name : str or DatasetInfo
        A registered name or alias (``"sonar"``, ``"usps"``, ``"sklearn-iris"``,
        ``"moons"``), or a registry entry built by hand.
    data_dir : str or Path, optional
        A mirror folder to read files from before the cache (default ``$LKM_DATA_DIR``).
    classes : sequence, optional
        Keep only the rows of these labels (e.g. ``[3, 8]`` for MNIST 3-vs-8).
    **params
        Overrides of a synthetic generator's defaults (``n_samples``, ``noise``,
        ``random_state``, ...); refused for the other sources.

    Returns
    -------
    Dataset
        Features, labels, the official split or realizations where the data set has
        them, and the registry entry.

    Raises
    ------
    lkm.errors.DataError
        One line naming the dataset and file: unknown name, a missing or corrupt file
        (with where it would come from), unparsable or non-finite values.

    See Also
    --------
    Dataset : What is returned.

    Examples
    --------
    >>> from lkm.data import load_dataset
    >>> moons = load_dataset("moons", n_samples=100, noise=0.2, random_state=0)
    >>> moons.X.shape, moons.classes
    ((100, 2), [0, 1])
    >>> load_dataset("sklearn-digits", classes=[3, 8]).X.shape
    (357, 64)
    """
    info = name if isinstance(name, DatasetInfo) else dataset_info(name)
    if params and info.source != "synthetic":
        raise DataError(
            f"dataset '{info.name}' ({info.source}) takes no parameters, got "
            f"{', '.join(sorted(params))}; only synthetic datasets accept generator parameters"
        )
    if info.source == "file":
        parsed = _read_files(info, data_dir)
    elif info.source == "sklearn":
        parsed = _load_sklearn(info)
    elif info.source == "synthetic":
        parsed = _generate(info, params)
    elif info.source == "user":
        parsed = _read_user_file(info)
    else:
        raise DataError(f"dataset '{info.name}': unknown source {info.source!r}")
    X = np.ascontiguousarray(parsed.X, dtype=np.float64)
    try:
        check_finite(X, f"{info.source} source {info.reader!r}")
    except ParseError as exc:
        raise DataError(f"dataset '{info.name}': {exc}") from None
    dataset = Dataset(
        info.name,
        X,
        parsed.y,
        np.unique(parsed.y).tolist(),
        info,
        parsed.predefined_split,
        parsed.feature_names,
        official_realizations(info, X, parsed.y, data_dir) if info.source == "file" else None,
        _row_groups(info, parsed.y),
    )
    return dataset if classes is None else select_classes(dataset, classes)
