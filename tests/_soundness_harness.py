"""Shared check of the adversarial catalogue: a verdict compared with brute force on ints.

``check(spec_file, name, body)`` loads the one obligation of ``HEADER + body``, proves it and
enumerates every point of its (small) domain on plain ints, each Vector as its active entries
padded to its size and alone. The verdict is sound when:

- ``proved``: no admitted point fails or raises, padded or alone;
- ``counterexample``: the point shown is in the domain and fails on ints, padded and alone;
- anything else (``error``, ``unknown``) is never wrong, only incomplete.
"""

from __future__ import annotations

from _brute import domain_points

from capproof import Options, Verdict
from capproof.encode import concrete_args, evaluate, replay
from capproof.loader import load_file
from capproof.prover import prove_obligation

HEADER = (
    "import math\nfrom capproof import Range, Choice, Vector, obligation, at_most, less_than, cdiv, all_of, "
    "any_of, implies, not_, total, max_of, min_of, count, prefix_sums, select\n"
)


def fails_on_ints(ob, point, padding: bool = True) -> bool:
    """True when the assumptions hold at ``point`` and the claim is false or raises there."""
    try:
        ev = evaluate(ob, concrete_args(ob, point, padding), witnesses=padding)
    except Exception:  # noqa: BLE001 - raising at an admitted point also refutes "proved"
        return True
    if not all(ev.assumptions.values()):
        return False
    return not ev.claim.holds


def check(spec_file, name: str, body: str, header: str = HEADER, options: Options | None = None):
    """Prove the obligation of ``header + body``; assert the verdict is sound; return the result."""
    (ob,) = load_file(spec_file(header + body, f"adv_{name.replace('-', '_')}.py"))
    result = prove_obligation(ob, options or Options(density="off"))
    if result.verdict is Verdict.PROVED:
        for point in domain_points(ob):
            for padding in (True, False):
                assert not fails_on_ints(ob, point, padding), (
                    f"proved ({result.encoding}), but fails on ints at {point} ({'padded' if padding else 'alone'})"
                )
    if result.verdict is Verdict.COUNTEREXAMPLE:
        shown = result.counterexample.params
        assert shown in list(domain_points(ob)), f"counterexample {shown} is outside the domain"
        for padding in (True, False):
            holds, _, failed = replay(ob, shown, padding)
            assert not holds and not failed, f"counterexample {shown} does not replay ({padding=})"
    return result


def batched_verdicts(path: str) -> dict[str, str]:
    """``{obligation name: verdict}`` of the spec file ``path`` decided by the runner as ``capproof
    prove`` does (several items to a process, default jobs)."""
    from capproof.runner import run

    outcomes = run([path], Options(contracts=False, density="off")).obligations
    return {o.id.rsplit(":", 1)[-1]: o.verdict.value for o in outcomes}


def assert_check_config_not_safe(path, point: dict) -> None:
    """The one obligation of ``path`` fails on ints at ``point``; ``check-config --spec path`` on a
    vLLM line with ``--max-model-len 4097`` must not answer safe."""
    from click.testing import CliRunner

    from capproof.cli import main

    (ob,) = load_file(str(path))
    assert fails_on_ints(ob, point)
    argv = ["vllm", "serve", "m", "--max-model-len", "4097"]
    result = CliRunner().invoke(main, ["check-config", "-j", "1", "--spec", str(path), "--", *argv])
    assert result.exit_code != 0, result.output


def assert_bound_not_sufficient(path, point: dict) -> None:
    """The one obligation of ``path`` fails on ints at ``point``; ``capproof bound`` must not call
    its capacity sufficient."""
    from capproof.bound import bound_obligation

    (ob,) = load_file(str(path))
    assert fails_on_ints(ob, point)
    result = bound_obligation(ob)
    sufficient = result.status == "bounded" and not any(c.insufficient for c in result.cases)
    assert not sufficient, f"bounded sufficient, but the claim fails on ints at {point}"
