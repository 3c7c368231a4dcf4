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
- a call of a method that changes its object (``append``, ``update``, ``pop``, ``add``, ...), any
  method read or called by a name a builtin or standard-library container has and that is not
  known pure (``__ior__``, ``__imul__``, ``__init__``, ``Counter.subtract``, ``__next__``:
  :data:`IMPURE_ATTRIBUTES`), and any method called by a name neither known pure
  (:data:`PURE_METHODS`) nor defined by a project class the code reaches;
- an augmented assignment (``a += x``) to anything but a parameter the code never rebinds: ``a``
  may be a list, set or dict changed in place;
- holding an iterator or generator (in a closure cell, a global, or a few levels inside one):
  ``any``, ``sum``, ``zip``, ``list`` are pure on a fresh iterable but advance a held one;
- standard-library Python code it reaches (not scanned): a method bound to an object other than
  by a known-pure name, a function;
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

import collections
import decimal
import dis
import enum
import fractions
import functools
import os
import sys
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
#: Method names known to leave their object unchanged: every method of the immutable builtins
#: (``tuple``, ``frozenset``, ``int``, ``float``, ``str``, ``bytes``) but those that set up or
#: change an object (``__init__`` refills a list in place), and the read-only methods of the
#: mutable ones. A method called by any other name is refused unless a project class the code
#: reaches defines it (its code is scanned) and no builtin or standard-library container has it
#: (``Counter.subtract``, ``dict.__ior__``, ``list.__imul__``, ``it.__next__``).
PURE_METHODS = frozenset(
    name
    for kind in (tuple, frozenset, int, float, str, bytes, bool, complex, range, slice)
    for name in dir(kind)
    # (not ``__getattribute__``: it fetches any attribute by a runtime name, ``h.__getattribute__("append")``)
    if name
    not in (
        "__init__",
        "__new__",
        "__setattr__",
        "__delattr__",
        "__init_subclass__",
        "__setstate__",
        "__getattribute__",
    )
) | frozenset(
    {"get", "keys", "values", "items", "copy", "most_common", "elements", "total", "fromkeys", "tolist", "tobytes"}
)


def _container_kinds() -> tuple[type, ...]:
    import array
    import collections
    import io

    return (
        list,
        dict,
        set,
        bytearray,
        memoryview,
        collections.deque,
        collections.Counter,
        collections.OrderedDict,
        collections.defaultdict,
        collections.ChainMap,
        array.array,
        io.StringIO,
        io.BytesIO,
        types.SimpleNamespace,
        type(iter([])),
        type(iter({})),
        types.GeneratorType,
    )


#: The attributes of the builtin and standard-library containers and iterators that are not known
#: pure: reading one, to call it then or later (``g = c.subtract``), is refused.
IMPURE_ATTRIBUTES = (
    frozenset(name for kind in _container_kinds() for name in dir(kind))
    - PURE_METHODS
    - frozenset(  # data a model reads (a shape, a size), not methods
        {
            "shape",
            "ndim",
            "itemsize",
            "nbytes",
            "strides",
            "suboffsets",
            "readonly",
            "c_contiguous",
            "f_contiguous",
            "contiguous",
            "typecode",
            "maxlen",
            "closed",
            "encoding",
            "errors",
            "newlines",
            "default_factory",
            "parents",
            "obj",
            "__name__",
            "__module__",
            "__qualname__",
            "__slots__",
            "__abstractmethods__",
            "__weakref__",
            "_abc_impl",
        }
    )
)


def _state_held(obj: object, depth: int = 0, budget: list | None = None) -> str:
    """What ``obj`` is or holds in its items or attributes (a few levels down) that a read changes:
    an iterator or generator (``any``, ``sum``, ``zip``, ``list`` are pure on a fresh iterable but
    advance a held one), a mapping whose missing keys a subscript inserts (``defaultdict``,
    ``__missing__``); '' when none."""
    budget = [2000] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0 or depth > 4 or isinstance(obj, (int, float, str, bytes, bool, type(None), range, type)):
        return ""
    kind = type(obj)
    if _capproofs(kind.__module__) or kind.__module__.split(".")[0] == "z3":  # (a batch vector: reads are watched)
        return ""
    if callable(getattr(kind, "__next__", None)):
        return f"an iterator ({kind.__name__}), which a call consuming it advances"
    if isinstance(obj, dict) and callable(getattr(kind, "__missing__", None)):
        return f"a {kind.__name__}, whose subscript inserts a missing key"
    if isinstance(obj, (types.FunctionType, types.ModuleType, types.CodeType)):
        return ""
    if isinstance(obj, dict):
        parts = [v for kv in list(obj.items()) for v in kv]
    elif isinstance(obj, (list, tuple, set, frozenset)):
        parts = list(obj)
    else:
        held = getattr(obj, "__dict__", None)
        parts = [held] if isinstance(held, dict) else []
    for part in parts:
        found = _state_held(part, depth + 1, budget)
        if found:
            return found
    return ""


def _ours(kind: type) -> bool:
    """A class of capproof or Z3 (a symbolic value: callable, pure)."""
    return _capproofs(kind.__module__) or kind.__module__.split(".")[0] == "z3"


def _capproofs(modname: str) -> bool:
    """capproof's own modules (not ``capproof_spec.*``, the spec files the loader imports)."""
    return modname == "capproof" or modname.startswith("capproof.")


def _project_class(cls: type) -> bool:
    """A class written in Python outside capproof, Z3 and the standard library (a spec file's or a
    model's): its methods are scanned."""
    return cls.__flags__ & (1 << 9) != 0 and not _library_class(cls)


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
        "attrgetter",  # fetches a method by a runtime name (``attrgetter("append")(h)``): the name lists cannot see it
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


_COMPARISONS = frozenset({"==", "!=", "<=", ">="})


def _own_parameters(code: types.CodeType, instructions: list) -> set[str]:
    """The parameters of ``code`` it never rebinds but with an augmented assignment: an in-place
    operator on one changes only what the caller passed (the fold's state or entry)."""
    params = set(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    for before, ins in zip([None, *instructions], instructions):
        augmented = before is not None and before.opname == "BINARY_OP" and before.argrepr.endswith("=")
        if ins.opname in ("STORE_FAST", "DELETE_FAST") and not augmented:
            params.discard(ins.argval)
    return params


def _stdlib_code(code: object) -> bool:
    """Whether ``code`` is the standard library's Python code (not capproof's, not Z3's)."""
    from .guard import is_stdlib_file
    from .provenance import trusted_filename

    return isinstance(code, types.CodeType) and is_stdlib_file(trusted_filename(code))


def _library_class(cls: type) -> bool:
    """A class of capproof, Z3 or the standard library: its methods are not scanned; a call of one
    by a name not known pure is refused (:data:`PURE_METHODS`)."""
    module = __import__("sys").modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    from .guard import is_library_file

    return isinstance(filename, str) and is_library_file(filename)


#: Containers whose items (and a mapping's values) the scan walks for the callables they hold,
#: subclasses included.
_WALKED_CONTAINERS = (
    tuple,
    list,
    set,
    frozenset,
    dict,
    types.SimpleNamespace,
    collections.deque,
    types.MappingProxyType,
)

#: Classes of the standard library or of C whose objects the code may hold without a scan:
#: immutable values with no state a method could change. An object of any other standard-library
#: or C class (not a container walked, a callable or a descriptor) makes the code not known pure.
_INERT_KINDS = frozenset(
    {
        int,
        bool,
        float,
        complex,
        str,
        bytes,
        type(None),
        range,
        slice,
        object,
        type(Ellipsis),
        type(NotImplemented),
        fractions.Fraction,
        decimal.Decimal,
    }
)


def _standard_class(cls: type) -> bool:
    """A class of the standard library, of C built into Python, or of capproof/Z3 (its methods are
    not scanned): not a project's or an installed third-party package's."""
    return (
        _library_class(cls)
        or _ours(cls)
        or cls.__module__.split(".")[0] in sys.stdlib_module_names
        or cls.__module__ in ("builtins", "__builtin__")
    )


def _generic(code: types.CodeType) -> bool:
    from .guard import is_library_file
    from .provenance import trusted_filename

    return is_library_file(trusted_filename(code))


def _defaulted(fn) -> set[str]:
    """The parameters of function ``fn`` that have a default value (``acc=h``)."""
    code = fn.__code__
    positional = code.co_varnames[: code.co_argcount]
    out = set(positional[len(positional) - len(fn.__defaults__ or ()) :])
    return out | set(fn.__kwdefaults__ or {})


def _scan(
    start: list[tuple[types.CodeType, dict, dict]], defaults: dict[types.CodeType, set[str]] | None = None
) -> list[str]:
    """``start``: (code, globals, free variable values by name) to scan; every function reached is
    scanned too. One sentence per effect found."""
    found: list[str] = []
    seen: set = set()
    stack = list(start)
    objects: list = []
    #: method names the code calls that are not known pure, and where
    called: list[tuple[str, str]] = []
    #: the methods of the project classes the code reaches (their code is scanned)
    scanned_methods: set[str] = set()
    #: the parameters with a default of each code reached: an object it holds, not the caller's
    defaulted: dict[types.CodeType, set[str]] = dict(defaults or {})
    top = {code for code, *_ in start}

    def note(what: str) -> None:
        if what not in found:
            found.append(what)

    budget = [20_000]  # container items looked into per scan; past it, fail closed

    def push_object(obj, depth: int = 0) -> None:
        kind = type(obj)
        if depth == 0:
            held = _state_held(obj)
            if held:
                note(f"holds {held}")
        if kind in (int, bool, float, str, bytes, complex, type(None), range):
            return
        if isinstance(obj, _WALKED_CONTAINERS):
            # a callable reached through a container is called as surely as one held directly
            # (a backend dispatch table ``handlers["flash"](x)``, a tuple of hooks), whatever
            # the container's class (a ``dict`` subclass, a ``deque``, a read-only mapping view)
            items = list(vars(obj).values()) if isinstance(obj, types.SimpleNamespace) else list(obj)
            if isinstance(obj, (dict, types.MappingProxyType)):
                items += list(obj.values())
            budget[0] -= len(items)
            if budget[0] < 0 or depth > 8:
                note("reaches containers too large or deep to scan for the callables they hold")
                return
            for item in items:
                push_object(item, depth + 1)
            if _project_class(kind):  # a project's subclass: its methods (``__missing__``) and attributes too
                objects.append(kind)
                held_attrs = getattr(obj, "__dict__", None)
                if isinstance(held_attrs, dict):
                    push_object(dict(held_attrs), depth + 1)
            return
        if isinstance(
            obj,
            (type, types.FunctionType, types.MethodType, functools.partial, staticmethod, classmethod, property)
            + _C_CALLABLES,
        ):
            objects.append(obj)
        elif _ours(kind):
            # a symbolic value or capproof's own helper: pure (and reading an attribute of a
            # symbolic value, even through getattr with a default, records a misuse of it)
            pass
        elif isinstance(getattr(obj, "__wrapped__", None), types.FunctionType) and not _project_class(kind):
            # a C wrapper (``functools.lru_cache``) around a Python function: its cache is state too
            note(f"calls a {kind.__name__} object, which keeps state of its own")
            objects.append(obj.__wrapped__)
        elif callable(obj) and not _project_class(kind) and not _ours(kind):
            # an object of a library class whose calls are not read (``operator.methodcaller``)
            note(f"reaches a {kind.__module__}.{kind.__qualname__} object, whose calls are not known pure")
        elif hasattr(kind, "__get__") and not _project_class(kind) and not _ours(kind):
            # a library descriptor (``functools.cached_property``): its getter runs on an attribute read
            for part in ("func", "fget", "fset", "fdel", "__func__"):
                inner = getattr(obj, part, None)
                if inner is not None:
                    push_object(inner, depth + 1)
        elif (
            not _project_class(kind)
            and not _ours(kind)
            and kind.__module__ not in ("builtins", "enum", "fractions", "decimal")
            and isinstance(getattr(obj, "__dict__", None), dict)
        ):
            # an instance of a library class (``queue.Queue``): its methods are not scanned, and a
            # method with a read-only name elsewhere (``get``) may change it (``Queue.get``)
            note(
                f"reaches a {kind.__module__}.{kind.__qualname__} object, a library class whose methods are not scanned"
            )
        elif _project_class(kind) or not _standard_class(kind):
            objects.append(kind)  # an object the code calls methods of: its class's methods
            held_attrs = getattr(obj, "__dict__", None)
            if isinstance(held_attrs, dict) and _project_class(kind):
                push_object(dict(held_attrs), depth + 1)  # and the callables its attributes hold
        elif not (kind in _INERT_KINDS or isinstance(obj, enum.Enum)):
            # known pure, not listed bad: an object of a standard-library or C class the code may
            # call methods of (``queue.SimpleQueue().get``, ``_random.Random().random`` fetched
            # into a name), which are not scanned and may change it
            note(f"reaches a {kind.__module__}.{kind.__qualname__} object, whose methods are not known pure")

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
                if id(obj) not in seen and obj.__module__ != "builtins" and not _library_class(obj):
                    seen.add(id(obj))
                    for value in list(vars(obj).values()):  # (descriptors, lists of functions: push_object)
                        if isinstance(value, (types.FunctionType, staticmethod, classmethod, property, type)):
                            objects.append(value)
                        else:
                            push_object(value, 1)
                    for name, value in vars(obj).items():
                        fn = getattr(value, "__func__", value)
                        if isinstance(fn, types.FunctionType) and not _generic(fn.__code__):
                            scanned_methods.add(name)
                continue
            stdlib = _stdlib_code(getattr(getattr(obj, "__func__", obj), "__code__", None))
            if stdlib and not (isinstance(obj, types.MethodType) and obj.__name__ in PURE_METHODS):
                # standard-library Python code is not scanned: a method bound to an object
                # (``c.subtract``, ``random.shuffle``) or a function given one may change it
                what = f"reaches {getattr(obj, '__qualname__', obj)}, standard-library code not known pure"
                if what not in found:
                    found.append(what)
                continue
            if isinstance(obj, types.MethodType):
                obj = obj.__func__
            code = getattr(obj, "__code__", None) if isinstance(obj, types.FunctionType) else None
            if isinstance(code, types.CodeType) and not _generic(code):
                # what its default arguments hold (``push=h.append``) is reached as its cells are
                for value in [*(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values()]:
                    push_object(value)
                defaulted.setdefault(code, set()).update(_defaulted(obj))
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
        instructions = list(dis.get_instructions(code))
        # (only the code run as the step or element function has the fold's own state and entry as
        # parameters; a helper it calls may be given a list the model holds: ``_stage(s, x, h)``)
        owned = _own_parameters(code, instructions) - defaulted.get(code, set()) if code in top else set()
        for at, ins in enumerate(instructions):
            op = ins.opname
            what = None
            loaded = module
            module = None
            if op == "BINARY_OP" and ins.argrepr.endswith("=") and ins.argrepr not in _COMPARISONS:
                # ``a += x`` changes a list, set or dict ``a`` in place: only a parameter the code
                # never rebinds (the fold's state and entry: ints, tuples) is known not to be one
                after = instructions[at + 1] if at + 1 < len(instructions) else None
                if after is None or after.opname != "STORE_FAST" or after.argval not in owned:
                    what = f"applies {ins.argrepr} to a value that may be a container it changes in place"
            elif op in ("LOAD_ATTR", "LOAD_METHOD") and loaded is not None:
                what, value = _module_attribute_impurity(loaded, ins.argval)
                if what is None:
                    if isinstance(value, _MODULE):
                        module = value
                    elif value is not None:
                        push_object(value)
                    continue
            elif op == "IMPORT_NAME":
                top = str(ins.argval).split(".")[0]
                if top not in ("math", "cmath", "operator", "capproof"):
                    what = f"imports {ins.argval}, whose functions are not known pure"
            elif op == "IMPORT_FROM" and ins.argval in _OPERATOR_WRITERS:
                what = f"imports {ins.argval}, which changes an argument"
            elif op in _WRITES:
                what = _WRITES[op].format(ins.argval)
            elif op in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in code.co_freevars:
                what = f"writes the variable {ins.argval} of an enclosing function"
            elif op in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in MUTATORS:
                what = f"calls .{ins.argval}(), which changes its object"
            elif op in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in IMPURE_ATTRIBUTES:
                what = f"reads .{ins.argval}, a method of a builtin container not known to leave it unchanged"
            elif op == "LOAD_METHOD" and ins.argval not in PURE_METHODS:
                called.append((ins.argval, where))
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
    for name, where in called:  # (after the walk: the project classes it reaches are known)
        sentence = f"{where} calls .{name}(), a method no project class it reaches defines: not known pure"
        if name not in scanned_methods and sentence not in found:
            found.append(sentence)
    return found


def function_impurities(fn) -> list[str]:
    """What ``fn`` (a function, a functools.partial, a callable object) or the functions it
    reaches may change besides returning its value (see the module docstring); [] when pure."""
    bound: set[str] = set()
    held: list = []
    if isinstance(fn, functools.partial):
        # the arguments a partial binds are objects it holds, not the fold's state or entry
        inner = fn.func
        while isinstance(inner, functools.partial):
            inner = inner.func
        held = [*fn.args, *fn.keywords.values()]
        code = getattr(inner, "__code__", None)
        skip = 1 if isinstance(inner, types.MethodType) else 0  # (a bound method's self)
        if skip:
            held.append(inner.__self__)
        if isinstance(code, types.CodeType):
            bound = set(code.co_varnames[skip : min(skip + len(fn.args), code.co_argcount)]) | set(fn.keywords)
        fn = inner
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
    # what its default arguments hold (``push=h.append``) is reached as its cells are
    defaults = [*(getattr(fn, "__defaults__", None) or ()), *(getattr(fn, "__kwdefaults__", None) or {}).values()]
    free.update((f" default {i}", value) for i, value in enumerate(defaults))
    own = (_defaulted(fn) if isinstance(fn, types.FunctionType) else set()) | bound
    free.update((f" bound {i}", value) for i, value in enumerate(held))
    return _scan([(code, getattr(fn, "__globals__", {}), free)], {code: own})


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
