"""Command line: ``capproof prove``, ``report``, ``counterexamples``, ``bound``, ``coverage``,
``check-config`` and ``inventory``.

Exit codes: 0 every verdict as expected (check-config: safe); 1 some verdict differs from its
expectation (check-config: will fail); 2 unknown, vacuous, error or bad input (check-config:
undecided or bad input); 3 internal error (a bug in capproof: the traceback is printed; inventory
also uses 3 for a wheel or real environment it cannot use); 4 usage error (a missing path, a spec
file that does not load); 130 interrupted. docs/reference/cli.md lists them by command.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from . import __version__
from .coverage import COVERAGE_REPORT, DEFAULT_INVENTORY, OTHER_INVENTORIES
from .engines.registry import ADAPTERS as ENGINE_ADAPTERS
from .engines.registry import DEFAULT as DEFAULT_ENGINE
from .regressions import DEFAULT_OUT
from .verdict import (
    BOUNDS_DATA,
    BOUNDS_REPORT,
    DEFAULT_RLIMIT,
    DEFAULT_TIMEOUT,
    DEFAULT_WASTE_THRESHOLD,
    EXIT_UNDECIDED,
)

if TYPE_CHECKING:  # annotations only: both are imported by the commands that use them
    from rich.console import Console

    from .runner import RunResult

# Start-up (<= 0.3 s): only click and light modules at import time. The prover, Z3, the
# runner, the report writers and rich are imported by the commands that use them, so
# ``capproof --help`` and ``--version`` never load them.

__all__ = ["main"]


#: The two rich consoles (stdout, stderr), made on first use (importing rich costs start-up time).
#: Real ``Console`` objects, never a proxy: rich's ``Progress``/``Live`` use them as context
#: managers. Markup, emoji codes and highlighting are off, so text such as ``spec/x.py:100:`` or
#: ``[bounded: ...]`` prints literally; lines wrap to the width on a terminal only (a CI log keeps
#: each ``file:line:`` result on one line).
_CONSOLES: dict[bool, Any] = {}


def _console_for(stderr: bool) -> "Console":
    console = _CONSOLES.get(stderr)
    if console is None:
        from rich.console import Console

        class _Console(Console):
            def on_broken_pipe(self) -> None:
                """A closed pipe (``capproof … | head -1``): stop printing and finish, so the exit
                code is still the verdict's (rich's default exits 1, the code of a counterexample)."""
                self.quiet = True
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, (sys.stderr if stderr else sys.stdout).fileno())

        console = _Console(stderr=stderr, highlight=False, markup=False, emoji=False)
        console.soft_wrap = not console.is_terminal
        _CONSOLES[stderr] = console
    return console


def _out() -> "Console":
    """The stdout console."""
    return _console_for(False)


def _errout() -> "Console":
    """The stderr console."""
    return _console_for(True)


def _parse_pins(values: tuple[str, ...]) -> dict[str, int]:
    pins: dict[str, int] = {}
    for item in values:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise click.BadParameter(f"{item!r}: expected NAME=VALUE, e.g. max_model_len=350000", param_hint="--set")
        try:
            value = int(raw.strip().replace("_", ""), 0)
        except ValueError:
            raise click.BadParameter(f"{item!r}: {raw!r} is not an integer", param_hint="--set") from None
        if name in pins and pins[name] != value:
            raise click.BadParameter(
                f"{name} pinned twice ({name}={pins[name]} and {name}={value}): give it once", param_hint="--set"
            )
        pins[name] = value
    return pins


def _print(result: RunResult | None, entry: Any) -> None:
    from .report import terminal_lines
    from .verdict import ContractResult

    kind = "contract" if isinstance(entry, ContractResult) else "obligation"
    for i, line in enumerate(terminal_lines(entry.to_json(), kind)):
        style = None if i else ("green" if entry.ok else "bold red")
        _out().print(line, style=style, markup=False)
        first = getattr(entry, "first_counterexample", None)
        if not i and first is not None and _SESSION["verbosity"] >= 1:  # -v: when the first one came
            _out().print(
                f"       first counterexample found at {_point_text(first.params)} after "
                f"{first.seconds * 1e3:.1f} ms CPU ({first.source}"
                + (f", {first.points} probe points" if first.source == "int probe" else "")
                + "), then minimised",
                markup=False,
            )


def _point_text(params: dict[str, Any]) -> str:
    """``name=value, ...``; a batch of more than 8 entries shortened (``[8]*64``, or its first 4)."""
    out = []
    for name, value in params.items():
        if isinstance(value, list) and len(value) > 8:
            value = (
                f"[{value[0]}]*{len(value)}"
                if all(v == value[0] for v in value)
                else f"[{', '.join(map(str, value[:4]))}, … {len(value)} entries]"
            )
        out.append(f"{name}={value}")
    return ", ".join(out)


def _summary(result: RunResult) -> None:
    counts = result.counts()
    total = len(result.all_results())
    good = sum(1 for r in result.all_results() if r.ok)
    parts = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    for err in result.usage_errors:
        _errout().print(f"error: {err}", markup=False, style="bold red")
    empty = "nothing ran" if getattr(result, "load_errors", None) else "nothing selected"
    _out().print(
        f"{good} of {total} as expected ({parts or empty})",
        markup=False,
        style="green" if _exit_code(result) == 0 else "bold red",
    )


#: The session: ``cwd`` where capproof was started, ``root`` the project it runs in, ``settings``
#: its ``[tool.capproof]`` table, ``verbosity`` (-q/-v).
_SESSION: dict[str, Any] = {"cwd": None, "root": None, "settings": {}, "verbosity": 0}


def _headline_dtypes(inventory_path: str):
    """The dtypes of the index buffers the coverage headline of this inventory is over (its engine's
    ``headline_dtypes``; the engine is the file name's prefix, ``<engine>-<version>.json``), or None
    (all entries) for an engine without one or a file named after no engine."""
    engine = os.path.basename(inventory_path).split("-")[0]
    adapter = next((a for a in ENGINE_ADAPTERS if engine in a.engines), None)
    return getattr(adapter, "headline_dtypes", None) if adapter is not None else None


def _user_path(path: str | None) -> str | None:
    """A path the user typed (relative to where capproof started) as an absolute path."""
    if path is None or path == "-":
        return path
    absolute = os.path.abspath(os.path.join(_SESSION["cwd"] or os.getcwd(), path))
    relative = os.path.relpath(absolute)  # as seen from the root capproof now runs in
    return relative if not relative.startswith(os.pardir) else absolute


def _enter_project(paths=(), need_root: bool = False, optional: bool = False) -> tuple[str, ...]:
    """Find the project root (pytest-style), read ``[tool.capproof]``, run from the root.

    Without a project (no ``[tool.capproof]`` table nor ``spec/`` upwards) commands that only read
    run on the engine specs shipped with capproof; ``need_root`` commands (they write into the
    project) fail. Returns ``paths`` relative to the root (default: ``[tool.capproof] paths``, else spec/).
    """
    from .project import SettingsError, bundled_root, find_root, read_settings

    start = _SESSION["cwd"] = _SESSION["cwd"] or os.getcwd()
    root = find_root(start)
    if root is None and optional:  # works on its inputs alone: stay where it was started
        root = start
    if root is None:
        if need_root:
            _fail("no capproof project here or above (a pyproject.toml with [tool.capproof], or a spec/ directory)")
        root = bundled_root()
        if root is None:
            _fail("no capproof project here or above, and no engine specs installed with capproof")
    try:
        settings = read_settings(root)
    except SettingsError as exc:
        _fail(str(exc))
    _SESSION.update(root=root, settings=settings)
    if _SESSION["verbosity"] >= 1:
        _errout().print(f"capproof: root {root}" + (f", [tool.capproof] {settings}" if settings else ""), markup=False)
    absolute = [os.path.abspath(os.path.join(start, p)) for p in paths]
    os.chdir(root)
    if absolute:
        return tuple(os.path.relpath(p) if not os.path.relpath(p).startswith(os.pardir) else p for p in absolute)
    return tuple(settings.get("paths") or ("spec",))


def _setting(value, name: str, default):
    """A command-line value, else ``[tool.capproof] name``, else ``default``."""
    if value is not None:
        return value
    return _SESSION["settings"].get(name, default)


class LiveProgress:
    """A rich progress bar on a terminal while a run decides its items: how many are done of how
    many, and which obligations and contracts are running now. Results are printed above it.
    A :class:`capproof.runner.Monitor` (it implements all three methods; not a subclass, so the
    command line does not import the runner at start-up)."""

    def __init__(self, console: Console) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.console = console
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("proving"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=console,
            transient=True,
        )
        self.task = self.progress.add_task("", total=None)
        self.running: dict[str, None] = {}

    def __enter__(self) -> "LiveProgress":
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def _describe(self) -> str:
        names = [n.split("::")[-1] for n in self.running]
        if not names:
            return ""
        shown = ", ".join(names[:2])
        return f"running: {shown}" + (f" (+{len(names) - 2})" if len(names) > 2 else "")

    def planned(self, total: int) -> None:
        self.progress.update(self.task, total=total)

    def started(self, kind: str, ident: str) -> None:
        self.running[ident] = None
        self.progress.update(self.task, description=self._describe())

    def finished(self, result) -> None:
        self.running.pop(result.id, None)
        self.progress.update(self.task, advance=1, description=self._describe())


def _live_progress(show: bool) -> "LiveProgress | None":
    """A progress bar when the output is a terminal and not -q nor ``--json -``."""
    if not show or _SESSION["verbosity"] < 0 or not _out().is_terminal:
        return None
    return LiveProgress(_out())


def _run(
    paths, keyword, pins, rlimit, jobs, crosshair_timeout, no_contracts, quiet, show_progress=None, **extra
) -> RunResult:
    """Run with the settings' defaults; results printed as they come unless ``quiet``; a progress
    bar on a terminal unless ``show_progress`` is False (default: unless ``quiet``)."""
    from .loader import load
    from .runner import default_jobs, run_items
    from .verdict import Options

    options = Options(
        rlimit=_setting(rlimit, "rlimit", DEFAULT_RLIMIT),
        pins=pins,
        jobs=_setting(jobs, "jobs", default_jobs()),
        crosshair_timeout=float(_setting(crosshair_timeout, "crosshair_timeout", 30.0)),
        contracts=not no_contracts,
        **extra,
    )
    verbosity = _SESSION["verbosity"]
    if quiet or verbosity <= -2:
        progress = None
    elif verbosity == -1:
        progress = lambda entry: None if entry.ok else _print(None, entry)  # noqa: E731 - only what needs attention
    else:
        progress = lambda entry: _print(None, entry)  # noqa: E731
    live = _live_progress(not quiet if show_progress is None else show_progress)
    items, load_errors = load(paths or ("spec",), keyword)
    _warn_parameter_names(items)
    if live is None:
        result = run_items(items, (), options, progress)
    else:
        with live:
            result = run_items(items, (), options, progress, live)
    # a missing path or a spec file that does not load is a usage error (exit 4, as pytest), not a
    # verdict; the files that loaded still ran
    result.usage_errors[:0] = [
        err.message if err.message.startswith(err.file) else f"{err.file}: {err.message}" for err in load_errors
    ]
    if load_errors:  # the missing or broken paths are the reason nothing ran: one error each, no second one
        result.usage_errors = [e for e in result.usage_errors if not e.startswith("nothing selected")]
    result.load_errors = load_errors
    return result


def _warn_parameter_names(items) -> None:
    """A warning per obligation parameter that is a near miss of its engine's config name
    (``max_model_length`` for ``max_model_len``): check-config would leave it unpinned."""
    from .engines.registry import parameter_warnings

    if _SESSION["verbosity"] <= -2:
        return
    for line in parameter_warnings(items):
        _errout().print(f"warning: {line}", markup=False, style="yellow")


def _exit_code(result: RunResult) -> int:
    """The run's exit code; 4 (usage error) when a path was missing or a spec file did not load."""
    return EXIT_USAGE if getattr(result, "load_errors", None) else result.exit_code


_common = [
    click.argument("paths", nargs=-1, type=click.Path()),
    click.option(
        "-k",
        "keyword",
        default=None,
        metavar="EXPRESSION",
        help="Only obligations and contracts matching EXPRESSION: substrings of the id (or an exact corpus case) "
        "combined with and/or/not and parentheses, as pytest's -k ('ebt and not before_50302').",
    ),
    click.option(
        "--set",
        "pins",
        multiple=True,
        metavar="NAME=VALUE",
        help="Pin a parameter (engine config name), e.g. --set max_model_len=350000.",
    ),
    click.option(
        "--rlimit",
        default=None,
        type=click.IntRange(min=1),
        help=f"Deterministic Z3 resource budget per query [default: [tool.capproof] rlimit, else {DEFAULT_RLIMIT}].",
    ),
    click.option(
        "--jobs",
        "-j",
        default=None,
        type=click.IntRange(min=1),
        help="Worker processes, longest work first [default: [tool.capproof] jobs, else the CPU cores available].",
    ),
    click.option(
        "--crosshair-timeout",
        default=None,
        type=click.FloatRange(min=0.1),
        help="CrossHair per-condition timeout in seconds [default: [tool.capproof] crosshair_timeout, else 30].",
    ),
    click.option("--no-contracts", is_flag=True, help="Skip the CrossHair contract checks."),
    click.option(
        "--timeout",
        default=DEFAULT_TIMEOUT,
        show_default=True,
        type=click.FloatRange(min=0.1),
        help="Hard time limit per obligation or contract, in seconds (its own process is stopped: error).",
    ),
]


def _apply(options):
    def deco(f):
        for opt in reversed(options):
            f = opt(f)
        return f

    return deco


#: Exit code of a crash inside capproof (a bug, not a verdict): never 1, which means a
#: counterexample / "will fail".
EXIT_INTERNAL = 3
#: Exit code of a usage error: a missing path or a spec file that does not load (as pytest's 4).
EXIT_USAGE = 4
#: Exit code of check-config on a launch line it cannot read or the engine would refuse (no line,
#: no model, an unknown flag, GPU or release, a value out of range): the usage-error code, so CI
#: tells "fix the line" from ``undecided`` (2, "give a fact").
EXIT_BAD_INPUT = EXIT_USAGE
#: Exit code of a run interrupted with Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


_VERBOSITY = re.compile(r"-(q+|v+)|--quiet|--verbose")
#: check-config options that take a value (the value is not the start of the launch line).
_CHECK_VALUE_OPTIONS = frozenset(
    {"--engine", "--model-config", "--spec", "--rlimit", "--jobs", "-j", "--gpu", "--num-sms", "--json", "--sarif"}
)


def _hoist_verbosity(args: list[str]) -> list[str]:
    """``-q``/``-v`` given after the subcommand (as pytest accepts them) moved before it. Nothing
    after ``--`` moves, nor anything of check-config's launch line."""
    sub = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    if sub is None:
        return args
    moved, kept = [], []
    i = sub + 1
    while i < len(args):
        arg = args[i]
        if arg == "--":
            kept += args[i:]
            break
        if args[sub] == "check-config" and not arg.startswith("-"):
            kept += args[i:]  # the launch line starts here
            break
        if _VERBOSITY.fullmatch(arg):
            moved.append(arg)
        else:
            kept.append(arg)
            if args[sub] == "check-config" and arg in _CHECK_VALUE_OPTIONS and i + 1 < len(args):
                kept.append(args[i + 1])
                i += 1
        i += 1
    return [*args[:sub], *moved, args[sub], *kept]


class _Main(click.Group):
    """The command group; an exception escaping a command is an internal error (exit 3, the
    traceback on stderr), Ctrl-C exits 130 -- neither may look like a verdict (exit 1)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _hoist_verbosity(args))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.UsageError as exc:  # check-config: an option it cannot read is bad input
            if exc.ctx is not None and exc.ctx.info_name == "check-config":
                exc.exit_code = EXIT_BAD_INPUT
            raise
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            sys.stderr.write("\ncapproof: interrupted\n")
            sys.exit(EXIT_INTERRUPTED)
        except Exception:  # noqa: BLE001 - any other exception is a bug in capproof
            import traceback

            sys.stdout.flush()
            traceback.print_exc(file=sys.stderr)
            sys.stderr.write(
                f"capproof {__version__}: internal error (a bug in capproof, not a verdict; "
                "please report it with the traceback above): exit 3\n"
            )
            sys.exit(EXIT_INTERNAL)


@click.group(cls=_Main)
@click.version_option(__version__, package_name="capproof")  # the version given: no package metadata lookup
@click.option("-q", "--quiet", count=True, help="Less output: -q only results not as expected, -qq only the summary.")
@click.option("-v", "--verbose", count=True, help="More output: -v also the project root and settings used.")
@click.pass_context
def main(ctx: click.Context, quiet: int, verbose: int) -> None:
    """Prove buffer capacity >= demand for every configuration and batch, or find a counterexample.

    Run from anywhere inside a project: the root is the nearest directory upwards with a
    pyproject.toml [tool.capproof] table (rlimit, jobs, crosshair_timeout, paths) or a spec/ directory.
    """
    start = os.getcwd()
    _SESSION.update(cwd=start, verbosity=verbose - quiet, root=None, settings={})
    ctx.call_on_close(lambda: os.chdir(start))  # commands run from the project root; give the caller its directory back


def _write_json(data: dict[str, Any], path: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")


def _write_outputs(data: dict[str, Any], outputs: list[tuple[str, str | None, Any]]) -> bool:
    """Write each ``(option, path, writer)`` with a path; one error line per failure. True if all written."""
    ok = True
    for option, path, writer in outputs:
        if not path:
            continue
        try:
            writer(data, path)
        except OSError as exc:
            _errout().print(
                f"error: {option} {path}: cannot write: {exc.strerror or exc}", markup=False, style="bold red"
            )
            ok = False
    return ok


@main.command()
@_apply(_common)
@click.option(
    "--json",
    "json_out",
    type=click.Path(allow_dash=True),
    default=None,
    help="Write the results as JSON to FILE ('-' for stdout).",
)
@click.option(
    "--junit",
    "junit_out",
    type=click.Path(),
    default=None,
    metavar="FILE",
    help="Write JUnit XML to FILE: one testcase per obligation and contract.",
)
@click.option(
    "--sarif",
    "sarif_out",
    type=click.Path(),
    default=None,
    metavar="FILE",
    help="Write SARIF 2.1.0 to FILE: one result per verdict not as expected.",
)
@click.option(
    "--density",
    type=click.Choice(["off", "cheap", "full"]),
    default="cheap",
    show_default=True,
    help="Failure density of counterexamples; 'full' also enumerates ranges up to 2**22 values (slow).",
)
@click.option(
    "--smt2",
    "smt2_dir",
    type=click.Path(file_okay=False),
    default=None,
    metavar="DIR",
    help="Write each case's query (constraints, lemmas, negated claim) to DIR/<spec module>.<obligation>__<case>.smt2.",
)
@click.option(
    "--cross-check",
    "cross_check",
    type=click.Choice(["cvc5"]),
    default=None,
    help="Re-solve every linear (QF_LIA) case with cvc5; a sat/unsat disagreement is an error verdict.",
)
@click.option(
    "--fork-budget",
    "fork_budget",
    default=64,
    show_default=True,
    type=click.IntRange(min=1),
    help="Execution paths explored per case when a model branches on symbolic values; more = unknown.",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Decide every obligation and run CrossHair on every contract even when .capproof/verdicts/ or "
    ".capproof/crosshair/ holds a verdict for the same sources.",
)
@click.option(
    "--second-opinion",
    "second_opinion",
    default=10,
    show_default=True,
    type=click.IntRange(min=-1),
    help="Hypothesis examples testing each proved/vacuous verdict on ints after small batches "
    "(0: small batches only; -1: no second opinion).",
)
def prove(
    paths,
    keyword,
    pins,
    rlimit,
    jobs,
    crosshair_timeout,
    no_contracts,
    timeout,
    json_out,
    junit_out,
    sarif_out,
    density,
    smt2_dir,
    cross_check,
    fork_budget,
    no_cache,
    second_opinion,
) -> None:
    """Prove the obligations and check the contracts in PATHS (default: spec/)."""
    from .ci_formats import write_junit, write_sarif

    pins_d = _parse_pins(pins)
    paths = _enter_project(paths)
    json_out, junit_out, sarif_out, smt2_dir = (_user_path(p) for p in (json_out, junit_out, sarif_out, smt2_dir))
    _preflight(smt2_dir, cross_check)
    result = _run(
        paths,
        keyword,
        pins_d,
        rlimit,
        jobs,
        crosshair_timeout,
        no_contracts,
        quiet=json_out == "-",
        density=density,
        smt2_dir=smt2_dir,
        cross_check=cross_check,
        fork_budget=fork_budget,
        crosshair_cache=not no_cache,
        verdict_cache=not no_cache,
        timeout=timeout,
        second_opinion=None if second_opinion < 0 else second_opinion,
    )
    data = result.to_json()
    data["summary"]["exit_code"] = _exit_code(result)
    outputs = [
        ("--junit", junit_out, write_junit),
        ("--sarif", sarif_out, lambda d, p: write_sarif(d, p, __version__)),
    ]
    if json_out == "-":
        written = _write_outputs(data, outputs)
        click.echo(json.dumps(data, indent=2))
    else:
        written = _write_outputs(data, [("--json", json_out, _write_json), *outputs])
        _summary(result)
    sys.exit(_exit_code(result) if written else EXIT_UNDECIDED)


def _fail(message: str) -> None:
    """One error line on stderr and exit 2 (bad input or environment)."""
    _errout().print(f"error: {message}", markup=False, style="bold red")
    sys.exit(EXIT_UNDECIDED)


def _preflight(smt2_dir: str | None, cross_check: str | None) -> None:
    """Fail before proving anything when an output directory or the second solver is unusable."""
    if smt2_dir:
        try:
            os.makedirs(smt2_dir, exist_ok=True)
        except OSError as exc:
            _fail(f"--smt2 {smt2_dir}: cannot create: {exc.strerror or exc}")
    if cross_check == "cvc5":
        try:
            import cvc5  # noqa: F401
        except ImportError:
            _fail("--cross-check cvc5 needs the cvc5 package: pip install 'capproof[cvc5]' (or pip install cvc5)")


@main.command()
@_apply(_common[:5])
@click.option(
    "--out",
    "out_dir",
    type=click.Path(),
    default=None,
    metavar="DIR",
    help=f"Directory for the JSON witnesses and the generated pytest module [default: {DEFAULT_OUT}].",
)
def counterexamples(paths, keyword, pins, rlimit, jobs, out_dir) -> None:
    """Write every counterexample in PATHS (default: spec/) as a JSON witness and a pytest regression.

    Contracts are not checked. The pytest module (test_capproof_counterexamples.py) is regenerated
    from every witness in DIR. Exit code as for `prove`; 2 if DIR cannot be written.
    """
    from .regressions import WitnessError, write_counterexamples

    pins_d = _parse_pins(pins)
    paths = _enter_project(paths, need_root=True)
    out_dir = _user_path(out_dir) if out_dir else DEFAULT_OUT
    result = _run(paths, keyword, pins_d, rlimit, jobs, 30.0, True, quiet=False)
    try:
        written = write_counterexamples(result.to_json(), out_dir)
    except (OSError, WitnessError) as exc:
        message = f"{out_dir}: cannot write: {exc.strerror}" if isinstance(exc, OSError) and exc.strerror else str(exc)
        _errout().print(f"error: --out {message}", markup=False, style="bold red")
        _summary(result)
        sys.exit(EXIT_UNDECIDED)
    _summary(result)
    for ob in written.get("unexpected", []):
        _errout().print(
            f"not written: {ob} has an unexpected counterexample (a claim expected to hold): fix the model "
            "or the claim; a regression test would pass while it is wrong",
            markup=False,
            style="bold red",
        )
    where = f"; {written['module']} replays {written['rows']}" if written["module"] else ""
    n = len(written["witnesses"])
    _out().print(
        f"wrote {n} witness{'' if n == 1 else 'es'} to {out_dir} ({len(written['changed'])} files changed){where}",
        markup=False,
    )
    sys.exit(_exit_code(result))


@main.command()
@_apply([_common[0], _common[3], _common[4], _common[5], _common[6]])
@click.option("--check", is_flag=True, help="Do not write: fail (exit 1) if proofs/ is stale.")
@click.option(
    "--from",
    "from_json",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Render from a `prove --json` file of a full, unpinned run instead of proving again.",
)
def report(paths, rlimit, jobs, crosshair_timeout, no_contracts, check, from_json) -> None:
    """Write proofs/<spec module>.md for every spec module in PATHS (default: spec/; an unpinned run).

    Without PATHS every report is rewritten and those of deleted spec files are removed; with PATHS
    (spec files or directories) only their reports are written or, with --check, compared.
    """
    from .report import render_reports, stale_reports, write_reports

    selected = _enter_project(paths, need_root=True)
    files: set[str] | None = None
    if paths:
        from .loader import discover

        found, missing = discover(selected)
        if missing:
            _fail(missing[0].message)
        files = set(found)
    from_json = _user_path(from_json)
    exit_code = 0
    if from_json:
        try:
            with open(from_json, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            _fail(f"--from {from_json}: not a `capproof prove --json` file ({exc})")
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("obligations"), list)
            or not isinstance(data.get("contracts", []), list)
        ):
            _fail(f"--from {from_json}: not a `capproof prove --json` file (no obligations list)")
        if any(o.get("pins") for o in data.get("obligations", [])):
            raise click.UsageError(f"{from_json} comes from a pinned run; reports need an unpinned one")
        if files is not None:
            data = {
                **data,
                **{k: [e for e in data.get(k, []) if e.get("file") in files] for k in ("obligations", "contracts")},
            }
    else:
        result = _run(selected, None, {}, rlimit, jobs, crosshair_timeout, no_contracts, quiet=True, show_progress=True)
        data = result.to_json()
        exit_code = _exit_code(result)
    reports = render_reports(data)
    if files is not None and not reports:
        _fail("nothing to report: no obligation or contract in " + " ".join(paths))
    if check:
        stale = stale_reports(reports, prune=files is None)
        if stale:
            _errout().print(
                "stale proof reports (run `capproof report` and commit): " + ", ".join(stale),
                markup=False,
                style="bold red",
            )
            sys.exit(max(exit_code, 1))
        _out().print(f"proofs/ up to date ({len(reports)} reports)", markup=False, style="green")
    else:
        changed = write_reports(reports, prune=files is None)
        _out().print(f"wrote {len(reports)} reports to proofs/ ({len(changed)} changed)", markup=False)
    sys.exit(exit_code)


@main.command("check-config", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--engine",
    "engine_spec",
    default=DEFAULT_ENGINE.name,
    show_default=True,
    metavar="ENGINE[==VERSION]",
    help="Engine and release whose formulas apply: "
    + "; ".join(a.usage() for a in ENGINE_ADAPTERS)
    + f" (default: {DEFAULT_ENGINE.name}, its newest modelled release).",
)
@click.option(
    "--model-config",
    type=click.Path(),
    default=None,
    metavar="CONFIG.json|DIR",
    help="Hugging Face config.json (or the directory holding it): experts, top-k, heads, hidden size, index_topk. "
    "Default: MODEL's config.json when MODEL is a local directory, else capproof's table of known models.",
)
@click.option(
    "--spec", "spec_paths", multiple=True, type=click.Path(), help="Spec files or directories (default: spec/)."
)
@click.option(
    "--rlimit",
    default=DEFAULT_RLIMIT,
    show_default=True,
    type=click.IntRange(min=1),
    help="Deterministic Z3 resource budget per query.",
)
@click.option(
    "--jobs",
    "-j",
    default=None,
    type=click.IntRange(min=1),
    help="Worker processes deciding the obligations [default: the CPU cores available].",
)
@click.option(
    "--gpu",
    default=None,
    metavar="NAME",
    help="The GPU (A100, L40S, H100, H100-PCIE, H100-SXM, H200, B200, B300, GB10): the engine's batch defaults for it "
    "and its SM count.",
)
@click.option(
    "--num-sms", type=click.IntRange(min=1), default=None, help="Streaming multiprocessors per GPU (overrides --gpu's)."
)
@click.option(
    "--json",
    "json_out",
    type=click.Path(allow_dash=True),
    default=None,
    metavar="FILE|-",
    help="Write the answer as JSON to FILE ('-' for stdout, then nothing else is printed there).",
)
@click.option(
    "--sarif",
    "sarif_out",
    type=click.Path(allow_dash=True),
    default=None,
    metavar="FILE|-",
    help="Write SARIF 2.1.0 to FILE ('-' for stdout, then the answer goes to stderr): one result per applied "
    "obligation not proved.",
)
@click.argument("serve_args", nargs=-1, type=click.UNPROCESSED)
def check_config(
    engine_spec, model_config, spec_paths, rlimit, jobs, gpu, num_sms, json_out, sarif_out, serve_args
) -> None:
    """Check one deployment: capproof check-config [OPTIONS] -- <the engine's launch line>.

    Exit 0 safe, 1 will fail, 2 bad input or undecided (unknown/vacuous/error, or a fact it needs
    not given: the answer says what to give; never safe).
    """
    from .engines.checkconfig import (
        CheckError,
        outcome_json,
        outcome_lines,
        outcome_run_json,
        own_option_in_line,
        resolve_model,
    )
    from .engines.registry import adapter_for, adapter_for_line, parse_engine
    from .verdict import Options

    json_out, sarif_out = _user_path(json_out), _user_path(sarif_out)
    try:
        # click takes the '--' right after a value option as its value: the launch line's separator
        # would become a file named '--' (and --json's answer would not be where it was asked for)
        for name, value in (("--json", json_out), ("--sarif", sarif_out), ("--model-config", model_config)):
            if value is not None and os.path.basename(value) == "--":
                json_out = None if name == "--json" else json_out
                raise CheckError(
                    f"{name} took '--' as its value: give {name} a value before '--' "
                    f"(e.g. {name} {'-' if name == '--json' else 'FILE'} -- {DEFAULT_ENGINE.command} …)"
                )
        if json_out == "-" and sarif_out == "-":
            json_out = None
            raise CheckError("--json - and --sarif -: only one of them can have stdout; give the other a FILE")
        for name, value in (("--json", json_out), ("--sarif", sarif_out)):  # before minutes of proving
            problem = _unwritable(value)
            if problem:
                json_out = None if name == "--json" else json_out
                raise CheckError(f"{name} {value}: cannot write: {problem}")
        engine, version = parse_engine(engine_spec)
        adapter = adapter_for(engine)
        args = list(serve_args)
        if not any(a.strip() for a in args):  # nothing, or only empty words (`-- ''`, an unset shell variable)
            raise CheckError(
                f"no launch line: give it after '--', e.g. capproof check-config -- {DEFAULT_ENGINE.example_line}"
            )
        # a container image tag may name the release (unless --engine does)
        explicit = click.get_current_context().get_parameter_source("engine_spec").name != "DEFAULT"
        from_command = ""
        if not explicit:  # the launch command names its engine (sglang serve, python -m sglang.launch_server)
            owner = adapter_for_line(args)
            if owner is not None and owner is not adapter:
                adapter = owner
                engine, version = owner.engines[0], owner.default_version()
                from_command = f"engine {owner.display(engine)} {version}: from the launch command (give --engine to check another)"
        engine, version, derived_engine = adapter.engine_from_line(args, engine, version, explicit)
        derived_engine = derived_engine or from_command
        own = own_option_in_line(
            args, adapter.flags(engine, version), adapter.parser_label(engine, version), adapter.command
        )
        if own:
            raise CheckError(own)
        # the line, its --config file, MODEL and --model-config are read where capproof was started
        cfg = adapter.parse_line(args, engine, version)
        model = resolve_model(cfg.model, model_config)
        spec_paths = tuple(_user_path(p) for p in spec_paths)
        if spec_paths:  # a spec file's own project (its models/ package) is importable from anywhere
            from .loader import ensure_project_on_path
            from .project import find_root

            for path in spec_paths:
                root = find_root(os.path.dirname(os.path.abspath(path)))
                if root is not None:
                    ensure_project_on_path(root)
        if not spec_paths:  # the engine specs shipped with capproof, loaded from their own root
            from .project import bundled_root

            engines = bundled_root()
            if engines is None:
                raise CheckError("no engine specs installed with capproof (give --spec)")
            os.chdir(engines)
            json_out, sarif_out = (
                p if p in (None, "-") else os.path.join(_SESSION["cwd"], p) for p in (json_out, sarif_out)
            )
        if _SESSION["verbosity"] >= 1:  # -v: where the obligations come from
            _errout().print(
                f"capproof: root {os.getcwd()} ("
                + (f"--spec {', '.join(spec_paths)}" if spec_paths else "the engine specs shipped with capproof")
                + f"), launch line read as {engine} {version}",
                markup=False,
            )
        started = time.perf_counter()
        status = None
        if _SESSION["verbosity"] >= 0 and json_out != "-" and _errout().is_terminal:
            status = _errout().status(f"checking {cfg.model} against {engine} {version}'s obligations", spinner="dots")
            status.start()
        try:
            options = Options(rlimit=rlimit, jobs=jobs or 0)  # 0: the CPU cores (decide_obligations)
            outcome = adapter.check(cfg, engine, version, model, spec_paths or ("spec",), options, gpu, num_sms)
        finally:
            if status is not None:
                status.stop()
        if _SESSION["verbosity"] >= 1:
            decided = sum(1 for c in outcome.checked if c.result is not None)
            _errout().print(
                f"capproof: {decided} obligations decided of {len(outcome.checked)} in {time.perf_counter() - started:.1f} s",
                markup=False,
            )
        if derived_engine:
            outcome.derived.insert(0, derived_engine)
        _warn_parameter_names([c.obligation for c in outcome.checked])
    except CheckError as exc:
        if json_out == "-":
            click.echo(json.dumps({"verdict": "bad input", "exit_code": EXIT_BAD_INPUT, "error": str(exc)}, indent=2))
        _errout().print(f"error: {exc}", markup=False, style="bold red")
        sys.exit(EXIT_BAD_INPUT)
    data = outcome_json(outcome, cfg)
    outputs = [("--sarif", sarif_out, lambda d, p: _write_check_sarif(outcome_run_json(outcome), outcome, p))]
    if json_out == "-":
        written = _write_outputs(data, outputs)
        click.echo(json.dumps(data, indent=2))
    else:
        written = _write_outputs(data, [("--json", json_out, _write_json), *outputs])
        verbosity = _SESSION["verbosity"]
        # --sarif -: stdout holds the SARIF alone (as --json -), the answer goes to stderr
        console = _errout() if sarif_out == "-" else _out()
        for i, line in enumerate(outcome_lines(outcome, cfg)):
            if verbosity <= -1 and i > 0 and not line.startswith(("  give", "  FAILS", "          ")):
                continue  # -q: the verdict, what to give and what fails
            style = None if i else {"safe": "green", "will fail": "bold red"}.get(outcome.status, "bold yellow")
            console.print(line, style=style)
    sys.exit(outcome.exit_code if written else EXIT_UNDECIDED)


def _unwritable(path: str | None) -> str:
    """Why a new file ``path`` could not be written ("" when it can, or when ``path`` is None or
    ``-``): its directory missing or not writable, or ``path`` a directory."""
    if path in (None, "-"):
        return ""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return "it is a directory"
    if not os.path.isdir(folder):
        return f"no such directory {folder}"
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        return "permission denied"
    return ""


def _write_check_sarif(run_json: dict[str, Any], outcome, path: str) -> None:
    """SARIF for check-config: the applied obligations not proved are results; what to give (an
    undecided answer) is a warning notification."""
    from .ci_formats import sarif_log

    log = sarif_log(run_json, __version__)
    unsettled = {c.obligation.id: outcome._unsettled(c) for c in outcome.unsettled_failures}
    for result in log["runs"][0].get("results", []):  # fails only at a value the line does not give
        params = unsettled.get(result.get("properties", {}).get("id"))
        if params:
            cex = result["properties"].get("counterexample") or {}
            result["level"] = "warning"
            result["message"]["text"] += (
                " (not counted as will fail: only at "
                + ", ".join(f"{p}={cex.get('params', {}).get(p)}" for p in params)
                + ", a value the line does not give)"
            )
    notes = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    notes += [{"level": "warning", "message": {"text": f"undecided: give {need}"}} for need in outcome.missing_facts]
    text = json.dumps(log, indent=2) + "\n"
    if path == "-":
        click.echo(text, nl=False)
        return
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


@main.command()
@_apply(_common[:4])
@click.option(
    "--waste-threshold",
    default=DEFAULT_WASTE_THRESHOLD,
    show_default=True,
    type=click.FloatRange(min=0),
    metavar="PCT",
    help="Flag a capacity whose slack at its tightest point exceeds PCT% of the demand there.",
)
@click.option(
    "--json",
    "json_out",
    type=click.Path(allow_dash=True),
    default=None,
    help="Write the bounds as JSON to FILE ('-' for stdout).",
)
@click.option(
    "--vectors/--no-vectors",
    default=True,
    show_default=True,
    help="Bound obligations with Vector (batch/routing) parameters: on the aggregate abstraction where it "
    "applies, else minimum slack only on the bounded encoding.",
)
@click.option(
    "--jobs",
    "-j",
    default=None,
    type=click.IntRange(min=1),
    help="Worker processes [default: [tool.capproof] jobs, else the CPU cores available].",
)
@click.option(
    "--write", is_flag=True, help=f"Write {BOUNDS_REPORT} and {BOUNDS_DATA} (full, unpinned run over spec/ only)."
)
@click.option(
    "--check",
    is_flag=True,
    help=f"Do not write: fail (exit 1) if {BOUNDS_REPORT} is stale. Certifies the bounds "
    f"recorded in {BOUNDS_DATA} (unsat queries, replay on ints) instead of optimising again; an obligation "
    "whose certificate fails, or all when the sources changed since --write, is bounded from scratch.",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Bound every obligation even when .capproof/bounds/ holds its bounds for the same sources and settings.",
)
def bound(paths, keyword, pins, rlimit, waste_threshold, json_out, vectors, jobs, write, check, no_cache) -> None:
    """Worst-case demand, minimal sufficient capacity and slack of every at_most/less_than claim."""
    from .bound import (
        recorded_bounds,
        render_bounds_data,
        render_bounds_report,
        run_bounds,
        terminal_bound_lines,
    )
    from .runner import default_jobs

    pins_d = _parse_pins(pins)
    given_paths = bool(paths)
    paths = _enter_project(paths, need_root=write or check)
    json_out = _user_path(json_out)
    if (write or check) and (given_paths or keyword or pins_d):
        raise click.UsageError(f"--write/--check render {BOUNDS_REPORT} from a full run: drop PATHS, -k and --set")
    quiet = json_out == "-" or check or write
    progress = (
        None
        if quiet
        else (
            lambda r: [
                _out().print(line, markup=False, style=None if i else ("green" if r.ok else "bold red"))
                for i, line in enumerate(terminal_bound_lines(r))
            ]
        )
    )
    if (write or check) and not vectors:
        raise click.UsageError(f"--write/--check render {BOUNDS_REPORT} from a full run: drop --no-vectors")
    rlimit = _setting(rlimit, "rlimit", DEFAULT_RLIMIT)
    recorded = None
    if write or check:  # bound again only what changed since the record (certify the rest)
        try:
            with open(BOUNDS_DATA, encoding="utf-8") as fh:
                recorded, why = recorded_bounds(fh.read(), rlimit, waste_threshold)
        except FileNotFoundError:
            why = "missing"
        if recorded is None and check:
            _errout().print(
                f"{BOUNDS_DATA} {why}: bounding from scratch every obligation without bounds in .capproof/bounds/ "
                "(`capproof bound --write` and commit it to make --check fast)",
                markup=False,
                style="yellow",
            )
    run_ = run_bounds(
        paths,
        keyword,
        pins_d,
        rlimit,
        waste_threshold,
        progress,
        skip_vectors=not vectors,
        jobs=_setting(jobs, "jobs", default_jobs()),
        recorded=recorded,
        cache=not no_cache,
        record_keys=write or check,
    )
    if recorded is not None:
        redone = [r for r in run_.results if r.recomputed]
        if check:
            for r in redone:
                _errout().print(f"{r.id}: {r.recomputed}; bounded from scratch", markup=False, style="yellow")
        if redone and check:
            _errout().print(
                f"{BOUNDS_DATA}: {len(redone)} obligations not certified from it (`capproof bound --write` "
                "and commit it if proofs/bounds.md is unchanged)",
                markup=False,
                style="yellow",
            )
        elif redone:
            _out().print(f"bounded again: {len(redone)} obligations (their sources changed)", markup=False)
    data = run_.to_json()
    for err in run_.errors:
        _errout().print(f"error: {err}", markup=False, style="bold red")
    if json_out == "-":
        click.echo(json.dumps(data, indent=2))
    elif json_out and not _write_outputs(data, [("--json", json_out, _write_json)]):
        sys.exit(EXIT_UNDECIDED)
    exit_code = run_.exit_code
    if write or check:
        text = render_bounds_report(data["bounds"], data["not_in_report"])
        try:
            with open(BOUNDS_REPORT, encoding="utf-8") as fh:
                current = fh.read()
        except FileNotFoundError:
            current = None
        if check:
            if current != text:
                _errout().print(
                    f"stale {BOUNDS_REPORT} (run `capproof bound --write` and commit)", markup=False, style="bold red"
                )
                sys.exit(max(exit_code, 1))
            _out().print(f"{BOUNDS_REPORT} up to date ({len(data['bounds'])} obligations)", markup=False, style="green")
        else:
            os.makedirs(os.path.dirname(BOUNDS_REPORT), exist_ok=True)
            with open(BOUNDS_REPORT, "w", encoding="utf-8") as fh:
                fh.write(text)
            with open(BOUNDS_DATA, "w", encoding="utf-8") as fh:
                fh.write(render_bounds_data(data, run_.keys, rlimit, waste_threshold))
            _out().print(
                f"wrote {BOUNDS_REPORT} ({len(data['bounds'])} obligations; "
                f"{'changed' if current != text else 'unchanged'})",
                markup=False,
            )
    elif json_out != "-":
        active = [r for r in run_.results if r.status not in ("skipped", "not_in_report")]
        good = sum(r.ok for r in active)
        _out().print(
            f"{good} of {len(active)} bounds as expected", markup=False, style="green" if exit_code == 0 else "bold red"
        )
    sys.exit(exit_code)


@main.command()
@click.option(
    "--inventory",
    "inventory_path",
    type=click.Path(dir_okay=False),
    default=DEFAULT_INVENTORY,
    show_default=True,
    help="The inventory JSON whose entries need a verdict.",
)
@click.option(
    "--from",
    "from_json",
    type=click.Path(dir_okay=False),
    default=None,
    help="A `prove --json` file of a full, unpinned run (default: prove spec/ now, no contracts).",
)
@click.option("--write", is_flag=True, help=f"Write {COVERAGE_REPORT} and the inventory's `verdicts` fields.")
@click.option(
    "--check", is_flag=True, help=f"Do not write: fail (exit 1) if {COVERAGE_REPORT} or the verdicts are stale."
)
@click.option(
    "--rlimit",
    default=DEFAULT_RLIMIT,
    show_default=True,
    type=click.IntRange(min=1),
    help="Deterministic Z3 resource budget per query (without --from).",
)
def coverage(inventory_path, from_json, write, check, rlimit) -> None:
    """Which inventory entries have a proved or counterexample verdict; print the uncovered ones."""
    from .coverage import (
        CoverageInputError,
        fill_verdicts,
        inventory_text,
        read_inventory,
        read_run,
    )
    from .coverage import (
        compute as compute_coverage,
    )
    from .coverage import (
        render_markdown as render_coverage,
    )

    if write and check:
        raise click.UsageError("--write and --check exclude each other")
    _enter_project(need_root=not from_json, optional=bool(from_json))
    inventory_path, from_json = _user_path(inventory_path), _user_path(from_json)
    if from_json and not os.path.isfile(from_json):  # a missing input is a usage error (exit 4, as pytest's)
        _errout().print(
            f"error: --from {from_json}: no such file: run `make verify` or `capproof prove --json {from_json}` first",
            markup=False,
            style="bold red",
        )
        sys.exit(EXIT_USAGE)
    if from_json and inventory_path == DEFAULT_INVENTORY and not os.path.exists(inventory_path):
        from .inventory import locate  # outside a project: the inventory shipped with capproof

        inventory_path = locate(inventory_path)
    try:
        entries = read_inventory(inventory_path)
        with open(inventory_path, encoding="utf-8") as fh:
            original = fh.read()
        data = read_run(from_json) if from_json else None
    except CoverageInputError as exc:
        _fail(str(exc))
    exit_code = 0
    if data is None:
        result = _run((), None, {}, rlimit, 1, 30.0, True, quiet=True)
        data = result.to_json()
        exit_code = _exit_code(result)
    # the default report also covers the other engines' committed inventories (one section each)
    sections = [(inventory_path, entries, original)]
    if inventory_path == DEFAULT_INVENTORY:
        for other in OTHER_INVENTORIES:
            if os.path.exists(other):
                with open(other, encoding="utf-8") as fh:
                    sections.append((other, read_inventory(other), fh.read()))

    def for_section(path):
        """The run's obligations about this inventory's engine (its ids start with the package)."""
        if len(sections) == 1:
            return data
        package = os.path.basename(path).split("-")[0]
        return {
            **data,
            "obligations": [
                o for o in data.get("obligations", []) if any(c.split("/")[0] == package for c in o.get("covers") or [])
            ],
        }

    texts, updates = [], []
    for path, ents, orig in sections:
        cov = compute_coverage(ents, for_section(path), path, headline_dtypes=_headline_dtypes(path))
        texts.append(render_coverage(cov))
        updates.append((path, orig, inventory_text(orig, fill_verdicts(ents, cov))))
        _out().print(f"{path}: {cov.summary_line()}", markup=False, style="bold")
        for e in cov.uncovered():
            _out().print(f"  uncovered: {e.id} ({e.status})", markup=False)
    unknown = None
    for path, ents, _ in sections:
        cov_ids = compute_coverage(ents, data, path).unknown_ids
        unknown = (
            dict(cov_ids)
            if unknown is None
            else {ob: sorted(set(ids) & set(cov_ids.get(ob, ()))) for ob, ids in unknown.items() if ob in cov_ids}
        )
    for ob, ids in sorted((unknown or {}).items()):
        if ids:
            _errout().print(f"warning: {ob} covers ids in no inventory: {', '.join(ids)}", markup=False, style="yellow")
    text = "\n".join(texts)
    stale_inventories = [path for path, orig, new in updates if orig != new]
    try:
        with open(COVERAGE_REPORT, encoding="utf-8") as fh:
            current = fh.read()
    except FileNotFoundError:
        current = None
    if check:
        stale = ([COVERAGE_REPORT] if current != text else []) + stale_inventories
        if stale:
            _errout().print(
                "stale (run `capproof coverage --write` and commit): " + ", ".join(stale),
                markup=False,
                style="bold red",
            )
            sys.exit(max(exit_code, 1))
        _out().print(
            f"{COVERAGE_REPORT} and the verdicts of {', '.join(p for p, _, _ in updates)} up to date",
            markup=False,
            style="green",
        )
    elif write:
        try:
            os.makedirs(os.path.dirname(COVERAGE_REPORT), exist_ok=True)
            with open(COVERAGE_REPORT, "w", encoding="utf-8") as fh:
                fh.write(text)
            for path, orig, new in updates:
                if orig != new:
                    with open(path, "w", encoding="utf-8") as fh:
                        fh.write(new)
        except OSError as exc:
            _fail(f"cannot write: {exc}")
        _out().print(
            f"wrote {COVERAGE_REPORT} ({'changed' if current != text else 'unchanged'}); "
            f"verdicts changed in {', '.join(stale_inventories) or 'no inventory'}",
            markup=False,
        )
    sys.exit(exit_code)


@main.command("inventory")
@click.option(
    "--engine",
    "engine_spec",
    default=None,
    metavar="ENGINE==VERSION",
    help="Engine release whose pre-allocated buffers to list: "
    + ", ".join(f"{a.name}==VERSION" for a in ENGINE_ADAPTERS)
    + f" (default: {DEFAULT_ENGINE.name}'s pinned release).",
)
@click.option(
    "--json",
    "json_out",
    type=click.Path(allow_dash=True),
    default=None,
    help="Write the inventory JSON to FILE ('-' for stdout).",
)
@click.option("--write", is_flag=True, help="Write proofs/inventory/<engine>-<version>.json and .md.")
@click.option("--check", is_flag=True, help="Do not write: exit 1 with a diff if the committed files are stale.")
@click.option(
    "--diff",
    "diff_specs",
    nargs=2,
    default=None,
    metavar="OLD NEW",
    help="Buffers added, removed and whose shape changed between two releases of one engine (ENGINE==A ENGINE==B).",
)
@click.option("--no-trace", is_flag=True, help="Static reading only (every entry 'read'); no engine code runs.")
def inventory_cmd(engine_spec, json_out, write, check, diff_specs, no_trace) -> None:
    """Every pre-allocated buffer of an engine release, its shape traced from the engine's own code.

    Exit 0 ok, 1 stale committed inventory (--check), 2 bad input, 3 wheel or real venv unavailable.
    """
    from .engines.registry import inventory_adapter

    echo = lambda s: _out().print(s, markup=False)  # noqa: E731
    err = lambda s: _errout().print(s, markup=False, style="bold red")  # noqa: E731
    if diff_specs:
        if engine_spec or write or check or json_out:
            raise click.UsageError("--diff takes two releases and no --engine/--write/--check/--json")
        sys.exit(inventory_adapter(*diff_specs).run_diff(*diff_specs, out=echo, err=err, trace=not no_trace))
    if write and check:
        raise click.UsageError("--write and --check exclude each other")
    if write or check:  # they write or compare the project's proofs/inventory/: run from its root
        json_out = _user_path(json_out)
        _enter_project(need_root=True)
    adapter = inventory_adapter(engine_spec)
    sys.exit(adapter.run_inventory(engine_spec, json_out, write, check, out=echo, err=err, trace=not no_trace))


if __name__ == "__main__":  # pragma: no cover
    main()
