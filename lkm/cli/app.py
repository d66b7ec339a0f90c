"""The `lkm` app, its error boundary, and what every command shares: consoles, error
printing, option types. Commands live in the sibling modules (one per command group).

Every error a user can cause ends as one line naming the file, key or dataset, and a
non-zero exit code (2); records already written are never touched by an error.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text
from typer._click.parser import (  # private: typer vendors click (see _GridOptionParser)
    _normalize_opt,
    _OptionParser,
)
from typer.core import TyperCommand, TyperGroup, TyperOption
from typer.exceptions import Abort, TyperException

from lkm.engine.workers import interrupt_exit_code, interrupt_on
from lkm.errors import LkmError

# Markup off: user text (spec paths, dataset names, messages) is printed as written; styled
# words go through `text_line`.
console = Console(markup=False, emoji=False, highlight=False, soft_wrap=True)
err_console = Console(stderr=True, markup=False, emoji=False, highlight=False, soft_wrap=True)

DATA_DIR_HELP = "Read-only dataset mirror laid out `<dataset>/<file>` (default: $LKM_DATA_DIR); files are still sha256-verified."


#: Errors a user can cause besides LkmError: files (missing, unreadable, a folder, full
#: disk, read-only), undecodable text, and input nested or aliased beyond the parser.
USER_ERRORS: tuple[type[BaseException], ...] = (LkmError, OSError, UnicodeError, RecursionError, MemoryError)


class LkmGroup(TyperGroup):
    """The `lkm` command group: the error boundary, and help text printed as written.

    Every command runs inside :meth:`invoke`: an error a user can cause
    (:data:`USER_ERRORS`) ends as one line and exit 2; anything else is a bug in lkm and
    ends as one line and exit 1, with the traceback under `lkm --debug`.
    """

    def main(self, *args: Any, **kwargs: Any) -> Any:
        with _emoji_codes_off():
            return super().main(*args, **kwargs)

    def invoke(self, ctx):
        try:
            with interrupt_on():  # SIGTERM anywhere ends the command like Ctrl-C
                return super().invoke(ctx)
        except (typer.Exit, TyperException, Abort):
            raise
        except KeyboardInterrupt as exc:
            raise exit_error(LkmError("interrupted"), interrupt_exit_code(exc)) from None
        except BrokenPipeError:
            # the reader went away (`lkm datasets list | head`): stop quietly, as `cat` does;
            # stdout goes to /dev/null so the interpreter's final flush cannot fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            raise typer.Exit(141) from None
        except USER_ERRORS as exc:
            if _debug():
                raise
            raise exit_error(exc) from None
        except Exception as exc:
            if _debug():
                raise
            raise exit_error(LkmError(
                f"internal error (a bug in lkm; please report it): {type(exc).__name__}: {exc} "
                "— `lkm --debug ...` shows the traceback"), 1) from None


@contextlib.contextmanager
def _emoji_codes_off() -> Iterator[None]:
    """Typer's Markdown help replaces `:name:` emoji codes before rendering, so the grid
    `0.01:100:39` printed as `0.01💯39`. Within the block :class:`rich.emoji.Emoji` leaves
    text as written (help, usage errors); lkm's own consoles have emoji off anyway."""
    from rich.emoji import Emoji  # already imported by rich.console: no cost

    original = Emoji.__dict__["replace"]
    Emoji.replace = classmethod(lambda cls, text: text)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Emoji.replace = original  # type: ignore[method-assign]


def _flags_show_no_type() -> None:
    """Typer's Rich help (0.29) prints a type beside every option, flags included
    (`--dry-run <bool>`, `--help <bool>`), where Click and Typer's own plain help print
    none: a flag takes no value. Patched on the class, not inside :meth:`LkmGroup.main`,
    so the documentation site, which renders the help without running the app
    (docs/site/cli.md), reads the same. An option given a ``metavar`` keeps it."""
    original = TyperOption.display_type_rich
    if getattr(original, "lkm_flags_untyped", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if (self.is_flag or self.count) and self.metavar is None:
            return None
        return original(self, ctx)

    display_type_rich.lkm_flags_untyped = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_show_no_type()


# -- options that take an optional value, and ad-hoc `--NAME GRID` options ------------------
#: Value a grid option gets when written bare (`--sigma` alone): the paper's grid (spec.DEFAULT_GRIDS).
BARE_GRID = "default"


def _looks_like_option(token: str) -> bool:
    """`--x` or `-m`, not a value such as `-1,0,1` or `-0.5`."""
    return token.startswith("--") or (token.startswith("-") and token[1:2].isalpha())


class _GridOptionParser(_OptionParser):
    """Click's parser, plus two things `lkm sweep` needs and Click does not have:

    * an option named in ``bare_values`` takes an optional value: written bare (end of
      the line, or followed by another option) it gets its bare value;
    * an unknown long option ``--NAME [GRID]`` (or ``--NAME=GRID``) is an ad-hoc grid: it
      is appended to the ``--param`` option as ``NAME=GRID`` (bare: ``NAME=default``), so
      it never lands in the positional SPEC.
    """

    def __init__(self, ctx: Any, bare_values: dict[str, str], adhoc_dest: str) -> None:
        super().__init__(ctx)
        self.bare_values, self.adhoc_dest = bare_values, adhoc_dest

    def _get_value_from_state(self, option_name: str, option: Any, state: Any) -> Any:
        bare = self.bare_values.get(option.dest)
        if bare is not None and (not state.rargs or _looks_like_option(state.rargs[0])):
            return bare
        return super()._get_value_from_state(option_name, option, state)

    def _process_opts(self, arg: str, state: Any) -> None:
        name, sep, explicit = arg.partition("=")
        if not name.startswith("--") or len(name) < 3 or _normalize_opt(name, self.ctx) in self._long_opt:
            return super()._process_opts(arg, state)
        if sep:
            value = explicit
        elif state.rargs and not _looks_like_option(state.rargs[0]):
            value = state.rargs.pop(0)
        else:
            value = BARE_GRID
        target = next(o for o in self._long_opt.values() if o.dest == self.adhoc_dest)
        target.process(f"{name[2:]}={value}", state)


class GridCommand(TyperCommand):
    """A command whose options listed in ``bare_values`` (dest -> value) take an optional
    value, and whose unknown ``--NAME GRID`` options go to its ``--param`` list (see
    :class:`_GridOptionParser`)."""

    bare_values: dict[str, str] = {"sigma": BARE_GRID, "k": BARE_GRID}
    adhoc_dest = "param"

    def make_parser(self, ctx: Any) -> _OptionParser:
        parser = _GridOptionParser(ctx, self.bare_values, self.adhoc_dest)
        for param in self.get_params(ctx):
            param.add_to_parser(parser, ctx)
        return parser


app = typer.Typer(
    cls=LkmGroup,
    help=(
        "lkm — local kernel machines: rerun the experiments of five papers on local kernel "
        "methods from YAML specs, and compare the methods fairly.\n\n"
        "Start with `lkm run quickstart` (offline data, under a minute), then "
        "`lkm sweep --sigma` for an ad-hoc sigma sweep; `lkm specs list` lists the specs lkm ships, "
        "`lkm report --all --results published` rebuilds the full report from the results that ship "
        "with it, `lkm compare MODULE.ESTIMATOR` ranks an estimator against them. Results go to `results/<spec name>/` "
        "(a sweep: a folder named after its methods, datasets, parameters and a hash of its spec): "
        "tables/ (Markdown, CSV, LaTeX, with the paper's numbers beside ours), figures/, "
        "results.csv/.parquet and provenance.json; every run ends by printing their paths."
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
specs_app = typer.Typer(help="The experiment specs lkm ships (each paper's, the cross-paper comparison): list them, print one or copy it out.", no_args_is_help=True)
app.add_typer(specs_app, name="specs")
docs_app = typer.Typer(help="For maintainers, in a clone of the repository: README's and docs/' generated tables and figures from the committed run snapshot docs/runs/, and the results pack as an archive.", no_args_is_help=True)
app.add_typer(docs_app, name="docs")


def exit_error(exc: BaseException, code: int = 2) -> typer.Exit:
    err_console.print(text_line(("error:", "bold red"), f" {one_line(exc)}"), soft_wrap=True)
    return typer.Exit(code)


def text_line(*parts: str | tuple[str, str]) -> Text:
    """One printable line from plain strings and (text, style) pairs, never parsed as markup."""
    return Text.assemble(*parts)


def one_line(exc: BaseException) -> str:
    """The message of an error a user caused, as one line."""
    text = str(exc) if not isinstance(exc, OSError) or not exc.strerror else (
        f"{exc.filename}: {exc.strerror}" if exc.filename is not None else exc.strerror)
    return " ".join(text.split()) or type(exc).__name__


def use_data_dir(data_dir: Path | None) -> Path | None:
    if data_dir is not None:
        if not data_dir.is_dir():
            raise LkmError(f"--data-dir: {data_dir} is not a directory")
        os.environ["LKM_DATA_DIR"] = str(data_dir)  # worker processes read it too
    return data_dir


# -- run / sweep -------------------------------------------------------------------
OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Run directory (default: `results/<spec name>`). Rerunning the same spec into it resumes; a different spec is refused (see --fresh).")]
def _check_jobs(value: int) -> int:
    if value == 0 or value < -1:
        raise LkmError(f"--jobs {value}: give a number of worker processes >= 1, or -1 for one per core")
    return value


#: Every command's ``--jobs``, its default :data:`lkm.engine.workers.DEFAULT_JOBS` in every command.
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", callback=_check_jobs, help=(
    "Parallel worker processes (-1: one per core). The default, the same for every command, is one "
    "worker given every core's BLAS and OpenMP threads; more workers run fits side by side and hold "
    "more copies of the data."))]
DataDirOpt = Annotated[Path | None, typer.Option("--data-dir", help=DATA_DIR_HELP)]
ClusterOpt = Annotated[str | None, typer.Option(
    "--cluster", envvar="LKM_CLUSTER", metavar="ADDRESS", show_default=False,
    help="Run the fits on a dask.distributed cluster instead of --jobs local processes: a scheduler address "
         "(`tcp://host:8786`) or `local:N` for N worker processes on this machine. The run folder is the same "
         "as a local run's (this process writes it; resume works across both). Also $LKM_CLUSTER. "
         "Needs `pip install 'lkm[dask]'`; see docs/cluster.md.")]
FreshOpt = Annotated[bool, typer.Option("--fresh/--resume", help="--fresh discards this run directory's earlier records (also those of a different spec); --resume (default) computes only what is missing.")]
DryOpt = Annotated[bool, typer.Option("--dry-run", help="Print the task plan (fits per dataset and method) and exit without fitting.")]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar with ETA.")]
MaxFitsOpt = Annotated[int | None, typer.Option("--max-fits", min=1, help="Refuse plans with more fits than this (default 100000, or $LKM_MAX_FITS): a typo in a grid cannot start millions of fits.", show_default=False)]
SmokeOpt = Annotated[bool, typer.Option("--smoke", help="Apply the spec's `smoke:` overrides (few settings, run into `<name>-smoke/`): checks that every output is produced, fast.")]


def print_rows(
    title: str | None, header: list[str], rows: list[list[str]], *,
    right: AbstractSet[str] = frozenset(), wrap: AbstractSet[str] = frozenset(), sep: str = "  ",
) -> None:
    """Print a table that never cuts a name: a Rich table when stdout is a terminal wide
    enough for it, else plain lines (pipes, logs, narrow terminals).

    Columns in ``wrap`` (free text) may wrap at word boundaries in the Rich table; every
    other column (names, numbers) is kept whole so it can be copied. Plain lines are
    aligned with ``sep`` between cells (``sep="\t"``: tab-separated, for tools)."""
    if console.is_terminal:
        from rich.measure import Measurement
        from rich.table import Table

        t = Table(title=title)
        for col in header:
            t.add_column(col, justify="right" if col in right else "left",
                         no_wrap=col not in wrap, overflow="fold" if col in wrap else "ellipsis")
        for r in rows:
            t.add_row(*r)
        # a wrapped column needs at least its longest word; the others their whole cell
        widths = [max(len(text) if col not in wrap else max(map(len, text.split()), default=0)
                      for text in [col, *(r[i] for r in rows)]) for i, col in enumerate(header)]
        fits = sum(w + 3 for w in widths) + 1 <= console.width
        if fits and (wrap or Measurement.get(console, console.options, t).maximum <= console.width):
            console.print(t)
            return
    if sep == "\t":
        lines = [sep.join(r) for r in [header, *rows]]
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
        lines = [sep.join(c.rjust(w) if h in right else c.ljust(w)
                          for c, w, h in zip(cells, widths, header, strict=True)).rstrip()
                 for cells in [header, *rows]]
    if title:
        lines.insert(0, title)
    for text in lines:  # not through Rich, which would wrap or expand tabs
        print(text, file=console.file)


def main() -> None:  # pragma: no cover - console entry point
    """The `lkm` command (and `python -m lkm.cli`): the app, then a quick exit.

    Its idle workers are killed rather than waited for, and the interpreter's teardown
    of numpy, scikit-learn, pandas and matplotlib (~0.4 s, nothing lkm needs) is skipped:
    exit handlers run and the output is flushed, then the process leaves with the app's
    exit code. Tests call :data:`app` itself."""
    import atexit
    import os
    import sys

    from lkm.engine.workers import stop_workers

    # stop_workers kills the idle pool and the exit below skips the finalizers that would
    # unlink its semaphores; loky's resource tracker (a process of its own, started with
    # this environment) unlinks them at exit and says so as a UserWarning ("leaked semlock
    # objects to clean up"): nothing is left behind, so the notice is not shown.
    os.environ["PYTHONWARNINGS"] = ",".join(filter(None, (
        os.environ.get("PYTHONWARNINGS"), "ignore::UserWarning:joblib.externals.loky.backend.resource_tracker")))
    try:
        app()
        code: int = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    finally:
        stop_workers()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream
            stream.flush()
    os._exit(code)
