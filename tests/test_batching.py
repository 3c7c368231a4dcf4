"""Short obligations decided a few to a process (capproof.runner.BATCH_ITEMS) get exactly the
results they get at a process each: what one item leaves behind outside the module data the
fingerprint checks must not reach the next item of its batch, and a model that forks must not
make the run lose or duplicate results."""

from __future__ import annotations

import pytest
from _tiers import fast_few
from test_soundness import SHARED_STATE

import capproof.runner as runner
from capproof import Options
from capproof.runner import run

HEADER = """
import os, signal, sys, threading, time, warnings
import z3
import capproof.arith, capproof.domain
from capproof import Range, obligation, at_most
"""

# (what the first item does, what the second reads): alone, the second is proved
LEFT_BEHIND = {
    "class_attribute": ("class Cfg:\n    slack = 0\n", "Cfg.slack = 5", "Cfg.slack"),
    "closure": (
        "def _cell():\n    box = [0]\n    def put(v):\n        box[0] = v\n    def get():\n        return box[0]\n"
        "    return put, get\nput, get = _cell()\n",
        "put(5)",
        "get()",
    ),
    "environment": ("", "os.environ['CAPPROOF_TEST_SLACK'] = '5'", "int(os.environ.get('CAPPROOF_TEST_SLACK', '0'))"),
    "patched_capproof_function": ("", "capproof.arith.minimum = lambda *a: 5", "capproof.arith.minimum(0, 0)"),
    "rebound_capproof_constant": ("", "capproof.domain.MAX_CASES = 1", "(5 if capproof.domain.MAX_CASES == 1 else 0)"),
    "warnings_filter": ("", "warnings.simplefilter('error')", "(5 if warnings.filters[0][0] == 'error' else 0)"),
    "int_str_limit": ("", "sys.set_int_max_str_digits(640)", "(5 if sys.get_int_max_str_digits() == 640 else 0)"),
    "patched_builtin": ("import builtins\n", "builtins.abs = lambda v: 5", "abs(0)"),
    "patched_math": ("import math\n", "math.isqrt = lambda v: 5", "math.isqrt(0)"),
    "capproof_table": (
        "",
        "capproof.arith.DTYPES['capproof_test'] = (5, True)",
        "capproof.arith.DTYPES.get('capproof_test', (0, True))[0]",
    ),
    # an interpreter hook left behind (a profile function: the trace function is capproof's own
    # exception watch during a symbolic run, and a model that sets it is an error)
    "profile_function": ("", "sys.setprofile(lambda *a: None)", "(5 if sys.getprofile() else 0)"),
    # a name planted on a library module, on a library class, or a module planted in sys.modules
    "library_module_attribute": (
        "import json\n",
        "json.capproof_test_seen = True",
        "(5 if getattr(json, 'capproof_test_seen', False) else 0)",
    ),
    "library_class_attribute": (
        "import fractions\n",
        "fractions.Fraction.capproof_test_seen = True",
        "(5 if getattr(fractions.Fraction, 'capproof_test_seen', False) else 0)",
    ),
    "sys_modules_entry": (
        "import types\n",
        "sys.modules.setdefault('capproof_test_planted', types.ModuleType('capproof_test_planted'))",
        "(5 if 'capproof_test_planted' in sys.modules else 0)",
    ),
}


def _pair(setup: str, leave: str, read: str) -> str:
    return (
        HEADER
        + setup
        + f"""
@obligation(domain={{"x": Range(0, 10)}})
def leaves(x):
    {leave}
    return at_most(demand=x, capacity=10)

@obligation(domain={{"x": Range(0, 10)}})
def reads(x):
    return at_most(demand=x, capacity=10 - {read})
"""
    )


def _verdicts(project, source: str, batch_items: int, monkeypatch, **options) -> list[tuple[str, str, str]]:
    monkeypatch.setattr(runner, "BATCH_ITEMS", batch_items)
    (project / "spec" / "batch.py").write_text(source)
    result = run(["spec/batch.py"], Options(jobs=1, contracts=False, density="off", **options))
    return [(r.id.split("::")[1], r.verdict.value, r.message) for r in result.obligations]


#: The kinds the fast tier keeps (one path each: the others run in the slow tier).
FAST_LEFT_BEHIND = {"capproof_table", "class_attribute", "environment", "patched_math", "warnings_filter"}


@pytest.mark.parametrize("kind", fast_few(sorted(LEFT_BEHIND), FAST_LEFT_BEHIND))
def test_state_outside_module_data_does_not_reach_the_next_item_of_a_batch(project, monkeypatch, kind):
    source = _pair(*LEFT_BEHIND[kind])
    alone = _verdicts(project, source, 1, monkeypatch)
    # (setting or reading a profile function in a model is misuse: the stack above it differs; a
    # writer that changed state while deciding it is an error, its own evaluations may share it)
    verdicts = [v for _, v, _ in alone]
    assert verdicts == ["error", "error"] if kind == "profile_function" else verdicts[1] == "proved", alone
    assert verdicts[0] in ("proved", "error")
    assert _verdicts(project, source, 12, monkeypatch) == alone


def test_z3_global_parameters_set_by_an_item_do_not_reach_the_next(project, monkeypatch):
    source = (
        HEADER
        + """
@obligation(domain={"x": Range(0, 10)})
def leaves(x):
    z3.set_param("timeout", 1)
    z3.set_param("smt.arith.solver", 1)
    return at_most(demand=x, capacity=10)

@obligation(domain={"x": Range(0, 10**9), "y": Range(0, 10**9), "z": Range(1, 10**9)})
def reads(x, y, z):
    return at_most(demand=(x * y) // z, capacity=10**18)
"""
    )
    # `leaves` decides its own claim under the 1 ms timeout it set: proved, or unknown on a loaded
    # machine (CI saw it), in either mode. The point is `reads`, after it: never under that timeout.
    alone = _verdicts(project, source, 1, monkeypatch)
    assert alone[1][1] == "proved" and alone[0][1] in ("proved", "unknown"), alone
    batched = _verdicts(project, source, 12, monkeypatch)
    assert batched[1] == alone[1] and batched[0][1] in ("proved", "unknown"), batched


def test_a_timer_or_thread_left_running_is_not_charged_to_the_next_item(project, monkeypatch):
    """The first item leaves a timer (SIGALRM ends the process) or a thread that ends the process
    ten seconds later; the item after it waits for them, if there are any: in a process of its
    own there are none, and it is proved."""
    source = (
        HEADER
        + """
@obligation(domain={"x": Range(0, 10)})
def alarm(x):
    if signal.getitimer(signal.ITIMER_REAL)[0] == 0:
        signal.setitimer(signal.ITIMER_REAL, 10)
    return at_most(demand=x, capacity=10)

@obligation(domain={"x": Range(0, 10)})
def after_alarm(x):
    while signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        time.sleep(0.01)
    return at_most(demand=x, capacity=10)

@obligation(domain={"x": Range(0, 10)})
def thread(x):
    if threading.active_count() == 1:
        threading.Thread(target=lambda: (time.sleep(10), os._exit(7)), daemon=True).start()
    return at_most(demand=x, capacity=10)

@obligation(domain={"x": Range(0, 10)})
def after_thread(x):
    while threading.active_count() > 1:
        time.sleep(0.01)
    return at_most(demand=x, capacity=10)
"""
    )
    batched = _verdicts(project, source, 12, monkeypatch)
    # (the items that leave a timer or a thread running are errors: state changed while deciding them)
    verdicts = dict((name, v) for name, v, _ in batched)
    assert verdicts["after_alarm"] == verdicts["after_thread"] == "proved", batched
    assert verdicts["alarm"] in ("proved", "error") and verdicts["thread"] in ("proved", "error")


def test_a_model_that_forks_loses_or_duplicates_no_result(project, monkeypatch):
    """The model forks once (the copy goes on deciding, as the original does): every item gets
    one result, as at a process each, and the run does not break on a second answer."""
    source = (
        HEADER
        + """
@obligation(domain={"x": Range(0, 10)})
def forks(x):
    if not hasattr(sys, "_capproof_test_forked"):
        sys._capproof_test_forked = True
        os.fork()
    return at_most(demand=x, capacity=10)

@obligation(domain={"x": Range(0, 10)})
def next_one(x):
    return at_most(demand=x, capacity=10)

@obligation(domain={"x": Range(0, 10)}, expect="counterexample")
def last(x):
    return at_most(demand=x, capacity=9)
"""
    )
    alone = _verdicts(project, source, 1, monkeypatch)
    # (forks sets an attribute of sys while deciding it: an error, as at a process each)
    assert [(name, v) for name, v, _ in alone][1:] == [("next_one", "proved"), ("last", "counterexample")]
    assert alone[0][1] in ("proved", "error")
    batched = _verdicts(project, source, 12, monkeypatch)
    # (forks may be caught by either check, whichever runs first: the sys attribute it sets, or
    # the fresh copy whose own fork closes the answer pipe; the verdict is the same, the reason may differ)
    assert [(name, v) for name, v, _ in batched] == [(name, v) for name, v, _ in alone]
    assert batched[1:] == alone[1:]


def test_a_spec_file_outside_the_working_directory_is_not_batched(spec_file, monkeypatch):
    """run() on a spec file outside the working directory (a tmp_path here, the repository the
    working directory): module_state fingerprints only modules under the working directory, so
    such a file's items each get a process of their own; one item's change of the module data
    does not reach the next."""
    path = spec_file(SHARED_STATE, "outside_cwd.py")  # a_sets_state, then b_reads_state (test_soundness.py)
    got = {}
    for batch_items in (12, 1):
        monkeypatch.setattr(runner, "BATCH_ITEMS", batch_items)
        result = run([path], Options(jobs=1, contracts=False, density="off"))
        got[batch_items] = [(r.id.split("::")[1], r.verdict.value, r.message) for r in result.obligations]
    assert got[12] == got[1]
    # (the writer changes its spec module's data while deciding it: an error, wherever the file is)
    assert [v for _, v, _ in got[12]][1] == "proved" and got[12][0][1] in ("proved", "error")


def test_time_spent_between_the_items_of_a_batch_is_charged_to_none(project, monkeypatch):
    """A class attribute that takes a minute to fingerprint makes the check a batch runs before its
    first item and between items (runner._leftovers) outlast the time limit: no item was being
    decided, so none is charged; each gets a process of its own, where it is proved."""
    source = (
        HEADER
        + """
class Slow:
    def __reduce__(self):
        time.sleep(60)
        return (int, ())

class Cfg:
    held = Slow()

@obligation(domain={"x": Range(0, 10)})
def first(x):
    return at_most(demand=x, capacity=10)

@obligation(domain={"x": Range(0, 10)})
def second(x):
    return at_most(demand=x, capacity=10)
"""
    )
    batched = _verdicts(project, source, 12, monkeypatch, timeout=4)
    assert [(name, v) for name, v, _ in batched] == [("first", "proved"), ("second", "proved")]


# --- fingerprinting only what an item can reach, and failing closed where it cannot ------------

ADVERSARIAL_MODELS = '''
import threading

TABLE = {"slack": 0}
BY_NAME = {"slack": 0}
VIA_SYS = [0]


class Holder:
    """Holds a lock (pickle refuses one): the fingerprint takes the lock by identity, the rest by value."""

    def __init__(self):
        self.lock = threading.Lock()
        self.slack = 0


class Opaque:
    """Holds a generator: pickle refuses it, so its in-place changes cannot be fingerprinted."""

    def __init__(self):
        self.gen = (i for i in range(3))
        self.slack = 0


HOLDER = Holder()
OPAQUE = Opaque()


def bump_opaque():
    OPAQUE.slack = 5
'''

ADVERSARIAL_SPEC = """
import sys
from capproof import Range, obligation, at_most
import {pkg}.shared as shared_alias
from {pkg}.shared import bump_opaque


@obligation(domain={{"x": Range(0, 10)}})
def a_imports_inside_and_writes(x):
    import {pkg}.shared
    {pkg}.shared.TABLE["slack"] = 5
    return at_most(demand=x, capacity=10)


@obligation(domain={{"x": Range(0, 10)}})
def b_reads_table(x):
    return at_most(demand=x, capacity=10 - shared_alias.TABLE["slack"])


@obligation(domain={{"x": Range(0, 10)}})
def c_writes_the_lock_holder(x):
    shared_alias.HOLDER.slack = 5
    return at_most(demand=x, capacity=10)


@obligation(domain={{"x": Range(0, 10)}})
def d_reads_the_lock_holder(x):
    return at_most(demand=x, capacity=10 - shared_alias.HOLDER.slack)


@obligation(domain={{"x": Range(0, 10)}})
def e_writes_the_opaque_object(x):
    bump_opaque()
    return at_most(demand=x, capacity=10)


@obligation(domain={{"x": Range(0, 10)}})
def f_reads_the_opaque_object(x):
    return at_most(demand=x, capacity=10 - shared_alias.OPAQUE.slack)


@obligation(domain={{"x": Range(0, 10)}})
def g_writes_through_sys_modules(x):
    sys.modules["{pkg}.shared"].VIA_SYS[0] = 5
    return at_most(demand=x, capacity=10)


@obligation(domain={{"x": Range(0, 10)}})
def h_reads_what_sys_modules_wrote(x):
    return at_most(demand=x, capacity=10 - shared_alias.VIA_SYS[0])


@obligation(domain={{"x": Range(0, 10)}})
def i_writes_by_a_computed_name(x):
    getattr(shared_alias, "BY_" + "NAME")["slack"] = 5
    return at_most(demand=x, capacity=10)


@obligation(domain={{"x": Range(0, 10)}})
def j_reads_what_a_computed_name_wrote(x):
    return at_most(demand=x, capacity=10 - shared_alias.BY_NAME["slack"])
"""


def _adversarial_tree(project, pkg: str):
    (project / pkg).mkdir()
    (project / pkg / "__init__.py").write_text("")
    (project / pkg / "shared.py").write_text(ADVERSARIAL_MODELS)
    (project / "spec" / "adversarial.py").write_text(ADVERSARIAL_SPEC.format(pkg=pkg))


def _run_json(paths, batch_items, monkeypatch, keyword=None, **options):
    monkeypatch.setattr(runner, "BATCH_ITEMS", batch_items)
    result = run(paths, Options(**{"jobs": 1, "contracts": False, "density": "off", **options}), keyword)
    out = []
    for r in result.obligations:
        data = {k: v for k, v in r.to_json().items() if k != "seconds"}
        if data.get("first_counterexample"):  # when the first counterexample was found: a timing too
            data["first_counterexample"] = {k: v for k, v in data["first_counterexample"].items() if k != "seconds"}
        out.append(data)
    return out


@pytest.mark.slow  # proves the tree twice; the single-attack tests below stay in the fast tier
def test_batched_and_one_per_process_runs_agree_on_an_adversarial_tree(project, monkeypatch):
    """Items that change a model module's data in place (a dict through a function-level import, an
    object holding a lock, one holding a generator that cannot be fingerprinted, a list reached
    through ``sys.modules``, a dict by a computed name) each followed by one that reads it: the
    readers are proved alone, or an error where they reach the value that cannot be fingerprinted
    (it may change between an item's own evaluations); batched, every result is the same as alone
    (the writers' too)."""
    _adversarial_tree(project, "advmodels_agree")
    alone = _run_json(["spec"], 1, monkeypatch)
    verdicts = {r["id"].split("::")[1]: r["verdict"] for r in alone}
    assert all(v in ("proved", "error") for name, v in verdicts.items() if "_reads" in name), verdicts
    # a change it can be seen to make is an error for the writer, alone as batched
    assert verdicts["a_imports_inside_and_writes"] == "error"
    assert verdicts["c_writes_the_lock_holder"] == "error"
    assert _run_json(["spec"], 12, monkeypatch) == alone


def test_an_in_place_change_to_state_that_cannot_be_fingerprinted_does_not_reach_the_next_item(project, monkeypatch):
    """An object holding a generator (pickle refuses it) changed in place by one item: its
    fingerprint (identity and repr) does not move; the runner fails closed: an item that can reach
    it is an error (the value may change between its own evaluations) and is decided in a process
    of its own, so the next item's verdict is its verdict alone."""
    _adversarial_tree(project, "advmodels_opaque")
    keep = ["e_writes_the_opaque_object", "f_reads_the_opaque_object"]
    # (the two items alone selected: the writer first, then the reader, in one batch of 12)
    alone = _run_json(["spec"], 1, monkeypatch, keyword="opaque_object")
    assert [r["id"].split("::")[1] for r in alone] == keep
    assert [r["verdict"] for r in alone] == ["error", "error"]
    batched = _run_json(["spec"], 12, monkeypatch, keyword="opaque_object")
    assert batched == alone
    # and that is how: both items are kept out of any batch
    items, _ = runner.load(["spec"], None)
    work = [("obligation", it) for it in items]
    reach = runner.reaches([runner.item_roots(it) for _, it in work])
    before = runner.module_data(frozenset().union(*(r for r in reach if r is not None)))
    assert runner.opaque_state(runner._flat(before)) == ["advmodels_opaque.shared.OPAQUE"]
    names = [it.name for _, it in work]
    assert all("advmodels_opaque.shared" in reach[names.index(n)] for n in keep)


def test_an_item_reaches_the_modules_its_code_names_not_every_project_module(project):
    """The fingerprint of an item covers its spec module and the models its code reaches (imported at
    module level or inside a function, by attribute), not the project's other modules; code naming
    ``sys`` (``sys.modules``) reaches every module."""
    _adversarial_tree(project, "advmodels_reach")
    (project / "spec" / "other.py").write_text(
        "from capproof import Range, obligation, at_most\nBIG = list(range(10))\n"
        "@obligation(domain={'x': Range(0, 10)})\ndef alone(x):\n"
        "    return at_most(demand=x, capacity=10)\n"
    )
    items, _ = runner.load(["spec"], None)
    reach = dict(zip((it.name for it in items), runner.reaches([runner.item_roots(it) for it in items])))
    assert reach["alone"] == {"capproof_spec.spec.other"}
    assert reach["b_reads_table"] == {"capproof_spec.spec.adversarial", "advmodels_reach.shared"}
    assert reach["a_imports_inside_and_writes"] >= {"advmodels_reach.shared"}
    assert reach["g_writes_through_sys_modules"] is None


@pytest.mark.slow
def test_batched_and_one_per_process_runs_agree_on_spec(monkeypatch):
    """The whole of spec/ (obligations): identical results, unsat cores and counterexamples
    included, at 12 items to a process and at one."""
    batched = _run_json(["spec"], 12, monkeypatch, jobs=2)
    assert _run_json(["spec"], 1, monkeypatch, jobs=2) == batched
