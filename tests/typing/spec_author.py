"""What a spec author and a tool write against ``from capproof import ...``, for the type checker.

``make typecheck`` runs mypy on this file and on capproof/__init__.py (the facade): a public name
whose signature no longer accepts these uses, or a facade name that is no longer typed, fails it.
Not collected by pytest (no ``test_`` prefix); tests/test_architecture.py checks that the facade's
type-checking block names every name of ``__all__``.
"""

from __future__ import annotations

from capproof import (
    CapproofError,
    Choice,
    Claim,
    Options,
    PowersOfTwo,
    Range,
    RunResult,
    Vector,
    Verdict,
    at_most,
    cdiv,
    claim,
    count,
    equal,
    fits,
    int32,
    less_than,
    max_of,
    minimum,
    obligation,
    prove,
    round_up,
    run,
    select,
    total,
)
from capproof.obligation import Obligation


def blocks(max_model_len: int, block_size: int) -> int:
    return int(cdiv(max_model_len, block_size))


@obligation(
    domain={"max_model_len": Range(1, 2**21), "block_size": Choice(16, 32, 64), "tp": PowersOfTwo(1, 8)},
    sources=["vllm==0.33.0 vllm/v1/worker/block_table.py"],
    engine="vllm",
    versions="==0.33.0",
)
def block_table_fits(max_model_len: int, block_size: int, tp: int) -> Claim:
    width = round_up(blocks(max_model_len, block_size), tp)
    return at_most(demand=cdiv(max_model_len, block_size), capacity=width)


@obligation(domain={"num_reqs": Range(1, 8), "query_lens": Vector(8, Range(1, 64), length="num_reqs")})
def batch_tokens(num_reqs: int, query_lens: list[int]) -> Claim:
    tokens = total(query_lens)
    longest = max_of(query_lens)
    long = count(q > 16 for q in query_lens)
    return claim(select(long > 0, longest, minimum(longest, 16)) <= tokens, tokens=tokens, longest=longest, long=long)


@obligation(domain={"x": Range(0, 2**20)}, expect="counterexample")
def offsets(x: int) -> Claim:
    return fits("int32", offset=int32(x * 4096))


@obligation(domain={"i": Range(0, 9)})
def index(i: int) -> Claim:
    return less_than(index=i, capacity=10)


@obligation(domain={"a": Range(0, 9)})
def same(a: int) -> Claim:
    return equal(first=a + 0, second=a)


def tool() -> bool:
    declared: Obligation = block_table_fits
    verdict: Verdict = prove(declared, Options(rlimit=1_000_000)).verdict
    result: RunResult = run(["spec"], Options(jobs=1), keyword="block_table")
    try:
        return verdict is Verdict.PROVED and result.ok
    except CapproofError:
        return False
