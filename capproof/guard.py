"""The introspection guard: find code that can tell a symbolic value from an int.

A model that looks up the builtin ``type`` or asks ``hasattr``/``getattr`` for an attribute only
a symbolic value (or only its int counterpart) has may take a branch on symbolic values that it
does not take on the ints they stand for. Such a branch is invisible to the solver, so the
prover makes the obligation an error (:func:`introspections`). The scan is static (bytecode of
the functions reachable from the model) and cached.
"""

from __future__ import annotations

import collections
import dis
import functools
import os
import sys
import types
import weakref

import z3

from .arith import Padded
from .provenance import dataclass_method, library_named, trusted_filename
from .symbolic import INT_OPERATORS, SymBool, SymInt

__all__ = ["type_lookups", "introspections"]


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_Z3_DIR = os.path.dirname(os.path.abspath(z3.__file__)) + os.sep
_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__)) + os.sep  # generic code (typing, functools)
_TYPE_LOOKUPS: dict = {}
_MODULE = type(os)


def is_library_file(filename: str) -> bool:
    """Whether code naming ``filename`` is a library's, not a model's (capproof's, Z3's, the
    standard library's, the mutation harness's installed one): :func:`capproof.provenance.library_named`,
    the one rule; callers pass :func:`capproof.provenance.trusted_filename` of a code object."""
    return library_named(filename)


def is_stdlib_file(filename: str) -> bool:
    """Whether ``filename`` is the standard library's Python source (not an installed package's,
    capproof's or Z3's)."""
    name = os.path.abspath(filename)
    return (
        name.startswith(_STDLIB_DIR)
        and os.sep + "site-packages" + os.sep not in name
        and not name.startswith((_PACKAGE_DIR, _Z3_DIR))
    )


def type_lookups(*funcs) -> list[str]:
    """Functions reachable from ``funcs`` that look up the builtin ``type``.

    ``type(x)`` of a symbolic int is not ``int`` and cannot be made so, so a model branching on it
    may run differently on ints; the prover makes such an obligation an error. Static and cheap
    (cached): follows the global names, ``module.attribute`` references, closures, classes'
    methods and nested code of each function, outside capproof, z3 and the standard library.
    Calls through objects passed in (dynamic dispatch) are not followed: the per-case semantics
    probe remains the check there. ``"name at file:line"`` per function.
    """
    return _scan(funcs)[0]


def _symbolic_internals() -> dict[int, str]:
    """capproof's symbolic machinery by id: a model that names one (``isinstance(x, SymInt)``,
    ``is_symbolic(x)``) can tell a symbolic value from an int."""
    from . import arith, symbolic

    objs = {
        name: getattr(symbolic, name, None)
        for name in ("SymInt", "SymBool", "Quotient", "is_symbolic", "to_z3_int", "to_z3_bool", "Trace", "explore")
    }
    objs.update({name: getattr(z3, name) for name in ("ExprRef", "ArithRef", "BoolRef", "AstRef", "is_expr", "is_int")})
    objs["_plain"] = getattr(arith, "_plain", None)
    import faulthandler
    import gc
    import inspect
    import json
    import marshal
    import operator
    import pickle
    import pprint
    import reprlib
    import threading
    import warnings

    # the trace hooks (a model could switch off the exception watch of a symbolic run) and the
    # standard library's repr (not the int's digits on a symbolic value)
    objs.update(
        {
            "sys.settrace (the exception watch)": sys.settrace,
            "threading.settrace (the exception watch)": threading.settrace,
            "sys.gettrace (the exception watch)": sys.gettrace,
            "threading.gettrace (the exception watch)": threading.gettrace,
            "sys.setprofile (the calls made on a symbolic value)": sys.setprofile,
            "threading.setprofile (the calls made on a symbolic value)": threading.setprofile,
            "sys.getprofile (the interpreter's hooks)": sys.getprofile,
            "sys.addaudithook (the interpreter's hooks)": sys.addaudithook,
            # the caller's frame, read in C (no audit event): the stack above a model is capproof's
            "warnings.warn (the caller's frame)": warnings.warn,
            # the stack written out by C code (no audit event)
            "faulthandler.dump_traceback (the stack)": faulthandler.dump_traceback,
            "faulthandler.dump_traceback_later (the stack)": faulthandler.dump_traceback_later,
            "faulthandler.register (the stack, on a signal)": faulthandler.register,
            "faulthandler.enable (the stack, on a fault)": faulthandler.enable,
            "reprlib.repr (a repr)": reprlib.repr,
            "reprlib.Repr (a repr)": reprlib.Repr,
            "pprint.pformat (a repr)": pprint.pformat,
            "pprint.saferepr (a repr)": pprint.saferepr,
            "pprint.pprint (a repr)": pprint.pprint,
            # identity by another name, and what C code sees of the object itself (an int is
            # immortal, untracked, refers to nothing, pickles and marshals; a symbolic value not)
            "operator.is_ (identity)": operator.is_,
            "operator.is_not (identity)": operator.is_not,
            "sys.getrefcount (the object itself)": sys.getrefcount,
            "inspect.getmodule (the object's class)": inspect.getmodule,
            "pickle.dumps (the object itself)": pickle.dumps,
            "pickle.dump (the object itself)": pickle.dump,
            "marshal.dumps (the object itself)": marshal.dumps,
            "marshal.dump (the object itself)": marshal.dump,
            # json's C encoder checks the real type: a symbolic value goes to ``default=``
            "json.dumps (the object's type)": json.dumps,
            "json.dump (the object's type)": json.dump,
            "json.JSONEncoder (the object's type)": json.JSONEncoder,
            # the builtins the guard matches by bare name, reached as ``builtins.id``
            "builtins.id (identity)": id,
            "builtins.type (the object's type)": type,
            "builtins.repr (a repr)": repr,
            "builtins.ascii (a repr)": ascii,
        }
    )
    objs.update({f"gc.{name} (the object itself)": getattr(gc, name) for name in dir(gc) if not name.startswith("_")})
    objs.update(_capproof_private())
    objs = {k: v for k, v in objs.items() if callable(v)}
    return {id(v): k for k, v in objs.items() if v is not None}


#: capproof's modules a spec author writes models with (loaded first: their ``__all__`` is public API)
_AUTHOR_MODULES = ("capproof.arith", "capproof.domain", "capproof.obligation", "capproof.errors")


def _capproof_private() -> dict[str, object]:
    """capproof's own functions and classes that are not its public API (the names ``import
    capproof`` exports and the ``__all__`` of its modules but the symbolic one): any of them may tell
    a symbolic value from an int (``capproof.arith.all_plain``), so a model that names one is misuse."""
    import importlib

    package = importlib.import_module("capproof")
    public = {id(getattr(package, name)) for name in getattr(package, "_WHERE", {})}
    for modname in _AUTHOR_MODULES:
        importlib.import_module(modname)
    for modname, module in list(sys.modules.items()):
        if modname.startswith("capproof.") and modname != "capproof.symbolic":
            held = types.ModuleType.__getattribute__(module, "__dict__")
            public |= {id(held[name]) for name in held.get("__all__", ()) if name in held}
    out: dict[str, object] = {}
    for modname, module in list(sys.modules.items()):
        if not modname.startswith("capproof."):
            continue
        for value in list(types.ModuleType.__getattribute__(module, "__dict__").values()):
            if (
                isinstance(value, (types.FunctionType, type))
                and str(getattr(value, "__module__", "")).startswith("capproof.")
                and id(value) not in public
                and not issubclass_safe(value, BaseException)
            ):
                out.setdefault(f"capproof's {value.__module__}.{value.__qualname__} (not its public API)", value)
    return out


def issubclass_safe(value: object, base: type) -> bool:
    return isinstance(value, type) and issubclass(value, base)


def _own_attributes() -> frozenset[str]:
    """Attribute names (not dunders) a SymInt or SymBool has and an int or bool lacks (``term``)."""
    names = (set(dir(SymInt)) - set(dir(int))) | (set(dir(SymBool)) - set(dir(bool)))
    return frozenset(n for n in names if not n.startswith("__"))


#: dunders both have that answer differently on a symbolic value (its slots' state, capproof's repr); ``__init__`` is left out (``super().__init__()`` is everywhere:
#: the exception watch sees a symbolic value's own ``__init__`` failing)
_DIFFERENT_DUNDERS = frozenset({"__getstate__", "__reduce__", "__reduce_ex__", "__repr__", "__dir__", "__sizeof__"})


#: what ``tuple``'s own methods read of a vector (a :class:`~capproof.arith.Padded`) when called
#: directly (``tuple.__getitem__(lens, -1)``): its padding, past the methods that watch it
_TUPLE_READS = frozenset(
    {
        "__getitem__",
        "__len__",
        "__iter__",
        "__reversed__",
        "__contains__",
        "count",
        "index",
        "__hash__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__add__",
        "__mul__",
        "__rmul__",
        "__repr__",
        "__sizeof__",
        "__getnewargs__",
    }
)


#: slots of the builtin ``object``/``int``/``bool`` that, called directly (``object.__eq__(a, b)``:
#: identity), see the object itself rather than the int it stands for
_SLOT_CALLS = frozenset(
    {
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__hash__",
        "__repr__",
        "__str__",
        "__format__",
        "__reduce__",
        "__reduce_ex__",
        "__sizeof__",
        "__dir__",
        "__getstate__",
    }
)


#: ``int``'s (and ``bool``'s) binary operators: called directly on an int (``(16).__mul__(n)``,
#: ``int.__mul__(16, n)``, ``True.__and__(c)``), one returns ``NotImplemented`` for a symbolic operand
_BINARY_SLOTS = frozenset(INT_OPERATORS)


def _slot_objects() -> dict[int, str]:
    """The builtin slots a model must not hold, by identity (however it came to hold them: module
    data, a closure, a default, a container), with what they are: ``int``'s and ``bool``'s binary
    operators (each returns ``NotImplemented`` for a symbolic operand, where the operator computes),
    ``NotImplemented`` itself, and ``object.__getattribute__`` (reads capproof's own attributes
    past their guards)."""
    out = {id(NotImplemented): "NotImplemented (an int's operator method gives it for a symbolic operand only)"}
    for kind in (int, bool):
        for name in INT_OPERATORS:
            slot = vars(kind).get(name)
            if slot is not None:
                out[id(slot)] = (
                    f"{kind.__name__}.{name}, whose call returns NotImplemented for a symbolic operand where "
                    "the operator itself would compute"
                )
    out[id(object.__getattribute__)] = (
        "object.__getattribute__, which reads a symbolic value's or a batch stand-in's own attributes past "
        "their guard (an int or a tuple has none of them)"
    )
    for name in sorted(_SLOT_CALLS | {"__setattr__", "__delattr__", "__class__", "__subclasshook__"}):
        slot = vars(object).get(name)
        if slot is not None:
            out[id(slot)] = f"object.{name}, which sees a symbolic value itself (its real type, size, identity)"
    return out


def _inherited_slot(name: str, value: object) -> bool:
    """Whether a class binds ``name`` to int's, bool's or object's own slot of that name (``__eq__ =
    int.__eq__`` in an int subclass: int's operator, not a call of it; ``__hash__ = object.__hash__``
    beside an ``__eq__``: its instances' hash)."""
    return value is vars(int).get(name) or value is vars(bool).get(name) or value is vars(object).get(name)


def _is_method_named(code: types.CodeType, name: str) -> bool:
    """Whether ``code`` is a class's method named ``name`` (not a function merely named so)."""
    parts = code.co_qualname.split(".")
    return code.co_name == name and len(parts) >= 2 and parts[-2] != "<locals>"


def _is_dunder_method(code: types.CodeType) -> bool:
    name = code.co_name
    return name.startswith("__") and name.endswith("__") and _is_method_named(code, name)


#: methods of a class that may call ``object.__getattribute__`` on their own instance
_ATTRIBUTE_METHODS = frozenset({"__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__dir__"})


def _name_argument_is_constant(instructions: list, start: int, k: int, globs: dict) -> bool:
    """Whether the ``k``-th argument (from 1) of the call whose callable was loaded just before
    ``instructions[start]`` is a constant string (a literal, or a global holding a str): a name
    computed at run time may be any attribute's. False when the arguments cannot be told apart
    (a jump among them)."""
    depth, depths = 0, []
    for ins in instructions[start:]:
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            return False
        try:
            depth += dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None, jump=False)
        except ValueError:
            return False
        if depth < k and len(depths) and max(depths) >= k:
            break  # the call itself consumed the arguments
        depths.append(depth)
    else:
        return False
    # the k-th argument: after the last point at depth k - 1, up to the last point at depth k
    ends = [i for i, d in enumerate(depths) if d == k]
    begins = [i for i, d in enumerate(depths) if d == k - 1]
    if not ends:
        return False
    end = ends[-1]
    begin = max((i for i in begins if i < end), default=-1) + 1
    if begin != end:
        return False
    ins = instructions[start + end]
    if ins.opname == "LOAD_CONST":
        return isinstance(ins.argval, str)
    if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
        return isinstance(globs.get(ins.argval), str)
    return False


def _getattr_like() -> dict[int, str]:
    """Functions that read an attribute by a name given as an argument, as ``getattr`` does."""
    import inspect
    import operator

    return {
        id(f): name
        for name, f in {
            "operator.attrgetter": operator.attrgetter,
            "operator.methodcaller": operator.methodcaller,
            "inspect.getattr_static": inspect.getattr_static,
        }.items()
    }


def _distinguishing_dunders() -> frozenset[str]:
    """Dunder attribute names whose read can tell a symbolic value from an int: one has it and the
    other lacks it (``__module__``, ``__slots__``), or both have it and answer differently."""
    names = (set(dir(SymInt)) ^ set(dir(int))) | (set(dir(SymBool)) ^ set(dir(bool)))
    # answered as on the int at run time (capproof.symbolic._AsOnInt): not flagged
    names -= {"__slots__", "__doc__"}
    return frozenset(n for n in names if n.startswith("__") and n.endswith("__")) | _DIFFERENT_DUNDERS


def introspections(*funcs) -> list[str]:
    """Why the functions reachable from ``funcs`` may run differently on symbolic values than on
    ints, one sentence each, found statically as :func:`type_lookups` finds them:
    a lookup of the builtin ``type``, or ``hasattr``/``getattr`` asked for an attribute name that
    a symbolic value (SymInt, SymBool, a padded batch) has and its int counterpart (int, bool,
    tuple) lacks, or the other way round (``hasattr(x, "term")``: capproof's own slot). Such a
    branch is invisible to the solver and may sit at a point no probe evaluates, so the prover
    makes the obligation an error instead of deciding it."""
    types_, attrs, others = _scan(funcs)
    return (
        [
            f"{where} uses type(), and type() of a symbolic int is not int: it may take a branch the ints do "
            "not (use isinstance)"
            for where in types_
        ]
        + [
            f"{where} asks hasattr/getattr for {name!r}, which a symbolic value and an int do not both have: it "
            "may take a branch the ints do not"
            for where, name in attrs
        ]
        + [
            f"{where} {what}" + ("" if "interpreter" in what else ": it may take a branch the ints do not")
            for where, what in others
        ]
    )


_DISTINGUISHING: frozenset[str] | None = None


def _distinguishing_names() -> frozenset[str]:
    """Attribute names one of a symbolic value and its int counterpart has and the other lacks."""
    global _DISTINGUISHING
    if _DISTINGUISHING is None:
        sym_int, sym_bool = set(dir(SymInt)), set(dir(SymBool))
        # a bool's numeric methods a SymBool lacks are left out when a SymInt has them: the branch
        # ``hasattr(x, "numerator")`` agrees on the ints a symbolic int stands for
        _DISTINGUISHING = frozenset(
            (sym_int ^ set(dir(int)))
            | (set(dir(Padded)) ^ set(dir(tuple)))
            | (sym_bool - set(dir(bool)))
            | (set(dir(bool)) - sym_bool - sym_int)
        )
    return _DISTINGUISHING


def _identity_is_meaningful(ins, globs: dict) -> bool:
    """Whether ``ins``, one of the two instructions before an ``is``, loads an operand whose
    identity means the same on ints and on symbolic values: ``None`` or another non-int constant,
    an attribute (``mode is CUDAGraphMode.FULL``), a global that is not an int. A bool constant
    is reported separately; a local, a call's result or an int may be a number, and ``a is b``
    of two equal small ints is True where two symbolic values never are one object."""
    if ins is None:
        return False
    if ins.opname == "LOAD_CONST":
        return not isinstance(ins.argval, int)
    if ins.opname in ("LOAD_ATTR", "LOAD_METHOD"):
        return True
    if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
        return ins.argval in globs and not isinstance(globs[ins.argval], int)
    return False


#: builtin types whose own slots, called directly, see the object itself or test its real type
_BUILTIN_TYPES = ("object", "int", "bool", "tuple", "complex", "float")

#: attributes that walk the class tree from a type: ``int.__base__`` is ``object``, whose slots
#: called on a symbolic value see the value itself; ``object.__subclasses__()`` lists capproof's
_CLASS_TREE = frozenset({"__base__", "__bases__", "__mro__", "mro", "__subclasses__"})


_CALLS = frozenset(
    {"CALL", "PRECALL", "CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX", "CALL_KW", "CALL_METHOD"}
)


#: containers whose items the scan walks when the project's code holds them
_CONTAINERS = frozenset({dict, list, tuple, set, frozenset, types.SimpleNamespace, types.MappingProxyType})
_CONTAINER_BASES = (dict, list, tuple, set, frozenset, collections.deque)
#: values that hold no code
_ATOMS = frozenset({int, bool, float, complex, str, bytes, type(None)})
#: container items looked into per scan; past it the scan fails closed (a note, so an error)
_CONTAINER_BUDGET = 1_000_000


def _items(obj: object) -> list:
    """The values a container holds (a dict's keys and values, a namespace's attributes)."""
    if isinstance(obj, types.SimpleNamespace):
        return list(vars(obj).values())
    try:
        items = list(obj.items()) if isinstance(obj, (dict, types.MappingProxyType)) else list(obj)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a container subclass that cannot be listed: nothing found in it
        return []
    return [v for kv in items for v in kv] if isinstance(obj, (dict, types.MappingProxyType)) else items


_SITE_DIRS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def _installed_file(filename: str) -> bool:
    """Whether ``filename`` is an installed package's, not the project's: under a ``site-packages``
    directory, or in a hidden directory under the working directory (``.venv``, an engine's
    sources checked out into ``.capproof/``), as :mod:`capproof.runner` tells the project's modules."""
    return _installed_under(filename, os.getcwd())


@functools.lru_cache(maxsize=65536)
def _installed_under(filename: str, cwd: str) -> bool:
    path = _resolved(filename)  # the file itself, not a link's name (an installed package's by name only)
    if any(d in path for d in _SITE_DIRS):
        return True
    root = _resolved(cwd) + os.sep
    return path.startswith(root) and f"{os.sep}." in os.sep + path[len(root) :]


def _resolved(path: str) -> str:
    """``os.path.realpath(path)``, an absolute path's resolved once per process (it does not depend on
    the working directory, which tests and a run's projects change)."""
    return _resolved_absolute(path) if type(path) is str and path.startswith(os.sep) else os.path.realpath(path)


@functools.lru_cache(maxsize=65536)
def _resolved_absolute(path: str) -> str:
    return os.path.realpath(path)


def _installed_code(value: object) -> bool:
    """Whether ``value`` is a function, method or class an installed package defines."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, type):
        return _installed(value) and value.__module__ != "builtins"
    code = getattr(getattr(value, "__func__", value), "__code__", None)
    return isinstance(code, types.CodeType) and _installed_file(trusted_filename(code))


def _installed(cls: type) -> bool:
    """Whether class ``cls`` comes from an installed package (or from C, or the standard library)."""
    cwd = os.getcwd()
    try:
        where, found = _CLASSES[cls]
        if where == cwd:
            return found
    except (KeyError, TypeError):
        pass
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    found = not isinstance(path, str) or _installed_under(path, cwd) or is_library_file(path)
    try:
        _CLASSES[cls] = (cwd, found)
    except TypeError:  # a class that cannot be a key
        pass
    return found


#: :func:`_installed` of the classes met, with the working directory it was told under
_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _held(func: object) -> list:
    """What a function holds: its closure's contents and its default values."""
    out = list(getattr(func, "__defaults__", None) or ())
    out += list((getattr(func, "__kwdefaults__", None) or {}).values())
    for cell in getattr(func, "__closure__", None) or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    return out


def _project_object(obj: object) -> bool:
    """Whether ``obj`` is an object (with attributes) of a class the project defines."""
    cls = type(obj)
    if isinstance(obj, type) or _installed(cls):
        return False
    try:
        return isinstance(object.__getattribute__(obj, "__dict__"), dict)
    except Exception:  # noqa: BLE001 - no attributes of its own
        return False


_TABLES: tuple[int, frozenset[int]] = (-1, frozenset())


def installed_tables() -> frozenset[int]:
    """The ids of the containers installed packages' modules hold as globals, computed when
    ``sys.modules`` changed size (the runner fills this before it forks, so its processes share it)."""
    return _installed_tables()


def _installed_tables() -> frozenset[int]:
    """The ids of the containers installed packages' modules hold as globals (``from engine.x import
    TABLE`` in a spec binds one): their provenance is the package's, and they are not walked."""
    global _TABLES
    if _TABLES[0] != len(sys.modules):
        found: set[int] = set()
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if not isinstance(path, str) or not _installed_file(path):
                continue
            try:
                held = types.ModuleType.__getattribute__(module, "__dict__")
            except Exception:  # noqa: BLE001 - an odd module object
                continue
            found.update(id(v) for v in list(held.values()) if type(v) in _CONTAINERS)
        _TABLES = (len(sys.modules), frozenset(found))
    return _TABLES[1]


#: builtins whose result does not depend on the order a set iterates in
_ORDER_FREE_FUNCS = frozenset({"len", "sorted", "set", "frozenset", "min", "max", "any", "all", "bool"})
#: set methods whose result does not depend on the order it iterates in
_ORDER_FREE_METHODS = frozenset({"issubset", "issuperset", "isdisjoint", "__contains__", "__len__"})
_NUMBERS = (int, float, bool, type(None))


def _seed_ordered(value: object) -> bool:
    """Whether ``value`` is a set or frozenset whose iteration order may change with the string hash
    seed: one holding anything but numbers (strings, bytes, enum members, tuples of them)."""
    return isinstance(value, (set, frozenset)) and any(not isinstance(v, _NUMBERS) for v in value)


def _order_free_call(ins, globs: dict) -> bool:
    """Whether instruction ``ins`` (the one before a set's load) loads an order-free builtin (``len``)."""
    return (
        ins is not None
        and ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")
        and ins.argval in _ORDER_FREE_FUNCS
        and ins.argval not in globs
    )


def _class_attribute(cls: type, name: str) -> object:
    """``cls``'s attribute ``name`` as stored (no descriptor or metaclass code run); None: none."""
    for klass in cls.__mro__:
        held = vars(klass)
        if name in held:
            return held[name]
    return None


def _interpreter_values() -> dict[int, str]:
    """Functions whose value differs between two interpreters running the same code (the process
    and thread ids), by id."""
    import _thread
    import threading

    named = {
        "os.getpid (the process id)": os.getpid,
        "os.getppid (the parent's process id)": os.getppid,
        "threading.get_ident (the thread id)": threading.get_ident,
        "threading.get_native_id (the thread id)": threading.get_native_id,
        "_thread.get_ident (the thread id)": _thread.get_ident,
    }
    return {id(f): name for name, f in named.items()}


def _class_walkers() -> dict[int, str]:
    """Library functions that hand the model a class's bases or members (``inspect.getmro(int)[-1]``
    is ``object``; ``inspect.getmembers(bool)`` holds ``object.__dir__``), by id: ``object``'s
    slots called on a symbolic value see the value itself."""
    import inspect

    names = ("getmro", "getmembers", "getmembers_static", "classify_class_attrs", "getattr_static")
    return {id(getattr(inspect, n)): f"inspect.{n}" for n in names if hasattr(inspect, n)}


def _scan(funcs: tuple) -> tuple[list[str], list[tuple[str, str]], list[tuple[str, str]]]:
    key = tuple(funcs)
    if key in _TYPE_LOOKUPS:
        return _TYPE_LOOKUPS[key]
    found: list[str] = []
    attrs: list[tuple[str, str]] = []
    # names of capproof's symbolic machinery, capproof's own attributes read, identity with a bool
    others: list[tuple[str, str]] = []
    distinguishing = _distinguishing_names()
    internals = _symbolic_internals()
    own_attrs = _own_attributes()
    dunders = _distinguishing_dunders()
    getattr_like = _getattr_like()
    slot_objects = _slot_objects()
    interpreter = _interpreter_values()
    walkers = _class_walkers()
    seen: set = set()
    # (object, whether the project's own code holds it): code held in a container is called as
    # surely as code held directly (a validator table ``CHECKS["plain_int"](k)``, a class attribute
    # list of rules), so the containers the project's code and classes hold are walked; those an
    # installed package's code holds (its registries, regex's pattern cache) are not
    stack: list[tuple[object, bool]] = [(f, True) for f in funcs]
    budget = _CONTAINER_BUDGET
    while stack:
        obj, own = stack.pop()
        if own and id(obj) in slot_objects:
            note = ("(the model's reach)", f"holds {slot_objects[id(obj)]}")
            if note not in others:
                others.append(note)
            continue
        if type(obj) in _CONTAINERS or isinstance(obj, _CONTAINER_BASES):
            if not own or id(obj) in seen or id(obj) in _installed_tables():
                continue
            seen.add(id(obj))
            items = _items(obj)
            budget -= len(items)
            if budget < 0:
                note = ("(the model's reach)", "holds containers too large to scan for the code they hold")
                if note not in others:
                    others.append(note)
                continue
            # what an installed package defines (an engine's functions and classes a table of the
            # project lists) is the package's code, not the project's: not scanned from here
            stack += [(v, True) for v in items if type(v) not in _ATOMS and not _installed_code(v)]
            continue
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            stack += [(f, own) for f in (obj.fget, obj.fset) if f is not None]
            continue
        if isinstance(obj, type):
            if id(obj) not in seen and obj.__module__ != "builtins":
                seen.add(id(obj))
                mine = not _installed(obj)
                for k, v in vars(obj).items():
                    if _inherited_slot(k, v):
                        continue
                    if dataclass_method(obj, k, v):
                        # dataclasses' own text for the class's fields: not scanned (``__init__``
                        # compares defaults with its sentinels by identity); what it holds is
                        stack += [(h, mine) for h in _held(v)]
                    else:
                        stack.append((v, mine))
            continue
        if isinstance(obj, functools.partial):
            stack += [(obj.func, own), *((v, own) for v in obj.args), *((v, own) for v in obj.keywords.values())]
            continue
        if isinstance(obj, types.ModuleType):
            # a module held in a closure has no code of its own to call; reading an attribute it
            # lacks runs its ``__getattr__`` (transformers' lazy modules import there)
            continue
        code = getattr(obj, "__code__", None)
        if not isinstance(code, types.CodeType):
            if own and id(obj) not in seen and _project_object(obj):
                # an object of a project class (a table of rules as an object): its class's methods
                # and what it holds
                seen.add(id(obj))
                stack += [(type(obj), True), (object.__getattribute__(obj, "__dict__"), True)]
            continue
        filename = trusted_filename(code)
        if code in seen or is_library_file(filename):
            continue
        seen.add(code)
        own = not _installed_file(filename)
        globs = getattr(obj, "__globals__", {})
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                stack.append((cell.cell_contents, own))
            except ValueError:  # an empty cell
                pass
        stack += [(v, own) for v in (getattr(obj, "__dict__", None) or {}).values()]
        stack += [(v, own) for v in getattr(obj, "__defaults__", None) or ()]
        stack += [(v, own) for v in (getattr(obj, "__kwdefaults__", None) or {}).values()]
        codes = [code]
        while codes:
            c = codes.pop()
            codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
            previous = None
            asking = False  # between a load of the builtin hasattr/getattr and the next call
            where = f"{c.co_name} at {os.path.relpath(c.co_filename)}:{c.co_firstlineno}"
            recent: list = [None, None]  # the two instructions before this one
            builtin_type = None  # the builtin object/int/bool just loaded (``object.__eq__``)
            seeded = None  # a set just loaded whose order depends on the hash seed: (name, order-free call?)
            instructions = list(dis.get_instructions(c))
            reading_vars = False  # just after a load of the builtin vars
            for index, ins in enumerate(instructions):
                before, recent = recent, [recent[1], ins]
                if reading_vars and ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval in _BUILTIN_TYPES:
                    if ins.argval not in globs:
                        note = (where, f"reads vars({ins.argval}), the builtin {ins.argval}'s own slots by name")
                        if note not in others:
                            others.append(note)
                reading_vars = (
                    ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval == "vars" and "vars" not in globs
                )
                if seeded is not None:
                    if not (
                        ins.opname in ("CONTAINS_OP", "COMPARE_OP")
                        or (seeded[1] and ins.opname in ("PRECALL", "CALL"))
                        or (ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in _ORDER_FREE_METHODS)
                    ):
                        note = (
                            where,
                            f"iterates or passes on the set {seeded[0]!r}, whose order changes with the "
                            "interpreter's string hash seed (PYTHONHASHSEED): a fresh interpreter may take "
                            "another path (iterate sorted(...))",
                        )
                        if note not in others:
                            others.append(note)
                    seeded = None
                if ins.opname == "IS_OP" and any(
                    b is not None and b.opname == "LOAD_CONST" and isinstance(b.argval, bool) for b in before
                ):
                    note = (
                        where,
                        "compares a value with True/False by identity (`is`), which a symbolic condition "
                        "never is (use ==)",
                    )
                    if note not in others:
                        others.append(note)
                if (ins.opname == "FORMAT_VALUE" and ins.argrepr.startswith(("repr", "ascii"))) or (
                    ins.opname == "LOAD_CONST"
                    and isinstance(ins.argval, str)
                    and ("%r" in ins.argval or "!r}" in ins.argval)
                ):
                    note = (
                        where,
                        "formats a value with its repr (`!r`, `%r`), which is not the int's digits for a "
                        "symbolic value",
                    )
                    if note not in others:
                        others.append(note)
                if ins.opname == "IS_OP" and not any(_identity_is_meaningful(b, globs) for b in before):
                    note = (
                        where,
                        "compares two values by identity (`is`/`id()`): equal ints may be one object, "
                        "equal symbolic values never are (use ==)",
                    )
                    if note not in others:
                        others.append(note)
                if (
                    ins.opname in ("LOAD_ATTR", "LOAD_METHOD")
                    and ins.argval in own_attrs
                    and not isinstance(previous, _MODULE)
                ):
                    note = (
                        where,
                        f"reads attribute {ins.argval!r}, which capproof's symbolic values have and ints lack",
                    )
                    if note not in others:
                        others.append(note)
                if (
                    builtin_type == "tuple"
                    and ins.opname in ("LOAD_ATTR", "LOAD_METHOD")
                    and ins.argval in _TUPLE_READS
                ):
                    note = (
                        where,
                        f"calls tuple.{ins.argval} directly, which reads a vector's padding unseen (capproof "
                        "decides the batch alone when the model reads it through the vector's own methods)",
                    )
                    if note not in others:
                        others.append(note)
                elif (
                    own
                    and builtin_type == "object"
                    and ins.opname in ("LOAD_ATTR", "LOAD_METHOD")
                    and ins.argval == "__getattribute__"
                    and c.co_name not in _ATTRIBUTE_METHODS
                ):
                    note = (
                        where,
                        "calls object.__getattribute__ directly, which reads a symbolic value's or a batch "
                        "stand-in's own attributes past their guard (an int or a tuple has none of them)",
                    )
                    if note not in others:
                        others.append(note)
                elif builtin_type and ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval == "__dict__":
                    note = (where, f"reads {builtin_type}.__dict__, the builtin {builtin_type}'s own slots by name")
                    if note not in others:
                        others.append(note)
                elif builtin_type and ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in _SLOT_CALLS:
                    note = (
                        where,
                        f"calls {builtin_type}.{ins.argval} directly, which sees the object itself (identity, its "
                        "own slots), not the int a symbolic value stands for",
                    )
                    if note not in others:
                        others.append(note)
                builtin_type = None
                if (
                    ins.opname in ("LOAD_ATTR", "LOAD_METHOD")
                    and ins.argval in _BINARY_SLOTS
                    and not _is_method_named(c, ins.argval)  # an operator method delegating to its own kind
                ) or (asking and ins.opname == "LOAD_CONST" and ins.argval in _BINARY_SLOTS):
                    note = (
                        where,
                        f"calls the operator method {ins.argval} directly: an int's returns NotImplemented for "
                        "a symbolic operand where the operator itself would compute",
                    )
                    if note not in others:
                        others.append(note)
                if (
                    ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")
                    and ins.argval == "NotImplemented"
                    and not _is_dunder_method(c)
                ):
                    note = (
                        where,
                        "reads NotImplemented outside an operator method: an int's operator method gives it for a "
                        "symbolic operand only",
                    )
                    if note not in others:
                        others.append(note)
                if (
                    ins.opname in ("LOAD_ATTR", "LOAD_METHOD")
                    and ins.argval in dunders
                    and not isinstance(previous, _MODULE)
                ):
                    note = (
                        where,
                        f"reads attribute {ins.argval!r}, which a symbolic value and an int do not both have "
                        "or answer differently",
                    )
                    if note not in others:
                        others.append(note)
                if (
                    asking
                    and ins.opname == "LOAD_CONST"
                    and isinstance(ins.argval, str)
                    and ins.argval in distinguishing
                ):
                    pair = (where, ins.argval)
                    if pair not in attrs:
                        attrs.append(pair)
                if ins.opname in _CALLS:
                    asking = False
                if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in ("__getattribute__", "__getattr__"):
                    asking = True  # ``object.__getattribute__(x, "term")``: getattr by another name
                if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in _CLASS_TREE:
                    note = (
                        where,
                        f"reads {ins.argval}, a class's bases or subclasses: object's own slots reached there "
                        "(object.__sizeof__, its __class__ descriptor) see a symbolic value itself, and capproof's "
                        "classes are among object's subclasses",
                    )
                    if note not in others:
                        others.append(note)
                if (
                    (ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval == "super" and "super" not in globs)
                    and not (
                        index + 1 < len(instructions)
                        and instructions[index + 1].opname in ("PRECALL", "CALL")
                        and instructions[index + 1].arg == 0
                    )
                ) or (ins.opname in ("LOAD_ATTR", "LOAD_METHOD", "LOAD_CONST") and ins.argval == "super"):
                    note = (
                        where,
                        "uses super other than as super() with no arguments: super(int, x) binds object's own "
                        "slots to a symbolic value itself (write super() in a method)",
                    )
                    if note not in others:
                        others.append(note)
                if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                    name = ins.argval
                    if name in _BUILTIN_TYPES and name not in globs:
                        builtin_type = name
                    value = globs.get(name)
                    if asking and isinstance(value, str) and (value in distinguishing or value in dunders):
                        pair = (where, value)  # the attribute name held in a global: ``getattr(x, NAME)``
                        if pair not in attrs:
                            attrs.append(pair)
                    if id(value) in getattr_like and value is not None:
                        asking = True
                    if name == "type" and "type" not in globs and where not in found:
                        found.append(where)
                    if name in ("repr", "ascii") and name not in globs:
                        note = (where, f"calls {name}(), and the repr of a symbolic value is not the int's digits")
                        if note not in others:
                            others.append(note)
                    if name == "id" and "id" not in globs:
                        note = (
                            where,
                            "compares two values by identity (`is`/`id()`): equal ints may be one object, "
                            "equal symbolic values never are (use ==)",
                        )
                        if note not in others:
                            others.append(note)
                    builtin_getattr = (name in ("hasattr", "getattr") and name not in globs) or (
                        value is not None and (value is getattr or value is hasattr)
                    )
                    if builtin_getattr:
                        asking = True
                    if (builtin_getattr or id(value) in getattr_like and value is not None) and own:
                        k = 1 if value is not None and getattr_like.get(id(value), "").startswith("operator.") else 2
                        if not _name_argument_is_constant(instructions, index + 1, k, globs):
                            note = (
                                where,
                                f"asks {name} for an attribute by a name computed at run time, which may be one "
                                "a symbolic value and an int do not both have (capproof's own)",
                            )
                            if note not in others:
                                others.append(note)
                    if name == "hash" and name not in globs:
                        note = (
                            where,
                            "calls hash(), whose value for a string changes with the interpreter's hash seed "
                            "(PYTHONHASHSEED): a fresh interpreter may take another path",
                        )
                        if note not in others:
                            others.append(note)
                    previous = globs.get(name)
                    if _seed_ordered(previous):
                        seeded = (name, _order_free_call(before[1], globs))
                    if id(previous) in interpreter and previous is not None:
                        note = (where, f"reads {interpreter[id(previous)]}, which differs between interpreters")
                        if note not in others:
                            others.append(note)
                    if id(previous) in internals and previous is not None:
                        note = (
                            where,
                            f"names capproof's {internals[id(previous)]}, which tells a symbolic value from an int",
                        )
                        if note not in others:
                            others.append(note)
                    if id(previous) in walkers and previous is not None:
                        note = (
                            where,
                            f"calls {walkers[id(previous)]}, which hands on a class's bases or members "
                            "(object's own slots, which see a symbolic value itself)",
                        )
                        if note not in others:
                            others.append(note)
                    if previous is not None and not isinstance(previous, _MODULE):
                        stack.append((previous, own))
                    continue
                if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and isinstance(previous, type):
                    held = _class_attribute(previous, ins.argval)
                    if _seed_ordered(held):
                        seeded = (f"{previous.__name__}.{ins.argval}", False)
                if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and isinstance(previous, _MODULE):
                    target = getattr(previous, ins.argval, None)
                    if _seed_ordered(target):
                        seeded = (f"{previous.__name__}.{ins.argval}", False)
                    if id(target) in interpreter and target is not None:
                        note = (where, f"reads {interpreter[id(target)]}, which differs between interpreters")
                        if note not in others:
                            others.append(note)
                    if id(target) in getattr_like and target is not None:
                        asking = True  # ``operator.attrgetter(name)(x)``: getattr by another name
                        k = 1 if getattr_like[id(target)].startswith("operator.") else 2
                        if own and not _name_argument_is_constant(instructions, index + 1, k, globs):
                            note = (
                                where,
                                f"asks {getattr_like[id(target)]} for an attribute by a name computed at run time, "
                                "which may be one a symbolic value and an int do not both have (capproof's own)",
                            )
                            if note not in others:
                                others.append(note)
                    if id(target) in internals and target is not None:
                        note = (
                            where,
                            f"names capproof's {internals[id(target)]}, which tells a symbolic value from an int",
                        )
                        if note not in others:
                            others.append(note)
                    if id(target) in walkers and target is not None:
                        note = (
                            where,
                            f"calls {walkers[id(target)]}, which hands on a class's bases or members "
                            "(object's own slots, which see a symbolic value itself)",
                        )
                        if note not in others:
                            others.append(note)
                    if isinstance(target, _MODULE):  # a package's submodule: ``capproof.symbolic.SymInt``
                        previous = target
                        continue
                    if target is not None:
                        stack.append((target, own))
                previous = None
    _TYPE_LOOKUPS[key] = (found, attrs, others)
    return found, attrs, others
