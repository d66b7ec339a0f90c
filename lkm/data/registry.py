"""The dataset registry: ``datasets/registry.yaml`` read into :class:`DatasetInfo` records.

The YAML ships inside the package through the ``lkm/data/registry.yaml`` symlink. Each
entry names one dataset and says where its rows come from:

- ``source: file`` — ``files`` (name, dir, url, sha256, size, optional ``mirrors``: more
  URLs of the same bytes, tried in order when ``url`` fails; optional ``alternatives``:
  other forms of the same content, each with its own name, sha256 and size, accepted
  in the mirror or cache instead of the canonical file) read by ``parser`` (a function
  of :mod:`lkm.data.parsers`) with ``options``;
- ``source: sklearn`` — ``loader``, a ``sklearn.datasets.load_*`` function (bundled, offline);
- ``source: synthetic`` — ``generator`` (a function of :mod:`lkm.data.synthetic`) with its
  default ``params``.

``n_samples``, ``n_features`` and ``class_counts`` are the statistics verified by parsing
the files; the tests check them against the loaded data and the mirror's MANIFEST.json.
``row_groups`` names per-row groups recoverable from the row order (Isolet's speakers:
``{speaker: {rank_within_class: 2, blocks: [1560, ...]}}``, see
:func:`lkm.data.row_groups_by_rank`), which a semi-supervised protocol can label whole.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lkm.errors import DataError

REGISTRY_PATH = Path(__file__).with_name("registry.yaml")
SOURCES = ("file", "sklearn", "synthetic")
#: The YAML key that names the reader of each source kind.
READER_KEY = {"file": "parser", "sklearn": "loader", "synthetic": "generator"}
#: The YAML key that holds the reader's options for each source kind.
OPTIONS_KEY = {"file": "options", "sklearn": "options", "synthetic": "params"}
_ENTRY_KEYS = {
    "name",
    "aliases",
    "description",
    "citation",
    "source",
    "files",
    "parser",
    "loader",
    "generator",
    "options",
    "params",
    "n_samples",
    "n_features",
    "class_counts",
    "row_groups",
    "meta",
}
_FILE_KEYS = {"name", "dir", "url", "mirrors", "sha256", "size", "origin", "alternatives"}
_ALTERNATIVE_KEYS = {"name", "sha256", "size", "note"}


@dataclass(frozen=True)
class AlternativeFile:
    """Another form of a registered file with the same content, accepted in its place when
    present in the mirror or the cache (e.g. MNIST's decompressed ``train-images-idx3-ubyte``
    for the canonical ``.gz``), checked against its own sha256. Never downloaded."""

    name: str
    sha256: str
    size: int
    note: str = ""


@dataclass(frozen=True)
class FileEntry:
    """One registered file: found at ``<data_dir>/<dir>/<name>`` or downloaded from ``url``.

    ``url`` is None when no direct download exists; ``origin`` then says where the file
    comes from (a web page, a repackaging) so a user can obtain it by hand.
    """

    name: str
    url: str | None
    sha256: str
    size: int
    dir: str
    origin: str = ""
    alternatives: tuple[AlternativeFile, ...] = ()
    mirrors: tuple[str, ...] = ()  # more URLs of the same bytes, tried in order after ``url``

    @property
    def urls(self) -> tuple[str, ...]:
        """Every download URL, ``url`` first."""
        return ((self.url,) if self.url else ()) + self.mirrors

    @property
    def relpath(self) -> str:
        """``<dir>/<name>``, the file's place inside a data directory or the cache."""
        return f"{self.dir}/{self.name}"

    def forms(self) -> tuple[FileEntry, ...]:
        """The canonical file first, then each accepted alternative as an entry of its own
        (same dir, no URL: only the canonical file is downloaded)."""
        return (self,) + tuple(
            FileEntry(name=a.name, url=None, sha256=a.sha256, size=a.size, dir=self.dir,
                      origin=f"an accepted alternative form of {self.name}")
            for a in self.alternatives
        )


@dataclass(frozen=True)
class DatasetInfo:
    """A registry entry. ``reader`` is the parser (file), ``sklearn.datasets`` loader
    (sklearn) or generator (synthetic) named in the YAML; ``options`` its keyword arguments
    (for synthetic sets: the default parameters)."""

    name: str
    description: str
    citation: str
    source: str
    files: tuple[FileEntry, ...] = ()
    n_samples: int | None = None
    n_features: int | None = None
    class_counts: dict | None = None
    row_groups: dict | None = None
    aliases: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict)
    reader: str = ""
    options: dict = field(default_factory=dict)


def normalize_name(name: str) -> str:
    """Case-insensitive lookup key in which '_' and '-' are the same character."""
    return name.strip().lower().replace("_", "-")


def _entry_error(index: int, name: Any, problem: str) -> DataError:
    return DataError(f"{REGISTRY_PATH.name}: entry {index} ({name!r}): {problem}")


def _sha256_field(raw: dict, index: int, name: str) -> str:
    sha = str(raw["sha256"]).lower()
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise _entry_error(index, name, f"file {raw['name']}: sha256 is not 64 hex digits")
    return sha


def _alternative(raw: Any, index: int, name: str, of: str) -> AlternativeFile:
    if not isinstance(raw, dict) or not {"name", "sha256", "size"} <= raw.keys():
        raise _entry_error(index, name, f"file {of}: each alternative needs name, sha256, size; got {raw!r}")
    unknown = set(raw) - _ALTERNATIVE_KEYS
    if unknown:
        raise _entry_error(index, name, f"file {of}: unknown alternative keys {sorted(unknown)}")
    return AlternativeFile(str(raw["name"]), _sha256_field(raw, index, name), int(raw["size"]),
                           str(raw.get("note") or ""))


def _file_entry(raw: Any, index: int, name: str) -> FileEntry:
    if not isinstance(raw, dict) or not {"name", "dir", "sha256", "size"} <= raw.keys():
        raise _entry_error(index, name, f"each file needs name, dir, sha256, size; got {raw!r}")
    unknown = set(raw) - _FILE_KEYS
    if unknown:
        raise _entry_error(index, name, f"unknown file keys {sorted(unknown)}")
    sha = _sha256_field(raw, index, name)
    alternatives = tuple(_alternative(a, index, name, str(raw["name"])) for a in raw.get("alternatives") or ())
    if len({raw["name"], *(a.name for a in alternatives)}) != 1 + len(alternatives):
        raise _entry_error(index, name, f"file {raw['name']}: alternatives must have names of their own")
    return FileEntry(
        name=str(raw["name"]),
        url=raw.get("url") or None,
        sha256=sha,
        size=int(raw["size"]),
        dir=str(raw["dir"]),
        origin=str(raw.get("origin") or ""),
        alternatives=alternatives,
        mirrors=_mirrors(raw, index, name),
    )


def _mirrors(raw: dict, index: int, name: str) -> tuple[str, ...]:
    mirrors = raw.get("mirrors") or []
    if not isinstance(mirrors, list) or not all(isinstance(u, str) and "://" in u for u in mirrors):
        raise _entry_error(index, name, f"file {raw['name']}: mirrors must be a list of URLs")
    if mirrors and not raw.get("url"):
        raise _entry_error(index, name, f"file {raw['name']}: mirrors need a url (the canonical one) first")
    return tuple(mirrors)


def _dataset_info(raw: Any, index: int) -> DatasetInfo:
    if not isinstance(raw, dict) or "name" not in raw:
        raise _entry_error(index, None, "an entry must be a mapping with a 'name'")
    name = raw["name"]
    unknown = set(raw) - _ENTRY_KEYS
    if unknown:
        raise _entry_error(index, name, f"unknown keys {sorted(unknown)}")
    source = raw.get("source")
    if source not in SOURCES:
        raise _entry_error(index, name, f"source must be one of {SOURCES}, got {source!r}")
    reader = raw.get(READER_KEY[source])
    if not reader:
        raise _entry_error(index, name, f"source {source} needs a '{READER_KEY[source]}'")
    files = tuple(_file_entry(f, index, name) for f in raw.get("files") or ())
    if (source == "file") != bool(files):
        raise _entry_error(index, name, "'files' is required for source file and only there")
    for key in ("description", "citation"):
        if not raw.get(key):
            raise _entry_error(index, name, f"'{key}' is required")
    return DatasetInfo(
        name=str(name),
        description=" ".join(str(raw["description"]).split()),
        citation=" ".join(str(raw["citation"]).split()),
        source=source,
        files=files,
        n_samples=raw.get("n_samples"),
        n_features=raw.get("n_features"),
        class_counts=raw.get("class_counts"),
        row_groups=raw.get("row_groups"),
        aliases=tuple(str(a) for a in raw.get("aliases") or ()),
        meta=dict(raw.get("meta") or {}),
        reader=str(reader),
        options=dict(raw.get(OPTIONS_KEY[source]) or {}),
    )


@functools.cache
def load_registry(path: Path = REGISTRY_PATH) -> dict[str, DatasetInfo]:
    """All entries of the registry YAML by name, in file order (read once per process)."""
    try:
        # libyaml's parser when PyYAML has it: the same safe loading, 10x faster (0.15 s here)
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(
            f"cannot read the dataset registry {path}: {exc}".replace("\n", " ")
        ) from None
    entries = raw.get("datasets") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise DataError(f"{path}: expected a top-level 'datasets' list")
    registry: dict[str, DatasetInfo] = {}
    keys: dict[str, str] = {}
    for i, item in enumerate(entries):
        info = _dataset_info(item, i)
        for key in (info.name, *info.aliases):
            owner = keys.setdefault(normalize_name(key), info.name)
            if owner != info.name or (key == info.name and info.name in registry):
                raise _entry_error(
                    i, info.name, f"name or alias {key!r} is already used by {owner!r}"
                )
        registry[info.name] = info
    return registry


def lookup_keys() -> dict[str, str]:
    """Normalized name or alias -> registered name."""
    return {
        normalize_name(key): info.name
        for info in load_registry().values()
        for key in (info.name, *info.aliases)
    }


def list_datasets() -> list[DatasetInfo]:
    """Every packaged dataset, in registry order (user datasets: :func:`lkm.data.user.read_user_registry`)."""
    return list(load_registry().values())


def packaged_owner(name: str) -> str | None:
    """The packaged dataset whose name or alias ``name`` is, else None."""
    return lookup_keys().get(normalize_name(str(name)))
