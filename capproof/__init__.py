"""capproof: prove that pre-allocated index buffers are large enough, or find the counterexample.

The public facade. Spec files use the declaration API (``obligation``, ``contract``, domains,
claims) and models use the arithmetic vocabulary; tools use ``run``/``prove``.
"""

import sys as _sys
import types as _types

# Domains and counterexamples may hold integers past Python's 4300-digit str() limit.
_sys.set_int_max_str_digits(0)

# Code a model makes under a library file's name is told from the library's own from here on
# (capproof.provenance): installed before any spec or model module is imported.
from .provenance import install as _install_provenance  # noqa: E402

_install_provenance()

# Start-up: the names below are imported on first use (PEP 562 module ``__getattr__``),
# so ``import capproof`` (and the command line's ``--help``) does not load Z3 and the prover.
_LAZY = {
    ".arith": (
        "all_of",
        "any_of",
        "cdiv",
        "count",
        "divides",
        "fold",
        "gcd",
        "implies",
        "max_of",
        "maximum",
        "min_of",
        "minimum",
        "not_",
        "prefix_sums",
        "round_up",
        "select",
        "total",
        "wrap",
        "int32",
        "int64",
        "uint32",
    ),
    ".domain": ("Choice", "PowersOfTwo", "Range", "Vector"),
    ".errors": ("CapproofError", "DivisorMayBeZero", "RealArithmeticError", "SpecError", "SymbolicBranchError"),
    ".obligation": ("Claim", "at_most", "claim", "contract", "equal", "fits", "less_than", "obligation"),
    ".runner": ("RunResult", "run", "prove"),
    ".symbolic": ("Exploration", "Path", "explore"),
    ".verdict": ("Options", "Verdict"),
}
_WHERE = {name: (module, name) for module, names in _LAZY.items() for name in names}

__version__ = "0.1.0"

# The same names for type checkers (mypy: `make typecheck`), which do not run __getattr__; a plain
# False (not typing.TYPE_CHECKING) keeps `import typing` out of `import capproof`.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .arith import all_of as all_of
    from .arith import any_of as any_of
    from .arith import cdiv as cdiv
    from .arith import count as count
    from .arith import divides as divides
    from .arith import fold as fold
    from .arith import gcd as gcd
    from .arith import implies as implies
    from .arith import int32 as int32
    from .arith import int64 as int64
    from .arith import max_of as max_of
    from .arith import maximum as maximum
    from .arith import min_of as min_of
    from .arith import minimum as minimum
    from .arith import not_ as not_
    from .arith import prefix_sums as prefix_sums
    from .arith import round_up as round_up
    from .arith import select as select
    from .arith import total as total
    from .arith import uint32 as uint32
    from .arith import wrap as wrap
    from .domain import Choice as Choice
    from .domain import PowersOfTwo as PowersOfTwo
    from .domain import Range as Range
    from .domain import Vector as Vector
    from .errors import CapproofError as CapproofError
    from .errors import DivisorMayBeZero as DivisorMayBeZero
    from .errors import RealArithmeticError as RealArithmeticError
    from .errors import SpecError as SpecError
    from .errors import SymbolicBranchError as SymbolicBranchError
    from .obligation import Claim as Claim
    from .obligation import at_most as at_most
    from .obligation import claim as claim
    from .obligation import contract as contract
    from .obligation import equal as equal
    from .obligation import fits as fits
    from .obligation import less_than as less_than
    from .obligation import obligation as obligation
    from .runner import RunResult as RunResult
    from .runner import prove as prove
    from .runner import run as run
    from .symbolic import Exploration as Exploration
    from .symbolic import Path as Path
    from .symbolic import explore as explore
    from .verdict import Options as Options
    from .verdict import Verdict as Verdict
del TYPE_CHECKING

__all__ = [
    # declaring obligations
    "obligation",
    "contract",
    "Range",
    "Choice",
    "PowersOfTwo",
    "Vector",
    "Claim",
    "claim",
    "equal",
    "at_most",
    "less_than",
    "fits",
    # model vocabulary
    "cdiv",
    "round_up",
    "select",
    "minimum",
    "maximum",
    "gcd",
    "implies",
    "all_of",
    "any_of",
    "not_",
    "divides",
    "total",
    "max_of",
    "min_of",
    "prefix_sums",
    "count",
    "fold",
    "wrap",
    "int32",
    "int64",
    "uint32",
    # running
    "run",
    "prove",
    "Options",
    "Verdict",
    "RunResult",
    # symbolic execution of branching code
    "explore",
    "Exploration",
    "Path",
    # errors
    "CapproofError",
    "SpecError",
    "RealArithmeticError",
    "SymbolicBranchError",
    "DivisorMayBeZero",
]


def __getattr__(name: str):
    """Import a public name from its module on first access, and keep it."""
    try:
        module, attr = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module 'capproof' has no attribute {name!r}") from None
    from importlib import import_module

    value = getattr(import_module(module, __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(_types.ModuleType):
    """``import capproof.obligation`` binds the submodule as the package's attribute ``obligation``;
    the public name is the decorator of that module (as an eager ``from .obligation import
    obligation`` would have rebound it), so the submodule is replaced by that name here."""

    def __setattr__(self, name: str, value) -> None:
        where = _WHERE.get(name)
        if where is not None and isinstance(value, _types.ModuleType) and where[0] == "." + name:
            value = getattr(value, where[1])
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
