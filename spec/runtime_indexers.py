"""The classic runtime fix (bounds check, worst case × margin, grow by doubling) as checked claims.

Contracts are checked by CrossHair on the pure functions in ``models/runtime_indexers.py``;
the margin formula is also proved with Z3 over a wide integer range.
"""

from capproof import Range, at_most, contract, less_than, obligation
from models.runtime_indexers import margin_capacity

contracts = [
    contract("models/runtime_indexers.py::unchecked_row", expect="counterexample"),
    contract("models/runtime_indexers.py::checked_row"),
    contract("models/runtime_indexers.py::margin_capacity"),
    contract("models/runtime_indexers.py::grown_capacity"),
    contract("models/runtime_indexers.py::write_growing"),
]


@obligation(
    domain={"worst_case": Range(0, 2**40), "index": Range(0, 2**41)},
    assumptions={"index within worst case": lambda index, worst_case: index < worst_case},
    expect="proved",
)
def margin_capacity_covers_worst_case(worst_case, index):
    """Every index below the worst case is below ``worst_case × 1.1 + 1``."""
    return less_than(index=index, capacity=margin_capacity(worst_case))


@obligation(
    domain={"worst_case": Range(0, 2**40), "demand": Range(0, 2**41)},
    expect="counterexample",
)
def margin_capacity_covers_any_demand(worst_case, demand):
    """A margin is not a proof: a demand the worst case did not foresee still overflows."""
    return at_most(demand=demand, capacity=margin_capacity(worst_case))
