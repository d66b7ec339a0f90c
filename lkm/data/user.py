"""A user's own datasets: a file named in a spec (``path:``) or registered once with
``lkm datasets add``.

Either way it becomes a :class:`~lkm.data.registry.DatasetInfo` of source ``user``: one
file, known by its absolute path (``files[0].dir`` is the file's folder), its sha256
pinned when it was named or registered, read by the parser of its format
(:data:`FORMATS`) with the label column ``target`` and the ``impute`` rule for missing
values. :func:`lkm.data.load_dataset` refuses the file once its sha256 changes.

The user registry is a YAML file of such entries, never the packaged registry:
``$LKM_USER_REGISTRY`` if set, else ``$LKM_CONFIG_DIR/datasets.yaml``, else
``datasets.yaml`` in the per-user data folder (``platformdirs.user_data_dir("lkm")``,
e.g. ``~/.local/share/lkm/`` on Linux).
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from lkm.data.parsers import IMPUTE
from lkm.data.registry import DatasetInfo, FileEntry, normalize_name, packaged_owner
from lkm.errors import DataError

#: Format name -> (parser of :mod:`lkm.data.parsers`, its fixed options).
FORMATS: dict[str, tuple[str, dict[str, Any]]] = {
    "csv": ("csv", {"delimiter": ",", "feature_names_line": 0}),
    "tsv": ("csv", {"delimiter": "\t", "feature_names_line": 0}),
    "svmlight": ("svmlight", {}),
    "arff": ("arff", {}),
    "npz": ("npz", {}),
    "openml": ("openml", {}),
}
#: File suffix -> format, for entries without ``format``.
SUFFIXES = {
    ".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".svm": "svmlight", ".svmlight": "svmlight",
    ".libsvm": "svmlight", ".arff": "arff", ".npz": "npz",
}
#: Formats whose label column must be named (``target``); svmlight files carry their
#: labels in the first field and take no ``target``.
NEEDS_TARGET = ("csv", "tsv")
_REGISTRY_KEYS = ("name", "path", "format", "target", "impute", "sha256", "size", "rows", "features", "class_counts")


#: A user dataset's name: it names files and folders (cache, results), so no path parts.
USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def user_registry_path() -> Path:
    """The user registry file (see the module docstring for the search order)."""
    if os.environ.get("LKM_USER_REGISTRY"):
        return Path(os.environ["LKM_USER_REGISTRY"]).expanduser()
    if os.environ.get("LKM_CONFIG_DIR"):
        return Path(os.environ["LKM_CONFIG_DIR"]).expanduser() / "datasets.yaml"
    import platformdirs

    return Path(platformdirs.user_data_dir("lkm")) / "datasets.yaml"


#: What a path that is neither a regular file nor a folder is, by its ``st_mode`` test.
_SPECIAL_KINDS = (
    (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
)


def check_not_special(path: Path, expected: str = "a regular file") -> None:
    """Refuse ``path`` when it exists but is neither a regular file nor a folder (a
    device, a FIFO, a socket), by ``os.stat`` alone: reading ``/dev/zero`` never ends and
    opening a FIFO blocks. A missing path passes (the caller says what is missing)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = next((name for test, name in _SPECIAL_KINDS if test(mode)), "a special file")
    link = f" (a link to {os.path.realpath(path)})" if path.is_symlink() else ""
    raise DataError(f"{path}{link}: is {kind}, not {expected}")


def format_of(path: Path, fmt: str | None) -> str:
    """``fmt`` checked, or the format the file's suffix says (a folder is an OpenML cache)."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise DataError(f"{path}: unknown format {fmt!r} (known: {', '.join(FORMATS)})")
        return fmt
    if path.is_dir():
        return "openml"
    found = SUFFIXES.get(path.suffix.lower())
    if found is None:
        raise DataError(
            f"{path}: cannot tell the format from the suffix {path.suffix or '(none)'!r}; "
            f"give format: one of {', '.join(FORMATS)}"
        )
    return found


def user_dataset(
    name: str,
    path: str | Path,
    *,
    target: str | None = None,
    fmt: str | None = None,
    impute: str | None = None,
    sha256: str | None = None,
    origin: str = "a file named in a spec",
) -> DatasetInfo:
    """The dataset of a user's file. ``sha256`` pins its content; without it the file
    must exist and its present sha256 is pinned. For ``openml``, ``path`` is the
    ``data_home`` of :func:`sklearn.datasets.fetch_openml` and ``name`` the OpenML
    dataset's name or id (its content is pinned by OpenML's versioning, not a sha256)."""
    from lkm.files import file_sha256

    path = Path(path).expanduser().absolute()
    check_not_special(path, "a folder (an OpenML data_home)" if fmt == "openml" else "a regular file")
    fmt = format_of(path, fmt)

    if impute is not None and impute not in IMPUTE:
        raise DataError(f"{path}: impute must be one of {', '.join(IMPUTE)}, got {impute!r}")
    if fmt in NEEDS_TARGET and not target:
        raise DataError(f"{path}: a {fmt.upper()} file needs target: the name of its label column")
    if fmt == "svmlight" and target:
        raise DataError(f"{path}: an svmlight file holds its labels in the first field of each line; drop target")
    parser, options = FORMATS[fmt]
    options = {**options, **({"target": target} if target else {}), **({"impute": impute} if impute else {})}
    if fmt == "openml":
        if sha256:
            raise DataError(f"{path}: an OpenML cache is pinned by the dataset's OpenML version, not by sha256")
        if not path.is_dir():
            raise DataError(f"{path}: no such folder (the data_home of sklearn.datasets.fetch_openml)")
        options["dataset"] = name
        entry = FileEntry(name=path.name, url=None, sha256="", size=0, dir=str(path.parent), origin=origin)
    else:
        if path.is_dir():
            raise DataError(f"{path}: is a folder, not a data file")
        if sha256 is None:
            if not path.is_file():
                raise DataError(f"{path}: no such file")
            sha256 = file_sha256(path)
        sha256 = str(sha256).lower()
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise DataError(f"{path}: sha256 {sha256!r} is not 64 hex digits")
        size = path.stat().st_size if path.is_file() else 0
        entry = FileEntry(name=path.name, url=None, sha256=sha256, size=size, dir=str(path.parent), origin=origin)
    return DatasetInfo(
        name=name,
        description=f"{fmt} file {path}" + (f", labels in {target!r}" if target else ""),
        citation="user data",
        source="user",
        files=(entry,),
        meta={"format": fmt, "path": str(path), **({"impute": impute} if impute else {})},
        reader=parser,
        options=options,
    )


def user_file(info: DatasetInfo) -> Path:
    """The absolute path of a user dataset's file (or OpenML cache folder)."""
    entry = info.files[0]
    return Path(entry.dir) / entry.name


def _entry_dict(info: DatasetInfo) -> dict[str, Any]:
    entry = info.files[0]
    raw = {
        "name": info.name, "path": str(user_file(info)), "format": info.meta["format"],
        "target": info.options.get("target"), "impute": info.options.get("impute"),
        "sha256": entry.sha256 or None, "size": entry.size or None,
        "rows": info.n_samples, "features": info.n_features, "class_counts": info.class_counts,
    }
    return {k: v for k, v in raw.items() if v is not None}


def read_user_registry(path: Path | None = None) -> dict[str, DatasetInfo]:
    """Every dataset of the user registry by name, in file order ({} when it does not exist)."""
    path = path or user_registry_path()
    if not path.is_file():
        return {}
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise DataError(f"{path}: cannot read the user dataset registry: {' '.join(str(exc).split())}") from None
    entries = raw.get("datasets") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise DataError(f"{path}: expected a top-level 'datasets' list")
    out: dict[str, DatasetInfo] = {}
    for i, item in enumerate(entries):
        if not isinstance(item, dict) or not {"name", "path", "format"} <= item.keys():
            raise DataError(f"{path}: entry {i}: each entry needs name, path and format")
        unknown = set(item) - set(_REGISTRY_KEYS)
        if unknown:
            raise DataError(f"{path}: entry {i} ({item['name']!r}): unknown keys {sorted(unknown)}")
        try:
            info = user_dataset(
                str(item["name"]), item["path"], target=item.get("target"), fmt=item["format"],
                impute=item.get("impute"), sha256=item.get("sha256"), origin=f"registered in {path}",
            )
            out[info.name] = dataclasses.replace(  # the statistics `lkm datasets add` found
                info, n_samples=item.get("rows"), n_features=item.get("features"), class_counts=item.get("class_counts"))
        except DataError as exc:
            raise DataError(f"{path}: entry {i} ({item['name']!r}): {exc}") from None
    return out


def _write_user_registry(infos: list[DatasetInfo], path: Path) -> None:
    from lkm.files import atomic_write

    text = "# lkm user datasets, written by `lkm datasets add` (edit with `lkm datasets add/remove`)\n"
    text += yaml.safe_dump({"datasets": [_entry_dict(i) for i in infos]}, sort_keys=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)


def add_user_dataset(info: DatasetInfo, *, replace: bool = False) -> Path:
    """Register ``info`` in the user registry; return the registry's path. A packaged
    name or alias, or (unless ``replace``) a name already registered, is refused."""
    if not USER_NAME.fullmatch(info.name) or ".." in info.name:
        raise DataError(f"dataset name {info.name!r}: use letters, digits, '.', '_' and '-' (starting with a letter "
                        "or digit, no '..'): the name names files and folders; choose one with --name")
    owner = packaged_owner(info.name)
    if owner is not None:
        raise DataError(f"dataset name {info.name!r} is taken by the packaged dataset {owner!r}; choose another with --name")
    path = user_registry_path()
    registered = read_user_registry(path)
    same = [n for n in registered if normalize_name(n) == normalize_name(info.name)]
    if same and not replace:
        raise DataError(f"{path}: a user dataset {same[0]!r} is already registered (--replace to overwrite it)")
    infos = [info if normalize_name(n) == normalize_name(info.name) else i for n, i in registered.items()]
    if not same:
        infos.append(info)
    _write_user_registry(infos, path)
    return path


def remove_user_dataset(name: str) -> Path:
    """Remove ``name`` from the user registry; return the registry's path."""
    path = user_registry_path()
    registered = read_user_registry(path)
    keep = [i for n, i in registered.items() if normalize_name(n) != normalize_name(name)]
    if len(keep) == len(registered):
        owner = packaged_owner(name)
        if owner is not None:
            raise DataError(f"dataset {name!r} is packaged with lkm, not a user dataset; only user datasets can be removed")
        from lkm.errors import did_you_mean

        raise DataError(f"{path}: no user dataset {name!r}{did_you_mean(name, registered) if registered else ''}")
    _write_user_registry(keep, path)
    return path
