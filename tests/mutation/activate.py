"""Both oracles of ``make mutation`` on each mutant by direct activation, tests first (docs/soundness.md).

mutmut's own ``run`` spends most of its time in its call-tracking ``stats`` phase (over 30 min
on this 2-core machine) and orders mutants by its estimates; here each mutant of the mutated
copy (``mutants/``, made by mutmut: ``--generate``) is activated with ``MUTANT_UNDER_TEST`` in a
child forked from ONE pytest session that collected the fast tier and the prove oracle once
(mutmut 3's trampolines read the variable at each call, so the child needs no re-import):

1. **tests**: the fast-tier TESTS that call the mutated function (``--testmap``: recorded once with
   mutmut's ``stats`` trampolines, with each test's duration), fastest first, stopping at the first
   failure; a kill counts only if the failing test passes alone with no mutant active;
2. **prove**, only for the mutants the tests left alive: the obligations of
   ``tests/mutation/test_prove_kills.py`` that call the mutated function (``--callmap``: a spec
   file's load-time calls count for all of its obligations); a changed verdict = killed by prove.
   ``--prove-alone`` runs this oracle on every selected mutant whatever the tests say (the
   ``capproof prove``-alone rate), recorded apart in ``mutants/capproof-mutation-prove-alone.jsonl``;
3. **verify alone** (``--verify-alone``, on the mutants the prove-alone record left alive): what ``make
   verify`` notices without the tests. Each obligation calling the function is decided with ``capproof
   prove``'s default options and its section of the proof report compared with the unmutated one
   (``report --check``: counterexample, unsat core, witnesses, density, message), and its bound
   recorded in proofs/bounds.json certified under the mutant (``bound --check``); see
   :func:`verify_one` and :func:`verify_outcome`. Recorded in ``mutants/capproof-mutation-verify-alone.jsonl``;
   ``--table --verify-alone`` prints the three oracles side by side (with the tests: the with-tests record).
   CrossHair contracts are not run by it.

A mutant neither kills is ``survived`` (to close, or to list in tests/mutation/equivalent.txt
with a reason). Results, one JSON line per mutant, in ``mutants/capproof-mutation-direct.jsonl``
(a rerun skips the mutants already there). ``--files`` restricts to source files (globs),
``--sample N --seed S`` takes the first N of a seeded random permutation of the selected
mutants and runs them in that order (so the part finished by a deadline is a random sample too); ``--shard i/n``
splits the work between processes. ``--table`` prints the per-file table of the record
(``--table --prove-alone``: of the prove-alone record). ``--save DIR`` keeps every mutant's name
and the records outside ``mutants/`` (which the next run deletes): docs/mutation/ holds the
latest run's; ``--table --records DIR`` reads them.

Run from the project root::

    python tests/mutation/activate.py --generate
    nice -n 19 python tests/mutation/activate.py --callmap
    nice -n 19 python tests/mutation/activate.py --testmap
    nice -n 19 python tests/mutation/activate.py --sample 2000 --seed 20261202
    python tests/mutation/activate.py --table
    nice -n 19 python tests/mutation/activate.py --prove-alone --sample 100000 --seed 20261202
    nice -n 19 python tests/mutation/activate.py --verify-alone
    python tests/mutation/activate.py --table --verify-alone
    python tests/mutation/activate.py --save docs/mutation          # keep the records (committed)
    python tests/mutation/activate.py --table --records docs/mutation
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
import json
import os
import random
import re
import signal
import sys
import time
from collections import Counter, defaultdict

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summary import equivalents, source_of  # noqa: E402

RECORD = "capproof-mutation-direct.jsonl"
PROVE_ALONE = "capproof-mutation-prove-alone.jsonl"
#: ``--verify-alone``: what ``make verify`` notices besides a changed verdict, on the prove-alone survivors
VERIFY_ALONE = "capproof-mutation-verify-alone.jsonl"
VERIFY_BASELINE = "capproof-mutation-verify-baseline.json"
#: Wall-clock limits of one mutant's runs (a longer run is ``timeout``: counted apart, not killed);
#: the tests' limit is 5x their recorded duration, at least 60 s, at most this.
TEST_SECONDS = 300
PROVE_SECONDS = 900
#: ``--verify-alone``: one mutant's obligations at ``capproof prove``'s defaults plus the bound
#: certificates (an inventory helper's mutant re-decides 334 obligations: ~100 s of CPU)
VERIFY_SECONDS = 900


def generate() -> None:
    """The mutated copy ``mutants/`` as ``mutmut run`` makes it, without its stats and run phases."""
    import mutmut.__main__ as m

    m.set_mutant_under_test("mutant_generation")
    os.makedirs("mutants", exist_ok=True)
    m.copy_src_dir()
    m.copy_also_copy_files()
    m.setup_source_paths()
    m.store_lines_covered_by_tests()
    print(m.create_mutants(1))


CALLMAP = "capproof-mutation-callmap.json"


def callmap() -> None:
    """Which obligations call which mutated function: the prove oracle run once with mutmut's
    ``stats`` trampolines (as ``mutmut run``'s call tracking, but each spec file loaded once: the
    helpers a spec file calls while loading count as called by every obligation of that file).
    Written to ``mutants/capproof-mutation-callmap.json`` (``{function: [test ids]}``)."""
    import mutmut.mutation.trampoline as trampoline
    import pytest

    os.chdir("mutants")
    hits: dict[str, set[str]] = defaultdict(set)
    state = {"loading": None}

    def record(name, caller=None):
        key = state["loading"] or os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
        hits[name].add(key)

    trampoline.record_trampoline_hit = record

    class Plugin:
        def pytest_collection_finish(self, session):
            mod = next(
                m for m in sys.modules.values() if hasattr(m, "test_verdict_is_as_expected") and hasattr(m, "_reload")
            )
            cache = {}

            def reload(path):
                if path not in cache:
                    state["loading"] = "load:" + path
                    try:
                        from capproof import loader

                        loader._loaded.pop(os.path.abspath(path), None)
                        cache[path] = loader.load_file(path)
                    finally:
                        state["loading"] = None
                return cache[path]

            mod._reload = reload

    os.environ["MUTANT_UNDER_TEST"] = "stats"
    os.environ["CAPPROOF_MUTATION_ORACLE"] = "all"
    rc = pytest.main(
        ["-q", "-p", "no:cacheprovider", "-m", "mutation", "tests/mutation/test_prove_kills.py"], plugins=[Plugin()]
    )
    with open(CALLMAP, "w") as fh:
        json.dump({k: sorted(v) for k, v in sorted(hits.items())}, fh, indent=1)
    print(f"exit {rc}; {len(hits)} functions called by the obligations")


def _obligations_calling(name: str, cmap: dict[str, list[str]]) -> list[str] | None:
    """Test ids of the prove oracle whose obligation calls the mutant's function (a spec file's
    load-time call counts for every obligation of the file); None without a call map."""
    if cmap is None:
        return None
    fn = name.partition("__mutmut_")[0]
    out = set()
    for key in cmap.get(fn, []):
        if key == "?":  # called while pytest collected the oracle (the spec files loaded unmutated)
            continue
        if key.startswith("load:"):
            out.add("load:" + key[5:])
        else:
            out.add(key)
    return sorted(out)


#: Every mutant's name, one a line, in a saved record directory (``--save``; the mutated copy has
#: its ``.meta`` files instead).
NAMES = "mutants.txt"
OUTCOMES = "capproof-mutation-outcomes.jsonl"


def mutant_names(root: str = "mutants") -> list[str]:
    """Every mutant of the mutated copy ``root`` (mutmut's ``.meta`` files), or of a saved record
    directory (its ``mutants.txt``), sorted."""
    if os.path.exists(os.path.join(root, NAMES)):
        with open(os.path.join(root, NAMES)) as fh:
            return sorted(line.strip() for line in fh if line.strip() and not line.startswith("#"))
    out = []
    for meta in glob.glob(os.path.join(root, "**", "*.py.meta"), recursive=True):
        with open(meta) as fh:
            out += list(json.load(fh)["exit_code_by_key"])
    return sorted(out)


TESTMAP = "capproof-mutation-testmap.json"
#: Test files the tests oracle leaves out: they need the real venv or files the mutated copy lacks.
BAD = ["tests/test_real_engine.py", "tests/test_numpy_oracle.py", "tests/test_report_links.py"]
#: pytest arguments of the one session the mutants run in: the fast tier and the prove oracle.
SESSION = [
    "-m",
    "mutation or not (slow or real)",
    "-p",
    "no:cacheprovider",
    "-s",
    "-q",
    *(f"--ignore={f}" for f in BAD),
    "tests/",
    "tests/mutation/test_prove_kills.py",
]


def testmap() -> None:
    """Which fast-tier TESTS call which mutated function, and how long each takes: the fast tier run
    once in the mutated copy with mutmut's ``stats`` trampolines (the prove oracle is collected, as in
    a mutant's run, but not run: ``--callmap`` records it). A call made while a fixture is set up counts
    for every test that uses the fixture (a module-scoped fixture is set up once, for the first test
    that needs it); a call in a process forked by the test (``capproof prove``'s isolation) counts too;
    a call made while pytest collects does not (the mutant is not active then in a mutant's run
    either). Written to ``mutants/capproof-mutation-testmap.json``: ``{"functions": {function: [node
    ids]}, "seconds": {node id: s}, "failed": [node ids failing with no mutant active]}``."""
    import mutmut.mutation.trampoline as trampoline
    import pytest

    os.chdir("mutants")
    parent = os.getpid()
    hits: dict[str, set[str]] = defaultdict(set)
    state: dict = {"test": None, "fixture": []}
    child_log = "capproof-mutation-testmap-children.txt"
    if os.path.exists(child_log):
        os.remove(child_log)
    seen_in_child: set = set()

    def record(name, caller=None):
        key = state["fixture"][-1] if state["fixture"] else state["test"]
        if key is None:
            return
        if os.getpid() != parent:  # a forked process (prove's isolation): its memory is lost, append to a file
            if (name, key) not in seen_in_child:
                seen_in_child.add((name, key))
                with open(child_log, "a") as fh:
                    fh.write(json.dumps([name, key]) + "\n")
            return
        hits[name].add(key)

    trampoline.record_trampoline_hit = record
    seconds: dict[str, float] = defaultdict(float)
    failed: set[str] = set()
    uses: dict[str, set[str]] = {}

    class Plugin:
        @pytest.hookimpl(tryfirst=True)
        def pytest_collection_modifyitems(self, config, items):
            items[:] = [it for it in items if it.get_closest_marker("mutation") is None]

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):
            state["test"] = item.nodeid
            uses[item.nodeid] = {
                f"fixture:{defs[-1].baseid}::{arg}" for arg, defs in item._fixtureinfo.name2fixturedefs.items() if defs
            }
            yield
            state["test"] = None

        @pytest.hookimpl(hookwrapper=True)
        def pytest_fixture_setup(self, fixturedef, request):
            state["fixture"].append(f"fixture:{fixturedef.baseid}::{fixturedef.argname}")
            try:
                yield
            finally:
                state["fixture"].pop()

        def pytest_runtest_logreport(self, report):
            seconds[report.nodeid] += report.duration
            if report.failed:
                failed.add(report.nodeid)

    os.environ["MUTANT_UNDER_TEST"] = "stats"
    os.environ["CAPPROOF_MUTATION_ORACLE"] = "all"
    rc = pytest.main([a for a in SESSION if a != "-s"], plugins=[Plugin()])
    if os.path.exists(child_log):
        with open(child_log) as fh:
            for line in fh:
                name, key = json.loads(line)
                hits[name].add(key)
    functions = {}
    for name, keys in hits.items():
        tests = {k for k in keys if not k.startswith("fixture:")}
        fixtures = keys - tests
        tests |= {t for t, fs in uses.items() if fs & fixtures}
        functions[name] = sorted(t for t in tests if t not in failed)
    with open(TESTMAP, "w") as fh:
        json.dump(
            {
                "functions": dict(sorted(functions.items())),
                "seconds": {k: round(v, 3) for k, v in sorted(seconds.items())},
                "failed": sorted(failed),
            },
            fh,
            indent=1,
        )
    print(
        f"exit {rc}; {len(functions)} functions called by {len({t for ts in functions.values() for t in ts})} tests; "
        f"{len(failed)} tests fail with no mutant active"
    )


FAILED = "capproof-mutation-failed-test.txt"


def _done(path: str = os.path.join("mutants", RECORD)) -> dict[str, dict]:
    out = {}
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                rec = json.loads(line)
                out[rec["mutant"]] = rec
    return out


def comparable(result: dict) -> dict:
    """An obligation's ``capproof prove --json`` entry without what varies between identical runs
    (the timings: ``seconds``, and the first counterexample's ``seconds``)."""
    out = {k: v for k, v in result.items() if k != "seconds"}
    if isinstance(out.get("first_counterexample"), dict):
        out["first_counterexample"] = {k: v for k, v in out["first_counterexample"].items() if k != "seconds"}
    return out


def verify_outcome(base: dict, now: dict) -> tuple[str | None, str]:
    """Whether ``make verify`` without the tests notices the difference between an obligation's
    unmutated outcome ``base`` and its outcome under a mutant ``now`` (each from :func:`verify_one`).

    ``("report", why)``: its section of proofs/<spec module>.md changes, so ``capproof report
    --check`` fails (a changed verdict, message, counterexample, unsat core, witness, failure
    density or metadata; the obligation no longer declared, or its spec file no longer loading);
    ``("bound", why)``: its bound recorded in proofs/bounds.json is certified unmutated and not
    under the mutant, so ``capproof bound --check`` bounds it from scratch (a different optimum,
    point or status: proofs/bounds.md changes); ``(None, keys)``: neither, with the fields of the
    result JSON (timings left out) that differ where no report shows them (comma-separated)."""
    if now.get("md") != base.get("md"):
        if now.get("error") or base.get("md") is None:
            return "report", now.get("error") or base.get("error") or "?"
        old, new = base["md"].splitlines(), now["md"].splitlines()
        i = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
        return (
            "report",
            f"line {i}: {old[i] if i < len(old) else '(none)'!r} -> {new[i] if i < len(new) else '(none)'!r}",
        )
    if base.get("bound") == "certified" and now.get("bound") != "certified":
        return "bound", now.get("bound") or "no certificate"
    old, new = base.get("json") or {}, now.get("json") or {}
    return None, ",".join(sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k)))


def _verdict_line(md: str) -> str:
    """The verdict line of an obligation's report section (:func:`capproof.report._obligation_md`)."""
    return next(line for line in md.splitlines() if line.startswith("- verdict: "))


def verify_one(oracle, declared, bounds: dict, base: dict | None = None) -> dict:
    """One obligation as ``make verify`` sees it, under whatever mutant is active: its spec file
    loaded again (``oracle._reload``: load-time helper calls run mutated), the obligation decided
    with ``capproof prove``'s default options (minimised counterexample, trigger witnesses, unsat
    core, restating check, failure density ``cheap``; no isolation: the caller forked), its result
    JSON (:func:`comparable`) and its section of the proof report (``capproof.report``); then, when
    proofs/bounds.json (``bounds``: ``{"bounds": {id: entry}, "rlimit", "waste_threshold_pct"}``)
    records its bound, ``bound --check``'s certificate of that record (``capproof.bound.check_obligation``):
    ``"certified"`` or why not.

    With the unmutated outcome ``base``, the obligation is first decided verdict-only (the prove
    oracle's options: the same verdict and encoding, without the minimisation, witnesses and
    restating check that can take minutes when a mutant sends an induction proof back to the bounded
    encoding); when its verdict or encoding differs from ``base``'s, the report's verdict line
    differs whatever the rest, and that line is returned as the outcome (``"quick": True``)."""
    from capproof import Options
    from capproof.bound import Uncertified, check_obligation
    from capproof.obligation import Obligation
    from capproof.prover import prove_obligation
    from capproof.report import _obligation_md
    from capproof.symbolic import fresh_z3_context

    items = oracle._reload(declared.file)
    if not isinstance(items, list):
        return {"md": None, "error": f"{declared.file} no longer loads: {items}"}
    ob = next((it for it in items if isinstance(it, Obligation) and it.id == declared.id), None)
    if ob is None:
        return {"md": None, "error": f"{declared.id} is no longer declared"}
    if base is not None and base.get("json"):
        q = prove_obligation(
            ob, Options(density="off", minimize=False, contracts=False, verdict_only=True, isolate=False)
        )
        was = (base["json"]["verdict"], base["json"].get("encoding", ""))
        if (q.verdict.value, q.encoding) != was:
            line = f"- verdict: **{q.verdict.value}{f' ({q.encoding})' if q.encoding else ''}** (verdict-only; {q.message[:200]})"
            return {
                "json": {"verdict": q.verdict.value, "encoding": q.encoding},
                "quick": True,
                "md": base["md"].replace(_verdict_line(base["md"]), line),
            }
    r = prove_obligation(ob, Options(isolate=False))
    result = comparable(r.to_json())
    out = {"json": result, "md": "\n".join(_obligation_md(result)), "seconds": round(r.seconds, 3)}
    entry = bounds.get("bounds", {}).get(ob.id)
    if entry is not None:
        try:
            with fresh_z3_context():
                check_obligation(ob, entry, bounds["rlimit"], bounds["waste_threshold_pct"])
            out["bound"] = "certified"
        except Uncertified as exc:
            out["bound"] = f"certificate failed: {exc}"
        except Exception as exc:  # noqa: BLE001 - bound --check then bounds from scratch, as for Uncertified
            out["bound"] = f"certificate failed: {type(exc).__name__}: {exc}"
    return out


class _Mutants:
    """pytest plugin: instead of running the collected items, run each mutant of ``names`` on the
    items that call its function, each mutant in a child forked from this process (the tests are
    collected and every module imported once; mutmut's trampolines read ``MUTANT_UNDER_TEST`` at
    each call, so setting it in the child activates the mutant)."""

    def __init__(self, names: list[str], done: dict, tmap: dict, cmap: dict | None, mode: str, record: str):
        self.names, self.done, self.tmap, self.cmap, self.mode, self.record = names, done, tmap, cmap, mode, record
        self.base_path = "capproof-mutation-direct-baseline.json"
        self.base = json.load(open(self.base_path)) if os.path.exists(self.base_path) else {}
        self.failed_path = FAILED.replace(".txt", f"-{os.getpid()}.txt")  # one per process: shards share the copy
        self.kills: dict[str, Counter] = defaultdict(Counter)  # function -> killing test -> mutants it killed
        if mode == "verify-alone":  # unmutated outcomes (verify_one) by oracle node id, "alone:" + id decided alone
            self.vbase = json.load(open(VERIFY_BASELINE)) if os.path.exists(VERIFY_BASELINE) else {}
            with open(os.path.join("proofs", "bounds.json")) as fh:
                data = json.load(fh)
            self.bounds = {
                "bounds": {e["id"]: e for e in data["bounds"]},
                "rlimit": data["rlimit"],
                "waste_threshold_pct": data["waste_threshold_pct"],
            }
            for rec in done.values():
                if rec.get("verify") == "killed":
                    self.kills[rec["mutant"].partition("__mutmut_")[0]][rec["verify_failed"]] += 1
        for rec in done.values():
            if rec.get("tests") == "killed":
                self.kills[rec["mutant"].partition("__mutmut_")[0]][rec["killed_by"]] += 1
            if rec.get("prove") == "killed":
                self.kills[rec["mutant"].partition("__mutmut_")[0]][rec["prove_failed"]] += 1

    def pytest_runtest_logreport(self, report):  # in a child: the first failing test ends the child
        if report.failed:
            with open(self.failed_path, "w") as fh:
                fh.write(report.nodeid)
            os._exit(1)

    def _child(self, name: str, items: list, seconds: float) -> tuple[int, str | None]:
        """Exit code of ``items`` run in order under mutant ``name`` in a forked child (1: a test
        failed, ``-SIGALRM``: past ``seconds``), and the node id of the failing test."""
        if os.path.exists(self.failed_path):
            os.remove(self.failed_path)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)  # its own group: what a test starts is stopped with it
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
                signal.alarm(max(1, int(seconds)))
                from mutmut.mutation import trampoline

                trampoline.set_mutant_under_test(name)  # env and process-local (a test clearing os.environ keeps it)
                for i, item in enumerate(items):
                    item.ihook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        try:
            os.killpg(pid, signal.SIGKILL)  # processes a test left behind (a timed-out child's isolation workers)
        except (ProcessLookupError, PermissionError):
            pass
        failed = open(self.failed_path).read() if os.path.exists(self.failed_path) else None
        return os.waitstatus_to_exitcode(status), failed

    def _fork(self, name: str, work, seconds: float) -> int:
        """Exit code of ``work()`` run under mutant ``name`` ("" none) in a forked child
        (``-SIGALRM``: past ``seconds``)."""
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                os.setpgid(0, 0)
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
                signal.alarm(max(1, int(seconds)))
                from mutmut.mutation import trampoline

                trampoline.set_mutant_under_test(name)
                code = work() or 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return os.waitstatus_to_exitcode(status)

    def _verify_lines(
        self, name: str, items: list, seconds: float, compare: bool, alone: bool = False
    ) -> tuple[int, list[dict]]:
        """:func:`verify_one` of each of ``items`` (oracle items) in order under mutant ``name``, in
        one forked child (each spec file loaded once); one JSON line per obligation. ``compare``:
        each outcome compared with its baseline in the child (:func:`verify_outcome`; a line
        ``{"id", "kind", "why"}``), the child stopping at the first one ``make verify`` notices
        (exit 1); else the outcomes themselves (``{"id", **outcome}``: a baseline)."""
        path = f"capproof-mutation-verify-{os.getpid()}.jsonl"
        if os.path.exists(path):
            os.remove(path)

        def work():
            for item in items:
                now = verify_one(
                    item.module,
                    item.callspec.params["declared"],
                    self.bounds,
                    self.vbase.get(("alone:" if alone else "") + item.nodeid) if name else None,
                )
                line = {"id": item.nodeid, **now}
                kind = None
                if compare:
                    kind, why = verify_outcome(self.vbase[item.nodeid], now)
                    line = {"id": item.nodeid, "kind": kind, "why": why, "quick": bool(now.get("quick"))}
                with open(path, "a") as fh:
                    fh.write(json.dumps(line) + "\n")
                if kind:
                    return 1
            return 0

        rc = self._fork(name, work, seconds)
        lines = []
        if os.path.exists(path):
            with open(path) as fh:
                lines = [json.loads(line) for line in fh if line.endswith("\n")]
            os.remove(path)
        return rc, lines

    def _baselines(self, items: list, alone: bool = False) -> None:
        """The unmutated outcomes of ``items`` not yet in the baseline (all in one child, or each
        ``alone`` in its own), kept in ``capproof-mutation-verify-baseline.json``."""
        todo = [it for it in items if ("alone:" if alone else "") + it.nodeid not in self.vbase]
        if not todo:
            return
        for group in [[it] for it in todo] if alone else [todo]:
            rc, lines = self._verify_lines("", group, 60 * VERIFY_SECONDS, compare=False, alone=alone)
            for line in lines:
                self.vbase[("alone:" if alone else "") + line.pop("id")] = line
            if rc != 0 or len(lines) != len(group):
                log(f"baseline child exit {rc} after {len(lines)} of {len(group)} obligations")
        tmp = f"{VERIFY_BASELINE}.{os.getpid()}"
        with open(tmp, "w") as fh:
            json.dump(self.vbase, fh)
        os.replace(tmp, VERIFY_BASELINE)

    def _verify_mutant(self, name: str, items: list) -> dict:
        """The verify-alone oracle on one mutant: the obligations ``items`` that call its function,
        as ``make verify`` sees them (:func:`verify_one`), each compared with its unmutated outcome
        (:func:`verify_outcome`), stopping at the first difference it notices. A kill is confirmed
        by deciding that obligation alone, mutated and unmutated, each in a fresh child (so it does
        not depend on what the child decided before); otherwise it is ``unconfirmed`` (not a kill). A
        changed verdict or encoding seen on the verdict-only decision (``quick``) is counted as the
        prove oracle counts a changed verdict, without that second decision."""
        fn = name.partition("__mutmut_")[0]
        self._baselines(items)
        items = [it for it in items if it.nodeid in self.vbase]
        hits = self.kills[fn]
        items.sort(key=lambda it: (-hits[it.nodeid], self.vbase[it.nodeid].get("seconds", 0)))  # killers, then cheapest
        rec = {"mutant": name, "obligations": len(items)}
        if not items:
            rec["verify"] = "no obligation"
            return rec
        rc, lines = self._verify_lines(name, items, VERIFY_SECONDS, compare=True)
        rec["checked"] = len(lines)
        json_only = [[line["id"], line["why"]] for line in lines if not line["kind"] and line["why"]]
        if json_only:
            rec["json_only"] = json_only[:3]
        kill = next((line for line in lines if line["kind"]), None)
        if kill is None:
            rec["verify"] = (
                "survived"
                if rc == 0 and len(lines) == len(items)
                else "timeout"
                if rc == -signal.SIGALRM
                else f"exit {rc}"
            )
            return rec
        item = next(it for it in items if it.nodeid == kill["id"])
        rec["verify_failed"], rec["verify_kind"], rec["why"] = item.nodeid, kill["kind"], kill["why"][:300]
        if kill.get(
            "quick"
        ):  # a changed verdict or encoding on the verdict-only decision: a kill as the prove oracle counts one
            rec["quick"], rec["verify"] = True, "killed"
            self.kills[fn][item.nodeid] += 1
            return rec
        self._baselines([item], alone=True)
        base = self.vbase.get("alone:" + item.nodeid)
        _, alone = self._verify_lines(name, [item], VERIFY_SECONDS, compare=False, alone=True)
        kind = verify_outcome(base, alone[0])[0] if base is not None and alone else None
        rec["verify"] = "killed" if kind == kill["kind"] else "unconfirmed"
        if rec["verify"] == "killed":
            self.kills[fn][item.nodeid] += 1
        return rec

    def _passes_unmutated(self, item) -> bool:
        """A kill counts only if the failing test passes alone with no mutant active in the copy;
        checked once per test, cached in ``capproof-mutation-direct-baseline.json``."""
        if item.nodeid not in self.base:
            self.base[item.nodeid] = self._child("", [item], TEST_SECONDS)[0]
            tmp = f"{self.base_path}.{os.getpid()}"  # shards share the file: write whole, then rename
            with open(tmp, "w") as fh:
                json.dump(self.base, fh, indent=1)
            os.replace(tmp, self.base_path)
        return self.base[item.nodeid] == 0

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        by_id = {it.nodeid: it for it in session.items}
        oracle = [it for it in session.items if it.get_closest_marker("mutation") is not None]
        seconds = self.tmap["seconds"]
        log(f"{len(self.names)} mutants to run; {len(by_id) - len(oracle)} tests, {len(oracle)} obligations collected")
        for name in self.names:
            started = time.monotonic()
            fn = name.partition("__mutmut_")[0]
            if self.mode == "verify-alone":
                calls = _obligations_calling(name, self.cmap)
                loads = {c[5:] for c in calls if c.startswith("load:")}
                rec = self._verify_mutant(
                    name, [it for it in oracle if it.nodeid in calls or it.callspec.params["declared"].file in loads]
                )
            elif self.mode == "prove-alone":
                rec = {"mutant": name}
            elif name in self.done:  # the tests ran (--tests-only): prove now
                rec = self.done[name]
            else:  # the tests that call the function, fastest first, -x
                # the tests that killed other mutants of the same function first (a kill comes sooner: a
                # mutant can make an early, normally fast, test slow), then fastest first
                hits = self.kills[fn]
                ids = sorted(
                    (t for t in self.tmap["functions"].get(fn, []) if t in by_id),
                    key=lambda t: (-hits[t], seconds.get(t, 0)),
                )
                items = [by_id[t] for t in ids]
                limit = min(TEST_SECONDS, max(60, 5 * sum(seconds.get(t, 0) for t in ids)))
                rc, failed = self._child(name, items, limit) if items else (0, None)
                rec = {
                    "mutant": name,
                    "selected_tests": len(items),
                    "tests": {0: "survived", 1: "killed"}.get(rc, "timeout" if rc == -signal.SIGALRM else f"exit {rc}"),
                }
                if not items:
                    rec["tests"] = "no test"
                if rec["tests"] == "killed":
                    rec["killed_by"] = failed
                    if failed not in by_id or not self._passes_unmutated(by_id[failed]):
                        rec["tests"] = "fails unmutated"
                    else:
                        self.kills[fn][failed] += 1
            if self.mode == "prove-alone" or (self.mode == "all" and rec["tests"] != "killed"):
                calls = _obligations_calling(name, self.cmap)
                loads = {c[5:] for c in calls if c.startswith("load:")}
                hits = self.kills[fn]
                items = sorted(
                    (it for it in oracle if it.nodeid in calls or it.callspec.params["declared"].file in loads),
                    key=lambda it: -hits[it.nodeid],
                )  # then in declared order
                rec["obligations"] = len(items)
                if not items:
                    rec["prove"] = "no obligation"
                else:
                    rc, failed = self._child(name, items, PROVE_SECONDS)
                    rec["prove_failed"] = failed
                    rec["prove"] = {0: "survived", 1: "killed"}.get(
                        rc, "timeout" if rc == -signal.SIGALRM else f"exit {rc}"
                    )
                    if rec["prove"] == "killed" and (failed not in by_id or not self._passes_unmutated(by_id[failed])):
                        rec["prove"] = "fails unmutated"
                    elif rec["prove"] == "killed":
                        self.kills[fn][failed] += 1
            rec["seconds"] = round(time.monotonic() - started, 1)
            with open(self.record, "a") as fh:
                fh.write(json.dumps(rec) + "\n")
            log(
                f"{rec.get('tests', '-'):8} {rec.get('prove', rec.get('verify', '-')):13} {rec.get('verify_kind', '')[:6]:6} "
                f"{rec['seconds']:6} {name}"
            )
        return True


def log(line: str) -> None:
    print(line, file=sys.__stderr__, flush=True)


def verify_candidates(prove_alone: dict[str, dict]) -> set[str]:
    """The mutants ``--verify-alone`` runs: those of the prove-alone record that no obligation's
    verdict killed (survived, no obligation calls the function, timeout)."""
    return {n for n, rec in prove_alone.items() if rec.get("prove") != "killed"}


def run(names: list[str], mode: str = "all") -> None:
    """Each mutant of ``names`` in one pytest session (see :class:`_Mutants`). ``mode``: ``all`` (tests,
    then prove on their survivors), ``tests-only``, ``prove-alone`` (the prove oracle on every mutant,
    whatever the tests say; recorded apart, in ``capproof-mutation-prove-alone.jsonl``), ``verify-alone``
    (on the prove-alone survivors: :meth:`_Mutants._verify_mutant`; in ``capproof-mutation-verify-alone.jsonl``)."""
    equiv = equivalents()
    record = os.path.abspath(
        os.path.join("mutants", {"prove-alone": PROVE_ALONE, "verify-alone": VERIFY_ALONE}.get(mode, RECORD))
    )
    done = _done(record)
    if mode == "prove-alone":
        todo = [n for n in names if n not in equiv and n not in done]
    elif mode == "verify-alone":  # the prove-alone survivors (a changed verdict is noticed by make verify too)
        pa = _done(os.path.join("mutants", PROVE_ALONE))
        alive = verify_candidates(pa)
        todo = [n for n in names if n not in equiv and n not in done and n in alive]
        todo.sort(key=lambda n: pa[n].get("seconds", 0))  # the cheapest first (stable: else in the given order)
    else:
        todo = [
            n
            for n in names
            if n not in equiv
            and (n not in done or (mode == "all" and done[n]["tests"] != "killed" and "prove" not in done[n]))
        ]
    tmap = {"functions": {}, "seconds": {}}
    if mode not in ("prove-alone", "verify-alone"):
        with open(os.path.join("mutants", TESTMAP)) as fh:
            tmap = json.load(fh)
    cmap = None
    if mode != "tests-only":
        with open(os.path.join("mutants", CALLMAP)) as fh:
            cmap = json.load(fh)
    os.chdir("mutants")
    os.environ["CAPPROOF_MUTATION_ORACLE"] = "all"
    plugin = _Mutants(todo, done, tmap, cmap, mode, record)
    alone = mode in ("prove-alone", "verify-alone")  # the oracle alone: the fast tier need not be collected
    pytest.main([a for a in SESSION if a != "tests/"] if alone else SESSION, plugins=[plugin])


def _outcome_kinds(root: str = "mutants") -> dict[tuple[str, str], str]:
    """``{(mutant, obligation id): "unknown" | "missing"}``: prove-oracle failures that are not a
    changed verdict (tests/mutation/test_prove_kills.py records them apart; not counted as kills)."""
    out = {}
    path = os.path.join(root, OUTCOMES)
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                rec = json.loads(line)
                out.setdefault((rec["mutant"], rec["obligation"]), rec["kind"])
    return out


def _not_a_verdict(rec: dict, kinds: dict[tuple[str, str], str]) -> str | None:
    """``unknown``/``missing`` when the obligation that failed under the mutant ran out of rlimit or
    was no longer declared (a failure, not a changed verdict), else None."""
    m = re.search(r"\[(.*)\]$", rec.get("prove_failed") or "")
    return kinds.get((rec["mutant"], m.group(1))) if m else None


def table(names: list[str], prove_alone: bool = False, root: str = "mutants") -> None:
    """Per-file counts: ``tests`` killed by the fast tests; ``prove`` survived the tests, killed by
    prove (a changed verdict); ``unknown``/``missing`` the prove oracle failed without a changed
    verdict (:func:`_not_a_verdict`: not a kill); ``equivalent`` listed; ``survived`` neither (``no
    obligation`` included); ``timeout``; ``not run``. With ``prove_alone``: the prove-alone record.
    ``root``: the mutated copy, or a directory the records were saved to (``--save``)."""
    done = _done(os.path.join(root, PROVE_ALONE if prove_alone else RECORD))
    equiv = equivalents()
    kinds = _outcome_kinds(root)
    rows: dict[str, Counter] = defaultdict(Counter)
    for n in names:
        row = rows[source_of(n)]
        row["mutants"] += 1
        rec = done.get(n)
        if n in equiv:
            row["equivalent"] += 1
        elif rec is None:
            row["not run"] += 1
        elif rec.get("tests") == "killed":
            row["tests"] += 1
        elif rec.get("prove") == "killed" and _not_a_verdict(rec, kinds):
            row[_not_a_verdict(rec, kinds)] += 1
        elif rec.get("prove") == "killed":
            row["prove"] += 1
        elif "timeout" in (rec.get("tests"), rec.get("prove")):
            row["timeout"] += 1
        else:
            row["survived"] += 1
    cols = ["mutants", "tests", "prove", "unknown", "missing", "equivalent", "survived", "timeout", "not run"]
    if prove_alone:
        cols.remove("tests")
    print("| file | " + " | ".join(cols) + " | killed % of run |")
    print("|---|" + "---:|" * (len(cols) + 1))
    total = sum(rows.values(), Counter())
    for f, row in [*sorted(rows.items()), ("**total**", total)]:
        denom = row["mutants"] - row["equivalent"] - row["not run"]
        pct = f"{100 * (row['tests'] + row['prove']) / denom:.1f}" if denom else "-"
        print(f"| {f} | " + " | ".join(str(row[c]) for c in cols) + f" | {pct} |")


def verify_class(n: str, prove_alone: dict, verify: dict, kinds: dict) -> str:
    """Where the verify-alone oracle leaves mutant ``n`` (not equivalent): ``not run`` (no prove-alone
    record), ``prove`` (a changed verdict), ``unknown``/``missing`` (a prove failure that is not a
    changed verdict: ``make verify`` fails on it all the same), ``verify not run`` (a prove survivor
    with no verify-alone record), ``report``/``bound`` (killed by ``report --check``/``bound --check``),
    ``no obligation`` (no obligation calls the function: contracts and tests only), ``timeout``, or
    ``survived`` (``unconfirmed`` kills included: a difference that did not recur when the obligation
    was decided alone)."""
    pa = prove_alone.get(n)
    if pa is None:
        return "not run"
    if pa.get("prove") == "killed":
        return _not_a_verdict(pa, kinds) or "prove"
    va = verify.get(n)
    if va is None:
        return "verify not run"
    if va.get("verify") == "killed":
        return va["verify_kind"]
    if va.get("verify") in ("no obligation", "timeout"):
        return va["verify"]
    return "survived"


def _direct_kill(rec: dict | None, kinds: dict) -> bool | None:
    """Whether the with-tests run (``capproof-mutation-direct.jsonl``) killed a mutant: by a test,
    or by a changed verdict after the tests (None: not in that record)."""
    if rec is None:
        return None
    return rec.get("tests") == "killed" or (rec.get("prove") == "killed" and not _not_a_verdict(rec, kinds))


VERIFY_COLS = [
    "mutants",
    "equivalent",
    "not run",
    "prove",
    "unknown",
    "missing",
    "report",
    "bound",
    "no obligation",
    "timeout",
    "survived",
    "verify not run",
]


def verify_table(names: list[str], root: str = "mutants") -> None:
    """Per-file table of the three oracles over ``names``: ``capproof prove`` alone (a changed
    verdict), ``make verify`` alone (prove, ``report --check``, ``bound --check``; :func:`verify_class`)
    and with the tests (the with-tests record of ``root``, ``capproof-mutation-direct.jsonl``: a
    mutant killed there, or by make verify alone). Percentages of the non-equivalent mutants run:
    ``prove %`` counts ``prove``; ``verify %`` also ``unknown``, ``missing`` (make verify fails on
    them), ``report`` and ``bound``; ``with tests %`` counts a mutant killed by make verify alone or
    by the with-tests run, of those both records hold."""
    prove_alone, verify = _done(os.path.join(root, PROVE_ALONE)), _done(os.path.join(root, VERIFY_ALONE))
    direct, equiv, kinds = _done(os.path.join(root, RECORD)), equivalents(), _outcome_kinds(root)
    noticed = ("prove", "unknown", "missing", "report", "bound")
    rows: dict[str, Counter] = defaultdict(Counter)
    for n in names:
        row = rows[source_of(n)]
        row["mutants"] += 1
        if n in equiv:
            row["equivalent"] += 1
            continue
        kind = verify_class(n, prove_alone, verify, kinds)
        row[kind] += 1
        d = _direct_kill(direct.get(n), kinds)
        if kind not in ("not run", "verify not run") and d is not None:
            row["both"] += 1
            row["with tests"] += kind in noticed or d
    print("| file | " + " | ".join(VERIFY_COLS) + " | prove % | verify % | with tests % |")
    print("|---|" + "---:|" * (len(VERIFY_COLS) + 3))
    total = sum(rows.values(), Counter())
    for f, row in [*sorted(rows.items()), ("**total**", total)]:
        run_ = row["mutants"] - row["equivalent"] - row["not run"]
        pct = [
            f"{100 * k / d:.1f}" if d else "-"
            for k, d in (
                (row["prove"], run_),
                (sum(row[c] for c in noticed), run_ - row["verify not run"]),
                (row["with tests"], row["both"]),
            )
        ]
        print(f"| {f} | " + " | ".join(str(row[c]) for c in VERIFY_COLS) + " | " + " | ".join(pct) + " |")


def save(dest: str) -> None:
    """The records of the mutated copy, kept in ``dest`` (e.g. docs/mutation/, committed): every
    mutant's name (``mutants.txt``), and the direct, prove-alone, verify-alone and outcome records, one line per
    mutant (the last line of a mutant rerun after ``--tests-only``). ``--table --records dest``
    prints the same table from them."""
    os.makedirs(dest, exist_ok=True)
    with open(os.path.join(dest, NAMES), "w") as fh:
        fh.write("# every mutant mutmut made (tests/mutation/activate.py --generate), one a line\n")
        fh.write("".join(n + "\n" for n in mutant_names()))
    for name in (RECORD, PROVE_ALONE, VERIFY_ALONE):
        done = _done(os.path.join("mutants", name))
        if done:
            with open(os.path.join(dest, name), "w") as fh:
                fh.write("".join(json.dumps(rec) + "\n" for rec in done.values()))
    src = os.path.join("mutants", OUTCOMES)
    if os.path.exists(src):
        lines = []
        if os.path.exists(
            os.path.join(dest, OUTCOMES)
        ):  # a record not replaced here (e.g. the with-tests one) keeps its outcomes
            with open(os.path.join(dest, OUTCOMES)) as fh:
                lines = fh.read().splitlines()
        with open(src) as fh:
            lines = list(dict.fromkeys(lines + fh.read().splitlines()))  # each outcome once
        with open(os.path.join(dest, OUTCOMES), "w") as fh:
            fh.write("".join(line + "\n" for line in lines if line))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generate", action="store_true", help="make the mutated copy mutants/ (mutmut)")
    ap.add_argument("--files", nargs="*", default=["*"], help="source files to run (globs)")
    ap.add_argument(
        "--names", nargs="*", default=["*"], help="mutant names to run (globs, e.g. '*.x_max_write_position__*')"
    )
    ap.add_argument("--sample", type=int, help="a seeded random sample of this many mutants")
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--shard", default="0/1", help="i/n: run every n-th mutant from the i-th")
    ap.add_argument("--tests-only", action="store_true", help="the tests oracle alone (prove later, on the survivors)")
    ap.add_argument("--callmap", action="store_true", help="record which obligations call which function")
    ap.add_argument(
        "--testmap", action="store_true", help="record which fast tests call which function, and their durations"
    )
    ap.add_argument(
        "--reverse",
        action="store_true",
        help="run the shard's mutants last first (a second process "
        "finishing a shard from its end; the record skips neither)",
    )
    ap.add_argument(
        "--prove-alone", action="store_true", help="the prove oracle on every mutant, whatever the tests say"
    )
    ap.add_argument(
        "--verify-seconds",
        type=float,
        default=900,
        help="with --verify-alone: wall-clock limit of one mutant's obligations (timeout past it)",
    )
    ap.add_argument(
        "--prove-seconds",
        type=float,
        default=PROVE_SECONDS,
        help="wall-clock limit of one mutant's "
        "obligations on the prove oracle (timeout past it; a mutant that makes a model loop forever)",
    )
    ap.add_argument(
        "--verify-alone",
        action="store_true",
        help="on the prove-alone survivors: what make verify notices without the tests (report --check, bound --check)",
    )
    ap.add_argument("--table", action="store_true", help="print the per-file table of the record")
    ap.add_argument(
        "--records",
        default="mutants",
        help="with --table: the directory of the records (default the mutated copy; "
        "docs/mutation for the committed ones)",
    )
    ap.add_argument("--save", metavar="DIR", help="keep the records of mutants/ in DIR (e.g. docs/mutation)")
    args = ap.parse_args()
    if args.generate:
        generate()
        return
    if args.callmap:
        callmap()
        return
    if args.testmap:
        testmap()
        return
    globals()["VERIFY_SECONDS"] = args.verify_seconds
    globals()["PROVE_SECONDS"] = args.prove_seconds
    if args.save:
        save(args.save)
        return
    names = [
        n
        for n in mutant_names(args.records if args.table else "mutants")
        if any(fnmatch.fnmatch(source_of(n), g) for g in args.files) and any(fnmatch.fnmatch(n, g) for g in args.names)
    ]
    if (
        args.sample is not None
    ):  # the first N of a seeded permutation, run in that order (a prefix is a random sample too)
        names = random.Random(args.seed).sample(names, len(names))[: args.sample]
    if args.table and args.verify_alone:
        verify_table(names, args.records)
        return
    if args.table:
        table(names, args.prove_alone, args.records if args.table else "mutants")
        return
    i, n = map(int, args.shard.split("/"))
    mode = (
        "prove-alone"
        if args.prove_alone
        else "verify-alone"
        if args.verify_alone
        else "tests-only"
        if args.tests_only
        else "all"
    )
    run(names[i::n][::-1] if args.reverse else names[i::n], mode)


if __name__ == "__main__":
    main()
