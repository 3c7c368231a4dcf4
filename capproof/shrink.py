"""Shrinking a counterexample on ints, to seed the solver's minimisation.

The prover's minimisation (:func:`capproof.minimize.minimize_point`) asks Z3, parameter by parameter in
declared order, for the least value that still fails. Over a batch of 1,024 requests each such
query can cost seconds (``mtp_reader_row_is_last_token_before_47238``: one *sat* query for
``num_speculative_tokens <= 2`` took 9.6-12.6 s CPU). :func:`shrink` first lowers a known
counterexample on plain ints, as Hypothesis shrinks an example: each parameter in declared order
(a batch's length truncating the batch, then each active entry) is moved down to the smallest
value a gallop up from its bound and a bisection find at which the point still fails, in passes
until a pass moves nothing (a coordinate is not tried again until some move changed the point).
Every point it keeps was checked by ``is_counterexample`` (the prover's check on ints: in the
domain, every assumption true, the claim false with and without the batch's padding).

Besides single-coordinate moves, two joint ones: a scalar lowered to its bound together with every
later scalar equal to it (a batch's length with its bound), and a batch entry's excess over its
bound moved onto the batch's last entry (a sum an assumption fixes stays the same: a routing's
``total(counts) == numel``). A point where no such move stays failing (a saturated batch whose token
budget equals its total: fewer tokens need a lower budget too) is kept as it is.
The result is only a *seed*: a known failing point at or below the one given. The prover
certifies it with one query (no point of its case below it in the minimisation's order: the least
point, no search) or else uses it to skip a minimisation query whose answer the seed already gives
(a parameter at its domain's lower bound in a point consistent with every value fixed so far) and
as the upper end of each binary search; the minimum, and whether it is one, still come from Z3's
answers. The work is counted (:data:`SHRINK_EVALUATIONS` points, :data:`SHRINK_WORK` batch entries),
not timed, so the seed does not depend on the machine's load.
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
        """Move ``name`` (entry ``index``) down from ``now``: the least value found by galloping
        up from ``lo`` and bisecting."""
        if values is not None:  # a finite domain: its values below ``now``, least first
            return any(take(name, v, index) for v in values if v < now)
        if lo >= now:
            return False
        if take(name, lo, index):
            return True
        # gallop up from ``lo`` (lo + 1, lo + 2, lo + 4, ...) to the first value that fails, then
        # bisect below it: ~2 log2 of the distance to the least value instead of log2 of the
        # current one (least values lie near their bound: 129 from 2**21 in 15 checks, not 22)
        bad, good, step, moved = lo, now, 1, False
        while lo + step < now:
            if take(name, lo + step, index):
                good, moved = lo + step, True
                break
            bad, step = lo + step, 2 * step
        # bisect: ``bad`` did not fail, ``good`` does (the current value)
        while good - bad > 1:
            mid = (bad + good) // 2
            if take(name, mid, index):
                good, moved = mid, True
            else:
                bad = mid
        return moved

    def together(name: str, lo: int) -> bool:
        """Move ``name`` and every later scalar equal to it (a batch's length with its bound:
        ``num_reqs == max_num_reqs``) down to ``lo`` at once, truncating their batches."""
        now = cur[name]
        later = [p for p in order[order.index(name) + 1 :] if p in ranges and p not in vectors and cur[p] == now]
        if not later or lo >= now:  # type: ignore[operator]
            return False
        cand = dict(cur)
        for p in (name, *later):
            if not ranges[p].contains(lo):
                return False
            cand[p] = lo
            vec = lengths.get(p)
            if vec is not None:
                cand[vec] = list(cur[vec][:lo])  # type: ignore[index]
        if fails(cand):
            cur.update(cand)
            return True
        return False

    def shift(name: str, i: int, lo: int, hi: int) -> bool:
        """Move entry ``i``'s excess over ``lo`` onto the batch's last entry (a sum the assumptions
        fix stays the same: a routing's counts with ``total(counts) == numel``)."""
        entries = cur[name]
        last = len(entries) - 1  # type: ignore[arg-type]
        excess = entries[i] - lo  # type: ignore[index]
        if i >= last or excess <= 0 or entries[last] + excess > hi:  # type: ignore[index]
            return False
        moved = list(entries)  # type: ignore[call-overload]
        moved[i], moved[last] = lo, moved[last] + excess
        cand = dict(cur)
        cand[name] = moved
        if fails(cand):
            cur.update(cand)
            return True
        return False

    moves = [0]  # points moved to so far
    settled: dict[tuple[str, int], int] = {}  # each coordinate: ``moves`` when its last attempt ended

    def due(coord: tuple[str, int]) -> bool:
        """Whether ``coord`` is to be tried: not if no move was made since its last attempt ended
        (the same point, the same answers: the check is a function of the point)."""
        return settled.get(coord) != moves[0]

    # the first pass lowers the parameters of finite domains first (a few values each: a gallop
    # over a wide range is then made once at their lowered values rather than before and after),
    # then, without batches, the ranges last to first: a bound declared before what it bounds
    # (``max_model_len`` before ``pos < max_model_len``) comes down only after it (55 checks -> 15
    # on generic_slot_mapping_reads_kpool_tail_table); a batch's length stays before its entries
    wide = [p for p in order if p not in finite]
    first_pass = [p for p in order if p in finite] + (wide if vectors else wide[::-1])
    try:
        changed, passes = True, 0
        while changed:
            changed = False
            passes += 1
            for name in first_pass if passes == 1 else order:
                if name in vectors:
                    lo, hi = vectors[name].elem.lo, vectors[name].elem.hi  # type: ignore[attr-defined]
                    for i in range(len(cur[name])):  # type: ignore[arg-type]
                        if i >= len(cur[name]) or not due((name, i)):  # type: ignore[arg-type]
                            continue
                        moved = lower(name, lo, cur[name][i], index=i) or shift(name, i, lo, hi)  # type: ignore[index]
                        moves[0] += moved
                        changed |= moved
                        settled[(name, i)] = moves[0]
                elif not due((name, -1)):
                    continue
                elif name in finite:
                    moved = lower(name, 0, cur[name], values=sorted(finite[name]))  # type: ignore[arg-type]
                    moves[0] += moved
                    changed |= moved
                    settled[(name, -1)] = moves[0]
                elif name in ranges:
                    moved = lower(name, ranges[name].lo, cur[name]) or together(name, ranges[name].lo)  # type: ignore[arg-type]
                    moves[0] += moved
                    changed |= moved
                    settled[(name, -1)] = moves[0]
    except _Spent:
        pass
    return cur, spent[0]
