"""Is code that capproof runs outside its own call pure? (a static check of its bytecode)

Two strategies run a model's code other than the ints run it: induction (capproof.induction) runs
a fold's ``step`` once on a symbolic state where the ints run it once per entry, and the
aggregate abstraction (capproof.aggregate) runs ``f`` of ``total(f(d) for d in batch)`` or ``P``
of ``all_of(*(P(d) for d in batch))`` once on a stand-in entry. That is the same computation only
when the code has no effect but its value. :func:`function_impurities` and
:func:`genexpr_impurities` list what may have one, found in the bytecode of the code and of every
function it reaches through its globals, closure cells and classes (outside capproof, Z3 and the
standard library, as :func:`capproof.symbolic.type_lookups` walks them):

- a write to a global (``global x; x = ...``), to a closure cell of an enclosing function
  (``nonlocal``), to an attribute or through a subscript (``obj.x = ...``, ``d[k] = ...``, their
  ``del``);
- a call of a method that changes its object (``append``, ``update``, ``pop``, ``add``, ...);
- the builtins ``setattr``, ``delattr``, ``next``, ``exec``, ``eval``, ``globals``, ``vars``,
  ``open``, ``input``, ``__import__``.

The strategies then stand aside (the bounded encoding runs the model as the ints do). Conservative:
a subscript store into a list the code made itself is also refused. Calls through objects passed
in (dynamic dispatch) are not followed; the arguments there are ints, bools, tuples and symbolic
values, which have no such methods.
"""

from __future__ import annotations

import dis
import functools
import os
import types

__all__ = ["function_impurities", "genexpr_impurities"]

MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "popleft",
        "appendleft",
        "extendleft",
        "remove",
        "clear",
        "update",
        "setdefault",
        "popitem",
        "add",
        "discard",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
        "sort",
        "reverse",
        "rotate",
        "write",
        "writelines",
        "send",
        "throw",
        "put",
        "put_nowait",
        "get_nowait",
        "__setitem__",
        "__delitem__",
        "__setattr__",
        "__delattr__",
        "__iadd__",
        "cache_clear",
        "seek",
        "truncate",
    }
)
IMPURE_BUILTINS = frozenset(
    {"setattr", "delattr", "next", "exec", "eval", "globals", "vars", "open", "input", "__import__", "locals"}
)
_WRITES = {
    "STORE_GLOBAL": "writes the global {}",
    "DELETE_GLOBAL": "deletes the global {}",
    "STORE_ATTR": "sets the attribute {}",
    "DELETE_ATTR": "deletes the attribute {}",
    "STORE_SUBSCR": "stores through a subscript",
    "DELETE_SUBSCR": "deletes through a subscript",
}
_MODULE = type(os)
_STDLIB_KINDS = frozenset(
    {
        "collections",
        "functools",
        "itertools",
        "operator",
        "math",
        "fractions",
        "decimal",
        "enum",
        "dataclasses",
        "typing",
        "types",
        "abc",
        "_collections",
        "_functools",
        "_operator",
    }
)


def _generic(code: types.CodeType) -> bool:
    from .guard import is_library_file

    return is_library_file(code.co_filename)


def _scan(start: list[tuple[types.CodeType, dict, dict]]) -> list[str]:
    """``start``: (code, globals, free variable values by name) to scan; every function reached is
    scanned too. One sentence per effect found."""
    found: list[str] = []
    seen: set = set()
    stack = list(start)
    objects: list = []

    def push_object(obj) -> None:
        kind = type(obj)
        if isinstance(
            obj, (type, types.FunctionType, types.MethodType, functools.partial, staticmethod, classmethod, property)
        ):
            objects.append(obj)
        elif not kind.__module__.startswith(("builtins", "capproof", "z3")) and kind.__module__ not in _STDLIB_KINDS:
            objects.append(kind)  # an object the code calls methods of: its class's methods

    while stack or objects:
        if objects:
            obj = objects.pop()
            if isinstance(obj, (staticmethod, classmethod)):
                obj = obj.__func__
            if isinstance(obj, functools.partial):
                objects.append(obj.func)
                continue
            if isinstance(obj, property):
                objects.extend(f for f in (obj.fget,) if f is not None)
                continue
            if isinstance(obj, type):
                if id(obj) not in seen and obj.__module__ != "builtins":
                    seen.add(id(obj))
                    objects.extend(vars(obj).values())
                continue
            if isinstance(obj, types.MethodType):
                obj = obj.__func__
            code = getattr(obj, "__code__", None) if isinstance(obj, types.FunctionType) else None
            if isinstance(code, types.CodeType):
                free = {}
                for name, cell in zip(code.co_freevars, getattr(obj, "__closure__", None) or ()):
                    try:
                        free[name] = cell.cell_contents
                    except ValueError:  # an empty cell
                        pass
                stack.append((code, getattr(obj, "__globals__", {}), free))
            continue
        code, globs, free = stack.pop()
        if code in seen or _generic(code):
            continue
        seen.add(code)
        for value in free.values():
            push_object(value)
        where = f"{code.co_name} at {os.path.relpath(code.co_filename)}:{code.co_firstlineno}"
        nested = [k for k in code.co_consts if isinstance(k, types.CodeType)]
        for ins in dis.get_instructions(code):
            op = ins.opname
            what = None
            if op in _WRITES:
                what = _WRITES[op].format(ins.argval)
            elif op in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in code.co_freevars:
                what = f"writes the variable {ins.argval} of an enclosing function"
            elif op in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in MUTATORS:
                what = f"calls .{ins.argval}(), which changes its object"
            elif op in ("LOAD_GLOBAL", "LOAD_NAME"):
                name = ins.argval
                if name in globs:
                    value = globs[name]
                    if not isinstance(value, _MODULE):
                        push_object(value)
                elif name in IMPURE_BUILTINS:
                    what = f"calls {name}()"
            elif op in ("LOAD_DEREF", "LOAD_CLOSURE") and ins.argval in free:
                push_object(free[ins.argval])
            if what is not None:
                sentence = f"{where} {what}"
                if sentence not in found:
                    found.append(sentence)
        # nested code (lambdas, comprehensions) shares the globals; its free variables are this
        # code's cells or free variables, whose values are not known statically: scan the code
        stack.extend((k, globs, free) for k in nested)
    return found


def function_impurities(fn) -> list[str]:
    """What ``fn`` (a function, a functools.partial, a callable object) or the functions it
    reaches may change besides returning its value (see the module docstring); [] when pure."""
    if isinstance(fn, functools.partial):
        return function_impurities(fn.func)
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        call = getattr(type(fn), "__call__", None)  # noqa: B004 - the method, for its code
        code = getattr(call, "__code__", None)
        if not isinstance(code, types.CodeType):
            return []  # a builtin: no Python code to run twice
        fn = call
    free = {}
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        try:
            free[name] = cell.cell_contents
        except ValueError:
            pass
    return _scan([(code, getattr(fn, "__globals__", {}), free)])


def genexpr_impurities(frame: types.FrameType) -> list[str]:
    """What the generator expressions and comprehensions written in ``frame``'s code (the model
    iterating a batch there) may change besides their values; [] when pure."""
    code = frame.f_code
    local_values = frame.f_locals
    starts = []
    for k in code.co_consts:
        if isinstance(k, types.CodeType) and k.co_name in (
            "<genexpr>",
            "<listcomp>",
            "<setcomp>",
            "<dictcomp>",
            "<lambda>",
        ):
            free = {name: local_values[name] for name in k.co_freevars if name in local_values}
            starts.append((k, frame.f_globals, free))
    return _scan(starts)
