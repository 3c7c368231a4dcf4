"""Short obligations decided a few to a process (capproof.runner.BATCH_ITEMS) get exactly the
results they get at a process each: what one item leaves behind outside the module data the
fingerprint checks must not reach the next item of its batch, and a model that forks must not
make the run lose or duplicate results."""

from __future__ import annotations

import pytest

import capproof.runner as runner
from capproof import Options
from capproof.runner import run
from test_soundness import SHARED_STATE

HEADER = """
import os, signal, sys, threading, time, warnings
import z3
import capproof.arith, capproof.domain
from capproof import Range, obligation, at_most
"""

# (what the first item does, what the second reads): alone, the second is proved
LEFT_BEHIND = {
    "class_attribute": ("class Cfg:\n    slack = 0\n", "Cfg.slack = 5", "Cfg.slack"),
    "closure": ("def _cell():\n    box = [0]\n    def put(v):\n        box[0] = v\n    def get():\n        return box[0]\n"
                "    return put, get\nput, get = _cell()\n", "put(5)", "get()"),
    "environment": ("", "os.environ['CAPPROOF_TEST_SLACK'] = '5'", "int(os.environ.get('CAPPROOF_TEST_SLACK', '0'))"),
    "patched_capproof_function": ("", "capproof.arith.minimum = lambda *a: 5", "capproof.arith.minimum(0, 0)"),
    "rebound_capproof_constant": ("", "capproof.domain.MAX_CASES = 1", "(5 if capproof.domain.MAX_CASES == 1 else 0)"),
    "warnings_filter": ("", "warnings.simplefilter('error')", "(5 if warnings.filters[0][0] == 'error' else 0)"),
    "int_str_limit": ("", "sys.set_int_max_str_digits(640)", "(5 if sys.get_int_max_str_digits() == 640 else 0)"),
    "patched_builtin": ("import builtins\n", "builtins.abs = lambda v: 5", "abs(0)"),
    "patched_math": ("import math\n", "math.isqrt = lambda v: 5", "math.isqrt(0)"),
    "capproof_table": ("", "capproof.arith.DTYPES['capproof_test'] = (5, True)",
                       "capproof.arith.DTYPES.get('capproof_test', (0, True))[0]"),
    "trace_function": ("", "sys.settrace(lambda *a: None)", "(5 if sys.gettrace() else 0)"),
}


def _pair(setup: str, leave: str, read: str) -> str:
    return HEADER + setup + f"""
@obligation(domain={{"x": Range(0, 10)}})
def leaves(x):
    {leave}
    return at_most(demand=x, capacity=10)

@obligation(domain={{"x": Range(0, 10)}})
def reads(x):
    return at_most(demand=x, capacity=10 - {read})
"""


def _verdicts(project, source: str, batch_items: int, monkeypatch, **options) -> list[tuple[str, str, str]]:
    monkeypatch.setattr(runner, "BATCH_ITEMS", batch_items)
    (project / "spec" / "batch.py").write_text(source)
    result = run(["spec/batch.py"], Options(jobs=1, contracts=False, density="off", **options))
    return [(r.id.split("::")[1], r.verdict.value, r.message) for r in result.obligations]


@pytest.mark.parametrize("kind", sorted(LEFT_BEHIND))
def test_state_outside_module_data_does_not_reach_the_next_item_of_a_batch(project, monkeypatch, kind):
    source = _pair(*LEFT_BEHIND[kind])
    alone = _verdicts(project, source, 1, monkeypatch)
    assert [v for _, v, _ in alone] == ["proved", "proved"]
    assert _verdicts(project, source, 12, monkeypatch) == alone


def test_z3_global_parameters_set_by_an_item_do_not_reach_the_next(project, monkeypatch):
    source = HEADER + """
@obligation(domain={"x": Range(0, 10)})
def leaves(x):
    z3.set_param("timeout", 1)
    z3.set_param("smt.arith.solver", 1)
    return at_most(demand=x, capacity=10)

@obligation(domain={"x": Range(0, 10**9), "y": Range(0, 10**9), "z": Range(1, 10**9)})
def reads(x, y, z):
    return at_most(demand=(x * y) // z, capacity=10**18)
"""
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
    source = HEADER + """
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
    batched = _verdicts(project, source, 12, monkeypatch)
    assert [(name, v) for name, v, _ in batched] == [(name, "proved") for name in
                                                       ("alarm", "after_alarm", "thread", "after_thread")]


def test_a_model_that_forks_loses_or_duplicates_no_result(project, monkeypatch):
    """The model forks once (the copy goes on deciding, as the original does): every item gets
    one result, as at a process each, and the run does not break on a second answer."""
    source = HEADER + """
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
    alone = _verdicts(project, source, 1, monkeypatch)
    assert [(name, v) for name, v, _ in alone] == [("forks", "proved"), ("next_one", "proved"), ("last", "counterexample")]
    assert _verdicts(project, source, 12, monkeypatch) == alone


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
    assert [v for _, v, _ in got[12]] == ["proved", "proved"]


def test_time_spent_between_the_items_of_a_batch_is_charged_to_none(project, monkeypatch):
    """A class attribute that takes a minute to fingerprint makes the check a batch runs before its
    first item and between items (runner._leftovers) outlast the time limit: no item was being
    decided, so none is charged; each gets a process of its own, where it is proved."""
    source = HEADER + """
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
    batched = _verdicts(project, source, 12, monkeypatch, timeout=4)
    assert [(name, v) for name, v, _ in batched] == [("first", "proved"), ("second", "proved")]
