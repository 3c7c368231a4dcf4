"""Demands of speculative-decoding buffers, derived by running vLLM's drafting code and kernels.

Each derivation runs the engine's own constructor and host code on symbolic sizes with the
kernels interpreted by :mod:`capproof.engines.vllm.kernel_extents` (their Python bodies, a
stand-in ``tl``), on every path (:func:`capproof.symbolic.explore`), and bounds every load and
store per dimension. An entry gets a demand for a dimension only when every access of the paths
run is bounded there; an access whose offset depends on data the engine stored (a request-state
index, a draft step read from a tensor) is listed as not derived, with its site.

Derived in vLLM 0.33.0:

- ``OnlineAcceptanceEstimator`` (``vllm/v1/worker/gpu/spec_decode/acceptance_estimator.py``):
  ``__init__(max_num_reqs, num_speculative_steps)`` run (the speculator passes
  ``num_speculative_steps = speculative_config.num_speculative_tokens``,
  ``spec_decode/speculator.py:114,263-266``, checked in the source), then ``step`` on both of its
  paths (the accumulation alone, and the accumulation then the refit); ``_accumulate_kernel`` is
  launched on a grid of ``num_speculative_steps`` programs and indexes ``info``/``grad``/``counts``
  by its program id, ``_refit_kernel`` masks every access by ``k < NUM_SPECULATIVE_STEPS``. So
  "a speculative step is < num_speculative_steps" is, on these paths, the launch grid and the
  mask: run, not assumed. ``predict`` indexes ``intercepts`` and ``features``/``predictions`` by
  a draft step and a request-state index loaded from tensors (data): not derived here.
"""

from __future__ import annotations

import ast
import os

from ...symbolic import SymInt

__all__ = ["ACCEPTANCE", "derive_acceptance_estimator", "derive_drafting"]

ACCEPTANCE = "vllm/v1/worker/gpu/spec_decode/acceptance_estimator.py"
_OWNER = "OnlineAcceptanceEstimator"
#: config names a derived extent may use (the domain of the obligations)
NAMES = ("num_speculative_tokens", "max_num_reqs", "num_reqs", "num_tokens", "vocab_size")


def _speculator_passes_num_speculative_tokens(root: str) -> list[str]:
    """Lines of ``spec_decode/speculator.py`` where ``self.num_speculative_steps`` is set to
    ``self.speculative_config.num_speculative_tokens`` and the estimator is built with it (AST);
    empty when the source says otherwise."""
    path = os.path.join(root, "vllm/v1/worker/gpu/spec_decode/speculator.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    sets, builds = [], []
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "self.num_speculative_steps":
            if ast.unparse(n.value) == "self.speculative_config.num_speculative_tokens":
                sets.append(n.lineno)
            else:
                return []
        if isinstance(n, ast.Call) and ast.unparse(n.func) == _OWNER:
            if len(n.args) >= 2 and ast.unparse(n.args[1]) == "self.num_speculative_steps":
                builds.append(n.lineno)
            else:
                return []
    return (
        [f"vllm/v1/worker/gpu/spec_decode/speculator.py:{','.join(map(str, sets + builds))}"] if sets and builds else []
    )


_NOT_OWNED = (
    "idx_mapping",
    "num_sampled",
    "num_rejected",
    "logits",
    "draft_step",
    "draft_token_confidence_probs",
    "temperature",
    "?",
)


def derive_acceptance_estimator(root: str) -> tuple[dict[str, list[dict]], list[str]]:
    """``({entry id: demands}, problems)`` for the estimator's buffers (module docstring)."""
    import z3
    from vllm.v1.worker.gpu.spec_decode import acceptance_estimator as mod

    from ...inventory import to_expression
    from ...symbolic import explore
    from . import kernel_extents as ke

    link = _speculator_passes_num_speculative_tokens(root)
    if not link:
        return {}, ["acceptance estimator: the speculator does not build it with num_speculative_tokens (AST)"]
    K, R, N, T, V = (SymInt.var(n) for n in NAMES)
    domain = [z3.Int(n) >= 1 for n in NAMES]

    def scenario(act):
        def run():
            ke.Run.current = run_ = ke.Run()
            with ke.patched(mod, ke.kernels_of(mod)):
                est = mod.OnlineAcceptanceEstimator(R, K, "cpu")
                ke.name_tensors(est)
                act(est)
            return run_

        return run

    def step(refit):
        def act(est):
            est._steps_since_refit = est.REFIT_INTERVAL - 1 if refit else 0
            est.step(*(ke.FakeTensor((N,), n) for n in ("idx_mapping", "num_sampled", "num_rejected")))

        return act

    def predict(step_shape):
        def act(est):
            est.predict(
                ke.FakeTensor((T, V), "logits"),
                ke.FakeTensor((T,), "idx_mapping"),
                ke.FakeTensor(step_shape, "draft_step"),
                ke.FakeTensor((R, K), "draft_token_confidence_probs"),
                ke.FakeTensor((R,), "temperature"),
            )

        return act

    # step: accumulate only, accumulate then refit; predict: one draft step shared by the batch,
    # one per row
    found: dict = {}
    for act in (step(False), step(True), predict(()), predict((T,))):
        ke.extents(explore(scenario(act), assume=domain, watch=False), domain, set(NAMES), found)
    out: dict[str, list[dict]] = {}
    problems = []
    for name, rec in found.items():
        if name in _NOT_OWNED:
            continue
        entry = f"{ACCEPTANCE}::{_OWNER}.{name}"
        demands = []
        for dim, terms in sorted(rec.per_dim.items()):
            if any(p.split(" dim ")[-1].startswith(f"{dim}:") for p in rec.problems):
                continue
            extent = to_expression(ke.combine(terms, domain), NAMES)
            demands.append(
                {
                    "dim": dim,
                    "how": "executed",
                    "family": "kernel extents",
                    "extent": extent,
                    "from": [
                        f"{ACCEPTANCE}:340-403 OnlineAcceptanceEstimator.__init__ (executed, symbolic sizes)",
                        f"{ACCEPTANCE}:405-449 step (executed, every path: accumulate; accumulate and refit)",
                        f"{ACCEPTANCE}:451-502 predict (executed, every path; a shared and a per-row draft step)",
                        *link,
                        *(s + " (kernel body executed, stand-in tl)" for s in rec.sites),
                    ],
                    "notes": [f"not derived: {p}" for p in rec.problems],
                    "facts": [
                        {  # the program id's grid and the refit's mask, run (not data)
                            "fact": "a speculative step is < num_speculative_steps (launch grid, mask)",
                            "checked": True,
                            "paths": {
                                "checked (executed: grid (num_speculative_steps,) and mask k < NUM_SPECULATIVE_STEPS)": rec.sites
                            },
                        }
                    ]
                    if "num_speculative_tokens" in extent
                    else [],
                }
            )
        if rec.problems:
            problems += [f"{entry}: {p}" for p in rec.problems]
        out[entry] = demands
    return out, problems


def derive_drafting(entries: list, root: str) -> list[str]:
    """Set the ``demands`` this module derives on ``entries`` (only dimensions every access
    bounds; an entry some dimension of which is not derived keeps the dimensions that are);
    return one problem line per access or derivation not derived."""
    by_id = {e.id: e for e in entries}
    problems: list[str] = []
    for derive in (derive_acceptance_estimator,):
        try:
            found, probs = derive(root)
        except Exception as exc:  # noqa: BLE001 - one line per derivation that failed
            problems.append(f"{derive.__name__} failed: {type(exc).__name__}: {exc}"[:300])
            continue
        problems += probs
        for ident, demands in found.items():
            e = by_id.get(ident)
            if e is None:
                problems.append(f"demand: {ident} is not in the inventory")
            elif demands and not e.demands:
                e.demands = demands
    return problems
