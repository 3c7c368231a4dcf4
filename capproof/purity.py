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
- the builtins ``setattr``, ``delattr``, ``getattr``, ``next``, ``exec``, ``eval``, ``globals``, ``vars``,
  ``open``, ``input``, ``__import__``;
- any C function or bound method it reaches (through a global, a closure cell, a
  ``functools.partial`` or a module attribute) that is not in :data:`PURE_BUILTINS` or a function of
  ``math``/``operator`` that does not change an argument: ``heapq.heappush(h, x)``,
  ``bisect.insort``, ``push = h.append`` and ``struct.pack_into`` change what they are given, and
  their code cannot be read, so they are refused by default (a list of what is known pure, not of
  what is known impure);
- an attribute of a module other than ``math``, ``operator`` and capproof's own (whose Python code
  may be library code this scan does not enter: ``random.shuffle``).

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
    {
        "setattr",
        "delattr",
        "getattr",
        "next",
        "exec",
        "eval",
        "globals",
        "vars",
        "open",
        "input",
        "__import__",
        "locals",
    }
)
#: C functions known to change nothing they are given (by identity; every other C callable a
#: step or element function reaches is refused)
PURE_BUILTINS = frozenset(
    id(f)
    for f in (
        abs,
        all,
        any,
        bool,
        divmod,
        enumerate,
        filter,
        float,
        hash,
        int,
        isinstance,
        issubclass,
        len,
        list,
        map,
        max,
        min,
        pow,
        range,
        repr,
        reversed,
        round,
        sorted,
        str,
        sum,
        tuple,
        zip,
        type,
        dict,
        set,
        frozenset,
        callable,
        chr,
        ord,
        bin,
        hex,
        oct,
        format,
        slice,
    )
)
#: ``operator`` functions that change an argument (the in-place ones and item stores)
_OPERATOR_WRITERS = frozenset(
    {
        "setitem",
        "delitem",
        "iadd",
        "iand",
        "iconcat",
        "ifloordiv",
        "ilshift",
        "imatmul",
        "imod",
        "imul",
        "ior",
        "ipow",
        "irshift",
        "isub",
        "itruediv",
        "ixor",
        "methodcaller",
    }
)
_C_CALLABLES = (
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    types.MethodWrapperType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
)


def _c_callable_impurity(obj) -> str | None:
    """A sentence when ``obj`` is a C callable not known pure (:data:`PURE_BUILTINS`, ``math``,
    ``operator`` without its writers), else None."""
    if not isinstance(obj, _C_CALLABLES) or id(obj) in PURE_BUILTINS:
        return None
    module = getattr(obj, "__module__", None) or getattr(getattr(obj, "__objclass__", None), "__module__", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", repr(obj))
    owner = getattr(obj, "__self__", None)
    bound = owner is not None and not isinstance(owner, _MODULE)
    if not bound and module in ("math", "cmath"):
        return None
    if not bound and module in ("_operator", "operator") and getattr(obj, "__name__", "") not in _OPERATOR_WRITERS:
        return None
    return f"reaches {module + '.' if module and not bound else ''}{name}, a C function not known to leave its arguments unchanged"


def _module_attribute_impurity(module, name: str) -> tuple[str | None, object]:
    """(a sentence or None, the attribute's value) for ``module.name`` read by a step."""
    mod = getattr(module, "__name__", "")
    value = getattr(module, name, None)
    if mod in ("math", "cmath") or mod.split(".")[0] == "capproof":
        return None, value
    if mod in ("operator", "_operator") and name not in _OPERATOR_WRITERS:
        return None, value
    return f"calls {mod}.{name}, from a module whose functions are not known pure", value


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
            obj,
            (type, types.FunctionType, types.MethodType, functools.partial, staticmethod, classmethod, property)
            + _C_CALLABLES,
        ):
            objects.append(obj)
        elif not kind.__module__.startswith(("builtins", "capproof", "z3")) and kind.__module__ not in _STDLIB_KINDS:
            objects.append(kind)  # an object the code calls methods of: its class's methods

    while stack or objects:
        if objects:
            obj = objects.pop()
            c_impurity = _c_callable_impurity(obj)
            if c_impurity is not None:
                if c_impurity not in found:
                    found.append(c_impurity)
                continue
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
        module = None  # the module the previous instruction loaded, whose attribute may be read next
        for ins in dis.get_instructions(code):
            op = ins.opname
            what = None
            loaded = module
            module = None
            if op in ("LOAD_ATTR", "LOAD_METHOD") and loaded is not None:
                what, value = _module_attribute_impurity(loaded, ins.argval)
                if what is None:
                    if isinstance(value, _MODULE):
                        module = value
                    elif value is not None:
                        push_object(value)
                    continue
            elif op in _WRITES:
                what = _WRITES[op].format(ins.argval)
            elif op in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in code.co_freevars:
                what = f"writes the variable {ins.argval} of an enclosing function"
            elif op in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in MUTATORS:
                what = f"calls .{ins.argval}(), which changes its object"
            elif op in ("LOAD_GLOBAL", "LOAD_NAME"):
                name = ins.argval
                if name in globs:
                    value = globs[name]
                    if isinstance(value, _MODULE):
                        module = value
                    else:
                        push_object(value)
                elif name in IMPURE_BUILTINS:
                    what = f"calls {name}()"
            elif op in ("LOAD_DEREF", "LOAD_CLOSURE") and ins.argval in free:
                if isinstance(free[ins.argval], _MODULE):
                    module = free[ins.argval]
                else:
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
