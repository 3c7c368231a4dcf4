"""Robust encodings: the same fact written the ways users write it gets one encoding.

An assumption's Z3 term is rewritten into an *equivalent* term that Z3 decides faster; the
rewrites are exact (valid equivalences, for every value of every variable), so no verdict can
change except ``unknown`` becoming decided. Each rewrite is reported (:class:`Normalised`), never
applied silently. Equivalence is checked in tests/test_normalise.py with Z3 (unsat of the
difference) and by brute force on small domains.

- **Distinctness.** Pairwise ``a != b`` over every pair of a group of entries (one ``all_of``
  per token's top-k ids, say) becomes ``Distinct(group)`` plus, when the entries are variables
  with small finite bounds, the count form Z3 reasons with well: for every value ``v`` the entries
  may take, at most one entry of the group equals ``v`` (a sum of ``If(x == v, 1, 0)``). Each count
  fact follows from ``Distinct``, so the conjunction is equivalent to the pairwise form. Measured:
  16 tokens x top-4 of 8 experts, "every expert gets at most 16 rows": pairwise
  ``unknown`` at rlimit 20M, normalised proved in well under a second.
- **Uniformity.** ``min_of(v) == max_of(v)`` (an ``If`` tree for the minimum equated to one for
  the maximum over the same entries) becomes "every entry equals the first":
  ``min(L) == max(L)`` holds exactly when all entries of ``L`` are equal. Lists that differ but
  share an entry ``p``: "every entry of the minimum's list is at least ``p`` and every entry of
  the maximum's list at most ``p``", equally exact. Over a padded batch with a symbolic length
  Z3's simplifier folds the padding selects into the minimum's tree, so the shape is not
  recognised; there capproof.arith's record of its ``min_of``/``max_of`` results
  (``Trace.extrema``) names the two sides, and the rewrite is "every active entry equals the
  first" (exact under the case's domain constraints, which every query of the case holds).
- **Sorted batches** (:func:`sorted_batch`, used by the prover on the claim query, not an
  assumption rewrite): where Z3 shows every term of the case invariant under permutations of a
  batch's active entries, ``v[0] <= v[1] <= …`` is added (symmetry breaking; every verdict kept).

Terms are recognised structurally: a minimum is ``If(p <= q, p, q)`` (or the same with ``<``,
``>=``, ``>``, or the condition negated and the branches swapped), nested; whatever the model
wrote, a term of that shape *is* the minimum of its leaves, so the rewrite is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import z3

__all__ = ["Normalised", "normalise", "sorted_batch", "COUNT_FORM_VALUES", "COUNT_FORM_TERMS", "INVARIANCE_RLIMIT"]

#: The count form of a distinct group is stated for entries whose bounds span at most this many
#: values (one sum per value); wider groups get ``Distinct`` alone.
COUNT_FORM_VALUES = 1024
#: At most this many ``If(x == v, 1, 0)`` terms are added per assumption by the count form.
COUNT_FORM_TERMS = 200_000


@dataclass
class Normalised:
    """An assumption's term after :func:`normalise` and what was rewritten (one line each)."""

    term: z3.BoolRef
    notes: list[str] = field(default_factory=list)


def _conjuncts(term: z3.BoolRef) -> list[z3.BoolRef]:
    out, stack = [], [term]
    while stack:
        t = stack.pop()
        if z3.is_and(t):
            stack.extend(reversed(t.children()))
        else:
            out.append(t)
    return out


def _disequality(t: z3.BoolRef) -> tuple[z3.ArithRef, z3.ArithRef] | None:
    """``(a, b)`` for ``Not(a == b)`` or a binary ``Distinct(a, b)`` over ints."""
    if z3.is_not(t) and z3.is_eq(t.arg(0)) and z3.is_int(t.arg(0).arg(0)):
        return t.arg(0).arg(0), t.arg(0).arg(1)
    if z3.is_distinct(t) and t.num_args() == 2 and z3.is_int(t.arg(0)):
        return t.arg(0), t.arg(1)
    return None


def _extremum(t: z3.ExprRef) -> tuple[str, z3.ExprRef, z3.ExprRef] | None:
    """``("min"|"max", p, q)`` when ``t`` is ``If(c, ·, ·)`` computing ``min(p, q)`` or ``max(p, q)``."""
    if not (z3.is_app(t) and t.decl().kind() == z3.Z3_OP_ITE and z3.is_int(t)):
        return None
    c, a, b = t.children()
    flip = False
    while z3.is_not(c):
        c, flip = c.arg(0), not flip
    if flip:
        a, b = b, a
    k = c.decl().kind() if z3.is_app(c) else None
    if k not in (z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE, z3.Z3_OP_GT):
        return None
    p, q = c.arg(0), c.arg(1)
    small, large = (p, q) if k in (z3.Z3_OP_LE, z3.Z3_OP_LT) else (q, p)  # c true => small <= large
    if a.eq(small) and b.eq(large):
        return "min", small, large
    if a.eq(large) and b.eq(small):
        return "max", small, large
    return None


def _leaves(t: z3.ExprRef, kind: str) -> list[z3.ExprRef]:
    """The arguments of a nested ``kind`` (min or max) tree rooted at ``t`` (``[t]`` if none)."""
    out, stack = [], [t]
    while stack:
        e = stack.pop()
        ext = _extremum(e)
        if ext is not None and ext[0] == kind:
            stack.extend([ext[2], ext[1]])
        else:
            out.append(e)
    return out


def _and(facts: list[z3.BoolRef]) -> z3.BoolRef:
    return z3.And(*facts) if len(facts) > 1 else facts[0] if facts else z3.BoolVal(True)


def _batch_uniform(entries: tuple, length) -> z3.BoolRef:
    """Every batch entry (the first ``length`` of ``entries``; ``length`` an int or a Z3 term)
    equals the first."""
    if isinstance(length, int):
        return _and([e == entries[0] for e in entries[1:length]])
    return _and([z3.Implies(length > i, e == entries[0]) for i, e in enumerate(entries) if i])


def _recorded_uniformity(t: z3.BoolRef, extrema: dict[int, tuple]) -> tuple[z3.BoolRef, str] | None:
    """``min_of(v) == max_of(v)`` for one padded batch ``v`` as recorded by capproof.arith while
    the model ran (``Trace.extrema``), whatever shape Z3's simplifier gave the trees: every batch
    entry equals the first. Exact under the case's domain constraints (arith builds both sides
    as the batch's minimum and maximum given the padding equals ``fill`` and the entries lie in
    their range; those constraints are in every query of the case)."""
    if not (z3.is_eq(t) and z3.is_int(t.arg(0))):
        return None
    a, b = extrema.get(t.arg(0).get_id()), extrema.get(t.arg(1).get_id())
    if a is None or b is None or {a[0], b[0]} != {"min", "max"}:
        return None
    if not (a[1].eq(t.arg(0)) and b[1].eq(t.arg(1))):  # an id reused by another term
        return None
    if len(a[2]) != len(b[2]) or not all(x.eq(y) for x, y in zip(a[2], b[2])):
        return None
    la, lb = a[3], b[3]
    if not (la == lb if isinstance(la, int) or isinstance(lb, int) else la.eq(lb)):
        return None
    shown = "its length" if isinstance(la, int) else f"symbolic length {la}"
    return (
        _batch_uniform(a[2], la),
        f"uniformity min_of == max_of over a batch ({shown}, up to {len(a[2])} entries) as one shared value (every entry equals the first)",
    )


def _uniformity(t: z3.BoolRef) -> tuple[z3.BoolRef, str] | None:
    """For ``min(L1) == max(L2)`` (either side order) whose entry lists share an entry ``p``:
    every entry equals ``p`` when ``L1`` and ``L2`` hold the same entries, else every entry of
    ``L1`` is at least ``p`` and every entry of ``L2`` at most ``p`` (exact: ``max(L2) <= p <=
    min(L1)`` since ``p`` is in both, so the equality pins both to ``p``). With the entry count."""
    if not (z3.is_eq(t) and z3.is_int(t.arg(0))):
        return None
    lhs, rhs = t.arg(0), t.arg(1)
    el, er = _extremum(lhs), _extremum(rhs)
    if el is None or er is None or el[0] == er[0]:
        return None
    mins, maxs = (
        (_leaves(lhs, "min"), _leaves(rhs, "max")) if el[0] == "min" else (_leaves(rhs, "min"), _leaves(lhs, "max"))
    )
    in_max = {e.get_id() for e in maxs}
    shared = [e for e in mins if e.get_id() in in_max]
    if not shared:
        return None
    p = shared[0]
    if {e.get_id() for e in mins} == in_max:
        return (
            _and([e == p for e in mins if not e.eq(p)]),
            f"uniformity min_of == max_of over {len(mins)} entries as one shared value (every entry equals the first)",
        )
    return (
        _and([*(e >= p for e in mins if not e.eq(p)), *(e <= p for e in maxs if not e.eq(p))]),
        f"min_of over {len(mins)} entries == max_of over {len(maxs)} entries as bounds around a shared entry",
    )


def _cliques(pairs: list[tuple[z3.ArithRef, z3.ArithRef]]) -> tuple[list[list[z3.ArithRef]], list[int]]:
    """Groups of at least 3 entries every pair of which is stated distinct in ``pairs`` (greedy
    maximal cliques of the disequality graph, in the order written, each entry in at most one
    group); and the indices of ``pairs`` not inside a group (kept as written)."""
    node: dict[int, z3.ArithRef] = {}
    adj: dict[int, set[int]] = {}
    for a, b in pairs:
        ia, ib = a.get_id(), b.get_id()
        node.setdefault(ia, a)
        node.setdefault(ib, b)
        if ia != ib:
            adj.setdefault(ia, set()).add(ib)
            adj.setdefault(ib, set()).add(ia)
    order = {n: k for k, n in enumerate(node)}
    taken: set[int] = set()
    groups: list[list[z3.ArithRef]] = []
    for v in node:
        if v in taken or len(adj.get(v, ())) < 2:
            continue
        clique = [v]
        for u in sorted(adj[v], key=order.__getitem__):
            if u not in taken and all(u in adj[w] for w in clique[1:]):
                clique.append(u)
        if len(clique) >= 3:
            taken.update(clique)
            groups.append([node[i] for i in clique])
    group_of = {e.get_id(): gi for gi, g in enumerate(groups) for e in g}
    rest = [
        k
        for k, (a, b) in enumerate(pairs)
        if a.get_id() == b.get_id()
        or a.get_id() not in group_of
        or group_of.get(a.get_id()) != group_of.get(b.get_id())
    ]
    return groups, rest


def _count_form(group: list[z3.ArithRef], bounds: dict[str, tuple[int, int]], budget: list[int]) -> list[z3.BoolRef]:
    """For each value ``v`` the (variable) entries of ``group`` may take: at most one equals ``v``."""
    spans = []
    for e in group:
        if not (z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED and e.decl().name() in bounds):
            return []
        spans.append(bounds[e.decl().name()])
    lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
    if hi - lo + 1 > COUNT_FORM_VALUES or (hi - lo + 1) * len(group) > budget[0]:
        return []
    budget[0] -= (hi - lo + 1) * len(group)
    one, zero = z3.IntVal(1), z3.IntVal(0)
    # a sum of 0/1 terms, as ``count`` builds it: Z3's arithmetic decides it fast, where the
    # same fact as a pseudo-Boolean ``AtMost`` stayed unknown (measured)
    return [z3.Sum([z3.If(e == v, one, zero) for e in group]) <= 1 for v in range(lo, hi + 1)]


def normalise(
    term: z3.BoolRef, bounds: dict[str, tuple[int, int]] | None = None, extrema: dict[int, tuple] | None = None
) -> Normalised:
    """``term`` with its pairwise distinctness and ``min == max`` uniformity in their fast forms.

    ``bounds`` maps a variable's name (``"topk_ids[3]"``) to the ``(lo, hi)`` it ranges over (the
    domain, padding value included); only used to choose the values of the count form (the count
    facts hold whatever the bounds). Returns the term unchanged (the same object) with no notes
    when nothing applies. ``extrema`` (``Trace.extrema`` of the run that built ``term``) names
    the ``min_of``/``max_of`` results over padded batches, so uniformity is recognised whatever
    their shape. Never raises on a well-formed Bool term.
    """
    bounds = bounds or {}
    extrema = extrema or {}
    parts = _conjuncts(term)
    notes: list[str] = []
    pairs: list[tuple[z3.ArithRef, z3.ArithRef]] = []
    pair_at: list[int] = []
    out: list[z3.BoolRef] = []
    changed = False
    for _i, c in enumerate(parts):
        d = _disequality(c)
        if d is not None:
            pairs.append(d)
            pair_at.append(len(out))
            out.append(c)
            continue
        u = _recorded_uniformity(c, extrema) if extrema else None
        u = u if u is not None else _uniformity(c)
        if u is not None:
            out.append(u[0])
            notes.append(u[1])
            changed = True
            continue
        out.append(c)
    if len(pairs) >= 3:
        groups, rest = _cliques(pairs)
        if groups:
            keep = {pair_at[k] for k in rest}
            drop = set(pair_at) - keep
            out = [c for j, c in enumerate(out) if j not in drop]
            budget = [COUNT_FORM_TERMS]
            counted = 0
            for g in groups:
                out.append(z3.Distinct(*g))
                facts = _count_form(g, bounds, budget)
                counted += bool(facts)
                out.extend(facts)
            sizes = sorted({len(g) for g in groups})
            notes.append(
                f"pairwise distinctness as Distinct over {len(groups)} group(s) of "
                f"{'/'.join(map(str, sizes))} entries"
                + (f", with the count form (at most one entry per value) for {counted} of them" if counted else "")
            )
            changed = True
    if not changed:
        return Normalised(term, [])
    return Normalised(_and(out), notes)


#: rlimit of each Z3 check that a term is invariant under a permutation of a batch (a term that
#: is not shown invariant within it gets no sortedness: never a guess).
INVARIANCE_RLIMIT = 2_000_000


def _invariant(terms: list[z3.ExprRef], swap: list[tuple[z3.ExprRef, z3.ExprRef]]) -> bool:
    """Every term of ``terms`` equals itself with the entries renamed by ``swap`` (a
    simultaneous substitution), for every value of every variable: syntactically after Z3's
    simplifier, else by an unsat answer within :data:`INVARIANCE_RLIMIT`."""
    for t in terms:
        u = z3.substitute(t, *swap)
        if u.eq(t) or z3.simplify(u).eq(z3.simplify(t)):
            continue
        s = z3.Solver()
        s.set("rlimit", INVARIANCE_RLIMIT)
        s.add(u != t if not z3.is_bool(t) else z3.Xor(u, t))
        if s.check() != z3.unsat:
            return False
    return True


def sorted_batch(
    terms: list[z3.ExprRef], entries: list[z3.ExprRef], name: str = "batch"
) -> tuple[list[z3.BoolRef], str] | None:
    """Symmetry breaking: ``entries[0] <= entries[1] <= …`` when every term of ``terms`` (the
    claim, every assumption and path condition of a case; the entries' own domain bounds are
    the same for each entry and need not be listed) is invariant under every permutation of
    ``entries`` (Z3 variables: the batch's active entries, never its padding).

    Sound: the permutations of ``entries`` are generated by the transposition of the first two
    and the rotation of all of them, so a problem invariant under both is invariant under every
    permutation; every point of it (a counterexample, or a witness of non-vacuity) then has a
    sorted permutation that is also a point, and adding sortedness keeps every verdict. Returns
    (the facts, a note) or None when some term is not shown invariant (then nothing is added).
    """
    entries = [e for e in entries if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED]
    if len(entries) < 2 or len({e.get_id() for e in entries}) != len(entries):
        return None
    ids = {e.get_id() for e in entries}
    terms = [t for t in terms if _mentions(t, ids)]
    n = len(entries)
    transposition = [(entries[0], entries[1]), (entries[1], entries[0])]
    rotation = [(entries[i], entries[(i + 1) % n]) for i in range(n)] if n > 2 else transposition
    if not (_invariant(terms, transposition) and _invariant(terms, rotation)):
        return None
    return (
        [entries[i] <= entries[i + 1] for i in range(n - 1)],
        f"{name}: batch entries sorted (symmetry breaking: the claim and assumptions are invariant under every permutation of them)",
    )


def _mentions(t: z3.ExprRef, ids: set[int]) -> bool:
    seen, stack = set(), [t]
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if e.get_id() in ids:
            return True
        stack.extend(e.children())
    return False
