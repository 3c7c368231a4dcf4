"""Second-solver cross-check: re-solve each linear case's exported SMT-LIB query with cvc5.

``capproof prove --cross-check cvc5`` parses the exact text :func:`capproof.smtlib.case_smt2`
writes (cvc5's ``InputParser``, SMT-LIB 2.6) and compares cvc5's answer with Z3's:

- Z3 ``unsat`` (proved, or the case excluded) vs cvc5 ``sat``, or Z3 ``sat`` (a counterexample,
  already replayed on ints) vs cvc5 ``unsat``: **disagreement** -> the obligation's verdict is
  ``error`` (one of the solvers, or the export, is wrong; neither answer is trusted).
- cvc5 ``unknown`` (time limit :data:`CVC5_TIMEOUT_MS` per query): recorded, not an error.
- ``QF_NIA`` cases are skipped (cvc5's nonlinear integer support is incomplete; see
  docs/performance.md for a measured example), and counted as skipped.

Requires the ``cvc5`` PyPI package (``pip install 'capproof[cvc5]'``).
"""

from __future__ import annotations

__all__ = ["cvc5_check", "CVC5_TIMEOUT_MS", "Cvc5Missing"]

#: cvc5 time limit per query, in milliseconds.
CVC5_TIMEOUT_MS = 10_000


class Cvc5Missing(RuntimeError):
    """The cvc5 package is not installed."""


def cvc5_check(smt2: str, timeout_ms: int = CVC5_TIMEOUT_MS) -> str:
    """cvc5's answer to an SMT-LIB 2 script with one ``(check-sat)``: ``sat``, ``unsat`` or ``unknown``.

    Raises Cvc5Missing when cvc5 is not importable, ValueError when cvc5 rejects the script.
    """
    try:
        import cvc5
    except ImportError:  # pragma: no cover - depends on the environment
        raise Cvc5Missing("--cross-check cvc5 needs the cvc5 package: pip install cvc5") from None
    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    solver.setOption("tlimit-per", str(int(timeout_ms)))
    symbols = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(solver, symbols)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, smt2, "capproof")
    answer = None
    while True:
        try:
            command = parser.nextCommand()
        except RuntimeError as exc:  # parse error
            raise ValueError(f"cvc5 rejected the query: {exc}") from None
        if command.isNull():
            break
        output = command.invoke(solver, symbols).strip()
        if output.startswith("(error"):
            raise ValueError(f"cvc5: {output}")
        if output:
            answer = output
    if answer is None:
        raise ValueError("cvc5 gave no answer (no check-sat?)")
    word = answer.split()[0]
    return word if word in ("sat", "unsat") else "unknown"


#: Z3's answer to the exported query, by the prover's case outcome (others were not decided).
_Z3_ANSWER = {"proved": "unsat", "excluded": "unsat", "counterexample": "sat"}


def case_hook(case, outcome, options):
    """Prover hook after one case: export it (``options.smt2_dir``) and cross-check it
    (``options.cross_check``). Sets ``outcome.cross`` to ``agreed``, ``disagreed``, ``unknown``,
    ``skipped_nonlinear`` or ``not_compared`` (Z3 did not decide); a disagreement or a query
    cvc5 rejects replaces the outcome by an ``error``. Returns the outcome."""
    from .smtlib import case_smt2, write_case

    z3_answer = _Z3_ANSWER.get(outcome.kind)
    if options.smt2_dir:
        _, text, logic = write_case(options.smt2_dir, case, z3_answer)
    else:
        text, logic = case_smt2(case, z3_answer)
    if not options.cross_check:
        return outcome
    if options.cross_check != "cvc5":
        raise ValueError(f"unknown cross-check solver {options.cross_check!r}")
    if z3_answer is None:
        outcome.cross = "not_compared"
    elif logic != "QF_LIA":
        outcome.cross = "skipped_nonlinear"
    else:
        try:
            answer = cvc5_check(text)
        except ValueError as exc:
            outcome.kind, outcome.message, outcome.cross = (
                "error",
                f"cross-check, case {case.fixed}: {exc}",
                "disagreed",
            )
            return outcome
        if answer == "unknown":
            outcome.cross = "unknown"
        elif answer == z3_answer:
            outcome.cross = "agreed"
        else:
            outcome.cross = "disagreed"
            outcome.message = (
                f"solvers disagree on case {case.fixed}: Z3 {z3_answer} ({outcome.kind}), cvc5 {answer}; "
                "neither answer is trusted"
            )
            outcome.kind = "error"
    return outcome


def summarize(outcomes, solver: str) -> dict:
    """Counts of ``outcome.cross`` over the cases, for ``ObligationResult.cross_check``."""
    counts = {"solver": solver, "agreed": 0, "disagreed": 0, "unknown": 0, "skipped_nonlinear": 0, "not_compared": 0}
    for o in outcomes:
        if o.cross in counts:
            counts[o.cross] += 1
    return counts
