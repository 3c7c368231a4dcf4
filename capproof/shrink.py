"""Shrinking a counterexample on ints, to seed the solver's minimisation.

The prover's minimisation (:func:`capproof.minimize.minimize_point`) asks Z3, parameter by parameter in
declared order, for the least value that still fails. Over a batch of 1,024 requests each such
query can cost seconds (``mtp_reader_row_is_last_token_before_47238``: one *sat* query for
``num_speculative_tokens <= 2`` took 9.6-12.6 s CPU). :func:`shrink` first lowers a known
counterexample on plain ints, as Hypothesis shrinks an example: each parameter in declared order
(a batch's length truncating the batch, then each active entry) is moved down to the smallest
value a bisection finds at which the point still fails, in passes until a pass moves nothing.
Every point it keeps was checked by ``is_counterexample`` (the prover's replay on ints: in the
domain, every assumption true, the claim false with and without the batch's padding).

Moves are single-coordinate: a point where every single move leaves the failing set (a saturated
batch whose token budget equals its total: fewer tokens need a lower budget too) is kept as it is.
The result is only a *seed*: a known failing point at or below the one given. The prover uses it
to skip a minimisation query whose answer the seed already gives (a parameter at its domain's
lower bound in a point consistent with every value fixed so far) and as the upper end of each
binary search; the minimum, and whether it is one, still come from Z3's answers. The work is
counted (:data:`SHRINK_EVALUATIONS` points, :data:`SHRINK_WORK` batch entries), not timed, so the
seed does not depend on the machine's load.
"""

from __future__ import annotations

from typing import Callable

from .domain import Range, Vector

__all__ = ["shrink", "SHRINK_EVALUATIONS", "SHRINK_WORK"]

#: At most this many points checked per shrink.
SHRINK_EVALUATIONS = 256
#: At most this many batch entries evaluated in all (a point costs 1 + its batches' sizes).
SHRINK_WORK = 1 << 17


class _Spent(Exception):
    pass


def shrink(
    params: list[str],
    point: dict[str, object],
    finite: dict[str, list[int]],
    ranges: dict[str, Range],
    vectors: dict[str, Vector],
    is_counterexample: Callable[[dict[str, object]], bool],
    evaluations: int = SHRINK_EVALUATIONS,
    work: int = SHRINK_WORK,
) -> tuple[dict[str, object], int]:
    """A failing point at or below ``point`` (each parameter no higher), and the points checked.

    ``params``: the obligation's parameters in declared order; ``point``: a counterexample (ints;
    a Vector's active entries as a list, its length equal to its length parameter's value);
    ``finite``/``ranges``/``vectors``: the (pinned) domains as :func:`capproof.encode.effective_domains`
    splits them (a pinned or case-split parameter moves only among its ``finite`` values);
    ``is_counterexample``: True when a point of the domain fails (assumptions hold, claim false),
    never raising. Points outside the domains are never passed to it. Never raises.
    """
    cur = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in point.items()}
    lengths = {dom.length: name for name, dom in vectors.items() if dom.length is not None}
    sizes = {name: dom.size for name, dom in vectors.items()}
    spent = [0, 0]  # points, entries
    order = [p for p in params if not (p in vectors and vectors[p].length in params)]
    for name, dom in vectors.items():  # a batch's entries after its length (a shorter batch first)
        if dom.length in order and name in params:
            order.insert(order.index(dom.length) + 1, name)

    def fails(cand: dict[str, object]) -> bool:
        cost = 1 + sum(sizes[name] for name in vectors)
        if spent[0] >= evaluations or spent[1] + cost > work:
            raise _Spent
        spent[0] += 1
        spent[1] += cost
        return is_counterexample(cand)

    def with_value(name: str, value: int, index: int | None = None) -> dict[str, object] | None:
        cand = dict(cur)
        if index is not None:
            entries = list(cur[name])  # type: ignore[arg-type]
            entries[index] = value
            cand[name] = entries
            return cand
        cand[name] = value
        vec = lengths.get(name)
        if vec is not None:  # a batch's length: keep its leading entries
            if value > len(cur[vec]):  # type: ignore[arg-type]
                return None
            cand[vec] = list(cur[vec][:value])  # type: ignore[index]
        return cand

    def take(name: str, value: int, index: int | None) -> bool:
        """Move to ``name`` (entry ``index``) = ``value`` if that point still fails."""
        cand = with_value(name, value, index)
        if cand is not None and fails(cand):
            cur.update(cand)
            return True
        return False

    def lower(name: str, lo: int, now: int, index: int | None = None, values: list[int] | None = None) -> bool:
        """Move ``name`` (entry ``index``) down from ``now``: the least value found by bisection."""
        if values is not None:  # a finite domain: its values below ``now``, least first
            return any(take(name, v, index) for v in values if v < now)
        if lo >= now:
            return False
        if take(name, lo, index):
            return True
        bad, good = lo, now  # bisect: ``bad`` did not fail, ``good`` does (the current value)
        moved = False
        while good - bad > 1:
            mid = (bad + good) // 2
            if take(name, mid, index):
                good, moved = mid, True
            else:
                bad = mid
        return moved

    try:
        changed = True
        while changed:
            changed = False
            for name in order:
                if name in vectors:
                    lo = vectors[name].elem.lo  # type: ignore[attr-defined]
                    for i in range(len(cur[name])):  # type: ignore[arg-type]
                        changed |= lower(name, lo, cur[name][i], index=i)  # type: ignore[index]
                elif name in finite:
                    changed |= lower(name, 0, cur[name], values=sorted(finite[name]))  # type: ignore[arg-type]
                elif name in ranges:
                    changed |= lower(name, ranges[name].lo, cur[name])  # type: ignore[arg-type]
    except _Spent:
        pass
    return cur, spent[0]
