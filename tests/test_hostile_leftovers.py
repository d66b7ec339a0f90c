"""Leftovers of the hostile-input review (issue 39, point 6): non-regular data files,
`extends:` by a shipped spec's name, `lkm specs show --out` through a symlink, and spec
error messages that blamed the wrong key or spoke pydantic. Each error is one line
naming the file and the key, exit 2."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lkm.cli import app
from lkm.errors import SpecError
from lkm.spec import load_spec

runner = CliRunner()
DOCS = Path(__file__).resolve().parents[1] / "docs" / "specs.md"


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def error_line(res) -> str:
    """The one line of error output (asserting there is exactly one, and exit 2)."""
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LKM_USER_REGISTRY", str(tmp_path / "registry.yaml"))
    return tmp_path


# -- lkm datasets add: what is not a regular file ---------------------------------------
@pytest.mark.parametrize("args", [("/dev/zero",), ("/dev/null", "--format", "csv", "--target", "y")])
def test_a_character_device_is_refused_by_what_it_is(workdir, args):
    """Case: `lkm datasets add /dev/zero` said "no such file" (and reading it never ends)."""
    line = error_line(invoke("datasets", "add", *args))
    assert line == f"error: {args[0]}: is a character device, not a regular file"
    assert not (workdir / "registry.yaml").exists()


def test_a_fifo_is_refused_without_opening_it(workdir):
    """Case: a FIFO would block the reader forever; it is refused by os.stat alone."""
    os.mkfifo(workdir / "pipe.csv")
    line = error_line(invoke("datasets", "add", "pipe.csv", "--target", "y"))
    assert line == f"error: {workdir / 'pipe.csv'}: is a FIFO (named pipe), not a regular file"


def test_a_socket_and_a_link_to_a_device_are_refused(workdir):
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(workdir / "s.csv"))
        assert "is a socket, not a regular file" in error_line(invoke("datasets", "add", "s.csv", "--target", "y"))
    (workdir / "z.csv").symlink_to("/dev/zero")
    line = error_line(invoke("datasets", "add", "z.csv", "--target", "y"))
    assert line == f"error: {workdir / 'z.csv'} (a link to /dev/zero): is a character device, not a regular file"


def test_a_spec_path_naming_a_fifo_is_refused(workdir):
    os.mkfifo(workdir / "pipe.csv")
    (workdir / "s.yaml").write_text("name: x\ndatasets: [{path: pipe.csv, target: y}]\nmethods: [{name: S, estimator: svm}]\n")
    line = error_line(invoke("run", "s.yaml", "--dry-run"))
    assert line.startswith("error: s.yaml: datasets[0]") and "is a FIFO (named pipe), not a regular file" in line


# -- extends: a shipped spec's name, a path relative to the extending file ---------------
def docs_extends_example() -> str:
    """The YAML block of docs/specs.md that follows "A spec can start from another"."""
    text = DOCS.read_text(encoding="utf-8")
    after = text[text.index("A spec can start from another"):]
    return re.search(r"```yaml\n(.*?)```", after, re.S).group(1)


def test_the_docs_extends_example_runs_from_an_unrelated_folder(workdir):
    """Case: the docs' `extends: lpl_vs_svm.yaml` failed outside the package folder."""
    example = docs_extends_example()
    assert "extends: lpl_vs_svm" in example
    (workdir / "mine").mkdir()
    (workdir / "mine" / "my_lpl.yaml").write_text(example)
    (workdir / "elsewhere").mkdir()
    os.chdir(workdir / "elsewhere")
    res = invoke("run", "../mine/my_lpl.yaml", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "plan for my_lpl_scaled" in res.stdout and "spambase" in res.stdout


@pytest.mark.parametrize("value", ["lpl_vs_svm", "lpl_vs_svm.yaml", "cevikalp_usps.q_half"])
def test_extends_takes_a_shipped_specs_name(workdir, value):
    (workdir / "s.yaml").write_text(f"extends: {value}\nname: mine\n")
    spec = load_spec(workdir / "s.yaml")
    assert spec.name == "mine" and spec.datasets and spec.methods


def test_a_file_beside_the_extending_spec_wins_over_a_shipped_name(workdir):
    (workdir / "sub").mkdir()
    (workdir / "sub" / "lpl_vs_svm.yaml").write_text("name: base\ndatasets: [iris]\nmethods: [{name: Mine, estimator: svm}]\n")
    (workdir / "sub" / "s.yaml").write_text("extends: lpl_vs_svm.yaml\nname: mine\n")
    spec = load_spec("sub/s.yaml")  # relative to sub/, not to the working directory
    assert [m.name for m in spec.methods] == ["Mine"]


def test_an_unknown_extends_is_one_line_with_the_closest_name(workdir):
    (workdir / "s.yaml").write_text("extends: lpl_vs_sv\nname: mine\n")
    with pytest.raises(SpecError) as err:
        load_spec(workdir / "s.yaml")
    assert str(err.value) == (f"{workdir / 's.yaml'}: extends: 'lpl_vs_sv' is neither a file beside this spec "
                              f"({workdir / 'lpl_vs_sv'}) nor a spec lkm ships (did you mean 'lpl_vs_svm'?) "
                              "(`lkm specs list` lists them)")
    (workdir / "s.yaml").write_text("extends: base/x.yaml\nname: mine\n")
    with pytest.raises(SpecError, match=r"s.yaml: extends: no such spec file .*base/x.yaml \(a path in extends is "
                                         r"relative to this spec's folder\)"):
        load_spec(workdir / "s.yaml")


# -- lkm specs show --out ---------------------------------------------------------------
@pytest.mark.parametrize("target", ["missing.yaml", "present.yaml"])
def test_specs_show_out_refuses_a_symlink(workdir, target):
    """Case: --out through a dangling symlink created the link's target."""
    (workdir / "present.yaml").write_text("keep\n")
    (workdir / "link.yaml").symlink_to(target)
    line = error_line(invoke("specs", "show", "lpl_vs_svm", "--out", "link.yaml"))
    assert line == f"error: --out: link.yaml is a symbolic link (to {target}); give the path of a new file"
    assert not (workdir / "missing.yaml").exists()
    assert (workdir / "present.yaml").read_text() == "keep\n"


def test_specs_show_out_still_refuses_an_existing_file_and_writes_a_new_one(workdir):
    (workdir / "present.yaml").write_text("keep\n")
    assert error_line(invoke("specs", "show", "lpl_vs_svm", "--out", "present.yaml")) == \
        "error: --out: present.yaml exists; choose another file"
    res = invoke("specs", "show", "lpl_vs_svm", "--out", "new.yaml")
    assert res.exit_code == 0 and (workdir / "new.yaml").read_text().startswith("# Tsuji")
