"""Both oracles of ``make mutation`` on each mutant by direct activation, tests first (docs/soundness.md).

mutmut's own ``run`` spends most of its time in its call-tracking ``stats`` phase (over 30 min
on this 2-core machine) and orders mutants by its estimates; here each mutant of the mutated
copy (``mutants/``, made by mutmut: ``--generate``) is activated with ``MUTANT_UNDER_TEST`` in a
child forked from one process that collected every test file once:

1. **tests**: the fast-tier test files that name its module or function
   (:func:`summary.test_files_for`, ``-x -m "not slow and not real"``); exit 1 = killed;
2. **prove**, only for the mutants the tests left alive: ``tests/mutation/test_prove_kills.py``
   on the obligations of every spec file that imports the mutated module (directly or through
   another module of models/ or spec/_*.py; ``-x``); a changed verdict = killed by prove.

A mutant neither kills is ``survived`` (to close, or to list in tests/mutation/equivalent.txt
with a reason). Results, one JSON line per mutant, in ``mutants/capproof-mutation-direct.jsonl``
(a rerun skips the mutants already there). ``--files`` restricts to source files (globs),
``--sample N --seed S`` takes the first N of a seeded random permutation of the selected
mutants and runs them in that order (so the part finished by a deadline is a random sample too); ``--shard i/n``
splits the work between processes. ``--table`` prints the per-file table of the record.

Run from the project root::

    python tests/mutation/activate.py --generate
    nice -n 19 python tests/mutation/activate.py --files 'models/*'
    python tests/mutation/activate.py --table
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summary import ALWAYS, equivalents, source_of, test_files_for  # noqa: E402

RECORD = "capproof-mutation-direct.jsonl"
#: Value tests of the models and spec helpers, run first when they are among a mutant's files (the
#: order changes only how soon a kill comes: a survivor runs every file).
FIRST = {"tests/test_inventory_spec.py", "tests/test_inventory_obligations.py"}
#: Wall-clock limits of one mutant's runs (a longer run is ``timeout``: counted apart, not killed).
TEST_SECONDS = 300
PROVE_SECONDS = 900


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
    import pytest

    import mutmut.mutation.trampoline as trampoline

    os.chdir("mutants")
    hits: dict[str, set[str]] = defaultdict(set)
    state = {"loading": None}

    def record(name, caller=None):
        key = state["loading"] or os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
        hits[name].add(key)

    trampoline.record_trampoline_hit = record

    class Plugin:
        def pytest_collection_finish(self, session):
            mod = next(m for m in sys.modules.values() if hasattr(m, "test_verdict_is_as_expected") and hasattr(m, "_reload"))
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
    rc = pytest.main(["-q", "-p", "no:cacheprovider", "-m", "mutation", "tests/mutation/test_prove_kills.py"], plugins=[Plugin()])
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


def mutant_names() -> list[str]:
    out = []
    for meta in glob.glob(os.path.join("mutants", "**", "*.py.meta"), recursive=True):
        with open(meta) as fh:
            out += list(json.load(fh)["exit_code_by_key"])
    return sorted(out)


_IMPORT = re.compile(r"^\s*(?:from\s+((?:models|spec)[\w.]*)\s+import\s+([^\n(]*(?:\([^)]*\))?)|import\s+((?:models|spec)[\w.]*))", re.M)


def _imports(path: str) -> set[str]:
    """Modules of models/ and spec/ that ``path`` imports (``from models.vllm import x`` gives
    ``models.vllm.x`` when that is a module)."""
    out = set()
    with open(path) as fh:
        text = fh.read()
    for frm, names, imp in _IMPORT.findall(text):
        mod = frm or imp
        out.add(mod)
        for n in re.findall(r"\w+", names or ""):
            if os.path.exists(os.path.join(*f"{mod}.{n}".split(".")) + ".py"):
                out.add(f"{mod}.{n}")
    return out


def spec_files_using(module: str) -> list[str]:
    """The spec files (loaded by ``capproof prove``) whose transitive imports include ``module``."""
    graph = {}
    for path in glob.glob("models/**/*.py", recursive=True) + glob.glob("spec/*.py"):
        graph[path[:-3].replace(os.sep, ".")] = _imports(path)
    out = []
    for path in sorted(glob.glob("spec/*.py")):
        if os.path.basename(path).startswith("_"):
            continue
        seen, todo = set(), [path[:-3].replace(os.sep, ".")]
        while todo:
            cur = todo.pop()
            if cur in seen:
                continue
            seen.add(cur)
            todo += [m for m in graph.get(cur, ()) if m in graph]
        if module in seen:
            out.append(path)
    return out


FAILED = "capproof-mutation-failed-test.txt"


class _FirstFailure:
    """pytest plugin: writes the node id of the first failing test to ``path``."""

    def __init__(self, path: str):
        self.path = path

    def pytest_runtest_logreport(self, report):
        if report.failed and not os.path.exists(self.path):
            with open(self.path, "w") as fh:
                fh.write(report.nodeid)


def _child(name: str, args: list[str], seconds: int) -> tuple[int, str | None]:
    """pytest exit code of ``args`` under mutant ``name`` in a forked child, and the first failing test."""
    path = FAILED.replace(".txt", f"-{os.getpid()}.txt")  # one per process: shards share the copy
    if os.path.exists(path):
        os.remove(path)
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            import pytest

            signal.alarm(seconds)
            os.environ["MUTANT_UNDER_TEST"] = name
            sys.stdout = sys.stderr = open(os.devnull, "w")
            code = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", *args], plugins=[_FirstFailure(path)]))
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    failed = open(path).read() if os.path.exists(path) else None
    return os.waitstatus_to_exitcode(status), failed


def _done() -> dict[str, dict]:
    out = {}
    path = os.path.join("mutants", RECORD)
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                rec = json.loads(line)
                out[rec["mutant"]] = rec
    return out


def run(names: list[str], tests_only: bool = False) -> None:
    import pytest

    equiv = equivalents()
    done = _done()
    todo = [n for n in names if n not in equiv and (n not in done or (not tests_only and done[n]["tests"] != "killed"
                                                                       and "prove" not in done[n]))]
    root = os.getcwd()
    tests = {n: test_files_for(n) for n in todo}
    specs = {}
    for n in todo:
        mod = n.rsplit(".", 1)[0]
        if mod not in specs:
            specs[mod] = spec_files_using(mod)
    cmap = None
    if os.path.exists(os.path.join("mutants", CALLMAP)):
        with open(os.path.join("mutants", CALLMAP)) as fh:
            cmap = json.load(fh)
    os.chdir("mutants")
    os.environ["CAPPROOF_MUTATION_ORACLE"] = "all"
    every = sorted({f for fs in tests.values() for f in fs})
    with open(os.devnull, "w") as null:
        out, sys.stdout = sys.stdout, null
        try:  # import and collect once; the children reuse the imported modules
            pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *every, "tests/mutation/test_prove_kills.py"])
        finally:
            sys.stdout = out
    base_path = "capproof-mutation-direct-baseline.json"
    base = json.load(open(base_path)) if os.path.exists(base_path) else {}

    def passes_unmutated(test: str) -> bool:
        """A kill counts only if the failing test passes with no mutant active in the copy (a test
        reading files the copy lacks fails either way); checked once per test, cached."""
        if test not in base:
            base[test] = _child("baseline (no mutant)", ["-m", "not slow and not real", test], TEST_SECONDS)[0]
            with open(base_path, "w") as fh:
                json.dump(base, fh, indent=1)
        return base[test] == 0

    bad = {"tests/test_real_engine.py", "tests/test_numpy_oracle.py", "tests/test_report_links.py"}
    tests = {n: [f for f in fs if f not in bad] for n, fs in tests.items()}
    print(f"{len(todo)} mutants to run", flush=True)
    for name in todo:
        started = time.monotonic()
        if name in done:  # the tests ran (--tests-only): prove now
            rec = done[name]
        else:  # the files naming the module or function first (most kills), then the always-run ones
            files = sorted([f for f in tests[name] if f not in ALWAYS], key=lambda f: f not in FIRST) + [f for f in tests[name] if f in ALWAYS]
            rc, failed = _child(name, ["-m", "not slow and not real", *files], TEST_SECONDS)
            rec = {"mutant": name, "test_files": len(tests[name]), "tests": {0: "survived", 1: "killed", 5: "survived"}.get(rc, "timeout" if rc == -signal.SIGALRM else f"exit {rc}")}
            if rec["tests"] == "killed":
                rec["killed_by"] = failed
                if failed is None or not passes_unmutated(failed):
                    rec["tests"] = "fails unmutated"
        if rec["tests"] != "killed" and not tests_only:
            files = specs[name.rsplit(".", 1)[0]]
            calls = _obligations_calling(name, cmap)
            if calls is not None:  # the call map: the spec files loading it, the obligations calling it
                loads = {c[5:] for c in calls if c.startswith("load:")}
                direct = [re.search(r"\[(.*)\]$", c).group(1) for c in calls if not c.startswith("load:")]
                files = sorted(loads | {d.split("::")[0] for d in direct})
                words = sorted({os.path.basename(f)[:-3] for f in loads} | {d.split("::")[-1] for d in direct
                                                                              if d.split("::")[0] not in loads})
            else:
                words = [os.path.basename(f)[:-3] for f in files]
            rec["spec"] = files
            if calls is not None and not calls:
                rec["prove"] = "no obligation"
            elif files:
                k = " or ".join(words)
                rc, failed = _child(name, ["-m", "mutation", "-k", k, "tests/mutation/test_prove_kills.py"], PROVE_SECONDS)
                rec["prove_failed"] = failed
                rec["prove"] = {0: "survived", 1: "killed", 5: "survived"}.get(rc, "timeout" if rc == -signal.SIGALRM else f"exit {rc}")
            else:
                rec["prove"] = "no obligation"
        rec["seconds"] = round(time.monotonic() - started, 1)
        with open(os.path.join(root, "mutants", RECORD), "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(f"{rec['tests']:8} {rec.get('prove', '-'):13} {rec['seconds']:6} {name}", flush=True)
    os.chdir(root)


def table(names: list[str]) -> None:
    """Per-file counts: ``tests`` killed by the fast tests; ``prove`` survived the tests, killed by
    prove; ``equivalent`` listed; ``survived`` neither; ``timeout``; ``not run``."""
    done, equiv = _done(), equivalents()
    rows: dict[str, Counter] = defaultdict(Counter)
    for n in names:
        row = rows[source_of(n)]
        row["mutants"] += 1
        rec = done.get(n)
        if n in equiv:
            row["equivalent"] += 1
        elif rec is None:
            row["not run"] += 1
        elif rec["tests"] == "killed":
            row["tests"] += 1
        elif rec.get("prove") == "killed":
            row["prove"] += 1
        elif "timeout" in (rec["tests"], rec.get("prove")):
            row["timeout"] += 1
        else:
            row["survived"] += 1
    cols = ["mutants", "tests", "prove", "equivalent", "survived", "timeout", "not run"]
    print("| file | " + " | ".join(cols) + " | killed % of run |")
    print("|---|" + "---:|" * (len(cols) + 1))
    total = sum(rows.values(), Counter())
    for f, row in [*sorted(rows.items()), ("**total**", total)]:
        denom = row["mutants"] - row["equivalent"] - row["not run"]
        pct = f"{100 * (row['tests'] + row['prove']) / denom:.1f}" if denom else "-"
        print(f"| {f} | " + " | ".join(str(row[c]) for c in cols) + f" | {pct} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generate", action="store_true", help="make the mutated copy mutants/ (mutmut)")
    ap.add_argument("--files", nargs="*", default=["*"], help="source files to run (globs)")
    ap.add_argument("--sample", type=int, help="a seeded random sample of this many mutants")
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--shard", default="0/1", help="i/n: run every n-th mutant from the i-th")
    ap.add_argument("--tests-only", action="store_true", help="the tests oracle alone (prove later, on the survivors)")
    ap.add_argument("--callmap", action="store_true", help="record which obligations call which function")
    ap.add_argument("--table", action="store_true", help="print the per-file table of the record")
    args = ap.parse_args()
    if args.generate:
        generate()
        return
    if args.callmap:
        callmap()
        return
    names = [n for n in mutant_names() if any(fnmatch.fnmatch(source_of(n), g) for g in args.files)]
    if args.sample is not None:  # the first N of a seeded permutation, run in that order (a prefix is a random sample too)
        names = random.Random(args.seed).sample(names, len(names))[:args.sample]
    if args.table:
        table(names)
        return
    i, n = map(int, args.shard.split("/"))
    run(names[i::n], args.tests_only)


if __name__ == "__main__":
    main()
