"""pytest plugin: ``pytest --capproof`` proves the project's obligations and contracts as test items.

Registered through the ``pytest11`` entry point, so it is active wherever capproof is installed,
and does nothing without ``--capproof`` (or ``capproof = true`` in the ini file). With it:

- every spec file under the project's spec paths (``[tool.capproof] paths``, default ``spec/``;
  the project root is found as ``capproof`` finds it) is collected as a file of test items, one
  per obligation (``spec/x.py::name``) and one per CrossHair contract
  (``spec/x.py::contract[models/y.py:f]``), each marked ``capproof`` (``-m capproof`` runs only
  them, ``-m "not capproof"`` skips them); ``-k`` selects them by name as any test;
- when no path given on the command line lies inside the spec paths, those paths are added to
  what pytest collects (unless a given directory holds them), so ``pytest --capproof`` runs the
  test suite *and* the proofs;
- an item passes when its verdict equals its expectation (``expect=``); otherwise it fails with
  the verdict's lines as ``capproof prove`` prints them (``path:line:``, verdict, message, every
  named value of a counterexample). Unknown, vacuous and error verdicts fail too: never proved.
  A spec file that does not import is one failing item (``<file>::load``).

Each item is decided in its own process with a fresh Z3 context, as by ``capproof prove``
(``--capproof-timeout`` seconds at most). Options: ``--capproof-rlimit N``,
``--capproof-crosshair-timeout S``, ``--capproof-no-contracts``; defaults from ``[tool.capproof]``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pytest

from .project import SettingsError, find_root, read_settings
from .verdict import DEFAULT_RLIMIT, DEFAULT_TIMEOUT, Options

if TYPE_CHECKING:
    from .loader import LoadError
    from .obligation import Contract, Obligation

# The plugin is loaded in every pytest session of an environment where capproof is installed;
# the loader, the runner and Z3 are imported only when a spec file is collected (--capproof).

__all__ = ["CapproofFailure", "SpecFile", "CapproofItem"]

_KEY = pytest.StashKey[dict[str, Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("capproof", "capproof obligations as test items")
    group.addoption(
        "--capproof",
        action="store_true",
        default=None,
        help="Collect the project's capproof obligations and contracts (spec files) as test items.",
    )
    group.addoption(
        "--capproof-rlimit",
        type=int,
        default=None,
        metavar="N",
        help=f"Z3 resource budget per query [default: [tool.capproof] rlimit, else {DEFAULT_RLIMIT}].",
    )
    group.addoption(
        "--capproof-crosshair-timeout",
        type=float,
        default=None,
        metavar="S",
        help="CrossHair per-condition timeout [default: [tool.capproof] crosshair_timeout, else 30].",
    )
    group.addoption(
        "--capproof-timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"Hard time limit per obligation or contract, in seconds [default: {DEFAULT_TIMEOUT:g}].",
    )
    group.addoption(
        "--capproof-no-contracts",
        action="store_true",
        default=False,
        help="Do not collect the CrossHair contract checks.",
    )
    parser.addini("capproof", type="bool", default=False, help="Always collect capproof obligations (as --capproof).")


def _enabled(config: pytest.Config) -> bool:
    flag = config.getoption("capproof")
    return bool(flag) if flag is not None else bool(config.getini("capproof"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "capproof: a capproof obligation or contract (collected with --capproof)")
    if not _enabled(config):
        return
    start = str(config.invocation_params.dir)
    root = find_root(start)
    if root is None:
        raise pytest.UsageError(
            "--capproof: no capproof project here or above "
            "(a pyproject.toml with [tool.capproof], or a spec/ directory)"
        )
    try:
        settings = read_settings(root)
    except SettingsError as exc:
        raise pytest.UsageError(f"--capproof: {exc}") from None
    spec_paths = [Path(root, p).resolve() for p in settings.get("paths") or ["spec"]]
    config.stash[_KEY] = {"root": root, "settings": settings, "paths": spec_paths}
    given = [Path(start, a.split("::")[0]).resolve() for a in config.args]
    if not any(_inside(g, p) for g in given for p in spec_paths):  # no spec file or directory named
        config.args.extend(str(p) for p in spec_paths if p.exists() and not any(_inside(p, g) for g in given))


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def _is_spec_file(config: pytest.Config, file_path: Path) -> bool:
    state = config.stash.get(_KEY, None)
    if state is None or file_path.suffix != ".py" or file_path.name.startswith("_"):
        return False
    resolved = file_path.resolve()
    if not any(_inside(resolved, p) for p in state["paths"]):
        return False
    rel = resolved.relative_to(Path(state["root"]).resolve())
    # as capproof's own discovery: private directories hold helpers, not specs
    return not any(part.startswith((".", "_")) for part in rel.parts[:-1])


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> "SpecFile | None":
    if not _is_spec_file(parent.config, file_path):
        return None
    return SpecFile.from_parent(parent, path=file_path)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> "pytest.File | None":
    """A spec file named on the command line (or matching ``python_files``) is not also imported
    as a test module by pytest's Python collector: capproof imports it, once."""
    if _is_spec_file(parent.config, module_path):
        return _NotATestModule.from_parent(parent, path=module_path)
    return None


class _NotATestModule(pytest.File):
    def collect(self):
        return []


@contextlib.contextmanager
def _in_root(root: str) -> Iterator[None]:
    """capproof loads and decides from the project root (ids read ``spec/<file>.py::<name>``)."""
    here = os.getcwd()
    os.chdir(root)
    try:
        yield
    finally:
        os.chdir(here)


class SpecFile(pytest.File):
    """A capproof spec file: its obligations and contracts."""

    def collect(self):
        state = self.config.stash[_KEY]
        root = state["root"]
        from .loader import LoadError, load_file
        from .obligation import Contract

        rel = os.path.relpath(self.path, root)
        with _in_root(root):
            loaded = load_file(rel)
        if isinstance(loaded, LoadError):
            yield CapproofItem.from_parent(self, name="load", target=loaded)
            return
        contracts = not self.config.getoption("capproof_no_contracts")
        for item in loaded:
            if isinstance(item, Contract):
                if contracts:
                    yield CapproofItem.from_parent(self, name=f"contract[{item.id.replace('::', ':')}]", target=item)
            else:
                yield CapproofItem.from_parent(self, name=item.name, target=item)


class CapproofFailure(Exception):
    """A verdict that differs from its expectation (or unknown, vacuous, error)."""


class CapproofItem(pytest.Item):
    """One obligation or contract (or a spec file that does not import), decided when run."""

    def __init__(self, *, target: "Obligation | Contract | LoadError", **kwargs) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.add_marker("capproof")
        self.result: dict[str, Any] | None = None

    def _options(self) -> Options:
        state = self.config.stash[_KEY]
        settings = state["settings"]
        opt = self.config.getoption
        rlimit = opt("capproof_rlimit") or settings.get("rlimit", DEFAULT_RLIMIT)
        crosshair = opt("capproof_crosshair_timeout") or settings.get("crosshair_timeout", 30.0)
        return Options(rlimit=rlimit, crosshair_timeout=float(crosshair), jobs=1, timeout=opt("capproof_timeout"))

    def runtest(self) -> None:
        from .loader import LoadError
        from .obligation import Contract
        from .report import terminal_lines
        from .runner import run_items

        state = self.config.stash[_KEY]
        if isinstance(self.target, LoadError):
            raise CapproofFailure(f"error: {self.target.message}")
        with _in_root(state["root"]):
            outcome = run_items([self.target], (), self._options())
        results = outcome.all_results()
        problems = list(outcome.usage_errors)
        if len(results) != 1 or problems:
            raise CapproofFailure("\n".join(problems) or f"no verdict for {self.target.id}")
        self.result = results[0].to_json()
        self.user_properties.append(("capproof_verdict", self.result["verdict"]))
        if not self.result["ok"]:
            kind = "contract" if isinstance(self.target, Contract) else "obligation"
            raise CapproofFailure("\n".join(terminal_lines(self.result, kind)))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CapproofFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        from .loader import LoadError
        from .obligation import Contract

        line = getattr(self.target, "line", 0) or 0
        kind = {Contract: "contract", LoadError: "spec file"}.get(type(self.target), "obligation")
        return self.path, max(0, line - 1), f"capproof {kind} {self.target.id}"
