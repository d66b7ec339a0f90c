"""`lkm specs`: the experiment specs lkm ships inside its papers' packages — list them,
print one, or copy one out to edit."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lkm.cli.app import console, exit_error, print_rows, specs_app
from lkm.errors import LkmError, did_you_mean


def _packaged() -> dict[str, Path]:
    from lkm.papers import packaged_specs

    return packaged_specs()


#: What the shipped specs outside the papers' packages are (the ``paper`` column).
_NOT_A_PAPER = {"quickstart": "demo", "cross_paper": "benchmark"}


def _owner(path: Path) -> str:
    """The paper whose package holds the spec file ``path``; else ``demo`` (quickstart),
    ``benchmark`` (the cross-paper benchmark) or ``cross-paper``."""
    from lkm.papers import PAPERS
    from lkm.reproduction.runs import spec_folder

    return next((key for key, module in PAPERS.items() if path.parent == spec_folder(module.__name__)),
                _NOT_A_PAPER.get(path.stem, "cross-paper"))


def _write_new(out: Path, text: str) -> None:
    """Write ``text`` to a new file ``out``: a symbolic link (even a dangling one, which
    would create its target) or an existing file is refused, never followed or overwritten."""
    if out.is_symlink():
        raise LkmError(f"--out: {out} is a symbolic link (to {out.readlink()}); give the path of a new file")
    if out.exists():
        raise LkmError(f"--out: {out} exists; choose another file")
    try:
        with open(out, "x", encoding="utf-8") as fh:  # O_CREAT | O_EXCL: never through a link made meanwhile
            fh.write(text)
    except FileExistsError:
        raise LkmError(f"--out: {out} exists; choose another file") from None
    except OSError as exc:
        raise LkmError(f"--out: cannot write {out}: {exc.strerror or exc}") from exc


@specs_app.command("list")
def list_specs() -> None:
    """Every spec lkm ships: its name (what `lkm run NAME` and `lkm specs show NAME` take),
    the paper it belongs to and its description's first line."""
    from lkm.spec import load_spec

    rows = []
    for name, path in _packaged().items():
        spec = load_spec(path, max_fits=1 << 62)
        rows.append([name, _owner(path), (spec.description or "").strip().split("\n")[0]])
    print_rows(None, ["name", "paper", "description"], rows, wrap={"description"})


@specs_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="A spec's name, as `lkm specs list` prints it.", show_default=False)],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the spec to this new file (refused if it exists or is a symbolic link) instead of printing it.")] = None,
) -> None:
    """Print a shipped spec, or with --out copy it to a file to edit and run with `lkm run FILE`.

    Examples: `lkm specs show lpl_vs_svm`; `lkm specs show lpl_vs_svm --out my_lpl.yaml`.
    A copied spec that `extends:` a shipped one still finds it: `extends:` takes a shipped spec's name.
    """
    try:
        specs = _packaged()
        if name not in specs:
            raise LkmError(f"unknown spec {name!r}{did_you_mean(name, specs)} (`lkm specs list` lists them)")
        text = specs[name].read_text(encoding="utf-8")
        if out is None:
            console.print(text, end="", highlight=False, markup=False, soft_wrap=True)
            return
        _write_new(out, text)
    except LkmError as exc:
        raise exit_error(exc) from None
    console.print(f"wrote {out} (run it with `lkm run {out}`)", highlight=False)
