"""capproof: prove that pre-allocated index buffers are large enough, or find the counterexample.

The public facade. Spec files use the declaration API (``obligation``, ``contract``, domains,
claims) and models use the arithmetic vocabulary; tools use ``run``/``prove``.
"""

import sys as _sys

# Domains and counterexamples may hold integers past Python's 4300-digit str() limit.
_sys.set_int_max_str_digits(0)

from .arith import (
    all_of, any_of, cdiv, count, divides, gcd, implies, max_of, maximum, min_of, minimum, not_, prefix_sums,
    round_up, select, total, wrap, int32, int64, uint32,
)
from .domain import Choice, PowersOfTwo, Range, Vector
from .errors import CapproofError, DivisorMayBeZero, RealArithmeticError, SpecError, SymbolicBranchError
from .obligation import Claim, at_most, claim, contract, equal, fits, less_than, obligation
from .prover import prove_obligation as prove
from .runner import RunResult, run
from .symbolic import Exploration, Path, explore
from .verdict import Options, Verdict

__version__ = "0.1.0"

__all__ = [
    # declaring obligations
    "obligation", "contract", "Range", "Choice", "PowersOfTwo", "Vector", "Claim", "claim", "equal", "at_most", "less_than", "fits",
    # model vocabulary
    "cdiv", "round_up", "select", "minimum", "maximum", "gcd", "implies", "all_of", "any_of", "not_", "divides",
    "total", "max_of", "min_of", "prefix_sums", "count", "wrap", "int32", "int64", "uint32",
    # running
    "run", "prove", "Options", "Verdict", "RunResult",
    # symbolic execution of branching code
    "explore", "Exploration", "Path",
    # errors
    "CapproofError", "SpecError", "RealArithmeticError", "SymbolicBranchError", "DivisorMayBeZero",
]
