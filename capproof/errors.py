"""Errors raised while loading, encoding or replaying an obligation.

Every error carries one human-readable line. The CLI prints that line, marks the obligation
``error`` and goes on with the others.
"""

from __future__ import annotations

import os
import sys

__all__ = [
    "CapproofError",
    "SpecError",
    "RealArithmeticError",
    "SymbolicBranchError",
    "NotConcreteError",
    "DivisorMayBeZero",
    "ReplayError",
    "NotAnIntegerError",
    "caller_location",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def caller_location() -> str:
    """``path:line`` of the innermost frame outside capproof itself (the model or spec line)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_PACKAGE_DIR + os.sep):
            try:
                shown = os.path.relpath(filename)
            except ValueError:  # pragma: no cover - other drive on Windows
                shown = filename
            return f"{shown}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


class CapproofError(Exception):
    """Base class: an obligation that cannot be decided because of how it is written."""


class SpecError(CapproofError):
    """A malformed obligation: bad domain, unknown or out-of-domain pin, non-boolean claim."""


class RealArithmeticError(CapproofError, TypeError):
    """Python ``/`` (or a float) reached integer model arithmetic."""


class SymbolicBranchError(CapproofError, TypeError):
    """``if``/``bool()`` on a symbolic value outside :func:`capproof.symbolic.explore` (where it
    forks), or a re-executed path that branched differently (a non-deterministic function)."""


class NotConcreteError(CapproofError, TypeError):
    """An operation that needs concrete ints (``gcd``, indexing, ``range``) got a symbolic value."""


class NotAnIntegerError(CapproofError, TypeError):
    """A value that is neither an int nor a symbolic int (a string, None, a Z3 term) reached
    integer model arithmetic; the message names the model line."""


class DivisorMayBeZero(CapproofError):
    """A symbolic divisor can be zero somewhere in the domain under the assumptions."""


class ReplayError(CapproofError):
    """A solver counterexample did not violate the claim when replayed on plain ints."""
