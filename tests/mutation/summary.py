"""Figures of ``make mutation`` per mutated file (docs/soundness.md), and the test oracle on survivors.

Run from the project root after ``mutmut run``::

    python tests/mutation/summary.py                # table from mutants/ (prove alone)
    python tests/mutation/summary.py --run-tests    # + each prove survivor against the fast tests

A mutant is **killed by prove** when mutmut marks it killed and the failing oracle test saw a
verdict different from the expectation (tests/mutation/test_prove_kills.py records the other
failures apart: ``unknown``, the solver ran out of rlimit, and ``missing``, the obligation was no
longer declared, which only ``make verify``'s proofs/ check notices). **Equivalent** mutants are
listed in tests/mutation/equivalent.txt (``<mutant> <one-line reason>``): only survivors may be
listed there. ``--run-tests`` runs every survivor that is not equivalent, with
``MUTANT_UNDER_TEST`` set in the mutated copy, against the fast-tier test files that name its
module or function (``pytest -x -m "not slow and not real"``); exit 1 = killed by the tests. The
result is kept in ``mutants/capproof-mutation-tests.jsonl``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import signal
import sys
import time
from collections import Counter, defaultdict

STATUS = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    36: "timeout",
    -24: "timeout",
    24: "timeout",
    152: "timeout",
    255: "timeout",
    None: "not checked",
}
#: A test file slower than this with no mutant active is left out of ``--run-tests`` (listed).
SLOW_FILE_SECONDS = 90
#: Wall-clock limit of one survivor's test run (``timeout``: counted apart, not as killed).
MUTANT_SECONDS = 45
HERE = os.path.dirname(os.path.abspath(__file__))
EQUIVALENT = os.path.join(HERE, "equivalent.txt")


def results(root: str = "mutants") -> dict[str, str]:
    """``{mutant name: mutmut status}`` from the ``.meta`` files of the mutated copy."""
    out = {}
    for meta in glob.glob(os.path.join(root, "**", "*.py.meta"), recursive=True):
        with open(meta) as fh:
            for name, code in json.load(fh)["exit_code_by_key"].items():
                out[name] = STATUS.get(code, "suspicious")
    return out


def outcomes(path: str) -> dict[str, str]:
    """``{mutant: kind}`` of a JSON-lines file written by the oracles (first record wins)."""
    out: dict[str, str] = {}
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                rec = json.loads(line)
                out.setdefault(rec["mutant"], rec["kind"])
    return out


def equivalents() -> dict[str, str]:
    out = {}
    with open(EQUIVALENT) as fh:
        for line in fh:
            line = line.strip()
            if line and not line.startswith("#"):
                name, _, reason = line.partition(" ")
                out[name] = reason.strip()
    return out


def source_of(mutant: str) -> str:
    """``models.vllm.block_table.x_f__mutmut_3`` -> ``models/vllm/block_table.py``."""
    module = mutant.rsplit(".", 1)[0]
    return module.replace(".", "/") + ".py"


def function_of(mutant: str) -> str:
    """``models.vllm.block_table.x_f__mutmut_3`` -> ``f``."""
    tail = mutant.rsplit(".", 1)[1]
    return re.sub(r"__mutmut_\d+$", "", tail)[2:]


#: Run for every survivor: the committed counterexamples replayed with their recorded values, and
#: the models called on ints with reported values.
ALWAYS = [
    "tests/regressions/test_capproof_counterexamples.py",
    "tests/test_model_defaults.py",
    "tests/test_model_values.py",
]


def test_files_for(mutant: str) -> list[str]:
    """Fast-tier test files that name the mutant's module (dotted, as a path, or imported by its
    short name) or its function or class as a word, and :data:`ALWAYS` (paths relative to the
    mutated copy)."""
    module = mutant.rsplit(".", 1)[0]
    package, short = module.rsplit(".", 1)
    name = function_of(mutant).split("ǁ")[0]
    pattern = re.compile(
        "|".join(
            [
                re.escape(module),
                re.escape(source_of(mutant)),
                rf"from {re.escape(package)} import [^\n]*\b{short}\b",
                rf"\b{re.escape(name)}\b",
            ]
        )
    )
    out = []
    for path in sorted(glob.glob("tests/test_*.py")):
        with open(path) as fh:
            if pattern.search(fh.read()):
                out.append(path)
    return [*ALWAYS, *(p for p in out if p not in ALWAYS)]


def _run_one(name: str, files: list[str], deselect: list[str] = (), failed_to: str | None = None) -> int:
    """pytest exit code of ``files`` under mutant ``name``, in a child forked from this process,
    without the tests ``deselect`` (node ids); with ``failed_to``, the node ids of the failing tests
    are written there (one a line; the run then goes on past a failure)."""
    pid = os.fork()
    if pid == 0:  # child: the trampolines read MUTANT_UNDER_TEST at each call
        code = 3
        try:
            import pytest

            signal.alarm(MUTANT_SECONDS)  # an endless loop under the mutant: SIGALRM ends the child

            class Failures:
                def __init__(self):
                    self.ids: list[str] = []

                def pytest_runtest_logreport(self, report):
                    if report.failed:
                        self.ids.append(report.nodeid)

            failures = Failures()
            os.environ["MUTANT_UNDER_TEST"] = name
            sys.stdout = sys.stderr = open(os.devnull, "w")
            args = [*([] if failed_to else ["-x"]), "-q", "-p", "no:cacheprovider", "-m", "not slow and not real"]
            args += [f"--deselect={node}" for node in deselect]
            code = int(pytest.main([*args, *files], plugins=[failures]))
            if failed_to:
                with open(failed_to, "w") as fh:
                    fh.write("".join(node + "\n" for node in dict.fromkeys(failures.ids)))
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def run_tests(survivors: list[str], record: str, hints: dict[str, str] | None = None) -> None:
    """Each survivor against the fast test files naming it (see the module docstring), forked from
    one process that has collected them once (as mutmut does), in the mutated copy. A test file
    that fails with no mutant active there (it reads files the copy does not have, e.g. proofs/*.md)
    is left out, and so is one slower than :data:`SLOW_FILE_SECONDS` there (listed); files run
    fastest first, so that a kill comes early (``-x``). ``hints``: ``{mutant: test node id}``, a test
    that killed the mutant in an earlier record (:func:`earlier_kills`), run alone first when its
    file is among the mutant's usable files and it passes there with no mutant active: a failure
    under the mutant is then a kill (recorded with ``"killed_by"``), else all its files run."""
    import pytest

    done = outcomes(record)
    todo = [(n, test_files_for(n)) for n in survivors if n not in done]
    every = sorted({f for _, files in todo for f in files})
    os.environ["CAPPROOF_MUTATION_ORACLE"] = "all"
    os.chdir("mutants")
    baseline_path = "capproof-mutation-baseline.json"
    baseline = json.load(open(baseline_path)) if os.path.exists(baseline_path) else {}
    if every:
        with open(os.devnull, "w") as null:
            out, sys.stdout = sys.stdout, null
            try:
                pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *every])
            finally:
                sys.stdout = out
    for f in every:
        if not isinstance(baseline.get(f), dict) or "failed" not in baseline[f]:
            started = time.monotonic()
            failed_to = f"capproof-mutation-baseline-failed-{os.getpid()}.txt"
            rc = _run_one("baseline (no mutant)", [f], failed_to=failed_to)
            failed = open(failed_to).read().split() if os.path.exists(failed_to) else []
            if os.path.exists(failed_to):
                os.remove(failed_to)
            if rc == 1 and failed:  # the file without its failing tests: they must pass then
                rc = _run_one("baseline (no mutant)", [f], deselect=failed)
            baseline[f] = {"rc": rc, "seconds": round(time.monotonic() - started, 1), "failed": failed}
            with open(baseline_path, "w") as fh:
                json.dump(baseline, fh, indent=1)
    usable = {f for f in every if baseline[f]["rc"] == 0 and baseline[f]["seconds"] <= SLOW_FILE_SECONDS}
    for f in sorted(set(every) - usable):
        why = f"exit {baseline[f]['rc']}" if baseline[f]["rc"] else f"{baseline[f]['seconds']} s"
        print(f"left out: {f} ({why} with no mutant active in the copy)", flush=True)
    for f in sorted(usable):
        for node in baseline[f]["failed"]:
            print(f"left out: {node} (fails with no mutant active in the copy)", flush=True)
    hint_passes: dict[str, bool] = {}
    for name, files in todo:
        files = sorted((f for f in files if f in usable), key=lambda f: baseline[f]["seconds"])
        deselect = [node for f in files for node in baseline[f]["failed"]]
        hint = (hints or {}).get(name)
        if hint and hint.split("::")[0] in files and hint not in deselect:
            if hint not in hint_passes:
                hint_passes[hint] = _run_one("baseline (no mutant)", [hint]) == 0
            if hint_passes[hint] and _run_one(name, [hint]) == 1:
                with open(os.path.join("..", record), "a") as out:
                    out.write(json.dumps({"mutant": name, "kind": "killed", "tests": [hint], "killed_by": hint}) + "\n")
                print(f"killed    {name}  (by {hint}, an earlier record's kill)", flush=True)
                continue
        rc = _run_one(name, files, deselect=deselect) if files else 0
        kind = {0: "survived", 1: "killed", 5: "survived", -signal.SIGALRM: "timeout"}.get(rc, f"exit {rc}")
        with open(os.path.join("..", record), "a") as out:
            out.write(json.dumps({"mutant": name, "kind": kind, "tests": files}) + "\n")
        print(f"{kind:9} {name}  ({len(files)} test files)", flush=True)
    os.chdir("..")


def earlier_kills(
    path: str = os.path.join(HERE, "..", "..", "docs", "mutation", "capproof-mutation-direct.jsonl"),
) -> dict[str, str]:
    """``{mutant: test node id}``: the test that killed each mutant in a committed record of
    ``activate.py`` (``killed_by``), for :func:`run_tests`'s ``hints``."""
    return {
        n: rec["killed_by"]
        for n, rec in _records(path).items()
        if rec.get("tests") == "killed" and rec.get("killed_by")
    }


def _records(path: str) -> dict[str, dict]:
    """``{mutant: record}`` of a JSON-lines record (the last line of a mutant wins), in file order."""
    out: dict[str, dict] = {}
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                rec = json.loads(line)
                out[rec["mutant"]] = rec
    return out


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval ``(low, high)`` (fractions) of ``k`` successes in ``n`` trials; z = 1.96:
    95 %. ``(0.0, 1.0)`` for ``n == 0``."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5)
    return max(0.0, centre - half), min(1.0, centre + half)


def prove_not_kills(prove: dict[str, dict], root: str = "mutants") -> frozenset[str]:
    """The mutants of a prove-alone record whose prove failure is not a changed verdict (the
    obligation ran out of rlimit, ``unknown``, or is no longer declared, ``missing``: recorded in
    ``root``/capproof-mutation-outcomes.jsonl by the oracle), so not killed by prove."""
    kinds = set()
    path = os.path.join(root, "capproof-mutation-outcomes.jsonl")
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                rec = json.loads(line)
                kinds.add((rec["mutant"], rec["obligation"]))
    out = set()
    for name, rec in prove.items():
        failed = re.search(r"\[(.*)\]$", rec.get("prove_failed") or "")
        if rec.get("prove") == "killed" and failed and (name, failed.group(1)) in kinds:
            out.add(name)
    return frozenset(out)


def complete_prefix(
    order: list[str],
    prove: dict[str, dict],
    tests: dict[str, dict],
    equiv: dict[str, str],
    not_kills: frozenset[str] = frozenset(),
) -> list[str]:
    """The longest prefix of ``order`` (a seeded permutation of the mutants) in which every mutant
    is decided: equivalent, killed by prove (not in ``not_kills``), or a prove survivor the tests
    ran on. A run stopped
    early is a random sample over this prefix only: mutants after a gap were reached by skipping
    slower ones, and slow mutants are not a random subset."""
    out = []
    for name in order:
        rec = prove.get(name)
        killed = rec is not None and rec.get("prove") == "killed" and name not in not_kills
        if not (name in equiv or killed or (rec is not None and name in tests)):
            break
        out.append(name)
    return out


def sample_figure(
    prove: dict[str, dict], tests: dict[str, dict], equiv: dict[str, str], not_kills: frozenset[str] = frozenset()
) -> str:
    """The kill rate of a sample run by both oracles, one line: ``prove`` (activate.py
    ``--prove-alone`` records: ``{"prove": "killed" | "survived" | "no obligation" | "timeout"}``),
    then the fast tests on its survivors (:func:`run_tests` records: ``{"kind": ...}``). A mutant
    listed in ``equiv`` is left out of the denominator; so is one whose survivor test run is missing
    (counted as ``untested``). Timeouts count as not killed, and so does a prove failure that is
    not a changed verdict (``not_kills``: ``unknown``/``missing``, :func:`prove_not_kills`): such a
    mutant counts as the tests found it."""
    counts: Counter = Counter()
    for name, rec in prove.items():
        if name in equiv:
            counts["equivalent"] += 1
        elif rec.get("prove") == "killed" and name not in not_kills:
            counts["prove"] += 1
        elif name not in tests:
            counts["untested"] += 1
        elif tests[name]["kind"] == "killed":
            counts["tests"] += 1
        elif tests[name]["kind"] == "timeout" or rec.get("prove") == "timeout":
            counts["timeout"] += 1
        else:
            counts["survived"] += 1
    n = counts["prove"] + counts["tests"] + counts["timeout"] + counts["survived"]
    killed = counts["prove"] + counts["tests"]
    low, high = wilson(killed, n)
    return (
        f"{killed} of {n} killed ({100 * killed / n if n else 0:.1f} %, Wilson 95 % {100 * low:.1f}-{100 * high:.1f} %): "
        f"prove {counts['prove']}, tests {counts['tests']}, survived {counts['survived']}, "
        f"timeout {counts['timeout']}; equivalent {counts['equivalent']}, untested {counts['untested']}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run-tests", action="store_true", help="run the prove survivors against the fast tests")
    ap.add_argument("--list", action="store_true", help="list the survivors (prove, and with tests if run)")
    ap.add_argument(
        "--sample",
        type=int,
        help="the tests oracle on the first N of a seeded permutation of EVERY mutant of mutants/ (made by "
        "activate.py --generate; no mutmut run needed), recorded in mutants/capproof-mutation-sample.jsonl",
    )
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument(
        "--seconds",
        type=int,
        default=MUTANT_SECONDS,
        help="wall-clock limit of one run (and the slowest test file kept): raise it on a loaded machine",
    )
    ap.add_argument(
        "--always-only",
        action="store_true",
        help="with --sample: the oracle is the files every mutant runs (ALWAYS: the committed counterexamples, "
        "the models' reported values), not the files naming it: a lower bound that fits a loaded machine",
    )
    ap.add_argument(
        "--prove-survivors",
        action="store_true",
        help="the tests oracle on the mutants the prove oracle left alive in mutants/capproof-mutation-prove-alone.jsonl "
        "(activate.py --prove-alone, e.g. on a --sample), in its order; then the two oracles' figure (sample_figure)",
    )
    ap.add_argument(
        "--prefix-seed",
        type=int,
        help="with --prove-survivors: also the figure over the longest prefix of activate.py's seeded permutation "
        "(its --seed) that both oracles finished (complete_prefix)",
    )
    args = ap.parse_args()
    if args.prove_survivors:
        globals()["MUTANT_SECONDS"] = args.seconds
        globals()["SLOW_FILE_SECONDS"] = max(SLOW_FILE_SECONDS, args.seconds)
        prove = _records(os.path.join("mutants", "capproof-mutation-prove-alone.jsonl"))
        record = os.path.join("mutants", "capproof-mutation-tests.jsonl")
        not_kills = prove_not_kills(prove)
        survivors = [n for n, rec in prove.items() if rec.get("prove") != "killed" or n in not_kills]
        run_tests(survivors, record, earlier_kills())
        tests, equiv = _records(record), equivalents()
        print(f"every mutant run: {sample_figure(prove, tests, equiv, not_kills)}", flush=True)
        if args.prefix_seed is not None:
            import random

            from activate import mutant_names

            names = mutant_names()
            order = random.Random(args.prefix_seed).sample(names, len(names))
            prefix = complete_prefix(order, prove, tests, equiv, not_kills)
            print(
                f"the first {len(prefix)} of the permutation (seed {args.prefix_seed}), all run: "
                + sample_figure({n: prove[n] for n in prefix if n in prove}, tests, equiv, not_kills),
                flush=True,
            )
        return
    if args.always_only:
        globals()["test_files_for"] = lambda mutant: list(ALWAYS)
    globals()["MUTANT_SECONDS"] = args.seconds
    globals()["SLOW_FILE_SECONDS"] = max(SLOW_FILE_SECONDS, args.seconds)
    if args.sample is not None:
        import random

        from activate import mutant_names

        names = [n for n in mutant_names() if n not in equivalents()]
        picked = random.Random(args.seed).sample(names, len(names))[: args.sample]
        print(f"{len(picked)} of {len(names)} mutants (seed {args.seed})", flush=True)
        run_tests(picked, os.path.join("mutants", "capproof-mutation-sample.jsonl"))
        return
    status = results()
    extra = outcomes(os.path.join("mutants", "capproof-mutation-outcomes.jsonl"))
    equiv = equivalents()
    stale = [n for n in equiv if n in status and status[n] not in ("survived", "no tests")]
    for n in stale:
        print(f"warning: {n} is listed as equivalent but is {status[n]}", file=sys.stderr)
    record = os.path.join("mutants", "capproof-mutation-tests.jsonl")
    # mutants an obligation calls first (prove ran them and they survived), then those no obligation calls
    survivors = sorted(
        (n for n, s in status.items() if s in ("survived", "no tests") and n not in equiv),
        key=lambda n: (status[n] == "no tests", n),
    )
    if args.run_tests:
        run_tests(survivors, record)
    by_tests = outcomes(record)

    rows: dict[str, Counter] = defaultdict(Counter)
    for name, s in status.items():
        row = rows[source_of(name)]
        row["mutants"] += 1
        if s == "killed":
            row[{"unknown": "unknown", "missing": "missing"}.get(extra.get(name, ""), "prove")] += 1
        elif s in ("survived", "no tests"):
            if name in equiv:
                row["equivalent"] += 1
            elif by_tests.get(name) == "killed":
                row["tests"] += 1
            elif by_tests.get(name) == "timeout":
                row["timeout"] += 1
            elif by_tests.get(name) is None:
                row["untested"] += 1
            else:
                row["survived"] += 1
        else:
            row[s.replace(" ", "_")] += 1
    total = sum(rows.values(), Counter())
    cols = [
        "mutants",
        "prove",
        "tests",
        "unknown",
        "missing",
        "timeout",
        "equivalent",
        "survived",
        "untested",
        "not_checked",
    ]
    print("| file | " + " | ".join(cols) + " | prove % | with tests % | of decided % |")
    print("|---|" + "---:|" * (len(cols) + 3))
    for f, row in [*sorted(rows.items()), ("**total**", total)]:
        denom = row["mutants"] - row["equivalent"] - row["not_checked"]

        def pct(k, denom=denom):
            return f"{100 * k / denom:.1f}" if denom else "-"

        decided = sum(row[c] for c in ("prove", "tests", "unknown", "missing", "timeout", "survived"))
        of_decided = f"{100 * (row['prove'] + row['tests']) / decided:.1f}" if decided else "-"
        print(
            f"| {f} | "
            + " | ".join(str(row[c]) for c in cols)
            + f" | {pct(row['prove'])} | {pct(row['prove'] + row['tests'])} | {of_decided} |"
        )
    if args.list:
        for n in survivors:
            print(f"{by_tests.get(n, 'untested'):9} {n}")


if __name__ == "__main__":
    main()
