"""Adversarial catalogue: what a model can observe of a symbolic value besides the names the static
guard lists must not decide a proof.

The static guard (capproof/guard.py) finds ``type()``, ``id()``, ``repr()``, ``is`` and
``hasattr``/``getattr`` of names only one side has; the exception watch records a ``TypeError``
caught in a symbolic run. Everything below escapes both: a dunder attribute read directly
(``a.__module__``, ``a.__slots__``, ``a.__doc__``, ``a.__repr__()``, ``a.__getstate__()``); the
standard library's introspection (``gc``, ``operator.is_``/``is_not``, ``object.__repr__``,
``object.__str__``, ``object.__reduce_ex__``, ``inspect.getmodule``, ``sys.getrefcount``,
``json``'s ``default=`` hook, ``abc``'s ``__subclasshook__``, capproof's class reached through
``sys.modules`` by a computed name); identity through ``object.__eq__``/``__hash__`` and
``builtins.id``; ``getattr`` by a
name held in a global, ``operator.attrgetter``, ``inspect.getattr_static``; an exception other
than ``TypeError`` raised only on a symbolic value (``AttributeError`` from ``SymInt.__init__``,
``PicklingError`` from ``pickle`` or ``ForkingPickler``, ``marshal``'s ``ValueError``, a
``RecursionError`` at the recursion limit, where an int's ``+`` needs no Python frame and a
``SymInt``'s does); a timing side channel; a spec that patches capproof's symbolic class at
import. Each model is false at one point (``a == 37``) the int probe and the second opinion do
not sample; the harness brute forces it on ints, padded and alone (tests/_soundness_harness.py).
Each was ``proved`` when written; the ones still proved are ``xfail(strict=True)`` (``STILL_OPEN``,
limits stated in docs/soundness.md): a fix flips one to a pass and its marker must then go.
"""

from __future__ import annotations

import pytest
from _soundness_harness import HEADER, check
from click.testing import CliRunner

from capproof.cli import main

D = '@obligation(domain={"a": Range(0, 100)})\n'
DD = '@obligation(domain={"a": Range(0, 100), "b": Range(0, 100)})\n'

UNFIXED = pytest.mark.xfail(
    strict=True, reason="proved though false at a == 37 on ints: the static guard and the exception watch miss it"
)
#: A side channel on time: a limit of docs/soundness.md; whether it fools the run depends on the
#: machine's load, so it is not a strict expectation either way.
TIMING = pytest.mark.xfail(strict=False, reason="a timing side channel: outside the guarantee (docs/soundness.md)")

#: Attempts still proved though false (limits stated in docs/soundness.md); the others are fixed.
STILL_OPEN: set[str] = set()


def _marks(name: str):
    if name == "timing-side-channel":
        return [TIMING]
    return [UNFIXED] if name in STILL_OPEN else []


ATTEMPTS = [
    # dunder attributes read directly (the guard looks at non-dunder own attributes and at
    # hasattr/getattr only): none raises on a SymInt, so the exception watch sees nothing
    (
        "dunder-repr-called-directly",
        D
        + """
def f(a):
    if len(a.__repr__()) <= 3:
        return a != 37
    return True
""",
    ),
    (
        "dunder-module-attribute",
        D
        + """
def f(a):
    try:
        a.__module__
    except AttributeError:
        return a != 37
    return True
""",
    ),
    (
        "dunder-slots-attribute",
        D
        + """
def f(a):
    try:
        a.__slots__
        return True
    except AttributeError:
        return a != 37
""",
    ),
    (
        "dunder-doc-attribute",
        D
        + """
def f(a):
    if a.__doc__ == int.__doc__:
        return a != 37
    return True
""",
    ),
    (
        "dunder-getstate",
        D
        + """
def f(a):
    if a.__getstate__() is None:
        return a != 37
    return True
""",
    ),
    # the standard library's introspection of the real object
    (
        "gc-is-tracked",
        "import gc\n"
        + D
        + """
def f(a):
    if gc.is_tracked(a):
        return True
    return a != 37
""",
    ),
    (
        "gc-get-referents",
        "import gc\n"
        + D
        + """
def f(a):
    if len(gc.get_referents(a)) == 0:
        return a != 37
    return True
""",
    ),
    (
        "operator-is-of-two-parameters",
        "import operator\n"
        + DD
        + """
def f(a, b):
    if operator.is_(a, b):
        return a != 37
    return True
""",
    ),
    (
        "object-repr-names-the-type",
        D
        + """
def f(a):
    if object.__repr__(a).startswith("<int"):
        return a != 37
    return True
""",
    ),
    (
        "sys-getrefcount-of-an-immortal-small-int",
        "import sys\n"
        + D
        + """
def f(a):
    if sys.getrefcount(a) > 1000:
        return a != 37
    return True
""",
    ),
    (
        "inspect-getmodule",
        "import inspect\n"
        + D
        + """
def f(a):
    if inspect.getmodule(a) is None:
        return a != 37
    return True
""",
    ),
    # exceptions other than TypeError, raised only on a symbolic value and caught by the model
    (
        "attribute-error-from-reinitialising-the-value",
        D
        + """
def f(a):
    try:
        a.__init__(0)
    except AttributeError:
        return True
    return a != 37
""",
    ),
    (
        "pickling-error-caught",
        "import pickle\n"
        + D
        + """
def f(a):
    try:
        pickle.dumps(a)
    except pickle.PicklingError:
        return True
    return a != 37
""",
    ),
    (
        "marshal-value-error-caught",
        "import marshal\n"
        + D
        + """
def f(a):
    try:
        marshal.dumps(a)
    except ValueError:
        return True
    return a != 37
""",
    ),
    (
        "recursion-error-at-the-limit",
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
        + """
def f(a):
    if probe(a) == 1:
        return True
    return a != 37
""",
    ),
    # the same classes by routes a list of names misses: identity through object's own slots, a
    # name that is not a constant at the call, the standard library's getattr, pickling's C code
    (
        "object-eq-is-identity",
        DD
        + """
def f(a, b):
    if object.__eq__(a, b) == True:
        return a != 37
    return True
""",
    ),
    (
        "object-hash-is-identity",
        DD
        + """
def f(a, b):
    if object.__hash__(a) == object.__hash__(b):
        return a != 37
    return True
""",
    ),
    (
        "getattr-with-a-name-held-in-a-global",
        'NAME = "__module__"\n'
        + D
        + """
def f(a):
    if getattr(a, NAME, None) is None:
        return a != 37
    return True
""",
    ),
    (
        "operator-attrgetter",
        'import operator\nNAME = "__module__"\n'
        + D
        + """
def f(a):
    try:
        operator.attrgetter(NAME)(a)
    except AttributeError:
        return a != 37
    return True
""",
    ),
    (
        "inspect-getattr-static",
        "import inspect\n"
        + D
        + """
def f(a):
    try:
        inspect.getattr_static(a, "__slots__")
    except AttributeError:
        return a != 37
    return True
""",
    ),
    (
        "pickling-error-from-a-pickler-not-named-pickle",
        "from multiprocessing.reduction import ForkingPickler\n"
        + D
        + """
def f(a):
    try:
        ForkingPickler.dumps(a)
    except Exception:
        return True
    return a != 37
""",
    ),
    (
        "object-str-calls-the-real-types-repr",
        D
        + """
def f(a):
    if len(object.__str__(a)) <= 3:
        return a != 37
    return True
""",
    ),
    (
        "object-reduce-ex-names-the-real-type",
        D
        + """
def f(a):
    if object.__reduce_ex__(a, 2)[1][0] == int:
        return a != 37
    return True
""",
    ),
    (
        "json-default-called-for-the-real-type-only",
        "import json\n"
        + D
        + """
def f(a):
    if json.dumps(a, default=lambda o: -1) == "-1":
        return True
    return a != 37
""",
    ),
    (
        "operator-is-not-of-two-parameters",
        "import operator\n"
        + DD
        + """
def f(a, b):
    if operator.is_not(a, b):
        return True
    return a != 37
""",
    ),
    (
        "capproofs-class-through-sys-modules-by-a-computed-name",
        "import sys\n"
        + D
        + """
def f(a):
    mod = sys.modules["capproof." + "symbolic"]
    if isinstance(a, getattr(mod, "Sym" + "Int")):
        return True
    return a != 37
""",
    ),
    (
        "abc-subclasshook-sees-the-real-type",
        """
import abc
class Probe(abc.ABC):
    @classmethod
    def __subclasshook__(cls, C):
        return C.__name__.startswith("Sym")
"""
        + D
        + """
def f(a):
    if isinstance(a, Probe):
        return True
    return a != 37
""",
    ),
    (
        "id-reached-as-builtins-id",
        "import builtins\n"
        + DD
        + """
def f(a, b):
    if builtins.id(a) == builtins.id(b):
        return a != 37
    return True
""",
    ),
    (
        "capproof-helper-read-from-its-module-at-run-time",
        "import capproof.arith as _arith\n"
        + D
        + """
def f(a):
    if _arith.all_plain([a]):
        return a != 37
    return True
""",
    ),
    (
        "capproof-helper-imported-by-name",
        "from capproof.arith import all_plain\n"
        + D
        + """
def f(a):
    if all_plain([a]):
        return a != 37
    return True
""",
    ),
    (
        "capproofs-class-through-importlib-by-a-computed-name",
        "import importlib\n"
        + D
        + """
def f(a):
    mod = importlib.import_module("capproof." + "encode")
    if isinstance(a, vars(mod)["Sym" + "Int"]):
        return True
    return a != 37
""",
    ),
    (
        "metaclass-subclasscheck-sees-the-real-type",
        """
class Meta(type):
    def __subclasscheck__(cls, C):
        return C.__name__ == "int"
class Registered(metaclass=Meta):
    pass
import abc
class Probe(abc.ABC):
    pass
Probe.register(Registered)
"""
        + D
        + """
def f(a):
    if isinstance(a, Probe):
        return a != 37
    return True
""",
    ),
    # the stack above the model (capproof's frames in a symbolic run, others on ints) and the
    # interpreter's hooks
    (
        "profile-function-sees-capproof",
        "import sys\n"
        + D
        + """
def f(a):
    calls = []
    sys.setprofile(lambda fr, ev, arg: calls.append(fr.f_code.co_filename) if ev == "call" else None)
    a + 1
    sys.setprofile(None)
    if any("capproof" in c for c in calls):
        return True
    return a != 37
""",
    ),
    (
        "traceback-extract-stack-names-capproofs-frames",
        "import traceback\n"
        + D
        + """
def f(a):
    if any("explore" in fr.name for fr in traceback.extract_stack()):
        return True
    return a != 37
""",
    ),
    (
        "caller-frame-through-sys-getframe",
        "import sys\n"
        + D
        + """
def f(a):
    if "symbolic" in sys._getframe(2).f_code.co_filename:
        return True
    return a != 37
""",
    ),
    (
        "frames-walked-from-a-caught-exception",
        "import sys\n"
        + D
        + """
def f(a):
    try:
        raise ValueError
    except ValueError:
        frame, depth = sys.exc_info()[2].tb_frame, 0
        while frame is not None:
            depth, frame = depth + 1, frame.f_back
    if depth > 25:
        return True
    return a != 37
""",
    ),
    (
        "trace-function-read-back",
        "import sys\n"
        + D
        + """
def f(a):
    if sys.gettrace() is not None:
        return True
    return a != 37
""",
    ),
    (
        "warning-attributed-to-a-frame-above",
        "import warnings\n"
        + D
        + """
def f(a):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warnings.warn("x", stacklevel=4)
    if "symbolic" in seen[0].filename or "explore" in seen[0].filename:
        return True
    return a != 37
""",
    ),
    # a side channel no static guard can see: symbolic arithmetic is orders of magnitude slower
    (
        "timing-side-channel",
        "import time\n"
        + D
        + """
def f(a):
    t0 = time.perf_counter()
    for _ in range(500):
        a + 1
    if time.perf_counter() - t0 > 0.005:
        return True
    return a != 37
""",
    ),
]


@pytest.mark.parametrize(
    "name, body", [pytest.param(*a, marks=_marks(a[0])) for a in ATTEMPTS], ids=[a[0] for a in ATTEMPTS]
)
def test_what_a_model_can_observe_of_a_symbolic_value_does_not_decide_a_proof(spec_file, name, body):
    check(spec_file, name, body, header=HEADER)


def test_a_spec_that_patches_the_symbolic_class_at_import_is_not_proved(spec_file):
    """A spec's top-level code is not the model's: capproof's symbolic classes are compared with
    what they bound at import before every symbolic run, and capproof's modules before and after
    each spec file is imported."""
    from capproof.symbolic import SymInt

    saved = SymInt.__dict__["__ne__"]
    try:
        body = (
            "import capproof.symbolic as _s\n_s.SymInt.__ne__ = lambda self, other: True\n"
            + D
            + "def f(a):\n    return a != 37\n"
        )
        check(spec_file, "patched-symbolic-class", body, header=HEADER)
    finally:
        SymInt.__ne__ = saved


HOLE = """
from capproof import Range, obligation, at_most

@obligation(domain={"max_model_len": Range(1, 65536), "a": Range(0, 100)}, engine="vllm", versions="==0.33.0")
def hole_with_a_parameter_no_flag_sets(max_model_len, a):
    try:
        a.__module__
    except AttributeError:
        return a != 37
    return True
"""


def test_check_config_is_not_safe_through_a_dunder_read(tmp_path):
    """check-config pins max_model_len from the flags; ``a`` stays symbolic, so the same hole gave
    ``safe`` (exit 0) for a claim that fails at a == 37 whatever the deployment."""
    path = tmp_path / "hole_spec.py"
    path.write_text(HOLE)
    result = CliRunner().invoke(
        main, ["check-config", "--spec", str(path), "--", "vllm", "serve", "m", "--max-model-len", "4096"]
    )
    assert result.exit_code != 0, result.output


BOUND = """
from capproof import Range, obligation, at_most

@obligation(domain={"a": Range(0, 100)})
def bound_through_a_dunder_read(a):
    try:
        a.__module__
        cap = 100
    except AttributeError:
        cap = 100 - (a == 37) * 200
    return at_most(demand=a, capacity=cap)
"""


def test_bound_does_not_report_sufficient_through_a_dunder_read(project):
    """On ints the capacity at a == 37 is -100 (slack -137); ``bound`` reported a minimum slack of 0
    and no insufficient case."""
    (project / "spec" / "hole_bound.py").write_text(BOUND)
    result = CliRunner().invoke(main, ["bound", "spec/hole_bound.py"])
    assert result.exit_code != 0 or "-137" in result.output, result.output


STACK = {
    "sys-current-frames": """
import sys, threading

@obligation(domain={"a": Range(0, 100)})
def frames(a):
    f = sys._current_frames()[threading.get_ident()]
    names = set()
    while f is not None:
        names.add(f.f_code.co_filename.rsplit("/", 1)[-1])
        f = f.f_back
    return claim(implies(a == 37, "prover.py" in names), a=a)
""",
}


STACK["faulthandler-dump-traceback"] = """
import faulthandler, tempfile

@obligation(domain={"a": Range(0, 100)})
def dumped(a):
    with tempfile.TemporaryFile("w+") as f:
        faulthandler.dump_traceback(file=f, all_threads=False)   # C code: no audit event
        f.seek(0)
        text = f.read()
    return claim(implies(a == 37, "prover.py" in text), a=a)
"""
STACK_OPEN: set[str] = set()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            k,
            marks=[pytest.mark.xfail(strict=True, reason="the model reads the stack without an audited call")]
            if k in STACK_OPEN
            else [],
        )
        for k in sorted(STACK)
    ],
)
def test_a_model_reading_its_call_stack_is_not_proved(spec_file, name):
    """A claim that asks whether capproof's prover is among its callers (through
    ``sys._current_frames``, not ``sys._getframe``) holds in every capproof evaluation (probe,
    symbolic run, second opinion) and fails on a plain call at a == 37."""
    check(spec_file, name, STACK[name], header=HEADER + "from capproof import claim\n")


#: ``callable()`` of a symbolic value is True (a ``SymInt`` is callable), of an int False: a model
#: that takes a config value "or a zero-argument factory" branches differently on the symbolic run.
CALLABLE_ATTEMPTS = [
    (
        "callable-value-or-factory",
        D + "def f(a):\n    extra = 0 if callable(a) else select(a == 37, 1, 0)\n"
        "    return at_most(demand=extra, capacity=0)\n",
    ),
    (
        "callable-probe",
        D + "def f(a):\n    on_ints = callable(a) == False  # noqa: E712\n"
        "    return at_most(demand=select(all_of(a == 37, on_ints), 1, 0), capacity=0)\n",
    ),
]


@pytest.mark.parametrize("name, body", CALLABLE_ATTEMPTS, ids=[a[0] for a in CALLABLE_ATTEMPTS])
def test_callable_of_a_symbolic_value_does_not_decide_a_proof(spec_file, name, body):
    check(spec_file, name, body, header=HEADER)


#: The static guard reads the code a model reaches through globals, closures and classes' methods:
#: ``type(v) is int`` in a lambda held in a validator table (a dict, a class attribute's list) is
#: never read, and on the symbolic run ``type`` of a symbolic int is not ``int``.
CONTAINER_ATTEMPTS = [
    (
        "type-test-in-a-validator-dict",
        "CHECKS = {'plain_int': lambda v: type(v) is int}\n"
        + D
        + "def f(a):\n    extra = select(a == 37, 1, 0) if CHECKS['plain_int'](a) else 0\n"
        "    return at_most(demand=extra, capacity=0)\n",
    ),
    (
        "type-test-in-a-class-attribute-list",
        "class Validators:\n    RULES = [lambda v: type(v) is int]\n\n\n"
        + D
        + "def f(a):\n    extra = select(a == 37, 1, 0) if Validators.RULES[0](a) else 0\n"
        "    return at_most(demand=extra, capacity=0)\n",
    ),
]


@pytest.mark.parametrize("name, body", CONTAINER_ATTEMPTS, ids=[a[0] for a in CONTAINER_ATTEMPTS])
def test_a_type_test_held_in_a_container_does_not_decide_a_proof(spec_file, name, body):
    check(spec_file, name, body, header=HEADER)
