"""capproof: prove that pre-allocated index buffers are large enough, or find the counterexample.

The public facade. Spec files use the declaration API (``obligation``, ``contract``, domains,
claims) and models use the arithmetic vocabulary; tools use ``run``/``prove``.
"""

import sys as _sys
import types as _types

# Domains and counterexamples may hold integers past Python's 4300-digit str() limit.
_sys.set_int_max_str_digits(0)

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
    ".runner": ("RunResult", "run"),
    ".symbolic": ("Exploration", "Path", "explore"),
    ".verdict": ("Options", "Verdict"),
}
_RENAMED = {"prove": (".prover", "prove_obligation")}
_WHERE = {name: (module, name) for module, names in _LAZY.items() for name in names} | _RENAMED

__version__ = "0.1.0"

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
