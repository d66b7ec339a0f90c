"""Files lkm reads and writes, below every layer: atomic writes, sha256 digests and the
per-user cache folder. Imports nothing of lkm but :mod:`lkm.errors`."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lkm.errors import LkmError

#: Prefix of the temporary files :func:`atomic_path` writes beside their target.
TMP_PREFIX = ".lkm-tmp-"
HASH_CHUNK = 1 << 20
_sha256_memo: dict[tuple[str, int, int], str] = {}


def os_message(exc: OSError) -> str:
    """The reason of an OSError in a few words ("No space left on device")."""
    return exc.strerror or str(exc) or type(exc).__name__


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; on success it replaces ``path`` at
    once (``os.replace``), so a reader, a kill or a full disk never sees a partial file.
    An OSError becomes one :class:`LkmError` line ("cannot write PATH: No space left on
    device"); the temporary file is removed and the previous ``path`` kept."""
    path = Path(path)
    tmp = path.with_name(f"{TMP_PREFIX}{os.getpid()}-{path.name}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise LkmError(f"cannot write {path}: {os_message(exc)}") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def exclusive_lock(path: str | Path) -> Iterator[bool]:
    """Hold an exclusive lock on the file ``path`` (created if absent) for the block,
    across processes and threads (``flock`` on an open file of its own; released when
    the block ends or the process dies). Yields whether a lock is held: where the file
    cannot be opened (a read-only folder) or the platform has no ``flock``, the block
    runs unlocked, as it would without this."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield False
        return
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+b")  # noqa: SIM115 (closed below, after the block)
    except OSError:
        yield False
        return
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        yield True
    finally:
        fh.close()  # releases the lock


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically, flushed to disk; see :func:`atomic_path`."""
    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
    return path


def atomic_save(path: str | Path, writer: Callable[[Path], Any]) -> Path:
    """``writer(tmp)`` writes the file (``df.to_csv``, ``fig.savefig``, ...), then it
    replaces ``path`` atomically; see :func:`atomic_path`."""
    path = Path(path)
    with atomic_path(path) as tmp:
        writer(tmp)
    return path


#: The name of a temporary of :func:`atomic_path` (or of a pack's unpacking): ``.lkm-tmp-<pid>-<name>``.
_TMP_NAME = re.compile(rf"^{re.escape(TMP_PREFIX)}(\d+)-.")


def remove_stale_temps(folder: Path, *, before: float | None = None, recursive: bool = False) -> int:
    """Remove lkm's own temporaries (``.lkm-tmp-<pid>-…`` files and folders) in ``folder``
    (and below, ``recursive``) that a killed process left: those whose pid is no longer
    alive or, with ``before`` (a ``time.time()``), last changed before it (the pid was
    reused). Never this process's own, nor any other name. Returns how many went."""
    removed = 0
    for top, dirs, files in os.walk(folder) if folder.is_dir() else ():
        for name in [*dirs, *files]:
            m = _TMP_NAME.match(name)
            if not m or int(m.group(1)) == os.getpid():
                continue
            path = Path(top) / name
            with contextlib.suppress(OSError):
                if pid_alive(int(m.group(1))) and (before is None or path.lstat().st_mtime >= before):
                    continue
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
                removed += 1
        dirs[:] = [d for d in dirs if recursive and not _TMP_NAME.match(d)]
    return removed


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (on POSIX; elsewhere assumed
    alive). A zombie (ended, not yet reaped by its parent) counts as ended where /proc
    shows it: ``kill(pid, 0)`` alone would call it alive."""
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # alive, another user's
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # without /proc (macOS) kill's answer stands; with it, the process ended just now
        return not Path("/proc/self").is_dir()
    return stat[stat.rindex(")") + 2] not in "ZX"


def text_sha256(text: str) -> str:
    """sha256 of a text as UTF-8 (plan.json's ``spec_sha256``)."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 hex digest of ``path``, memoized per (path, size, mtime) within the process."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _sha256_memo:
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(HASH_CHUNK):
                digest.update(chunk)
        _sha256_memo[key] = digest.hexdigest()
    return _sha256_memo[key]


def cache_dir() -> Path:
    """The download cache: ``$LKM_CACHE_DIR``, else pooch's per-user cache for "lkm"."""
    env = os.environ.get("LKM_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import pooch  # imported late: listings and loads from the mirror need no pooch

    return Path(pooch.os_cache("lkm")).expanduser()


# -- CSV for spreadsheets -------------------------------------------------------------
#: First characters that make a spreadsheet read a cell as a formula (OWASP, "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: Text a spreadsheet reads as a number ("-1.30", "+0.52"), not as a formula.
_CSV_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
#: A number, a space and words ("+0.52 pts (mean of 2 sets)", "+0.26 log10 s, testing vs
#: SVM": lkm's claim effects): no operator, quote, ``!``, ``|``, ``@``, ``:``, ``;``, bracket
#: or line break, and no function call (a name right before "("), so nothing a spreadsheet
#: could run or fetch (Excel reads it as an intersection of names: #NAME?; others: an error).
_NUMBER_PHRASE = rf"{_CSV_NUMBER} (?!.*\w\()[^=+\-*/^&<>!|\"'@#$\[\]{{}};:\t\r\n]*"


def spreadsheet_text(cell: str) -> str:
    """``cell`` as a spreadsheet shows it as text: OWASP's rule, a single quote ``'``
    before a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
    (``=cmd|' /C calc'!A0`` is written ``'=cmd|' /C calc'!A0``; ``-2`` as a name ``'-2``),
    except a number followed by words that call and fetch nothing (:data:`_NUMBER_PHRASE`)."""
    if cell.startswith(FORMULA_STARTS) and not re.fullmatch(_NUMBER_PHRASE, cell):
        return "'" + cell
    return cell


def write_csv(path: str | Path, df: Any) -> Path:
    """Write the DataFrame ``df`` as CSV (no index) atomically: the one CSV writer of lkm.

    Text a spreadsheet would evaluate is written as text (:func:`spreadsheet_text`), in
    column names and in string cells only: numbers are never touched, nor a column whose
    text cells are all numbers (``-1.30``, empty for none: numbers written as text, which
    ``pandas.read_csv`` reads as floats). ``read_csv`` gives such a name back with its quote.
    """
    from pandas.api.types import is_object_dtype, is_string_dtype

    safe = None
    for i in range(df.shape[1]):
        cells = df.iloc[:, i]
        if not (is_object_dtype(cells) or is_string_dtype(cells)):
            continue
        starts = cells.map(lambda v: isinstance(v, str) and v.startswith(FORMULA_STARTS))
        if not starts.any() or all(re.fullmatch(_CSV_NUMBER, v) for v in cells if isinstance(v, str) and v):
            continue
        safe = df.copy() if safe is None else safe
        safe.isetitem(i, cells.map(lambda v: spreadsheet_text(v) if isinstance(v, str) else v))
    names = [spreadsheet_text(c) if isinstance(c, str) else c for c in df.columns]
    if names != list(df.columns):
        safe = (df.copy() if safe is None else safe).set_axis(names, axis=1)
    out = df if safe is None else safe
    return atomic_save(path, lambda tmp: out.to_csv(tmp, index=False))
