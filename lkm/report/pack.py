"""The results pack: the run folders that ship with lkm (``docs/runs``), versioned and
checksummed, from which the full report is rebuilt without fitting (`lkm report --all
--results docs/runs --out DIR`).

A pack is a folder of run folders (``spec.yaml``, ``plan.json``, ``provenance.json``,
``records/``) with a manifest, :data:`MANIFEST`, that gives its version and the sha256
of every file. :func:`verify_pack` refuses a pack whose files differ from the manifest,
naming the first one. The pack that ships with lkm is pinned in
``lkm/report/published.json`` (version and the manifest's own sha256,
:func:`published_pack`), which `lkm docs snapshot` rewrites with the manifest.

The same command takes a newer pack as an archive, a local ``.tar.gz`` or an
``http(s)://`` / ``file://`` URL (``#sha256=<hex>`` appended pins the archive itself):
:func:`open_pack` downloads it once into the cache (pooch), unpacks it and verifies its
manifest. :func:`write_archive` writes such an archive, byte-stable for the same pack.

A pack is data, never a path: every path its manifest lists must be a relative POSIX
path inside the pack (:func:`path_problem`: no ``..``, ``.`` or empty component, no
absolute path, drive or backslash, no control character, no duplicate after Unicode
normalisation and case folding, not the manifest), checked before any file is read, and
:func:`verify_pack` refuses a symbolic link or special file anywhere in the pack folder.

An archive is read once, as a stream: each member's header is checked before the member
is unpacked (a regular file or folder under the archive's one top folder, a path as
above, tarfile's ``data`` filter), and the unpacked total may not pass a limit,
:data:`MAX_UNPACKED_BYTES` (1 GiB), nor the archive itself a quarter of it
(:data:`MAX_ARCHIVE_BYTES`, 256 MiB); ``LKM_PACK_MAX_BYTES`` sets the unpacked limit
(bytes, or with a K/M/G suffix). It is unpacked into a temporary folder of the cache,
verified, and renamed into place only when whole: a kill, a full disk or a refusal
leaves nothing that a later open would take for the pack (a refused archive is refused
again), and the temporary folders of killed processes are removed on the next open.
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import re
import shutil
import stat
import tarfile
import time
import unicodedata
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from lkm.errors import LkmError
from lkm.files import (
    TMP_PREFIX,
    atomic_write,
    cache_dir,
    file_sha256,
    os_message,
    remove_stale_temps,
    text_sha256,
)

#: The manifest of a pack, at its root.
MANIFEST = "PACK.json"
#: The manifest's format; a reader refuses a newer one.
PACK_FORMAT = 1
#: The pin of the pack that ships with lkm.
PIN_FILE = Path(__file__).with_name("published.json")
#: The pinned pack, relative to the repository root.
PUBLISHED_PACK = Path("docs/runs")
#: The pinned pack inside an installed lkm: the wheel's copy of :data:`PUBLISHED_PACK`
#: (setup.py's build step copies it there; a clone has no such folder).
INSTALLED_PACK = Path(__file__).with_name("published_pack")
#: What an archive's source may end with to pin the archive's own sha256: ``#sha256=<64 hex>``.
PIN_MARK = "#sha256"
#: The most a pack archive may unpack to (the sum of its members' sizes), unless :data:`MAX_BYTES_VAR` says.
MAX_UNPACKED_BYTES = 1 << 30
#: The largest archive (as stored, compressed) lkm opens: a quarter of the unpacked limit.
MAX_ARCHIVE_BYTES = MAX_UNPACKED_BYTES // 4
#: The environment variable that sets the unpacked limit (bytes, or a number with K, M or G).
MAX_BYTES_VAR = "LKM_PACK_MAX_BYTES"
#: What verify_pack suggests for a damaged pack folder.
_RESTORE = "restore the pack (git checkout docs/runs) or fetch it again"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class PackError(LkmError):
    """A pack that is missing, altered, or of an unknown format."""


@dataclass(frozen=True)
class Pack:
    """A verified pack: its folder, version and the sha256 of every file (by path
    relative to ``root``)."""

    root: Path
    version: str
    created: str
    files: dict[str, str]

    @property
    def runs(self) -> list[str]:
        """The run folders of the pack, by name."""
        return sorted({rel.split("/", 1)[0] for rel in self.files if "/" in rel})

    @property
    def digest(self) -> str:
        """The sha256 of the manifest file (what the pin holds)."""
        return file_sha256(self.root / MANIFEST)

    def run_bytes(self, name: str) -> int:
        """Size on disk of run ``name``'s files (to start the largest first)."""
        return sum((self.root / rel).stat().st_size for rel in self.files if rel.startswith(f"{name}/"))


def repo_root() -> Path:
    """The folder holding ``lkm/`` (a clone; the shipped pack lives under it)."""
    return Path(__file__).resolve().parents[2]


# -- paths: a pack is data, never a path ------------------------------------------------
def path_problem(rel: object) -> str | None:
    """Why ``rel`` cannot name a file inside a pack (or an archive's member), None if it
    can: it must be a relative POSIX path of non-empty components, none ``.`` or ``..``,
    without backslash, drive or control character."""
    if not isinstance(rel, str) or not rel:
        return "not a non-empty text path"
    if _CONTROL.search(rel):
        return "a path with a control character (NUL, newline, ...)"
    if "\\" in rel:
        return "a path with a backslash (pack paths are POSIX: run/file)"
    if rel.startswith("/") or PureWindowsPath(rel).anchor:
        return "an absolute path (or a drive)"
    parts = rel.split("/")
    if "" in parts:
        return "a path with an empty component (// or a trailing /)"
    if "." in parts or ".." in parts:
        return "a path with a '.' or '..' component"
    return None


def resolve_inside(folder: Path, rel: str) -> Path:
    """``folder / rel``, refused unless it resolves (symbolic links followed) strictly
    inside ``folder``: where a pack's file may be written."""
    path = folder / rel
    if path_problem(rel) is not None or folder.resolve() not in path.resolve().parents:
        raise PackError(f"{path}: outside {folder} (through '..' or a symbolic link); "
                        "a pack's files are written inside it only, so nothing was written")
    return path


def _check_listed(root: Path, listed: Mapping[str, object]) -> None:
    """Refuse (one line) a manifest entry that could name anything but a file of the pack,
    or whose sha256 is not one, before any file is read."""
    seen: dict[str, str] = {}
    for rel, sha in listed.items():
        problem = path_problem(rel)
        key = unicodedata.normalize("NFC", rel).casefold()
        if problem is None and PurePosixPath(rel).name == MANIFEST:
            problem = "a manifest (a pack does not list its manifest)"
        elif problem is None and key in seen:
            problem = f"the same file as {seen[key]!r} (after Unicode normalisation and case folding)"
        elif problem is None and not (isinstance(sha, str) and _SHA256.fullmatch(sha)):
            problem = f"with {sha!r} for its sha256 (64 lower-case hex digits)"
        if problem is not None:
            raise PackError(f"{root / MANIFEST}: lists {rel!r}, {problem}; a pack lists its own files only "
                            "(run/file), so nothing of it was read")
        seen[key] = rel


def _pack_contents(root: Path) -> set[str]:
    """The regular files under ``root`` but manifests, by POSIX relative path; a symbolic
    link or special file anywhere in it is refused (it could lead out of the pack)."""
    found: set[str] = set()
    for top, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(top) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise PackError(f"{path}: a symbolic link inside the results pack; a pack holds regular files "
                                "only (a link could lead out of it)")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise PackError(f"{path}: not a regular file (a device, fifo or socket) inside the results pack")
            if stat.S_ISREG(mode) and name != MANIFEST:
                found.add(path.relative_to(root).as_posix())
    return found


def pack_files(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` but the manifest, by POSIX relative path."""
    return {rel: file_sha256(root / rel) for rel in sorted(_pack_contents(root))}


def is_pack(folder: Path) -> bool:
    return (folder / MANIFEST).is_file()


def is_pack_source(source: str) -> bool:
    """Whether ``--results SOURCE`` names a pack (a URL, a pinned source, a file taken as
    an archive, or a folder with a manifest) rather than a folder of recorded runs."""
    path = Path(source)
    return "://" in source or PIN_MARK in source.lower() or path.is_file() or is_pack(path)


def _next_version(today: str, previous: str | None) -> str:
    """``today`` (``YYYY.MM.DD``), or ``today.N`` after a version ``today`` or ``today.N-1``."""
    if previous is None or not (previous == today or previous.startswith(f"{today}.")):
        return today
    serial = previous.removeprefix(today).lstrip(".")
    return f"{today}.{int(serial) + 1 if serial.isdigit() else 2}"


def write_manifest(root: Path, version: str | None = None) -> Pack:
    """Write ``root/PACK.json`` for the files under ``root``. The version is ``version``,
    else the existing manifest's when no file changed, else today's date
    (``YYYY.MM.DD``), with a serial (``YYYY.MM.DD.2``, ...) when a pack of other files
    already had that version: two different packs never share a version."""
    files = pack_files(root)
    old = _read_manifest(root) if is_pack(root) else None
    if version is None:
        if old is not None and old["files"] == files:
            version, created = old["version"], old["created"]
        else:
            version = _next_version(time.strftime("%Y.%m.%d"), old["version"] if old is not None else None)
    created = old["created"] if old is not None and old["version"] == version else time.strftime("%Y-%m-%d")
    payload = {"format": PACK_FORMAT, "version": version, "created": created, "files": files}
    atomic_write(root / MANIFEST, json.dumps(payload, indent=1, sort_keys=True) + "\n")
    return Pack(root, version, created, files)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object's pairs as a dict, refusing a key given twice (json keeps the last)."""
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} given twice")
        out[key] = value
    return out


def _read_manifest(root: Path) -> dict:
    path = root / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_unique_keys)
    except FileNotFoundError:
        raise PackError(f"{path}: not found; {root} is not a results pack") from None
    except (OSError, ValueError) as exc:
        raise PackError(f"{path}: unreadable ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict) or "version" not in data:
        raise PackError(f"{path}: not a pack manifest (no version or files)")
    fmt = data.get("format", 0)
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise PackError(f"{path}: pack format {fmt!r} is not a number")
    if fmt > PACK_FORMAT:
        raise PackError(f"{path}: pack format {data['format']} is newer than this lkm reads "
                        f"({PACK_FORMAT}); upgrade lkm")
    data.setdefault("created", "")
    return data


def verify_pack(root: Path, remedy: str = _RESTORE) -> Pack:
    """The pack at ``root``, every file checked against its manifest: a symbolic link or
    special file in the folder, a manifest path that could lead out of it
    (:func:`path_problem`), a missing, altered or unlisted file is refused with one line
    naming it (ending with ``remedy``). Paths are checked before any file is read."""
    root = Path(root)
    present = _pack_contents(root)
    data = _read_manifest(root)
    listed: dict[str, str] = data["files"]
    _check_listed(root, listed)
    for rel, sha in sorted(listed.items()):
        path = root / rel
        if rel not in present and not path.is_file():
            raise PackError(f"{path}: listed in {root / MANIFEST} (version {data['version']}) but missing; {remedy}")
        got = file_sha256(path)
        if got != sha:
            raise PackError(f"{path}: sha256 {got[:12]}… differs from the pack's manifest ({sha[:12]}…, "
                            f"version {data['version']}); {remedy}")
    extra = sorted(present - set(listed))
    if extra:
        raise PackError(f"{root / extra[0]}: not in the pack's manifest ({root / MANIFEST}); "
                        "a pack holds exactly its listed files (`lkm docs snapshot` rewrites the manifest)")
    return Pack(root, str(data["version"]), str(data["created"]), dict(listed))


# -- the pin of the pack that ships with lkm --------------------------------------------
def pin_pack(pack: Pack, root: Path | None = None) -> Path | None:
    """Write the pin (:data:`PIN_FILE` of the tree at ``root``): the pack's folder relative
    to ``root``, its version and the manifest's sha256. A tree without ``lkm/report/``
    (a test's copy of the docs) has no pin: None."""
    root = root or repo_root()
    pin = root / PIN_FILE.relative_to(repo_root())
    if not pin.parent.is_dir():
        return None
    payload = {"pack": pack.root.resolve().relative_to(root.resolve()).as_posix(), "version": pack.version,
               "manifest_sha256": pack.digest}
    return atomic_write(pin, json.dumps(payload, indent=1) + "\n")


def published_folder(root: Path | None = None) -> Path:
    """The folder of the results pack that ships with lkm.

    The pack holds the records, specs and provenance of every run the report and the
    docs cite; one folder per run (``cross_paper``, ``lpl_vs_svm``, ...) and
    ``PACK.json``, the sha256 of every file. In a clone it is ``docs/runs``; in an
    installed wheel, the copy inside the package.

    Parameters
    ----------
    root : Path, optional
        A repository root: its pinned folder (``root/docs/runs``) is returned. By
        default the clone's folder when lkm runs from a clone that has it, else the
        installed copy.

    Returns
    -------
    Path
        The pack's folder (not verified here: ``lkm report --results published`` and
        ``lkm compare`` check every file against the pinned manifest first).

    Examples
    --------
    >>> from lkm.report.pack import published_folder
    >>> folder = published_folder()
    >>> (folder / "PACK.json").is_file(), (folder / "cross_paper" / "spec.yaml").is_file()
    (True, True)
    """
    pinned = json.loads(PIN_FILE.read_text(encoding="utf-8"))["pack"]
    if root is not None:
        return root / pinned
    clone = repo_root() / pinned
    return clone if clone.exists() or not INSTALLED_PACK.exists() else INSTALLED_PACK


def published_pack(root: Path | None = None) -> Pack:
    """The pack that ships with lkm (:func:`published_folder`: the clone's ``docs/runs``,
    else the wheel's copy), its manifest checked against the pin and every file against
    the manifest."""
    pin = json.loads(PIN_FILE.read_text(encoding="utf-8"))
    folder = published_folder(root)
    installed = folder == INSTALLED_PACK
    restore = "reinstall lkm" if installed else f"restore it (git checkout {pin['pack']})"
    if not is_pack(folder):
        where = "an installed lkm has them in lkm/report/published_pack" if installed else "a clone of lkm has them"
        raise PackError(f"{folder}: the published results are not here ({where}); {restore}")
    got = file_sha256(folder / MANIFEST)
    if got != pin["manifest_sha256"]:
        raise PackError(f"{folder / MANIFEST}: sha256 {got[:12]}… is not the pinned {pin['manifest_sha256'][:12]}… "
                        f"({PIN_FILE.name}, version {pin['version']}); {restore}")
    return verify_pack(folder)


# -- archives --------------------------------------------------------------------------
def write_archive(pack: Pack, dest: Path) -> str:
    """Write ``pack`` as ``dest`` (a ``.tar.gz`` with one top folder
    ``lkm-results-<version>/``; the same pack gives the same bytes) and return its sha256."""
    top = f"lkm-results-{pack.version}"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in [MANIFEST, *sorted(pack.files)]:
            data = (pack.root / rel).read_bytes()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=9, mtime=0) as gz:
        gz.write(buf.getvalue())
    atomic_write(dest, out.getvalue())
    return file_sha256(dest)


def pack_limits() -> tuple[int, int]:
    """The most an archive may unpack to and its own largest size, in bytes:
    :data:`MAX_BYTES_VAR` (a size such as 2GiB or 500M) or 1 GiB, and a quarter of it."""
    from lkm.numerics.kernels import env_bytes  # numpy: only an archive needs it

    limit = env_bytes(MAX_BYTES_VAR, MAX_UNPACKED_BYTES)
    return limit, max(1, limit // 4)


def _split_pin(source: str) -> tuple[str, str | None]:
    """``source`` without its pin, and the pin (lower-case hex; None: no pin). A pin that
    is not ``#sha256=`` and 64 hex digits, or another fragment of a URL, is refused."""
    at = source.lower().rfind(PIN_MARK)
    if at < 0:
        if "://" in source and "#" in source:
            raise PackError(f"--results {source}: the only '#' lkm reads in a URL is {PIN_MARK}=<64 hex digits> "
                            "(the archive's sha256)")
        return source, None
    pin = source[at + len(PIN_MARK):]
    if not re.fullmatch(r"=[0-9a-fA-F]{64}", pin):
        raise PackError(f"--results {source}: the pin {source[at:]!r} is not {PIN_MARK}= and 64 hex digits; "
                        "give the archive's whole sha256 (as `lkm docs pack` prints it) or no pin")
    return source[:at], pin[1:].lower()


def open_pack(source: str, cache: Path | None = None) -> Pack:
    """The verified pack ``source`` names: a pack folder, a ``.tar.gz`` archive of one, or
    the ``http(s)://`` or ``file://`` URL of such an archive (downloaded once into the
    cache; ``#sha256=<hex>`` at its end checks the archive itself). An archive is unpacked
    into the cache once (:func:`_unpack`)."""
    from urllib.parse import unquote, urlparse

    url, pin = _split_pin(source)
    if url.startswith("file://"):
        url = unquote(urlparse(url).path)
    cache = Path(cache) if cache is not None else cache_dir()
    if "://" not in url:
        path = Path(url)
        if path.is_dir():
            if pin is not None:
                raise PackError(f"--results {source}: {url} is a folder; a pin checks an archive (.tar.gz)")
            return verify_pack(path)
        if not path.is_file():
            raise PackError(f"--results {source}: no such folder or pack archive")
        archive = path
    else:
        archive = _download(url, cache)
    _, max_archive = pack_limits()
    size = archive.stat().st_size
    if size == 0:
        raise PackError(f"{archive}: an empty file, not a pack archive (.tar.gz)")
    if size > max_archive:
        if "://" in url:
            archive.unlink(missing_ok=True)
        raise PackError(f"{archive}: {size} bytes, more than a pack archive may have ({max_archive}, a quarter "
                        f"of {MAX_BYTES_VAR}); it was not opened")
    sha = file_sha256(archive)
    if pin is not None and sha != pin:
        raise PackError(f"--results {source}: the archive's sha256 is {sha}, not the one given; it was not opened")
    return _unpack(archive, cache / "packs", sha[:16])


def _unpack(archive: Path, packs: Path, key: str) -> Pack:
    """The pack in ``archive``, unpacked once into ``packs/<key>/<top folder>``: into a
    temporary folder first, verified, then renamed into place. A folder already in place
    that does not verify (an older lkm's half unpacking) is unpacked again."""
    remove_stale_temps(packs)  # the temporary folders of killed unpackings
    final = packs / key
    if final.exists() or final.is_symlink():
        try:
            return verify_pack(_only_folder(final))
        except PackError:
            _remove(final)
    tmp = packs / f"{TMP_PREFIX}{os.getpid()}-{key}"
    _remove(tmp)
    try:
        top = _extract(archive, tmp)
        try:
            pack = verify_pack(tmp / top, remedy="the archive was refused (fetch it again from its source)")
        except PackError as exc:
            raise PackError(f"{archive}: {str(exc).replace(str(tmp) + os.sep, '')}") from None
        try:
            os.replace(tmp, final)
        except OSError as exc:
            if not final.is_dir():
                raise _cache_error(archive, packs, exc) from None
            return verify_pack(_only_folder(final))  # another lkm put the same pack in place first
    finally:
        _remove(tmp)  # gone once renamed; else whatever a refusal, a kill or a full disk left
    return Pack(final / top, pack.version, pack.created, pack.files)


def _only_folder(folder: Path) -> Path:
    """The single folder inside ``folder`` (an unpacked archive's top folder)."""
    inside = list(folder.iterdir()) if folder.is_dir() and not folder.is_symlink() else []
    if len(inside) != 1 or not inside[0].is_dir() or inside[0].is_symlink():
        raise PackError(f"{folder}: not one unpacked pack")
    return inside[0]


def _remove(path: Path) -> None:
    """Remove ``path`` (a folder with its contents, a file or a link), if it is there."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink(missing_ok=True)


def _extract(archive: Path, into: Path) -> str:
    """Unpack ``archive`` into the new folder ``into``, reading it once as a stream; the
    name of its top folder. Each member's header is checked before it is unpacked
    (:func:`_member_problem`, tarfile's ``data`` filter, the running total against
    :func:`pack_limits`); the first refusal names the archive and the member."""
    limit, _ = pack_limits()
    top: str | None = None
    name: str | None = None
    total = 0
    into.mkdir(parents=True)
    try:
        with tarfile.open(archive, "r|gz") as tar:
            for member in tar:
                name, total = member.name, total + member.size
                top = top or name.split("/", 1)[0]
                problem = _member_problem(member, top)
                if problem is None and total > limit:
                    problem = f"the archive would unpack to more than {limit} bytes, the limit ({MAX_BYTES_VAR} raises it)"
                if problem is not None:
                    raise PackError(f"{archive}: member {name!r}: {problem}; the archive was refused "
                                    "and nothing of it kept")
                tar.extract(member, into, filter="data")
    except tarfile.FilterError as exc:
        raise PackError(f"{archive}: member {name!r} refused ({exc}); the archive was refused "
                        "and nothing of it kept") from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        where = f" after member {name!r}" if name is not None else ""
        raise PackError(f"{archive}: not a readable pack archive, a .tar.gz ({exc}{where}); "
                        "nothing of it was kept") from None
    except OSError as exc:
        raise _cache_error(archive, into.parent, exc) from None
    if top is None:
        raise PackError(f"{archive}: an empty archive, no pack in it")
    return top


def _member_problem(member: tarfile.TarInfo, top: str) -> str | None:
    """Why an archive's member cannot be part of a pack whose top folder is ``top``
    (None: it can): its path (:func:`path_problem`), outside ``top``, or not a regular
    file or folder (a link could lead out of the pack, a device anywhere)."""
    problem = path_problem(member.name)
    if problem is not None:
        return problem
    if member.name.split("/", 1)[0] != top:
        return f"outside the archive's one top folder {top!r}"
    if member.name == top and not member.isdir():
        return f"a file where the archive's top folder {top!r} should be"
    if member.issym():
        return f"a symbolic link (to {member.linkname!r}); a pack holds regular files only"
    if member.islnk():
        return f"a hard link (to {member.linkname!r}); a pack holds regular files only"
    if not (member.isfile() or member.isdir()):
        return "a device, fifo or other special file; a pack holds regular files only"
    return None


def _cache_error(archive: Path, packs: Path, exc: OSError) -> PackError:
    """One line for an OSError while unpacking ``archive`` into the cache folder ``packs``."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return PackError(f"{packs}: no space left in lkm's cache to unpack {archive} (nothing of it was kept); "
                         "free space there or set LKM_CACHE_DIR to a folder on another disk")
    return PackError(f"{archive}: cannot unpack it into lkm's cache {packs} ({os_message(exc)}); "
                     "set LKM_CACHE_DIR to a writable folder")


def _download(url: str, cache: Path) -> Path:
    """``url`` downloaded once into ``<cache>/packs/`` (pooch)."""
    import pooch  # imported late: only a pack given by URL needs it

    pooch.get_logger().setLevel("WARNING")
    try:
        return Path(pooch.retrieve(url, known_hash=None, path=cache / "packs",
                                   fname=text_sha256(url)[:16] + ".tar.gz", progressbar=False))
    except ValueError as exc:
        raise PackError(f"--results {url}: {' '.join(str(exc).split())}") from None
    except Exception as exc:  # requests' and the OS's errors, without importing requests here
        raise PackError(f"--results {url}: download failed ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())})") from None
