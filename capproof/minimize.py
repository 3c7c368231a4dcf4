"""Lexicographic minimisation of a failing point with Z3.

:func:`minimize_point` minimises the parameters of a counterexample one by one (declared order,
binary search with :func:`minimize_term`; a vector entry by entry, or by its sum when more than
:data:`~capproof.encode.ENTRYWISE_LIMIT` entries are active) and fixes each value found on the
solver. The prover (counterexamples and trigger witnesses), the aggregate strategy and the bound
analysis use it.
"""

from __future__ import annotations

import z3

from .domain import Range
from .encode import ENTRYWISE_LIMIT, CaseProblem, assert_terms
from .symbolic import SymInt, int_relation, model_int

__all__ = ["minimize_term", "minimize_point"]


def minimize_term(
    s: z3.Solver, model: z3.ModelRef, term: z3.ArithRef, lo: int, best: int | None = None
) -> tuple[z3.ModelRef, bool]:
    """Binary search for the least value of ``term`` (at least ``lo``) on ``s``, then fix it on ``s``.

    Returns the last model and False if a query came back unknown (the value is then not fixed).
    ``lo`` itself is tried first: most corpus counterexamples are least at a domain bound (one
    query instead of ~log2(range) of them); the least value found is the same either way.
    ``best``: a value of ``term`` known to be attained on ``s`` (a shrunk seed's), else the
    value in ``model``.
    """
    if best is None:
        best = model_int(model, term)
    probe = lo
    while lo < best:
        s.push()
        assert_terms(s, [int_relation(term, "<=", probe)])  # s.add(term <= probe): the same term and call
        answer = s.check()
        if answer == z3.sat:
            model = s.model()
            best = model_int(model, term)
        elif answer == z3.unsat:
            lo = probe + 1
        s.pop()
        if answer == z3.unknown:
            return model, False
        probe = (lo + best) // 2
    assert_terms(s, [int_relation(term, "==", best)])  # s.add(term == best)
    return model, True


def minimize_point(
    case: CaseProblem,
    s: z3.Solver,
    model: z3.ModelRef,
    names: list[str],
    seed: dict[str, object] | None = None,
    budget: int | None = None,
    rlimit: int | None = None,
) -> tuple[z3.ModelRef, bool]:
    """Lexicographically minimise ``names`` (declared order) by binary search on ``s``.

    Fixes each minimised value on ``s``. Returns the final model and whether every search ended
    (an unknown answer stops minimisation; the point found so far is still a counterexample).

    ``seed``: a counterexample shrunk on ints (:func:`capproof.shrink.shrink`). When ``s`` admits
    it (one query with its values assumed), each search starts from its value, and a value at
    the domain's lower bound is fixed with no query (the seed attains it with every value fixed
    before); once a search finds a value below the seed's, the seed is dropped. The least point
    found is the same; only queries whose answer the seed gives are skipped. When a search is
    unknown while the seed still agrees with every fixed value, the seed is the point returned
    (a counterexample at or below the solver's, not minimised).
    """

    if seed is not None and s.check(*case.fix(seed, names)) != z3.sat:
        seed = None  # the seed lies in another case or path
    budgeted = seed is not None and budget is not None and rlimit is not None
    if budgeted:
        s.set("rlimit", budget)  # each query; an unknown leaves the seed, a counterexample no larger

    def seeded_point() -> tuple[z3.ModelRef, bool]:
        if budgeted:
            s.set("rlimit", rlimit)
        if seed is not None and s.check(*case.fix(seed, names)) == z3.sat:
            return s.model(), False
        return model, False

    def lowest(term: z3.ArithRef, lo: int, known: int | None) -> bool:
        nonlocal model, seed
        if known == lo:
            assert_terms(
                s, [int_relation(term, "==", lo)]
            )  # s.add(term == lo): the seed attains the lower bound with every value fixed so far
            return True
        model, done = minimize_term(s, model, term, lo, known)
        if done and known is not None and model_int(model, term) < known:
            seed = None  # a value below the seed's: the seed no longer agrees with what is fixed
        return done

    for name in names:
        dom = case.ob.domain[name]
        if name in case.scalars:
            lo = dom.lo if isinstance(dom, Range) else min(dom.cases())  # type: ignore[attr-defined]
            known = seed[name] if seed is not None else None
            if not lowest(case.scalars[name].term, lo, known):  # type: ignore[arg-type]
                return seeded_point()
        elif name in case.vectors:
            elem: Range = dom.elem  # type: ignore[attr-defined]
            n = len(seed[name]) if seed is not None else case.active(name, model)  # type: ignore[arg-type]
            entries = case.vectors[name][:n]
            free = [(i, e.term) for i, e in enumerate(entries) if isinstance(e, SymInt)]
            if len(free) <= ENTRYWISE_LIMIT:
                for i, term in free:
                    known = seed[name][i] if seed is not None else None  # type: ignore[index]
                    if not lowest(term, elem.lo, known):
                        return seeded_point()
            elif free:
                known = sum(seed[name][i] for i, _ in free) if seed is not None else None  # type: ignore[index]
                if not lowest(z3.Sum([t for _, t in free]), elem.lo * len(free), known):
                    return seeded_point()
                if seed is not None and known != elem.lo * len(free):
                    seed = None  # the sum is fixed, not the entries: the solver's choice from here
    if budgeted:
        s.set("rlimit", rlimit)
    if s.check() != z3.sat:  # pragma: no cover - fixing values found sat cannot become unsat
        return model, False
    return s.model(), True
