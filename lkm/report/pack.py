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
"""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from lkm.errors import LkmError
from lkm.files import atomic_write, cache_dir, file_sha256, text_sha256

#: The manifest of a pack, at its root.
MANIFEST = "PACK.json"
#: The manifest's format; a reader refuses a newer one.
PACK_FORMAT = 1
#: The pin of the pack that ships with lkm.
PIN_FILE = Path(__file__).with_name("published.json")
#: The pinned pack, relative to the repository root.
PUBLISHED_PACK = Path("docs/runs")
#: What an archive URL may end with to pin the archive's own sha256.
_ARCHIVE_HASH = re.compile(r"#sha256=([0-9a-fA-F]{64})$")


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


def pack_files(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` but the manifest, by POSIX relative path."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST)
    return {p.relative_to(root).as_posix(): file_sha256(p) for p in files}


def is_pack(folder: Path) -> bool:
    return (folder / MANIFEST).is_file()


def write_manifest(root: Path, version: str | None = None) -> Pack:
    """Write ``root/PACK.json`` for the files under ``root``. The version is ``version``,
    else the existing manifest's when no file changed, else today's date
    (``YYYY.MM.DD``)."""
    files = pack_files(root)
    old = _read_manifest(root) if is_pack(root) else None
    if version is None:
        if old is not None and old["files"] == files:
            version, created = old["version"], old["created"]
        else:
            version = time.strftime("%Y.%m.%d")
    created = old["created"] if old is not None and old["version"] == version else time.strftime("%Y-%m-%d")
    payload = {"format": PACK_FORMAT, "version": version, "created": created, "files": files}
    atomic_write(root / MANIFEST, json.dumps(payload, indent=1, sort_keys=True) + "\n")
    return Pack(root, version, created, files)


def _read_manifest(root: Path) -> dict:
    path = root / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PackError(f"{path}: not found; {root} is not a results pack") from None
    except (OSError, ValueError) as exc:
        raise PackError(f"{path}: unreadable ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict) or "version" not in data:
        raise PackError(f"{path}: not a pack manifest (no version or files)")
    if data.get("format", 0) > PACK_FORMAT:
        raise PackError(f"{path}: pack format {data['format']} is newer than this lkm reads "
                        f"({PACK_FORMAT}); upgrade lkm")
    data.setdefault("created", "")
    return data


def verify_pack(root: Path) -> Pack:
    """The pack at ``root``, every file checked against its manifest: a missing, altered
    or unlisted file is refused with one line naming it."""
    root = Path(root)
    data = _read_manifest(root)
    listed: dict[str, str] = data["files"]
    for rel, sha in sorted(listed.items()):
        path = root / rel
        if not path.is_file():
            raise PackError(f"{path}: listed in {root / MANIFEST} (version {data['version']}) but missing; "
                            "restore the pack (git checkout docs/runs) or fetch it again")
        got = file_sha256(path)
        if got != sha:
            raise PackError(f"{path}: sha256 {got[:12]}… differs from the pack's manifest ({sha[:12]}…, "
                            f"version {data['version']}); restore the pack (git checkout docs/runs) or fetch it again")
    present = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.name != MANIFEST}
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


def published_pack(root: Path | None = None) -> Pack:
    """The pack that ships with lkm, its manifest checked against the pin and every file
    against the manifest."""
    root = root or repo_root()
    pin = json.loads(PIN_FILE.read_text(encoding="utf-8"))
    folder = root / pin["pack"]
    if not is_pack(folder):
        raise PackError(f"{folder}: the published results are not here (a clone of lkm has them)")
    got = file_sha256(folder / MANIFEST)
    if got != pin["manifest_sha256"]:
        raise PackError(f"{folder / MANIFEST}: sha256 {got[:12]}… is not the pinned {pin['manifest_sha256'][:12]}… "
                        f"({PIN_FILE.name}, version {pin['version']}); restore it (git checkout docs/runs)")
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


def _unpack(archive: Path, into: Path) -> Path:
    """Extract ``archive`` (once) under ``into``; its single top folder."""
    with tarfile.open(archive, "r:gz") as tar:
        names = tar.getnames()
        tops = {n.split("/", 1)[0] for n in names}
        if len(tops) != 1:
            raise PackError(f"{archive}: a pack archive has one top folder, this one has {len(tops)}")
        top = into / tops.pop()
        if not is_pack(top):
            tar.extractall(into, filter="data")  # no absolute paths, links out or special files
    return top


def open_pack(source: str, cache: Path | None = None) -> Pack:
    """The verified pack ``source`` names: a pack folder, a ``.tar.gz`` archive of one, or
    the ``http(s)://`` or ``file://`` URL of such an archive (downloaded once into the
    cache; ``#sha256=<hex>`` at its end checks the archive itself)."""
    from urllib.parse import unquote, urlparse

    cache = Path(cache) if cache is not None else cache_dir()
    m = _ARCHIVE_HASH.search(source)
    url = source[: m.start()] if m else source
    if url.startswith("file://"):
        url = unquote(urlparse(url).path)
    if "://" not in url:
        path = Path(url)
        if path.is_dir():
            return verify_pack(path)
        if not path.is_file():
            raise PackError(f"--results {source}: no such folder or pack archive")
        archive = path
    else:
        archive = _download(url, cache)
    sha = file_sha256(archive)
    if m and sha != m.group(1).lower():
        raise PackError(f"--results {source}: the archive's sha256 is {sha}, not the one given; it was not opened")
    return verify_pack(_unpack(archive, cache / "packs" / sha[:16]))


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
