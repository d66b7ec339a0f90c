"""The `lkm` app, its error boundary, and what every command shares: consoles, error
printing, option types. Commands live in the sibling modules (one per command group).

Every error a user can cause ends as one line naming the file, key or dataset, and a
non-zero exit code (2); records already written are never touched by an error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup
from typer.exceptions import Abort, TyperException

from lkm.errors import LkmError
from lkm.workers import interrupt_exit_code, interrupt_on

# Markup off: user text (spec paths, dataset names, messages) is printed as written; styled
# words go through `_line`.
console = Console(markup=False, highlight=False, soft_wrap=True)
err_console = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)

DATA_DIR_HELP = "Read-only dataset mirror laid out `<dataset>/<file>` (default: $LKM_DATA_DIR); files are still sha256-verified."


#: Errors a user can cause besides LkmError: files (missing, unreadable, a folder, full
#: disk, read-only), undecodable text, and input nested or aliased beyond the parser.
USER_ERRORS: tuple[type[BaseException], ...] = (LkmError, OSError, UnicodeError, RecursionError, MemoryError)


class _SweepArgs(TyperGroup):
    """The `lkm` command group: the error boundary, and `lkm sweep`'s grid options.

    Every command runs inside :meth:`invoke`: an error a user can cause
    (:data:`USER_ERRORS`) ends as one line and exit 2; anything else is a bug in lkm and
    ends as one line and exit 1, with the traceback under `lkm --debug`.

    Click cannot give an option an optional value, so `lkm sweep`'s arguments are
    rewritten before parsing: a bare `--sigma`/`--k` gets the value 'default', and an
    unknown `--beta 0.1:10:5` becomes `--param beta=0.1:10:5`.
    """

    def invoke(self, ctx):  # type: ignore[override]
        try:
            with interrupt_on():  # SIGTERM anywhere ends the command like Ctrl-C
                return super().invoke(ctx)
        except (typer.Exit, TyperException, Abort):
            raise
        except KeyboardInterrupt as exc:
            raise _fail(LkmError("interrupted"), interrupt_exit_code(exc)) from None
        except USER_ERRORS as exc:
            if _debug():
                raise
            raise _fail(exc) from None
        except Exception as exc:
            if _debug():
                raise
            raise _fail(LkmError(
                f"internal error (a bug in lkm; please report it): {type(exc).__name__}: {exc} "
                "— `lkm --debug ...` shows the traceback"), 1) from None

    KNOWN = {"--method", "-m", "--dataset", "-d", "--out", "-o", "--jobs", "-j", "--data-dir",
             "--fresh", "--dry-run", "--param", "--help", "--no-progress"}
    GRID_OPTIONS = {"--sigma", "--k"}

    def parse_args(self, ctx, args):  # type: ignore[override]
        if args and args[0] == "sweep":
            args = [args[0], *self._rewrite(args[1:])]
        return super().parse_args(ctx, args)

    def _rewrite(self, args: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            nxt = args[i + 1] if i + 1 < len(args) else None
            has_value = nxt is not None and not (nxt.startswith("--") or (nxt.startswith("-") and nxt[1:2].isalpha()))
            if a in self.GRID_OPTIONS:
                out += [a, nxt if has_value else "default"]
                i += 2 if has_value else 1
            elif a.startswith("--") and "=" not in a and a not in self.KNOWN:
                out += ["--param", f"{a[2:]}={nxt if has_value else 'default'}"]
                i += 2 if has_value else 1
            else:
                out.append(a)
                i += 1
        return out


app = typer.Typer(
    cls=_SweepArgs,
    help=(
        "lkm — local kernel machines: rerun the experiments of five papers on local kernel "
        "methods from YAML specs, and compare the methods fairly.\n\n"
        "Start with `lkm run configs/quickstart.yaml` (offline data, under a minute), then "
        "`lkm sweep --sigma` for an ad-hoc sigma sweep. Results go to `results/<spec name>/`: "
        "tables/ (Markdown, CSV, LaTeX, with the paper's numbers beside ours), figures/ "
        "(PNG, PDF), results.csv/.parquet and provenance.json."
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
)


@app.callback()
def _options(
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of unexpected errors (bugs in lkm) instead of one line; also LKM_DEBUG=1.")] = False,
) -> None:
    if debug:
        os.environ["LKM_DEBUG"] = "1"


def _debug() -> bool:
    return os.environ.get("LKM_DEBUG", "") not in ("", "0")


datasets_app = typer.Typer(help="List, describe, download and verify the registered datasets.", no_args_is_help=True)
app.add_typer(datasets_app, name="datasets")
docs_app = typer.Typer(help="README's and docs/' tables and figures from the committed run snapshot docs/runs/.", no_args_is_help=True)
app.add_typer(docs_app, name="docs")


def _fail(exc: BaseException, code: int = 2) -> typer.Exit:
    err_console.print(_line(("error:", "bold red"), f" {_one_line(exc)}"), soft_wrap=True)
    return typer.Exit(code)


def _line(*parts: str | tuple[str, str]) -> Text:
    """One printable line from plain strings and (text, style) pairs, never parsed as markup."""
    return Text.assemble(*parts)


def _one_line(exc: BaseException) -> str:
    """The message of an error a user caused, as one line."""
    text = str(exc) if not isinstance(exc, OSError) or not exc.strerror else (
        f"{exc.filename}: {exc.strerror}" if exc.filename is not None else exc.strerror)
    return " ".join(text.split()) or type(exc).__name__


def _data_dir(data_dir: Path | None) -> Path | None:
    if data_dir is not None:
        if not data_dir.is_dir():
            raise LkmError(f"--data-dir: {data_dir} is not a directory")
        os.environ["LKM_DATA_DIR"] = str(data_dir)  # worker processes read it too
    return data_dir


# -- run / sweep -------------------------------------------------------------------
OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Run directory (default: `results/<spec name>`). Rerunning into it resumes.")]
def _check_jobs(value: int) -> int:
    if value == 0 or value < -1:
        raise LkmError(f"--jobs {value}: give a number of worker processes >= 1, or -1 for one per core")
    return value


JobsOpt = Annotated[int, typer.Option("--jobs", "-j", callback=_check_jobs, help="Parallel worker processes (-1: one per core).")]
DataDirOpt = Annotated[Path | None, typer.Option("--data-dir", help=DATA_DIR_HELP)]
FreshOpt = Annotated[bool, typer.Option("--fresh/--resume", help="--fresh discards this run directory's earlier records; --resume (default) computes only what is missing.")]
DryOpt = Annotated[bool, typer.Option("--dry-run", help="Print the task plan (fits per dataset and method) and exit without fitting.")]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar with ETA.")]
MaxFitsOpt = Annotated[int | None, typer.Option("--max-fits", min=1, help="Refuse plans with more fits than this (default 100000, or $LKM_MAX_FITS): a typo in a grid cannot start millions of fits.", show_default=False)]
SmokeOpt = Annotated[bool, typer.Option("--smoke", help="Apply the spec's `smoke:` overrides (few settings, run into `<name>-smoke/`): checks that every output is produced, fast.")]



def main() -> None:  # pragma: no cover - console entry point
    app()
