"""Adversarial catalogue: what Python's own C code sees of a symbolic value must not decide a proof.

A symbolic int answers every operator and ``isinstance`` as the int it stands for, but Python's C
code sees the real object: it is another object than an equal int (``a is b``, ``id()``), another
size (``sys.getsizeof``), another ``repr``, and ``int``'s own slot methods or an ``__index__``
returning it raise a ``TypeError`` the ints never raise. A model that branches on any of these,
or catches that ``TypeError``, takes a path on symbolic values that the ints do not take, and was
proved though its claim fails on ints. Each attempt fails at one point (``a == 37``) that the int
probe and the second opinion do not sample; it is brute forced on ints
(tests/_soundness_harness.py) and must be an ``error``, never ``proved``.
"""

from __future__ import annotations

import sys

import pytest
from _soundness_harness import HEADER, check

D = '@obligation(domain={"a": Range(0, 100)})\n'
DD = '@obligation(domain={"a": Range(0, 100), "b": Range(0, 100)})\n'

ATTEMPTS = [
    # equal small ints are one object; two symbolic values never are
    (
        "identity-of-two-parameters",
        DD
        + """
def f(a, b):
    if a is b:
        return a != 37
    return True
""",
    ),
    (
        "id-of-two-parameters",
        DD
        + """
def f(a, b):
    if id(a) == id(b):
        return a != 37
    return True
""",
    ),
    # int's slot methods reject the stand-in with a TypeError the model catches
    (
        "int-slot-method-typeerror-caught",
        D
        + """
def f(a):
    try:
        hit = int.__eq__(a, 37)
    except TypeError:
        hit = False
    return not_(hit)
""",
    ),
    (
        "int-add-slot-typeerror-caught",
        D
        + """
def f(a):
    try:
        b = int.__add__(a, 0)
    except TypeError:
        return True
    return b != 37
""",
    ),
    # an engine-style index wrapper whose __index__ returns the symbolic value
    (
        "index-dunder-returning-a-symbolic-value",
        """
class Pos:
    def __init__(self, v):
        self.v = v
    def __index__(self):
        return self.v
ROW = [0] * 101
ROW[37] = 9
"""
        + D
        + """
def f(a):
    try:
        x = ROW[Pos(a)]
    except TypeError:
        x = 0
    return at_most(demand=x, capacity=1)
""",
    ),
    # the object's size and repr are capproof's, not the int's
    (
        "getsizeof-of-a-symbolic-int",
        "import sys\n"
        + D
        + """
def f(a):
    if sys.getsizeof(a) <= 28:
        return a != 37
    return True
""",
    ),
    (
        "repr-of-a-symbolic-int",
        D
        + """
def f(a):
    if len(repr(a)) < 4:
        return a != 37
    return True
""",
    ),
    # a thread the model starts has no trace of its own: its caught errors must still count
    (
        "slot-method-typeerror-caught-in-a-thread",
        "import threading\n"
        + D
        + """
def f(a):
    out = []
    def work():
        try:
            out.append(int.__eq__(a, 37))
        except TypeError:
            out.append(False)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    return not_(out[0])
""",
    ),
    (
        "int-of-a-symbolic-value-caught-in-a-thread",
        "import threading\n"
        + D
        + """
def f(a):
    out = []
    def work():
        try:
            out.append(int(a) == 37)
        except TypeError:
            out.append(False)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    return not_(out[0])
""",
    ),
    (
        "f-string-repr-of-a-symbolic-int",
        D
        + """
def f(a):
    if len(f"{a!r}") < 4:
        return a != 37
    return True
""",
    ),
    # switching the watch off, a C encoder's TypeError naming `int`, the standard library's repr
    (
        "settrace-switches-the-watch-off",
        "import sys\n"
        + D
        + """
def f(a):
    sys.settrace(None)
    try:
        hit = int.__eq__(a, 37)
    except TypeError:
        hit = False
    return not_(hit)
""",
    ),
    (
        "json-dumps-typeerror-naming-int-caught",
        "import json\n"
        + D
        + """
def f(a):
    try:
        s = json.dumps(a)
    except TypeError:
        return True
    return s != "37"
""",
    ),
    (
        "reprlib-repr-of-a-symbolic-int",
        "import reprlib\n"
        + D
        + """
def f(a):
    if len(reprlib.repr(a)) < 4:
        return a != 37
    return True
""",
    ),
    # getattr by another name
    (
        "object-getattribute-of-capproofs-slot",
        D
        + """
def f(a):
    try:
        object.__getattribute__(a, "term")
        return True
    except AttributeError:
        return a != 37
""",
    ),
    # dunders a symbolic value has and an int lacks, or answers differently (read directly, no
    # hasattr/getattr): the static guard's list of attribute names
    ("dunder-repr-method", D + "def f(a):\n    if len(a.__repr__()) <= 3:\n        return a != 37\n    return True\n"),
    (
        "dunder-module",
        D
        + "def f(a):\n    try:\n        a.__module__\n    except AttributeError:\n        return a != 37\n    return True\n",
    ),
    (
        "dunder-slots",
        D
        + "def f(a):\n    try:\n        a.__slots__\n        return True\n    except AttributeError:\n        return a != 37\n",
    ),
    ("dunder-getstate", D + "def f(a):\n    if a.__getstate__() is None:\n        return a != 37\n    return True\n"),
    (
        "object-repr",
        D + "def f(a):\n    if object.__repr__(a).startswith('<int'):\n        return a != 37\n    return True\n",
    ),
    # C functions that see the object itself: gc, identity by operator, refcount, module lookup,
    # pickle and marshal
    (
        "gc-is-tracked",
        "import gc\n" + D + "def f(a):\n    if gc.is_tracked(a):\n        return True\n    return a != 37\n",
    ),
    (
        "gc-referents",
        "import gc\n"
        + D
        + "def f(a):\n    if len(gc.get_referents(a)) == 0:\n        return a != 37\n    return True\n",
    ),
    (
        "operator-is",
        "import operator\n"
        + DD
        + "def f(a, b):\n    if operator.is_(a, b):\n        return a != 37\n    return True\n",
    ),
    (
        "refcount",
        "import sys\n" + D + "def f(a):\n    if sys.getrefcount(a) > 1000:\n        return a != 37\n    return True\n",
    ),
    (
        "inspect-getmodule",
        "import inspect\n"
        + D
        + "def f(a):\n    if inspect.getmodule(a) is None:\n        return a != 37\n    return True\n",
    ),
    (
        "pickle-error-caught",
        "import pickle\n"
        + D
        + "def f(a):\n    try:\n        pickle.dumps(a)\n    except pickle.PicklingError:\n        return True\n    return a != 37\n",
    ),
    (
        "marshal-error-caught",
        "import marshal\n"
        + D
        + "def f(a):\n    try:\n        marshal.dumps(a)\n    except ValueError:\n        return True\n    return a != 37\n",
    ),
    # the same classes by other routes: object's own slots, the attribute name in a global,
    # getattr by another name, pickling by a pickler the guard does not name
    (
        "object-eq-identity",
        DD + "def f(a, b):\n    if object.__eq__(a, b) == True:\n        return a != 37\n    return True\n",
    ),
    (
        "object-hash-identity",
        DD
        + "def f(a, b):\n    if object.__hash__(a) == object.__hash__(b):\n        return a != 37\n    return True\n",
    ),
    (
        "getattr-by-global-name",
        "NAME = '__module__'\n"
        + D
        + "def f(a):\n    if getattr(a, NAME, None) is None:\n        return a != 37\n    return True\n",
    ),
    (
        "attrgetter-by-global-name",
        "import operator\nNAME = '__module__'\n"
        + D
        + "def f(a):\n    try:\n        operator.attrgetter(NAME)(a)\n    except AttributeError:\n        return a != 37\n    return True\n",
    ),
    (
        "getattr-static-slots",
        "import inspect\n"
        + D
        + "def f(a):\n    try:\n        inspect.getattr_static(a, '__slots__')\n    except AttributeError:\n        return a != 37\n    return True\n",
    ),
    (
        "forking-pickler",
        "from multiprocessing.reduction import ForkingPickler\n"
        + D
        + "def f(a):\n    try:\n        ForkingPickler.dumps(a)\n    except Exception:\n        return True\n    return a != 37\n",
    ),
    ("object-str", D + "def f(a):\n    if len(object.__str__(a)) <= 3:\n        return a != 37\n    return True\n"),
    (
        "json-default",
        "import json\n"
        + D
        + "def f(a):\n    if json.dumps(a, default=lambda o: -1) == '-1':\n        return True\n    return a != 37\n",
    ),
    (
        "object-reduce-ex",
        D + "def f(a):\n    if object.__reduce_ex__(a, 2)[1][0] == int:\n        return a != 37\n    return True\n",
    ),
    (
        "operator-is-not",
        "import operator\n"
        + DD
        + "def f(a, b):\n    if operator.is_not(a, b):\n        return True\n    return a != 37\n",
    ),
    (
        "builtins-id",
        "import builtins\n"
        + DD
        + "def f(a, b):\n    if builtins.id(a) == builtins.id(b):\n        return a != 37\n    return True\n",
    ),
    # an exception other than TypeError that only the symbolic value's own code raises
    (
        "init-again-attribute-error",
        D
        + "def f(a):\n    try:\n        a.__init__(0)\n    except AttributeError:\n        return True\n    return a != 37\n",
    ),
    # at the recursion limit a symbolic operation needs frames an int's does not (and Python
    # switches the exception watch off when it fails there)
    (
        "recursion-limit-side-channel",
        """
def probe(a):
    try:
        return probe(a)
    except RecursionError:
        try:
            a + 1
            return 0
        except RecursionError:
            return 1
"""
        + D
        + "def f(a):\n    if probe(a) == 1:\n        return True\n    return a != 37\n",
    ),
]


@pytest.mark.parametrize("name, body", ATTEMPTS, ids=[a[0] for a in ATTEMPTS])
def test_what_c_code_sees_of_a_symbolic_value_is_an_error(spec_file, name, body):
    result = check(spec_file, name, body, header=HEADER)
    assert result.verdict.value == "error", result.message


SOUND_USES = [
    # identity with None or an enum member means the same on ints and symbolic values
    (
        "is-none-and-enum-member",
        """
import enum
class Mode(enum.Enum):
    FULL = 1
    PIECEWISE = 2
MODE = Mode.FULL
CAP = None
"""
        + D
        + """
def f(a):
    limit = 100 if CAP is None else CAP
    if MODE is Mode.FULL:
        return at_most(demand=a, capacity=limit)
    return at_most(demand=a, capacity=0)
""",
    ),
]


def test_a_capture_size_lookup_by_list_index_is_still_decided(spec_file):
    """``sizes.index(n)`` raising ValueError (its message shows the value's repr) is a path the
    ints take too: it stays a counterexample, not an error."""
    body = (
        """
SIZES = [1, 2, 4, 8, 16, 32, 37, 64]
"""
        + D
        + """
def f(a):
    try:
        i = SIZES.index(a)
    except ValueError:
        return True
    return less_than(index=i, capacity=6)
"""
    )
    result = check(spec_file, "list-index", body, header=HEADER)
    assert result.verdict.value == "counterexample", result.message
    assert result.counterexample.params == {"a": 37}


def test_a_docstring_read_on_a_symbolic_value_is_the_ints(spec_file):
    """``a.__doc__`` is int's docstring on a symbolic value too: the model takes the path the ints
    take, and the claim false at 37 is a counterexample."""
    body = D + "def f(a):\n    if a.__doc__ == int.__doc__:\n        return a != 37\n    return True\n"
    result = check(spec_file, "dunder-doc", body, header=HEADER)
    assert result.verdict.value == "counterexample" and result.counterexample.params == {"a": 37}, result.message


@pytest.mark.parametrize("name, body", SOUND_USES, ids=[a[0] for a in SOUND_USES])
def test_sound_uses_of_identity_and_exceptions_are_still_proved(spec_file, name, body):
    result = check(spec_file, name, body, header=HEADER)
    assert result.verdict.value == "proved", result.message


def test_the_exception_watch_is_removed_after_the_run(spec_file):
    before = sys.gettrace()
    check(spec_file, "watch-removed", D + "def f(a):\n    return at_most(demand=a, capacity=100)\n", header=HEADER)
    assert sys.gettrace() is before
