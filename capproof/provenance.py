"""Whether a code object is really a library file's: code made under a library file's name.

capproof tells its own code, Z3's, the standard library's and installed packages' from a model's
by the file a code object names (``co_filename``): the model's code is audited (``type(a) is int``,
an int slot called directly, a thread it starts), the libraries' is not. A model can make code
under any file name: ``compile(source, <stdlib>/bisect.py, "exec")``, ``code.replace(co_filename=
...)``, ``types.CodeType(...)``, ``marshal.loads`` of code it dumped. Python raises an audit event
for each (``compile``, ``code.__new__``, ``marshal.loads``): :func:`install` records every
library-named file they name — except a ``compile`` of the file's own text (an import compiling
its source) — and for those files only, :func:`genuine` tells the file's own code (equal to the
code compiled from the file's text) from code made under its name, which counts as the model's.

Likewise ``dataclasses`` writes a class's methods from its own text under the name ``<string>``;
:func:`dataclass_code` is true only of code ``dataclasses._create_fn`` executed (seen by the
``exec`` audit event), not of any code that names ``<string>``.

Not seen: code made in C past the audit events (ctypes), and a library's genuine code given a
model's globals (``types.FunctionType(lib.__code__, globals)``): docs/soundness.md.
"""

from __future__ import annotations

import os
import sys
import types

__all__ = ["install", "genuine", "trusted_filename", "dataclass_code"]

_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
#: capproof's directory and Z3's (found without importing Z3: ``import capproof`` does not load it)
_OWN_DIRS = (_PACKAGE_DIR, *(os.path.join(p, "z3") + os.sep for p in sys.path if p.endswith("-packages")))

#: ``{co_filename as given: the file's own code objects, or None until first asked}`` for every
#: library-named file that code was made under by other than its import
_NAMED: dict[str, frozenset | None] = {}
#: a code object made where its file name could not be seen (``marshal.load`` from a model):
#: every library-named code object is then checked
_ANY = [False]
#: code objects ``dataclasses._create_fn`` executed, and the code nested in them
_DATACLASS_CODE: set = set()
_STATE = [False, False]  # [installed, inside a handler]
_MISSING = object()


def _library_named(filename: str) -> bool:
    """Whether the symbolic run trusts code naming ``filename`` as not the model's: the standard
    library, capproof or Z3 (an installed package's code is audited as the model's there)."""
    if not isinstance(filename, str) or filename.startswith("<"):
        return False
    name = os.path.abspath(filename)
    z3 = sys.modules.get("z3")
    z3_dir = os.path.dirname(os.path.abspath(z3.__file__)) + os.sep if getattr(z3, "__file__", None) else _PACKAGE_DIR
    return name.startswith((*_OWN_DIRS, z3_dir)) or (
        name.startswith(_STDLIB_DIR) and os.sep + "site-packages" + os.sep not in name
    )


def _file_text(filename: str) -> bytes | None:
    try:
        with open(filename, "rb") as f:
            return f.read()
    except (OSError, ValueError):
        return None


def _is_file_text(source: object, filename: str) -> bool:
    """Whether ``source`` (what ``compile`` was given) is the text of ``filename`` itself."""
    text = _file_text(filename)
    if text is None:
        return False
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source) == text
    if isinstance(source, str):
        try:
            import importlib.util

            return source == importlib.util.decode_source(text)
        except (SyntaxError, UnicodeDecodeError, LookupError):
            return False
    return False  # an AST: its code cannot be compared with the file's text here


def _codes(code: types.CodeType) -> list:
    out, stack = [], [code]
    while stack:
        c = stack.pop()
        out.append(c)
        stack += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return out


def _own_codes(filename: str) -> frozenset:
    """The code objects compiled from ``filename``'s text (none when it cannot be read or compiled)."""
    text = _file_text(filename)
    if text is None:
        return frozenset()
    try:
        return frozenset(_codes(compile(text, filename, "exec", dont_inherit=True)))
    except (SyntaxError, ValueError):
        return frozenset()


def _mark(filename: object) -> None:
    if isinstance(filename, str) and filename not in _NAMED and _library_named(filename):
        _NAMED[filename] = None


def _caller_is(frame, func_path: tuple[str, str]) -> bool:
    """Whether ``frame`` runs the function ``module.name`` (its own code object, by identity)."""
    module = sys.modules.get(func_path[0])
    func = getattr(module, func_path[1], None) if module is not None else None
    return frame is not None and getattr(func, "__code__", None) is frame.f_code


def _audit(event: str, args: tuple) -> None:
    if _STATE[1]:
        return
    _STATE[1] = True
    try:
        if event == "exec":
            if (
                args
                and isinstance(args[0], types.CodeType)
                and _caller_is(sys._getframe(2), ("dataclasses", "_create_fn"))
            ):
                _DATACLASS_CODE.update(_codes(args[0]))
        elif event == "compile":
            if (
                len(args) > 1
                and _library_named(args[1])
                and args[1] not in _NAMED
                and not _is_file_text(args[0], args[1])
            ):
                _mark(args[1])
        elif event == "code.__new__":
            if len(args) > 1:
                _mark(args[1])
        elif not _caller_is(sys._getframe(2), ("_frozen_importlib_external", "_compile_bytecode")):
            # ``marshal.loads``/``marshal.load`` other than an import reading a cached .pyc
            if event == "marshal.loads" and args and isinstance(args[0], (bytes, bytearray, memoryview)):
                import marshal

                try:
                    made = marshal.loads(bytes(args[0]))
                except Exception:  # noqa: BLE001 - Python raises the same error to the caller
                    made = None
                for c in _codes(made) if isinstance(made, types.CodeType) else ():
                    _mark(c.co_filename)
            else:
                _ANY[0] = True
    except BaseException:  # noqa: BLE001 - not checked (the recursion limit): fail closed
        _ANY[0] = True
    finally:
        _STATE[1] = False


def install() -> None:
    """Watch code being made (once per process; capproof's package import calls it, before any
    model's module is imported)."""
    if not _STATE[0]:
        _STATE[0] = True
        from ._audit import on

        on(_audit, frozenset({"compile", "code.__new__", "marshal.loads", "marshal.load", "exec"}))


def genuine(code: types.CodeType) -> bool:
    """Whether ``code`` is its file's own code: true unless code was made under a library file's
    name by other than its import and ``code`` is not among the code compiled from that file's
    text (then it is a model's code, whatever file it names)."""
    if not _NAMED and not _ANY[0]:
        return True
    name = code.co_filename
    own = _NAMED.get(name, _MISSING)
    if own is _MISSING:
        if not _ANY[0] or not _library_named(name):
            return True
        own = None
    if own is None:
        own = _NAMED[name] = _own_codes(name)
    return code in own


def trusted_filename(code: types.CodeType) -> str:
    """``code.co_filename`` when :func:`genuine`, else a name no check trusts (no directory)."""
    name = code.co_filename
    if genuine(code):
        return name
    return f"<{os.path.basename(name)} as made by a model>"


def dataclass_code(code: object) -> bool:
    """Whether ``code`` is a method ``dataclasses`` wrote for a class (seen executed by
    ``dataclasses._create_fn``), not code that merely names ``<string>``."""
    return isinstance(code, types.CodeType) and code in _DATACLASS_CODE
