"""Making registered files available: the read-only ``LKM_DATA_DIR`` mirror, else a
sha256-verified download cache managed by pooch.

For each file, in order (a file's *forms* are its canonical name and then the
``alternatives`` the registry accepts for it, each with its own sha256, e.g. MNIST's
decompressed ``train-images-idx3-ubyte`` for ``train-images-idx3-ubyte.gz``):

1. if a data directory is set (argument or ``$LKM_DATA_DIR``) and holds
   ``<data_dir>/<dir>/<form>``, that form's sha256 is checked and the file is used in
   place (nothing is ever written to the data directory);
2. else a verified copy of a form in ``<cache>/<dir>/`` is reused without network
   (``$LKM_CACHE_DIR``, else ``pooch.os_cache("lkm")``);
3. else the canonical file is downloaded with :func:`pooch.retrieve` against the registered sha256, unless
   ``$LKM_OFFLINE`` is set (``1``/``true``/``yes``), which forbids any download.

Failures raise :class:`~lkm.errors.DatasetUnavailable` or :class:`~lkm.errors.ChecksumError`
with one-line messages that say where the file would come from and how to provide it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from lkm.data.catalog import dataset_info
from lkm.data.registry import DatasetInfo, FileEntry, list_datasets
from lkm.errors import ChecksumError, DataError, DatasetUnavailable
from lkm.files import cache_dir, file_sha256

#: Seconds pooch waits for the server before giving up on a download.
DOWNLOAD_TIMEOUT = 60
#: sha256 of files already hashed in this process, by (path, size, mtime_ns).


@dataclass(frozen=True)
class VerifyResult:
    """The check of one registered file; ``path`` is None when the file was not found."""

    dataset: str
    file: str
    status: str  # "ok" | "mismatch" | "missing"
    path: Path | None
    expected: str
    actual: str | None


def resolve_data_dir(data_dir: str | Path | None = None) -> Path | None:
    """The mirror directory: ``data_dir`` if given, else ``$LKM_DATA_DIR``, else None."""
    chosen = data_dir if data_dir not in (None, "") else os.environ.get("LKM_DATA_DIR") or None
    if chosen is None:
        return None
    path = Path(chosen).expanduser()
    if not path.is_dir():
        raise DataError(f"data directory {path} (LKM_DATA_DIR or --data-dir) is not a directory")
    return path


def downloads_allowed() -> bool:
    """False when ``$LKM_OFFLINE`` is set to 1/true/yes."""
    return os.environ.get("LKM_OFFLINE", "").strip().lower() not in {"1", "true", "yes"}


def _where(dataset: str | None, entry: FileEntry) -> str:
    return f"dataset '{dataset or entry.dir}': file {entry.name}"


def _check(path: Path, entry: FileEntry, dataset: str | None) -> Path:
    actual = file_sha256(path)
    if actual != entry.sha256:
        raise ChecksumError(
            f"{_where(dataset, entry)}: {path} has sha256 {actual} ({path.stat().st_size} B) "
            f"but the registry expects {entry.sha256} ({entry.size} B); the file is corrupt "
            "or a different version: replace it"
        )
    return path


def _unavailable(
    entry: FileEntry, dataset: str | None, data_dir: Path | None, cache: Path, reason: str
) -> DatasetUnavailable:
    """One line: where the file was looked for, where it would come from, how to provide it."""
    if data_dir is not None:
        looked, mirror_hint = f"not in LKM_DATA_DIR ({data_dir / entry.dir}/)", "it"
    else:
        looked, mirror_hint = f"not in the download cache ({cache / entry.dir}/)", entry.relpath
    if entry.url and entry.mirrors:
        source, verb = f"could not be downloaded from {entry.url} or its {len(entry.mirrors)} mirror(s) ({reason})", "download"
    elif entry.url:
        source, verb = f"could not be downloaded from {entry.url} ({reason})", "download"
    else:
        source, verb = f"has no direct download URL (origin: {entry.origin or 'unknown'})", "obtain"
    also = ", ".join(a.name for a in entry.alternatives)
    accepted = f" (or its accepted form {also})" if also else ""
    return DatasetUnavailable(
        f"{_where(dataset, entry)}{accepted} is {looked} and {source}; {verb} it and place it at "
        f"{(data_dir or cache) / entry.relpath}, or set LKM_DATA_DIR to a mirror that has "
        f"{mirror_hint}"
    )


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def fetch_file(
    entry: FileEntry,
    data_dir: str | Path | None = None,
    cache: Path | None = None,
    *,
    dataset: str | None = None,
) -> Path:
    """Path of a verified copy of ``entry`` or of one of its accepted alternative forms: in
    ``data_dir`` (used in place), in the cache, or the canonical file freshly downloaded
    from ``entry.url`` into ``<cache>/<dir>/``. Parsers tell the forms apart by content
    (e.g. gzip or raw IDX).

    ``dataset`` only names the dataset in error messages (default: ``entry.dir``).
    """
    data_root = resolve_data_dir(data_dir)
    cache = Path(cache) if cache is not None else cache_dir()
    if data_root is not None:
        for form in entry.forms():
            if (data_root / form.relpath).is_file():
                return _check(data_root / form.relpath, form, dataset)
    for form in entry.forms():
        if (cache / form.relpath).is_file() and file_sha256(cache / form.relpath) == form.sha256:
            return cache / form.relpath
    cached = cache / entry.relpath
    if not entry.url:
        raise _unavailable(entry, dataset, data_root, cache, "")
    if not downloads_allowed():
        stale = f"; the cached {cached} has the wrong sha256" if cached.is_file() else ""
        raise _unavailable(
            entry, dataset, data_root, cache, f"downloads disabled by LKM_OFFLINE{stale}"
        )
    import pooch  # with requests, pooch's own dependency: imported late, only when downloading
    import requests

    failures: list[str] = []
    mismatch: ChecksumError | None = None
    for url in entry.urls:  # the canonical URL, then each mirror of the same bytes
        try:
            path = pooch.retrieve(
                url,
                known_hash=f"sha256:{entry.sha256}",
                fname=entry.name,
                path=cache / entry.dir,
                downloader=pooch.HTTPDownloader(progressbar=False, timeout=DOWNLOAD_TIMEOUT),
                progressbar=False,
            )
            return Path(path)
        except ValueError as exc:
            match = re.search(r"but got ([0-9a-fA-F]{64})", str(exc))
            if match is None:  # not a hash mismatch: an unsupported URL or similar
                failures.append(f"{url}: {_one_line(exc)}")
                continue
            mismatch = mismatch or ChecksumError(
                f"{_where(dataset, entry)}: the download from {url} has sha256 "
                f"{match.group(1).lower()} but the registry expects {entry.sha256}; it was "
                f"discarded (the server may serve a different version); obtain the right file "
                f"and place it at {(data_root or cache) / entry.relpath}"
            )
        except (requests.RequestException, OSError) as exc:
            failures.append(f"{url}: {_one_line(exc)}")
    if mismatch is not None:
        raise mismatch from None
    reason = failures[0] if len(failures) == 1 else f"{len(failures)} URLs tried: " + "; ".join(failures)
    raise _unavailable(entry, dataset, data_root, cache, reason)


def fetch_dataset_files(info: DatasetInfo, data_dir: str | Path | None = None) -> dict[str, Path]:
    """Verified paths of every file of ``info``, by canonical file name (the path may be an
    accepted alternative form)."""
    return {entry.name: fetch_file(entry, data_dir, dataset=info.name) for entry in info.files}


def fetch(name: str, *, data_dir: str | Path | None = None) -> list[Path]:
    """Make the files of dataset ``name`` available and verified; [] for non-file sources."""
    return list(fetch_dataset_files(dataset_info(name), data_dir).values())


def verify(*, data_dir: str | Path | None = None) -> list[VerifyResult]:
    """Check every registered file where :func:`fetch_file` would look (mirror, then cache;
    in each, the canonical form, then its accepted alternatives), without downloading
    anything. A result names the form found (the canonical name when none is) and checks
    it against that form's own sha256."""
    data_root = resolve_data_dir(data_dir)
    cache = cache_dir()
    results = []
    for info in list_datasets():
        for entry in info.files:
            roots = ([data_root] if data_root is not None else []) + [cache]
            found = next(
                ((root / form.relpath, form) for root in roots for form in entry.forms()
                 if (root / form.relpath).is_file()),
                (None, entry),
            )
            path, form = found
            actual = file_sha256(path) if path is not None else None
            status = "missing" if path is None else "ok" if actual == form.sha256 else "mismatch"
            results.append(VerifyResult(info.name, form.name, status, path, form.sha256, actual))
    return results


@dataclass(frozen=True)
class FileStatus:
    """Where one file of a dataset is, without reading it: ``where`` is ``mirror``,
    ``cache``, ``user`` (a user's own file) or ``missing``; ``path`` the file found, or
    where a download would put it."""

    file: str
    where: str
    path: Path
    url: str | None


def file_status(info: DatasetInfo, data_dir: str | Path | None = None) -> list[FileStatus]:
    """Where each file of ``info`` is (mirror, cache, a user's path, or missing), by file
    existence only (``lkm datasets verify`` checks the sha256s)."""
    if info.source == "user":
        from lkm.data.user import user_file

        path = user_file(info)
        return [FileStatus(info.files[0].name, "user" if path.exists() else "missing", path, None)]
    try:
        data_root = resolve_data_dir(data_dir)
    except DataError:
        data_root = None
    cache = cache_dir()
    out = []
    for entry in info.files:
        roots = [("mirror", data_root)] if data_root is not None else []
        found = next(
            ((where, root / form.relpath) for where, root in [*roots, ("cache", cache)]
             for form in entry.forms() if (root / form.relpath).is_file()),
            ("missing", cache / entry.relpath),
        )
        out.append(FileStatus(entry.name, found[0], found[1], entry.url))
    return out


def availability(info: DatasetInfo, data_dir: str | Path | None = None) -> str:
    """One word or two on whether a dataset can be loaded now: ``generated`` (seeded
    generator), ``bundled`` (ships with scikit-learn), ``mirror`` / ``cache`` / ``mirror+cache``
    (files present), ``needs download`` (some file missing, all missing ones downloadable),
    ``missing`` (a missing file has no download URL), ``user: present`` / ``user: missing``."""
    if info.source == "synthetic":
        return "generated"
    if info.source == "sklearn":
        return "bundled"
    statuses = file_status(info, data_dir)
    if info.source == "user":
        return "user: present" if statuses[0].where == "user" else "user: missing"
    missing = [s for s in statuses if s.where == "missing"]
    if missing:
        return "needs download" if all(s.url for s in missing) else "missing"
    return "+".join(sorted({s.where for s in statuses}, key=["mirror", "cache"].index))
