"""Check that two trees make Z3 do the same work on the heaviest obligations.

For each obligation of ``benchmarks/engine_overhead.py`` (or those named), decided as that
benchmark decides it (``prove_obligation`` from a fresh Z3 context), records every solver check's
answer and Z3's resource counter (``rlimit count``, deterministic) after it, and the verdict,
message and counterexample. Two trees whose files are equal asked Z3 the same queries and Z3 did
the same work: an engine change that keeps them equal cannot have moved the solver's time (the
target's denominator) or any answer. Compare main and a branch this way after each
commit (docs/performance.md). Run from each tree::

    PYTHONPATH=$PWD python benchmarks/rlimit_trace.py OUT.json [IDS...]
    cmp main.json branch.json
"""

from __future__ import annotations

import json
import os
import sys

import z3

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_overhead import HEAVIEST, ROOT, decide, load_obligations  # noqa: E402


def _rlimit_count(c, s) -> int | float | None:
    """The ``rlimit count`` statistic of solver ``s`` (context ``c``); reading it builds no term."""
    core = z3.z3core
    st = core.Z3_solver_get_statistics(c, s)
    core.Z3_stats_inc_ref(c, st)
    try:
        for k in range(core.Z3_stats_size(c, st)):
            if core.Z3_stats_get_key(c, st, k) == "rlimit count":
                return (
                    core.Z3_stats_get_uint_value(c, st, k)
                    if core.Z3_stats_is_uint(c, st, k)
                    else core.Z3_stats_get_double_value(c, st, k)
                )
        return None
    finally:
        core.Z3_stats_dec_ref(c, st)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out_path, ids = argv[0], argv[1:] or HEAVIEST
    log: list[tuple[int, object]] = []
    original = z3.z3core.Z3_solver_check_assumptions

    def check(c, s, n, assumptions):
        answer = original(c, s, n, assumptions)
        log.append((answer, _rlimit_count(c, s)))
        return answer

    os.chdir(ROOT)
    obligations = load_obligations(ids)
    z3.z3core.Z3_solver_check_assumptions = z3.z3.Z3_solver_check_assumptions = check
    try:
        out = {}
        for ident, ob in obligations:
            log.clear()
            result = decide(ob)[0]
            out[ident] = {
                "checks": list(log),
                "verdict": result.verdict.value,
                "message": result.message,
                "counterexample": repr(result.counterexample),
            }
            print(f"{ident.split('::')[-1][:60]:60} {len(log):5d} checks, {result.verdict.value}")
    finally:
        z3.z3core.Z3_solver_check_assumptions = z3.z3.Z3_solver_check_assumptions = original
    with open(out_path, "w") as f:
        json.dump(out, f, indent=0, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
