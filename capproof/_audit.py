"""One audit hook per process (:func:`sys.addaudithook`) that hands each event to the handlers
registered for it.

Python 3.11 raises an audit event on every read of a frame's ``f_code``, and the exception
watch of a symbolic run reads one per Python call: each hook installed is a Python call per
Python call of the model, of Z3's bindings and of capproof. One hook that hands ``object.__getattr__``
on to a handler only for the attribute names it registered, and other events only to their
handlers, costs one call per event instead of one per hook (docs/performance.md).
Hooks cannot be removed: handlers stay registered for the life of the process."""

from __future__ import annotations

import sys
from typing import Callable

Handler = Callable[[str, tuple], None]

#: ``{event: [handler, ...]}`` for events other than ``object.__getattr__``
_EVENTS: dict[str, tuple[Handler, ...]] = {}
#: ``{attribute name: [handler, ...]}`` for ``object.__getattr__`` (the frame and traceback reads)
_ATTRIBUTES: dict[str, tuple[Handler, ...]] = {}
_INSTALLED = [False]
#: > 0 while capproof reads a library file's own text to tell its code (no handler is called)
_QUIET = [0]


class quiet:
    """``with quiet():`` hands no event to a handler: for capproof's own reads of a library file
    (capproof/provenance.py), whose handlers would ask provenance again about the reading frames."""

    def __enter__(self) -> None:
        _QUIET[0] += 1

    def __exit__(self, *exc: object) -> None:
        _QUIET[0] -= 1


def _dispatch(event: str, args: tuple, _events=_EVENTS, _attributes=_ATTRIBUTES, _quiet=_QUIET) -> None:
    # (called on every audit event of the process: the tables bound as defaults, no global lookups)
    if _quiet[0]:
        return
    if event == "object.__getattr__":
        handlers = _attributes.get(args[1]) if len(args) > 1 else None
    else:
        handlers = _events.get(event)
    if handlers:
        for handler in handlers:
            handler(event, args)


def on(handler: Handler, events: frozenset[str] = frozenset(), attributes: frozenset[str] = frozenset()) -> None:
    """Call ``handler(event, args)`` for each audit event in ``events`` and each
    ``object.__getattr__`` event whose attribute name is in ``attributes`` (installs the hook on
    first use; registering the same handler again for an event adds nothing)."""
    if not _INSTALLED[0]:
        _INSTALLED[0] = True
        sys.addaudithook(_dispatch)
    for table, keys in ((_EVENTS, events), (_ATTRIBUTES, attributes)):
        for key in keys:
            held = table.get(key, ())
            if handler not in held:
                table[key] = (*held, handler)
