"""Hostile results packs (issue 39): a pack is data, never a path. A manifest or an
archive that could reach outside the pack, an archive that is not one, too big, or
refused once, a malformed pin: one line naming the culprit, exit 2, and nothing outside
``--out`` (or the cache) touched. A signal stops a pack's report at once, and the next
build removes what a killed one left."""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from cli_output import error_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from processes import kill_group, live_processes, wait_until
from typer.testing import CliRunner

from lkm.cli import app
from lkm.files import file_sha256
from lkm.report.pack import (
    MANIFEST,
    MAX_BYTES_VAR,
    Pack,
    PackError,
    open_pack,
    path_problem,
    resolve_inside,
    verify_pack,
    write_archive,
    write_manifest,
)
from lkm.reproduction.rebuild import BUILT_MARK, sync_runs

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "docs" / "runs"
RUN = "lpl_sigma_sonar"  # the smallest run of the shipped pack: a pack of one run builds in seconds
SECRET = b"the user's own file\n"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("LKM_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def one_run_pack(root: Path) -> Path:
    shutil.copytree(SHIPPED / RUN, root / RUN)
    write_manifest(root, version="hostile.1")
    return root


def relist(pack: Path, **files: str) -> None:
    """Rewrite ``pack``'s manifest with ``files`` (path -> sha256) added, as a hostile packer would."""
    manifest = json.loads((pack / MANIFEST).read_text())
    manifest["files"].update(files)
    (pack / MANIFEST).write_text(json.dumps(manifest))


def sentinel(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(SECRET)
    return path


def cached(cache: Path) -> list[str]:
    """What the cache's pack folder holds (nothing, if it was never made)."""
    packs = cache / "packs"
    return sorted(p.name for p in packs.iterdir()) if packs.is_dir() else []


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (Linux)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- manifests --------------------------------------------------------------------------
def _escaping_manifest(case: str, pack: Path, victim: Path) -> None:
    sha = file_sha256(victim)
    if case == "dotdot":  # the found case: ../../.. to a user's file, with its right sha256
        relist(pack, **{os.path.relpath(victim, pack): sha})
    elif case == "absolute":
        relist(pack, **{str(victim): sha})
    elif case == "inner dotdot":
        relist(pack, **{f"{RUN}/../../{os.path.relpath(victim, pack.parent)}": sha})
    elif case == "backslash":
        relist(pack, **{f"{RUN}\\..\\..\\x": sha})
    elif case == "drive":
        relist(pack, **{"C:/x/secret.txt": sha})
    elif case == "nul":
        relist(pack, **{f"{RUN}/spec.yaml\0.txt": sha})
    elif case == "empty component":
        relist(pack, **{f"{RUN}//spec.yaml": sha})
    elif case == "manifest listed":
        relist(pack, **{MANIFEST: sha})
    elif case == "duplicate":
        relist(pack, **{f"{RUN.upper()}/spec.yaml": file_sha256(pack / RUN / "spec.yaml")})
    elif case == "symlink out":  # a run folder's file replaced by a link to the user's file, listed with its sha
        (pack / RUN / "notes.txt").symlink_to(victim)
        relist(pack, **{f"{RUN}/notes.txt": sha})
    elif case == "symlinked folder":
        (pack / "linked").symlink_to(victim.parent, target_is_directory=True)
        relist(pack, **{f"linked/{victim.name}": sha})


MANIFEST_CASES = ["dotdot", "absolute", "inner dotdot", "backslash", "drive", "nul", "empty component",
                  "manifest listed", "duplicate", "symlink out", "symlinked folder"]


@pytest.mark.parametrize("case", MANIFEST_CASES)
def test_a_manifest_reaching_outside_the_pack_is_refused_and_nothing_outside_out_changes(
        tmp_path: Path, cache: Path, case: str) -> None:
    """Case: PACK.json listing ../../../../x/secret.txt with its sha256 made the build copy
    the user's file to DIR/runs/<that path>, outside --out, overwriting what was there."""
    pack = one_run_pack(tmp_path / "a" / "b" / "pack")
    victim = sentinel(tmp_path / "x" / "secret.txt")  # what the pack's path resolves to
    out = tmp_path / "deep" / "er" / "out"
    out.parent.mkdir(parents=True)
    landing = sentinel(tmp_path / "deep" / "x" / "secret.txt")  # where DIR/runs/<the same path> lands
    _escaping_manifest(case, pack, victim)
    res = invoke("report", "--all", "--results", str(pack), "--out", str(out))
    assert res.exit_code == 2, res.output
    line = error_line(res)
    assert "internal error" not in line and str(pack) in line
    assert victim.read_bytes() == SECRET and landing.read_bytes() == SECRET
    assert not out.exists()  # refused before --out is made
    assert sorted(p.name for p in (tmp_path / "deep").iterdir()) == ["er", "x"]
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == ["secret.txt"]


def test_a_manifest_with_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    pack = one_run_pack(tmp_path / "pack")
    text = (pack / MANIFEST).read_text()
    spec = f'"{RUN}/spec.yaml": "{file_sha256(pack / RUN / "spec.yaml")}"'
    (pack / MANIFEST).write_text(text.replace(spec, f"{spec},\n  {spec}"))
    with pytest.raises(PackError, match="given twice"):
        verify_pack(pack)


@pytest.mark.parametrize("sha", [1, None, "abc", "G" * 64])
def test_a_manifest_sha256_that_is_not_one_is_refused_in_one_line(tmp_path: Path, sha: object) -> None:
    """Case: a number for a sha256 ended in a TypeError (internal error)."""
    pack = one_run_pack(tmp_path / "pack")
    relist(pack, **{f"{RUN}/spec.yaml": sha})
    with pytest.raises(PackError, match="sha256"):
        verify_pack(pack)


def test_sync_runs_writes_nothing_outside_runs_even_for_a_pack_that_skipped_verification(tmp_path: Path) -> None:
    """The second line of defence: a Pack built by hand (no verify_pack) with a path out,
    or a run folder in DIR/runs that is a link out: sync_runs refuses before writing."""
    pack = verify_pack(one_run_pack(tmp_path / "pack"))
    victim = sentinel(tmp_path / "x" / "secret.txt")
    runs = tmp_path / "out" / "runs"
    runs.mkdir(parents=True)
    hand_made = Pack(pack.root, pack.version, pack.created, {"../../x/secret.txt": "0" * 64, **pack.files})
    with pytest.raises(PackError, match="outside"):
        sync_runs(hand_made, runs)
    assert victim.read_bytes() == SECRET
    (runs / RUN).symlink_to(victim.parent, target_is_directory=True)  # DIR/runs/<run> -> the user's folder
    with pytest.raises(PackError, match="outside"):
        sync_runs(pack, runs)
    assert sorted(p.name for p in victim.parent.iterdir()) == ["secret.txt"]


def test_a_link_out_of_out_runs_is_refused_through_the_command(tmp_path: Path, cache: Path) -> None:
    pack = one_run_pack(tmp_path / "pack")
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    (out / BUILT_MARK).write_text("{}")
    mine = tmp_path / "mine"
    mine.mkdir()
    (out / "runs" / RUN).symlink_to(mine, target_is_directory=True)
    res = invoke("report", "--all", "--results", str(pack), "--out", str(out))
    assert res.exit_code == 2 and "outside" in error_line(res)
    assert list(mine.iterdir()) == []


# -- paths, property-based ---------------------------------------------------------------
_COMPONENTS = st.sampled_from(["run", "records", "a.json", "é", "x y", "..", ".", "", "C:", "a\\b", "\0",
                               "\n", "/", "~"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_COMPONENTS, min_size=1, max_size=5), lead=st.sampled_from(["", "/", "//"]))
def test_every_accepted_path_stays_inside_and_every_escaping_one_is_refused(tmp_path: Path, parts: list[str],
                                                                           lead: str) -> None:
    rel = lead + "/".join(parts)
    folder = tmp_path / "pack"
    escapes = not os.path.normpath(os.path.join(folder, rel)).startswith(f"{folder}{os.sep}")
    if path_problem(rel) is None:
        assert not escapes
        assert os.path.normpath(rel) == rel and "\0" not in rel and "\\" not in rel  # what is named is what is read
        assert folder.resolve() in resolve_inside(folder, rel).resolve().parents
    else:
        with pytest.raises(PackError):
            resolve_inside(folder, rel)
    if escapes:
        assert path_problem(rel) is not None


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.text(st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"],
                                            exclude_characters="/\\:"), min_size=1, max_size=12)
                      .filter(lambda n: n not in (".", "..", MANIFEST)), min_size=1, max_size=4,
                      unique_by=lambda n: n.casefold()))
def test_a_pack_of_ordinary_names_verifies(tmp_path_factory, names: list[str]) -> None:
    import unicodedata

    names = list({unicodedata.normalize("NFC", n).casefold(): n for n in names}.values())
    root = tmp_path_factory.mktemp("pack")
    for i, name in enumerate(names):
        (root / "run" / name).mkdir(parents=True)
        (root / "run" / name / "f.txt").write_text(str(i))
    assert set(verify_pack(write_manifest(root, version="p").root).files) == {f"run/{n}/f.txt" for n in names}


# -- archives ------------------------------------------------------------------------------
def _member(name: str, data: bytes = b"x", kind: bytes = tarfile.REGTYPE, link: str = "") -> tuple:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    if kind == tarfile.REGTYPE:
        info.size = len(data)
    if kind == tarfile.CHRTYPE:
        info.devmajor, info.devminor = 1, 3
    return info, (io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def _tar_gz(path: Path, members: list[tuple]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, data)
    return path


def _good_members() -> list[tuple]:
    return [_member("top/PACK.json", b"{}")]


ARCHIVES = {
    "traversal at top": ([_member("../evil")], "'../evil'"),
    "traversal inside": ([*_good_members(), _member("top/../../evil")], "'top/../../evil'"),
    "absolute path": ([_member("/tmp/lkm-hostile-evil")], "'/tmp/lkm-hostile-evil'"),
    "absolute symlink": ([*_good_members(), _member("top/l", kind=tarfile.SYMTYPE, link="/etc/passwd")], "symbolic link"),
    "relative symlink": ([*_good_members(), _member("top/l", kind=tarfile.SYMTYPE, link="../../evil")], "symbolic link"),
    "inner symlink": ([*_good_members(), _member("top/l", kind=tarfile.SYMTYPE, link="PACK.json")], "symbolic link"),
    "hard link": ([*_good_members(), _member("top/h", kind=tarfile.LNKTYPE, link="top/PACK.json")], "hard link"),
    "device": ([*_good_members(), _member("top/dev", kind=tarfile.CHRTYPE)], "'top/dev'"),
    "fifo": ([*_good_members(), _member("top/fifo", kind=tarfile.FIFOTYPE)], "'top/fifo'"),
    "two top folders": ([*_good_members(), _member("other/x")], "'other/x'"),
}


@pytest.mark.parametrize("case", sorted(ARCHIVES))
def test_an_archive_member_that_is_not_a_plain_file_of_the_pack_is_refused_in_one_line(
        tmp_path: Path, cache: Path, case: str) -> None:
    """Case: archives tarfile's data filter refuses ended in `internal error`; some it
    accepts (a link inside, a second top folder) are not packs either."""
    members, named = ARCHIVES[case]
    archive = _tar_gz(tmp_path / "hostile.tar.gz", members)
    out = tmp_path / "out"
    res = invoke("report", "--all", "--results", str(archive), "--out", str(out))
    assert res.exit_code == 2, res.output
    line = error_line(res)
    assert str(archive) in line and named in line
    assert not out.exists()
    assert cached(cache) == []  # nothing of it kept in the cache
    assert not any(p.name == "evil" for p in tmp_path.rglob("*"))


def _real_archive(tmp_path: Path) -> Path:
    pack = verify_pack(one_run_pack(tmp_path / "pack"))
    dest = tmp_path / "good.tar.gz"
    write_archive(pack, dest)
    return dest


@pytest.mark.parametrize("case", ["truncated", "random bytes", "empty file", "a text file", "gzip of no tar",
                                  "empty archive"])
def test_what_is_not_a_pack_archive_is_refused_in_one_line_naming_it(tmp_path: Path, cache: Path, case: str) -> None:
    """Case: a truncated, random or empty archive and `--results README.md` ended in `internal error`."""
    path = tmp_path / "bad.tar.gz"
    if case == "truncated":
        data = _real_archive(tmp_path).read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif case == "random bytes":
        path.write_bytes(os.urandom(5000))
    elif case == "empty file":
        path.write_bytes(b"")
    elif case == "a text file":
        path = REPO / "README.md"
    elif case == "gzip of no tar":
        path.write_bytes(gzip.compress(b"not a tar" * 100))
    else:
        _tar_gz(path, [])
    res = invoke("report", "--all", "--results", str(path), "--out", str(tmp_path / "out"))
    assert res.exit_code == 2, res.output
    line = error_line(res)
    assert str(path) in line and "internal error" not in line
    assert not (tmp_path / "out").exists()
    assert cached(cache) == []


def test_an_archive_over_the_size_limit_is_refused_before_the_member_is_unpacked(
        tmp_path: Path, cache: Path, monkeypatch) -> None:
    """Case: a 10 MB archive holding a 3 GiB file filled the cache and left it full."""
    monkeypatch.setenv(MAX_BYTES_VAR, "100K")
    archive = _tar_gz(tmp_path / "big.tar.gz", [*_good_members(), _member("top/run/big", b"\0" * (1 << 20))])
    assert archive.stat().st_size < 25_000  # small compressed: only the unpacked total is over the limit
    unpacked: list[str] = []
    extract = tarfile.TarFile.extract
    monkeypatch.setattr(tarfile.TarFile, "extract", lambda self, m, *a, **k: (unpacked.append(m.name),
                                                                              extract(self, m, *a, **k)))
    res = invoke("report", "--all", "--results", str(archive), "--out", str(tmp_path / "out"))
    assert res.exit_code == 2
    line = error_line(res)
    assert "'top/run/big'" in line and "102400 bytes" in line and MAX_BYTES_VAR in line
    assert "top/run/big" not in unpacked
    assert cached(cache) == []


def test_a_member_claiming_3_gib_is_refused_from_its_header_with_the_default_limit(tmp_path: Path, cache: Path) -> None:
    info = tarfile.TarInfo("top/run/huge")
    info.size = 3 << 30
    archive = tmp_path / "huge.tar.gz"  # the header alone, then a few bytes: no 3 GiB to write
    archive.write_bytes(gzip.compress(_member("top/PACK.json", b"{}")[0].tobuf() + b"{}".ljust(512, b"\0")
                                      + info.tobuf() + b"\0" * 4096))
    with pytest.raises(PackError, match="'top/run/huge'.*more than 1073741824 bytes"):
        open_pack(str(archive))
    assert cached(cache) == []


def test_an_archive_over_the_compressed_limit_is_not_opened(tmp_path: Path, cache: Path, monkeypatch) -> None:
    archive = _real_archive(tmp_path)
    monkeypatch.setenv(MAX_BYTES_VAR, str(archive.stat().st_size))  # the archive may be a quarter of it
    with pytest.raises(PackError, match="not opened"):
        open_pack(str(archive))
    monkeypatch.setenv(MAX_BYTES_VAR, "lots")
    res = invoke("report", "--all", "--results", str(archive), "--out", str(tmp_path / "out"))
    assert res.exit_code == 2 and MAX_BYTES_VAR in error_line(res)


def test_a_refused_archive_is_refused_again_from_the_same_cache(tmp_path: Path, cache: Path) -> None:
    """Case: the half-unpacked folder of a refused archive was taken as the pack the second time."""
    good = _real_archive(tmp_path)
    with tarfile.open(good) as tar:  # the whole pack, then a link at the end
        members = [(m, io.BytesIO(tar.extractfile(m).read())) for m in tar.getmembers()]
    top = members[0][0].name.split("/")[0]
    archive = _tar_gz(tmp_path / "late-link.tar.gz",
                      [*members, _member(f"{top}/{RUN}/l", kind=tarfile.SYMTYPE, link="/etc/passwd")])
    for _ in range(2):
        with pytest.raises(PackError, match="symbolic link"):
            open_pack(str(archive))
        assert cached(cache) == []


def test_an_altered_archive_is_refused_by_its_manifest_every_time(tmp_path: Path, cache: Path) -> None:
    good = _real_archive(tmp_path)
    with tarfile.open(good) as tar:
        members = [(m, io.BytesIO(tar.extractfile(m).read())) for m in tar.getmembers()]
    info, _ = members[-1]
    members[-1] = (info, io.BytesIO(b"x" * info.size))  # same size, other bytes
    archive = _tar_gz(tmp_path / "altered.tar.gz", members)
    for _ in range(2):
        with pytest.raises(PackError) as err:
            open_pack(str(archive))
        assert str(archive) in str(err.value) and info.name in str(err.value) and "fetch it again" in str(err.value)
        assert ".lkm-tmp-" not in str(err.value)


def test_leftovers_of_killed_unpackings_are_removed_and_a_half_folder_unpacked_again(tmp_path: Path,
                                                                                     cache: Path) -> None:
    """Case: an unpacking cut short left a folder refused forever with "fetch it again"."""
    archive = _real_archive(tmp_path)
    key = file_sha256(archive)[:16]
    packs = cache / "packs"
    stale = packs / f".lkm-tmp-{dead_pid()}-{key}" / "top"
    stale.mkdir(parents=True)
    (stale / "part").write_bytes(b"half")
    half = packs / key / "lkm-results-hostile.1"  # an older lkm unpacked here directly, and was killed
    half.mkdir(parents=True)
    shutil.copyfile(tmp_path / "pack" / MANIFEST, half / MANIFEST)
    pack = open_pack(str(archive))
    assert pack.version == "hostile.1" and pack.root == half
    assert sorted(p.name for p in packs.iterdir()) == [key]
    (packs / f".lkm-tmp-{dead_pid()}-{key}").mkdir()  # killed while another open was unpacking
    assert open_pack(str(archive)).files == pack.files  # from the cache
    assert sorted(p.name for p in packs.iterdir()) == [key]


def test_a_full_disk_while_unpacking_names_the_cache_and_keeps_nothing(tmp_path: Path, cache: Path,
                                                                       monkeypatch) -> None:
    archive = _real_archive(tmp_path)

    def full(self, member, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(tarfile.TarFile, "extract", full)
        with pytest.raises(PackError) as err:
            open_pack(str(archive))
    message = str(err.value)
    assert str(cache / "packs") in message and "LKM_CACHE_DIR" in message and "no space" in message
    assert cached(cache) == []
    assert open_pack(str(archive)).version == "hostile.1"  # space again: it opens


@pytest.mark.parametrize("pin", ["abc", "", "0" * 63, "g" * 64, "0" * 65, ":" + "0" * 64])
def test_a_malformed_pin_is_refused_and_the_archive_not_opened(tmp_path: Path, cache: Path, pin: str) -> None:
    """Case: `#sha256=abc` was ignored and the archive opened unchecked."""
    archive = _real_archive(tmp_path)
    text = f"#sha256={pin}" if not pin.startswith(":") else f"#sha256{pin}"
    for source in (f"{archive}{text}", f"{archive.as_uri()}{text}"):
        res = invoke("report", "--all", "--results", source, "--out", str(tmp_path / "out"))
        assert res.exit_code == 2, res.output
        assert "pin" in error_line(res)
        assert not (cache / "packs").exists()


def test_a_pin_on_a_folder_or_a_stray_url_fragment_is_refused(tmp_path: Path, cache: Path) -> None:
    archive = _real_archive(tmp_path)
    with pytest.raises(PackError, match="a pin checks an archive"):
        open_pack(f"{tmp_path / 'pack'}#sha256={'0' * 64}")
    with pytest.raises(PackError, match="only '#'"):
        open_pack(f"{archive.as_uri()}#version=2")


# -- signals and leftovers of killed builds -------------------------------------------------
def test_a_rebuild_removes_the_temporaries_of_killed_builds_and_nothing_else(tmp_path: Path, cache: Path) -> None:
    """Case: a killed build left a .lkm-tmp-<pid>-… file in DIR that reruns never removed."""
    pack = one_run_pack(tmp_path / "pack")
    out = tmp_path / "out"
    assert invoke("report", "--all", "--results", str(pack), "--out", str(out), "--jobs", "1").exit_code == 0
    tables = out / "runs" / RUN / "tables"
    stale = [tables / f".lkm-tmp-{dead_pid()}-summary.json", out / f".lkm-tmp-{dead_pid()}-index.html",
             out / "runs" / f".lkm-tmp-{os.getppid()}-PACK.json"]  # a live pid, but older than the build
    kept = [out / ".lkm-tmp-notes.txt", out / "runs" / "lkm-tmp-1-mine.txt"]
    for path in [*stale, *kept]:
        path.write_text("partial")
    old = time.time() - 60
    os.utime(stale[-1], (old, old))
    res = invoke("report", "--all", "--results", str(pack), "--out", str(out), "--jobs", "1")
    assert res.exit_code == 0, res.output
    assert not any(p.exists() for p in stale)
    assert all(p.read_text() == "partial" for p in kept)


def _start_slow_build(tmp_path: Path) -> tuple[subprocess.Popen, Path, list[str], dict[str, str]]:
    """`lkm report --all` of a pack whose first step is long (the benchmark's ranking),
    started in its own session; returns once its workers run."""
    pack = tmp_path / "pack"
    for name in ("cross_paper", "lpl_vs_svm"):  # the benchmark's ranking: a long step, then the runs
        shutil.copytree(SHIPPED / name, pack / name)
    write_manifest(pack, version="slow.1")
    out = tmp_path / "out"
    env = {**os.environ, "LKM_CACHE_DIR": str(tmp_path / "cache"), "PYTHONWARNINGS": "ignore"}
    command = [sys.executable, "-m", "lkm.cli", "report", "--all", "--results", str(pack), "--out", str(out),
               "--jobs", "1"]
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        assert wait_until(lambda: (out / "runs" / MANIFEST).is_file() and live_processes("ppid", proc.pid)
                          or proc.poll() is not None, timeout=600)
        assert live_processes("ppid", proc.pid) and proc.poll() is None, proc.communicate()
    except BaseException:
        kill_group(proc)
        raise
    return proc, out, command, env


@pytest.mark.slow  # rebuilds the benchmark's ranking; test_kill_9_of_a_pack_build_ends_its_workers stops the same build
@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads /proc to see the build's workers")
def test_sigterm_stops_a_pack_build_at_once_and_the_rerun_finishes_it(tmp_path: Path) -> None:
    """Case: SIGTERM took 66 s to end `lkm report --all --results ...`: leaving the
    worker pool waited for every queued step. Now the workers are killed: the build exits
    143 with one line before its last step has run, and a rerun completes it."""
    proc, out, command, env = _start_slow_build(tmp_path)
    try:
        workers = live_processes("ppid", proc.pid)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=300)  # a ceiling for a hung build, not a speed limit; ~0.3 s when idle
    finally:
        if proc.poll() is None:
            kill_group(proc)
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert proc.returncode == 143, stderr
    assert len(lines) == 1 and lines[0].startswith("error: interrupted (SIGTERM)") and str(out) in lines[0], stderr
    assert not (out / "runs" / "lpl_vs_svm" / "tables").exists()  # the last queued step never ran
    assert wait_until(lambda: not any(running(pid) for pid in workers), timeout=30)  # no worker outlives the build
    rerun = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    assert rerun.returncode == 0, rerun.stderr
    assert (out / "index.html").is_file() and (out / "runs" / "lpl_vs_svm" / "tables" / "summary.json").is_file()
    assert not list(out.rglob(".lkm-tmp-*"))


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads /proc to see the build's workers")
def test_kill_9_of_a_pack_build_ends_its_workers(tmp_path: Path) -> None:
    """Case: after `kill -9` of `lkm report --all --results ...` its workers went on with
    their steps; now they end with their parent (the runs' watchdog)."""
    proc, _, _, _ = _start_slow_build(tmp_path)
    workers = live_processes("ppid", proc.pid)
    try:
        proc.kill()
        proc.wait(timeout=60)
        assert wait_until(lambda: not any(running(pid) for pid in workers), timeout=60), workers
    finally:
        kill_group(proc)
