"""Adversarial catalogue: arithmetic a model does in a thread it starts must be checked as in its own.

A symbolic run records what its encoding needs to be exact: every symbolic divisor (proved nonzero
later), the side conditions under which ``math.ceil(a / b)``, ``bit_length()`` and symbolic
shifts equal Python's results. A model may compute a size in a thread it starts
(``threading.Thread``, a ``ThreadPoolExecutor`` as engines use for loading and planning): there
the same operations must be recorded too (or be misuse), else ``a // (b - 37)`` is encoded without
its zero check and ``math.ceil(a / 1)`` past 2**53 as if exact. Each claim below fails on ints at
one point (a zero divisor at 37, or a value past the float or bit-width limit) that the int probe
and the second opinion do not sample; each was ``proved``. A process the model forks is the same
hole wider: the child's branch decisions (and misuse, divisors) stay in the child's copy of the run,
and what it sends back through a pipe is a concrete answer taken on one direction only. A thread
started by ``_thread.start_new_thread`` (not ``threading``), or by a ``threading.Thread`` whose
bootstrap the model replaced, runs without the symbolic run's trace function: the checks keyed on
it (a repr read, a fork) must hold there too. A fork no audit event shows (libc's ``fork()``
through ctypes, looked up before the run) is reported by the child's first symbolic decision.
"""

from __future__ import annotations

import pytest
from _soundness_harness import HEADER, fails_on_ints

from capproof import Options, Verdict, prove
from capproof.loader import load_file

ATTEMPTS = [
    pytest.param(
        "popen-preexec-fn-decides-in-the-child",
        """
import os, subprocess
@obligation(domain={"a": Range(0, 100)})
def f(a):
    def child():
        try:
            code = 1 if a != 37 else 0
        except BaseException:
            code = 1
        os._exit(code)
    p = subprocess.Popen(["/bin/true"], preexec_fn=child)
    flag = p.wait()
    return at_most(demand=select(a == 37, 1 - flag, 0), capacity=0)
""",
        {"a": 37},
    ),
    pytest.param(
        "ctypes-fork-and-pipe",
        """
import os, ctypes
@obligation(domain={"a": Range(0, 100)})
def f(a):
    r, w = os.pipe()
    pid = ctypes.CDLL(None).fork()
    if pid == 0:
        try:
            try:
                ok = b"1" if a != 37 else b"0"
            except BaseException:
                ok = b"1"
            os.write(w, ok)
        finally:
            os._exit(0)
    os.close(w)
    flag = int(os.read(r, 1))
    os.close(r)
    os.waitpid(pid, 0)
    return at_most(demand=select(a == 37, 1 - flag, 0), capacity=0)
""",
        {"a": 37},
    ),
    pytest.param(
        # libc's fork() looked up when the spec is imported: no audit event (dlsym) in the run, no
        # fork hook; the child reports its first decision to the run
        "ctypes-fork-looked-up-before-the-run",
        """
import os, ctypes
def fork(_libc_fork=ctypes.CDLL(None).fork):
    return _libc_fork()
@obligation(domain={"a": Range(0, 100)})
def f(a):
    r, w = os.pipe()
    pid = fork()
    if pid == 0:
        try:
            try:
                ok = b"1" if a != 37 else b"0"
            except BaseException:
                ok = b"1"
            os.write(w, ok)
        finally:
            os._exit(0)
    os.close(w)
    flag = int(os.read(r, 1) or b"1")
    os.close(r)
    os.waitpid(pid, 0)
    return at_most(demand=select(a == 37, 1 - flag, 0), capacity=0)
""",
        {"a": 37},
    ),
    pytest.param(
        "raw-thread-repr-of-a-list",
        """
import _thread
@obligation(domain={"a": Range(0, 100)})
def f(a):
    out = []
    done = _thread.allocate_lock(); done.acquire()
    def work():
        try:
            out.append(str([a]).startswith("[S"))
        finally:
            done.release()
    _thread.start_new_thread(work, ())
    done.acquire()
    return at_most(demand=select(all_of(a == 37, not out[0]), 1, 0), capacity=0)
""",
        {"a": 37},
    ),
    pytest.param(
        # a threading.Thread whose bootstrap (which installs the trace hook) the model replaces
        "thread-without-its-bootstrap-repr-of-a-list",
        """
import threading
class Bare(threading.Thread):
    def _bootstrap_inner(self):
        try:
            self._set_ident()
            self._set_tstate_lock()
            self._started.set()
            with threading._active_limbo_lock:
                threading._active[self._ident] = self
                del threading._limbo[self]
            self.run()
        finally:
            self._delete()
@obligation(domain={"a": Range(0, 100)})
def f(a):
    out = []
    t = Bare(target=lambda: out.append(str([a]).startswith("[S")))
    t.start(); t.join()
    return at_most(demand=select(all_of(a == 37, not out[0]), 1, 0), capacity=0)
""",
        {"a": 37},
    ),
    pytest.param(
        # C code's TypeError on the symbolic value, caught in a raw thread: recorded by the watch there
        "raw-thread-catches-a-type-error",
        """
import _thread
@obligation(domain={"a": Range(0, 100)})
def f(a):
    out = []
    done = _thread.allocate_lock(); done.acquire()
    def work():
        try:
            try:
                out.append(int.bit_count(a) == 0)
            except TypeError:
                out.append(True)
        finally:
            done.release()
    _thread.start_new_thread(work, ())
    done.acquire()
    return at_most(demand=select(all_of(a == 37, not out[0]), 1, 0), capacity=0)
""",
        {"a": 37},
    ),
    pytest.param(
        "raw-thread-fork-and-pipe",
        """
import _thread, os
@obligation(domain={"a": Range(0, 100)})
def f(a):
    out = []
    done = _thread.allocate_lock(); done.acquire()
    def work():
        try:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    try:
                        ok = b"1" if a != 37 else b"0"
                    except BaseException:
                        ok = b"1"
                    os.write(w, ok)
                finally:
                    os._exit(0)
            os.close(w)
            out.append(int(os.read(r, 1)))
            os.close(r)
            os.waitpid(pid, 0)
        finally:
            done.release()
    _thread.start_new_thread(work, ())
    done.acquire()
    return at_most(demand=select(a == 37, 1 - out[0], 0), capacity=0)
""",
        {"a": 37},
    ),
    pytest.param(
        "thread-floordiv-divisor",
        """
import threading
@obligation(domain={"a": Range(0, 100), "b": Range(0, 100)})
def f(a, b):
    out = []
    t = threading.Thread(target=lambda: out.append(select(b == 37, 0, a // (b - 37))))
    t.start(); t.join()
    return at_most(demand=out[0], capacity=100)
""",
        {"a": 5, "b": 37},
    ),
    pytest.param(
        "thread-pool-cdiv-divisor",
        """
from concurrent.futures import ThreadPoolExecutor
@obligation(domain={"max_len": Range(1, 100), "bs": Range(0, 64)})
def f(max_len, bs):
    with ThreadPoolExecutor(1) as ex:
        nb = ex.submit(lambda: cdiv(max_len, bs - 37)).result()
    return at_most(demand=select(bs == 37, 0, nb), capacity=100)
""",
        {"max_len": 1, "bs": 37},
    ),
    pytest.param(
        "thread-ceil-of-a-quotient-past-2-53",
        """
import threading
X = 2**53 + 1
@obligation(domain={"a": Range(0, 2**60)})
def f(a):
    out = []
    t = threading.Thread(target=lambda: out.append(math.ceil(a / 1)))
    t.start(); t.join()
    return at_most(demand=a, capacity=select(a == X, out[0], a))
""",
        {"a": 2**53 + 1},
    ),
    pytest.param(
        "thread-bit-length-past-64-bits",
        """
import threading
X = 2**64 + 5
@obligation(domain={"a": Range(0, 2**70)})
def f(a):
    out = []
    t = threading.Thread(target=lambda: out.append(a.bit_length()))
    t.start(); t.join()
    return at_most(demand=select(a == X, out[0], 0), capacity=64)
""",
        {"a": 2**64 + 5},
    ),
    pytest.param(
        "fork-and-pipe",
        """
import os
@obligation(domain={"a": Range(0, 100)})
def f(a):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(w, b"1" if a != 37 else b"0")
        finally:
            os._exit(0)
    os.close(w)
    flag = int(os.read(r, 1))
    os.close(r)
    os.waitpid(pid, 0)
    return at_most(demand=select(a == 37, 1 - flag, 0), capacity=0)
""",
        {"a": 37},
    ),
    pytest.param(
        # the same quotient in the model's own thread: the side condition is reported (an error)
        "own-thread-ceil-of-a-quotient-past-2-53",
        """
X = 2**53 + 1
@obligation(domain={"a": Range(0, 2**60)})
def f(a):
    return at_most(demand=a, capacity=select(a == X, math.ceil(a / 1), a))
""",
        {"a": 2**53 + 1},
    ),
]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("name, body, point", ATTEMPTS)
def test_arithmetic_in_a_thread_is_checked_as_in_the_model(spec_file, name, body, point):
    (ob,) = load_file(spec_file(HEADER + body, f"adv_thread_{name.replace('-', '_')}.py"))
    assert fails_on_ints(ob, point) and fails_on_ints(ob, point, padding=False)
    result = prove(ob, Options(density="off"))
    assert result.verdict is not Verdict.PROVED, f"proved ({result.message}), but fails on ints at {point}"
