"""Evaluation protocols: how a dataset is split into training and test parts.

Every protocol turns a :class:`~lkm.data.Dataset` into a list of :class:`Split` objects,
index arrays into the dataset. Kinds (the ``protocol.kind`` key of a spec):

- ``kfold``: stratified k-fold cross-validation, optionally repeated (Tsuji et al. Sec. 9:
  10-fold CV).
- ``holdout``: random train/test realizations of given sizes with a seed (Li, Chen,
  Tang, Table 7; stratified by default).
- ``predefined``: the dataset's official train/test partition (USPS, image segmentation,
  isolet, MNIST).
- ``learning_curve``: one held-out test set and nested training subsets of growing sizes
  (Tsuji et al. Fig. 4: time against training-set size).
- ``realizations``: a benchmark's numbered train/test realizations (Li, Chen, Tang
  Table 4, the IDA benchmarks): the official indices when the split file is present,
  else seeded random realizations of the official sizes; ``describe()`` says which.

- ``semisupervised``: a pool of training rows of which a few are labeled and the rest
  unlabeled, and a test set (Yang, King, Lyu Sec. 5; Belkin, Niyogi, Sindhwani 2006):
  fills :attr:`Split.unlabeled`.

Generated datasets take ``holdout`` with integer ``train_size``/``test_size``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_serializer,
    model_validator,
)
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

from lkm.errors import SpecError

if TYPE_CHECKING:
    from lkm.data import Dataset

#: Realizations drawn when neither the spec nor the registry gives a number (IDA's usual 100).
DEFAULT_REALIZATIONS = 100


@dataclass(frozen=True)
class Split:
    """One train/test realization: index arrays into the dataset's rows."""

    id: str
    train: np.ndarray
    test: np.ndarray
    repeat: int = 0
    fold: int = 0
    unlabeled: np.ndarray | None = None


def random_split(
    dataset: Dataset, train_size: float | int | None, test_size: float | int | None, seed: int,
    stratified: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (train, test) row indices of one seeded random split (sizes as counts or
    fractions); a size the dataset cannot give is a one-line SpecError."""
    y = dataset.y
    try:
        tr, te = train_test_split(
            np.arange(len(y)), train_size=train_size, test_size=test_size, random_state=seed,
            stratify=y if stratified else None,
        )
    except ValueError as exc:
        raise SpecError(f"protocol: dataset '{dataset.name}': {exc}") from None
    return np.sort(tr), np.sort(te)


def split_size(v: float | int | None) -> float | int | None:
    """A train or test size as scikit-learn's ``train_test_split`` takes it, checked
    before any data is read: a fraction of the rows strictly between 0 and 1, or a whole
    number of rows >= 1 (None: the rest)."""
    if v is not None and (isinstance(v, float) and not 0 < v < 1 or isinstance(v, int) and v < 1):
        raise ValueError(f"expected a fraction of the rows between 0 and 1 (0.25) or a number of rows >= 1 (100), got {v!r}")
    return v


def without_unset(dump: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """``dump`` without those of ``keys`` whose value is None: keys added to a model after
    task ids were first written (task ids hash the dump) are left out while unset, so the
    ids of specs that do not use them stay what they were."""
    for key in keys:
        if dump.get(key) is None:
            dump.pop(key, None)
    return dump


class _Protocol(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def splits(self, dataset: Dataset) -> list[Split]:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


class KFoldProtocol(_Protocol):
    """Stratified k-fold cross-validation, repeated ``repeats`` times with seeds ``seed + r``."""

    kind: Literal["kfold"] = "kfold"
    folds: int = Field(default=10, ge=2, description="number of folds")
    repeats: int = Field(default=1, ge=1, description="independent reshuffles of the folds")
    seed: int = Field(default=0, description="seed of the first repeat; repeat r uses seed + r")
    stratified: bool = True

    def splits(self, dataset: Dataset) -> list[Split]:
        y = dataset.y
        if self.stratified:
            _, counts = np.unique(y, return_counts=True)
            if counts.min() < self.folds:
                small = dataset.classes[int(np.argmin(counts))]
                raise SpecError(
                    f"protocol.folds: {self.folds} folds but class {small!r} of dataset "
                    f"'{dataset.name}' has only {counts.min()} samples"
                )
        elif len(y) < self.folds:
            raise SpecError(f"protocol.folds: {self.folds} folds but '{dataset.name}' has {len(y)} rows")
        out = []
        for r in range(self.repeats):
            cv_cls = StratifiedKFold if self.stratified else KFold
            cv = cv_cls(n_splits=self.folds, shuffle=True, random_state=self.seed + r)
            for f, (tr, te) in enumerate(cv.split(np.zeros(len(y)), y)):
                out.append(Split(f"r{r}f{f}", tr, te, repeat=r, fold=f))
        return out

    def describe(self) -> str:
        rep = f" x {self.repeats} repeats" if self.repeats > 1 else ""
        return f"{'stratified ' if self.stratified else ''}{self.folds}-fold CV{rep} (seed {self.seed})"


class HoldoutProtocol(_Protocol):
    """Random train/test realizations: ``train_size`` and ``test_size`` as counts or fractions."""

    kind: Literal["holdout"] = "holdout"
    train_size: float | int
    test_size: float | int | None = None
    repeats: int = Field(default=1, ge=1, description="number of random realizations")
    seed: int = 0
    stratified: bool = True

    _sizes = field_validator("train_size", "test_size")(split_size)

    @model_validator(mode="after")
    def _fractions_fit(self) -> HoldoutProtocol:
        if isinstance(self.train_size, float) and isinstance(self.test_size, float) and self.train_size + self.test_size > 1:
            raise ValueError(f"train_size {self.train_size} + test_size {self.test_size} = "
                             f"{self.train_size + self.test_size:g}: fractions of the rows add up to at most 1")
        return self

    def splits(self, dataset: Dataset) -> list[Split]:
        out = []
        for r in range(self.repeats):
            tr, te = random_split(dataset, self.train_size, self.test_size, self.seed + r, self.stratified)
            out.append(Split(f"r{r}", tr, te, repeat=r))
        return out

    def describe(self) -> str:
        test = "the rest" if self.test_size is None else self.test_size
        return f"{self.repeats} random hold-out realization(s), train {self.train_size}, test {test} (seed {self.seed})"


class PredefinedProtocol(_Protocol):
    """The dataset's official train/test partition (one realization)."""

    kind: Literal["predefined"] = "predefined"

    def splits(self, dataset: Dataset) -> list[Split]:
        parts = dataset.predefined_split
        if not parts or "train" not in parts or "test" not in parts:
            raise SpecError(
                f"protocol.kind: dataset '{dataset.name}' has no official train/test split; "
                "use kind: kfold or holdout"
            )
        return [Split("official", np.asarray(parts["train"]), np.asarray(parts["test"]))]

    def describe(self) -> str:
        return "official train/test partition"


class LearningCurveProtocol(_Protocol):
    """Training subsets of the given sizes against one fixed test set, per repeat.

    Repeat r draws (seed + r) a stratified test set of ``test_size`` rows and a random
    order of the remaining rows; the training set of size n is the first n rows of that
    order, so the subsets are nested and only the training size changes along a curve.
    """

    kind: Literal["learning_curve"] = "learning_curve"
    sizes: list[int] = Field(min_length=1, description="training-set sizes")
    test_size: float | int = Field(default=0.25, gt=0, description="test rows (count or fraction)")
    repeats: int = Field(default=1, ge=1)
    seed: int = 0

    _sizes = field_validator("test_size")(split_size)

    def splits(self, dataset: Dataset) -> list[Split]:
        y = dataset.y
        out = []
        for r in range(self.repeats):
            try:
                pool, te = train_test_split(
                    np.arange(len(y)), test_size=self.test_size, random_state=self.seed + r, stratify=y
                )
            except ValueError as exc:
                raise SpecError(f"protocol: dataset '{dataset.name}': {exc}") from None
            order = np.random.default_rng(self.seed + r).permutation(pool)
            for size in self.sizes:
                if not 2 <= size <= order.size:
                    raise SpecError(
                        f"protocol.sizes: training size {size} for dataset '{dataset.name}' "
                        f"must be between 2 and {order.size} (the rows left after the test set)"
                    )
                out.append(Split(f"n{size}-r{r}", np.sort(order[:size]), np.sort(te), repeat=r))
        return out

    def describe(self) -> str:
        return f"learning curve, training sizes {self.sizes}, test {self.test_size} (seed {self.seed})"


class RealizationsProtocol(_Protocol):
    """Fixed train/test realizations of a benchmark's official sizes (Li, Chen, Tang Sec. 5.2,
    Table 4: the IDA benchmarks of Raetsch et al.).

    Realization numbers are 1-based: ``first .. first + count - 1`` (``count: 1`` alone is
    realization 1, the one the paper appears to report; the default ``count`` is every
    official realization, the honest mean +- std). When the dataset carries the official
    split indices (:attr:`Dataset.realizations`, read from the registered ``benchmarks.mat``
    when that file is present), those are used; otherwise realization r is a seeded random
    split (seed + r) of the official train/test sizes (registry ``meta.official_train_test_sizes``,
    or ``train_size``/``test_size`` given here), and :meth:`describe` says so.

    The official IDA realizations are plain random draws; they are not documented as
    stratified, so ``stratified`` defaults to false.
    """

    kind: Literal["realizations"] = "realizations"
    count: int | None = Field(default=None, ge=1, description="realizations used (default: the dataset's official number, else 100)")
    first: int = Field(default=1, ge=1, description="number of the first realization (1-based)")
    seed: int = Field(default=0, description="seeded random realizations: realization r uses seed + r")
    stratified: bool = Field(default=False, description="stratify the seeded random realizations by class")
    train_size: int | None = Field(default=None, ge=1, description="training rows (default: the registry's official size)")
    test_size: int | None = Field(default=None, ge=1, description="test rows (default: the registry's official size)")
    _official: dict[str, bool] = PrivateAttr(default_factory=dict)

    def official(self, dataset: Dataset) -> bool:
        """True when ``dataset`` carries the official split indices (used instead of random draws)."""
        return bool(getattr(dataset, "realizations", None))

    def _numbers(self, dataset: Dataset, available: int | None) -> range:
        count = self.count if self.count is not None else available or DEFAULT_REALIZATIONS
        last = self.first + count - 1
        if available is not None and last > available:
            raise SpecError(
                f"protocol.count: realizations {self.first}..{last} requested but dataset "
                f"'{dataset.name}' has {available} official realizations"
            )
        return range(self.first, last + 1)

    def _sizes(self, dataset: Dataset) -> tuple[int, int]:
        official = dataset.info.meta.get("official_train_test_sizes") or [None, None]
        n_train = self.train_size or official[0]
        n_test = self.test_size or official[1]
        if not n_train or not n_test:
            raise SpecError(
                f"protocol.train_size: dataset '{dataset.name}' has no official train/test sizes "
                "(registry meta.official_train_test_sizes); give protocol.train_size and test_size"
            )
        if n_train + n_test > len(dataset.y):
            raise SpecError(
                f"protocol.train_size: train {n_train} + test {n_test} rows exceed the "
                f"{len(dataset.y)} rows of dataset '{dataset.name}'"
            )
        return int(n_train), int(n_test)

    def splits(self, dataset: Dataset) -> list[Split]:
        fixed = getattr(dataset, "realizations", None)
        self._official[dataset.name] = bool(fixed)
        if fixed:
            return [
                Split(f"real{r}", np.sort(np.asarray(fixed[r - 1][0])), np.sort(np.asarray(fixed[r - 1][1])), repeat=r)
                for r in self._numbers(dataset, len(fixed))
            ]
        n_train, n_test = self._sizes(dataset)
        out = []
        for r in self._numbers(dataset, dataset.info.meta.get("official_realizations")):
            tr, te = random_split(dataset, n_train, n_test, self.seed + r, self.stratified)
            # a distinct id: results of random draws are never taken for the official ones
            out.append(Split(f"real{r}-seeded", tr, te, repeat=r))
        return out

    def describe(self) -> str:
        last = "N" if self.count is None else str(self.first + self.count - 1)
        numbers = f"{self.first}..{last}" if last != str(self.first) else str(self.first)
        official = set(self._official.values())
        if not official:  # splits() not called in this process: the split file decides
            from lkm.data.realizations import official_split_file_present

            official = {official_split_file_present()}
        strat = "stratified " if self.stratified else ""
        random = (f"{strat}seeded random realizations {numbers} of the official sizes (seed {self.seed} + r; "
                  "the official split file is not available)")
        if official == {True}:
            return f"official realizations {numbers}"
        if official == {False}:
            return random
        names = ", ".join(sorted(k for k, v in self._official.items() if v))
        return f"official realizations {numbers} for {names}; elsewhere {random}"


class SemiSupervisedProtocol(_Protocol):
    """Semi-supervised realizations: a pool of training rows, ``labeled`` of them (or
    ``labeled_per_class`` of every class) labeled at random per realization (seed
    ``seed + r``), the rest of the pool unlabeled, and a test set.

    ``labeled_group`` (a name of the dataset's ``row_groups``, Isolet's ``speaker``)
    instead makes one realization per group present in the pool, labeling all of that
    group's pool rows (Yang et al. Sec. 5.1: all 52 utterances of one speaker).

    ``pool``: ``"predefined"`` — the dataset's official training part is the pool and its
    test part the test set; an integer N — the first N rows are the pool and the other
    rows the test set (Letter in Yang et al.: 400 / 19,600), or with ``test:
    predefined`` the official test part (Isolet: isolet1's 1560 rows, tested on isolet5). The pool's labels of
    unlabeled rows never reach an estimator (the runner overwrites them before ``fit``);
    they score the transductive error. The draws are written to the run folder
    (``splits/<dataset>.json``).
    """

    kind: Literal["semisupervised"] = "semisupervised"
    pool: Literal["predefined"] | int = Field(default="predefined", description="'predefined' or the first N rows")
    test: Literal["rest", "predefined"] = Field(
        default="rest", description="with pool: N, the test set: the other rows, or the official test part (Isolet: isolet5)"
    )
    labeled: int | None = Field(default=None, ge=1, description="labeled rows per realization, drawn from the pool")
    labeled_per_class: int | None = Field(default=None, ge=1, description="labeled rows of every class per realization")
    per_class_of: Literal["task", "original"] = Field(
        default="task", description="labeled_per_class counts the task's classes, or the classes before `groups`/`tasks` "
        "merged them (Letter: 2 of each of the 26 letters in every one-vs-all task)"
    )
    labeled_group: str | None = Field(
        default=None, description="one realization per group of the dataset's row_groups (e.g. speaker), labeling its pool rows"
    )
    groups_used: int | None = Field(
        default=None, ge=1, description="with labeled_group, only the first N groups of the pool (a smoke run's few realizations)"
    )
    repeats: int = Field(default=1, ge=1, description="number of realizations")
    seed: int = 0

    @model_serializer(mode="wrap")
    def _without_unset_groups_used(self, handler: Any) -> dict[str, Any]:
        return without_unset(handler(self), ("groups_used",))

    @model_validator(mode="after")
    def _one_way_to_label(self) -> SemiSupervisedProtocol:
        given = [k for k in ("labeled", "labeled_per_class", "labeled_group") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of labeled, labeled_per_class, labeled_group"
                             + (f" (got {', '.join(given)})" if given else ""))
        if self.labeled_group is not None and self.repeats != 1:
            raise ValueError("repeats: labeled_group makes one realization per group; leave repeats out")
        if self.groups_used is not None and self.labeled_group is None:
            raise ValueError("groups_used: only with labeled_group")
        if isinstance(self.pool, int) and not isinstance(self.pool, bool) and self.pool < 2:
            raise ValueError("pool must be 'predefined' or a row count >= 2")
        return self

    def _pool_and_test(self, dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
        n = len(dataset.y)
        if self.pool == "predefined":
            parts = dataset.predefined_split
            if not parts or "train" not in parts or "test" not in parts:
                raise SpecError(f"protocol.pool: dataset '{dataset.name}' has no official train/test split; "
                                "give pool: N (the first N rows)")
            return np.asarray(parts["train"]), np.asarray(parts["test"])
        if self.pool >= n:
            raise SpecError(f"protocol.pool: {self.pool} rows but dataset '{dataset.name}' has {n}; nothing left to test on")
        pool = np.arange(self.pool)
        if self.test == "predefined":
            parts = dataset.predefined_split
            if not parts or "test" not in parts:
                raise SpecError(f"protocol.test: dataset '{dataset.name}' has no official test part; use test: rest")
            test = np.asarray(parts["test"])
            if np.isin(test, pool).any():
                raise SpecError(f"protocol.pool: the first {self.pool} rows of '{dataset.name}' reach into its official test part")
        else:
            test = np.arange(self.pool, n)
        unseen = np.setdiff1d(np.unique(dataset.y[test]), np.unique(dataset.y[pool]))
        if unseen.size:  # e.g. a file sorted by class: the test would score a class no fit can predict
            raise SpecError(f"protocol.pool: the first {self.pool} rows of '{dataset.name}' hold no row of class "
                            f"{unseen[0].item()!r} ({unseen.size} class(es) in all), which its test rows have; shuffle the "
                            "rows, or use a dataset with an official train/test split (pool: predefined)")
        return pool, test

    def _group_splits(self, dataset: Dataset, pool: np.ndarray, test: np.ndarray) -> list[Split]:
        name = self.labeled_group
        known = dataset.row_groups or {}
        if name not in known:
            raise SpecError(f"protocol.labeled_group: dataset '{dataset.name}' has no row group {name!r} "
                            f"(it has: {', '.join(known) or 'none'})")
        groups = known[name][pool]
        present = np.unique(groups[groups >= 0])
        if present.size < 1:
            raise SpecError(f"protocol.labeled_group: no row of the pool of '{dataset.name}' has a known {name}")
        out = []
        for r, g in enumerate(present[:self.groups_used]):
            labeled = groups == g
            if labeled.all():
                raise SpecError(f"protocol.labeled_group: {name} {g + 1} is the whole pool of '{dataset.name}'")
            out.append(Split(f"{name}{g + 1}", pool, test, repeat=r, unlabeled=pool[~labeled]))
        return out

    def splits(self, dataset: Dataset) -> list[Split]:
        pool, test = self._pool_and_test(dataset)
        if self.labeled_group is not None:
            return self._group_splits(dataset, pool, test)
        y_pool = dataset.y[pool]
        if self.per_class_of == "original" and self.labeled_per_class is not None:
            original = (dataset.row_groups or {}).get("original_class")
            if original is None:
                raise SpecError(f"protocol.per_class_of: dataset '{dataset.name}' has no merged classes "
                                "(original needs groups: or tasks: one_vs_all)")
            y_pool = original[pool]
        classes, counts = np.unique(y_pool, return_counts=True)
        if self.labeled_per_class is not None and counts.min() <= self.labeled_per_class:
            small = classes[int(np.argmin(counts))]
            raise SpecError(f"protocol.labeled_per_class: {self.labeled_per_class} but class {small!r} of dataset "
                            f"'{dataset.name}' has {counts.min()} rows in the pool (none would stay unlabeled)")
        if self.labeled is not None and self.labeled >= len(pool):
            raise SpecError(f"protocol.labeled: {self.labeled} of a pool of {len(pool)} rows of '{dataset.name}' "
                            "leaves none unlabeled")
        out = []
        for r in range(self.repeats):
            rng = np.random.default_rng(self.seed + r)
            if self.labeled_per_class is not None:
                chosen = np.concatenate([rng.choice(np.flatnonzero(y_pool == c), self.labeled_per_class, replace=False)
                                         for c in classes])
            else:
                chosen = rng.choice(len(pool), self.labeled, replace=False)
            labeled = np.zeros(len(pool), dtype=bool)
            labeled[chosen] = True
            out.append(Split(f"r{r}", pool, test, repeat=r, unlabeled=pool[~labeled]))
        return out

    def describe(self) -> str:
        pool = "the official training part" if self.pool == "predefined" else f"the first {self.pool} rows"
        if self.labeled_group is not None:
            only = f" (the first {self.groups_used} only)" if self.groups_used is not None else ""
            return (f"one semi-supervised realization per {self.labeled_group}{only}: all of its rows of {pool} labeled, "
                    "the rest unlabeled")
        how = (f"{self.labeled} labeled" if self.labeled is not None else
               f"{self.labeled_per_class} labeled per {'original ' if self.per_class_of == 'original' else ''}class")
        return f"{self.repeats} semi-supervised realization(s): {how} of {pool}, the rest unlabeled (seed {self.seed})"


ProtocolSpec = (KFoldProtocol | HoldoutProtocol | PredefinedProtocol | LearningCurveProtocol | RealizationsProtocol
                | SemiSupervisedProtocol)
