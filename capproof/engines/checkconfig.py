"""``capproof check-config``: run every applicable obligation of spec/ for one deployment.

The serve flags are pinned (``max_model_len``, ``block_size``, ``dcp``, ``num_speculative_tokens``,
… — spec/ names parameters like vLLM's config fields); batch parameters stay symbolic; bounds the
deployment implies on the batch (``num_decodes <= max_num_seqs``, ``num_decode_tokens <=
max_num_batched_tokens``) are added as assumptions. An obligation applies when its ``engine`` is
the engine checked and its ``versions`` contain the version checked; a pin outside an
obligation's declared domain makes that obligation not applicable (reported, not run).

Outcome: ``safe`` only when every applicable obligation is proved; ``will fail`` when one has a
counterexample (its values and the smallest triggering batch are shown); anything unknown,
vacuous or in error is reported as undecided, never as safe.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from ..loader import load
from ..obligation import Obligation
from ..prover import prove_obligation
from ..verdict import ObligationResult, Options, Verdict
from .vllm.flags import VLLM_VERSION
from .vllm.serve import ServeConfig

__all__ = ["CheckError", "parse_engine", "pins_for", "run_check", "CheckOutcome", "SUPPORTED_VLLM", "SUPPORTED_VLLM_ASCEND"]

#: vLLM releases whose sizing formulas spec/ describes (bisected on PyPI wheels: #39324 first in
#: 0.21.0, #50302 in 0.27.0, #50823 in 0.28.0).
SUPPORTED_VLLM = (Version("0.18.0"), Version(VLLM_VERSION))
#: vLLM-Ascend releases the corpus covers (C3: vllm-project/vllm-ascend#14024 on main, #14114 its
#: v0.26.0rc backport).
SUPPORTED_VLLM_ASCEND = (Version("0.18.0"), Version("0.33.0"))

#: Parameters that describe the deployment (pinned from flags when given); every other parameter
#: of an obligation is part of the batch and stays symbolic.
CONFIG_PARAMS = {
    "max_model_len", "block_size", "dcp", "tp", "num_speculative_tokens", "max_num_seqs",
    "max_num_batched_tokens", "kernel_block_size", "index_topk", "num_experts", "top_k", "hidden_size",
    "max_cudagraph_capture_size",
}


#: ``--kv-cache-dtype`` values that select DSA's sparse MLA on CUDA, whose indexer backend supports
#: kernel block size 64 only (vLLM 0.33.0 ``DeepseekV32IndexerBackend.get_supported_kernel_block_sizes``).
DSA_CACHE_DTYPES = frozenset({"fp8_ds_mla", "nvfp4_ds_mla"})
DSA_CUDA_KERNEL_BLOCK_SIZE = 64


class CheckError(ValueError):
    """Bad ``--engine`` or ``--model-config`` (one line)."""


def parse_engine(text: str) -> tuple[str, str]:
    """``vllm``, ``vllm==0.23.0`` or ``vllm-ascend==0.25.0`` -> (engine, version).

    vLLM's default version is the pinned one; vLLM-Ascend (a plugin run by the same ``vllm serve``
    command line) needs its version. Raises CheckError for anything else.
    """
    name, sep, version = text.partition("==")
    name = name.strip().lower()
    if name not in ("vllm", "vllm-ascend"):
        raise CheckError(f"--engine {text!r}: supported are vllm[==VERSION] and vllm-ascend==VERSION")
    if name == "vllm-ascend" and not sep:
        raise CheckError(f"--engine {text!r}: give the vLLM-Ascend release, e.g. vllm-ascend==0.25.0")
    version = version.strip() if sep else VLLM_VERSION
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise CheckError(f"--engine {text!r}: {version!r} is not a version") from None
    lo, hi = SUPPORTED_VLLM if name == "vllm" else SUPPORTED_VLLM_ASCEND
    if not (lo <= parsed <= hi):
        raise CheckError(f"--engine {text!r}: capproof models {name} {lo}..{hi}")
    return name, version


def read_model_config(path: str) -> dict[str, int]:
    """Sizing fields of a Hugging Face ``config.json``: index_topk, n_routed_experts, num_experts_per_tok, hidden_size."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise CheckError(f"--model-config {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise CheckError(f"--model-config {path}: malformed JSON ({exc.msg} at line {exc.lineno})") from None
    except UnicodeDecodeError:
        raise CheckError(f"--model-config {path}: not UTF-8 text (expected a config.json)") from None
    if not isinstance(data, dict):
        raise CheckError(f"--model-config {path}: expected a JSON object")
    out: dict[str, int] = {}
    for key, param in (("index_topk", "index_topk"), ("n_routed_experts", "num_experts"),
                       ("num_experts_per_tok", "top_k"), ("hidden_size", "hidden_size"),
                       ("max_position_embeddings", "max_position_embeddings")):
        value = data.get(key, data.get("text_config", {}).get(key) if isinstance(data.get("text_config"), dict) else None)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise CheckError(f"--model-config {path}: {key} must be a positive integer, got {value!r}")
        out[param] = value
    return out


def pins_for(cfg: ServeConfig, model: dict[str, int] | None = None) -> dict[str, int]:
    """Parameter pins implied by the flags (and the model config)."""
    model = dict(model or {})
    pins: dict[str, int] = {"dcp": cfg.dcp, "tp": cfg.tp, "num_speculative_tokens": cfg.num_speculative_tokens}
    max_len = cfg.max_model_len if cfg.max_model_len is not None else model.pop("max_position_embeddings", None)
    model.pop("max_position_embeddings", None)
    for name, value in (("max_model_len", max_len), ("block_size", cfg.block_size), ("max_num_seqs", cfg.max_num_seqs),
                        ("max_num_batched_tokens", cfg.max_num_batched_tokens),
                        ("max_cudagraph_capture_size", cfg.max_cudagraph_capture_size)):
        if value is not None:
            pins[name] = value
    if cfg.max_num_seqs is not None:
        pins["max_num_reqs"] = cfg.max_num_seqs  # vLLM-Ascend's (and the runner's) name for it
    if cfg.kv_cache_dtype in DSA_CACHE_DTYPES:
        pins["kernel_block_size"] = DSA_CUDA_KERNEL_BLOCK_SIZE
    pins.update(model)
    return pins


def _batch_bounds(ob: Obligation, cfg: ServeConfig) -> dict:
    """Assumptions the deployment adds on the obligation's batch parameters."""
    extra = {}
    if cfg.max_num_seqs is not None and "num_decodes" in ob.domain:
        n = cfg.max_num_seqs
        extra[f"num_decodes <= max_num_seqs ({n})"] = _at_most("num_decodes", n)
    if cfg.max_num_batched_tokens is not None and "num_decode_tokens" in ob.domain:
        t = cfg.max_num_batched_tokens
        extra[f"num_decode_tokens <= max_num_batched_tokens ({t})"] = _at_most("num_decode_tokens", t)
    return extra


def _at_most(param: str, bound: int):
    """An assumption function taking exactly ``param`` (its signature names the parameter)."""
    def bounded(**values):
        return values[param] <= bound

    bounded.__signature__ = inspect.Signature([inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY)])
    return bounded


@dataclass
class Checked:
    obligation: Obligation
    result: ObligationResult | None
    applicable: bool
    why_not: str = ""
    pinned: dict = field(default_factory=dict)
    free: list = field(default_factory=list)


@dataclass
class CheckOutcome:
    engine: str
    version: str
    checked: list[Checked]

    @property
    def applicable(self) -> list[Checked]:
        return [c for c in self.checked if c.applicable]

    @property
    def failures(self) -> list[Checked]:
        return [c for c in self.applicable if c.result.verdict is Verdict.COUNTEREXAMPLE]

    @property
    def undecided(self) -> list[Checked]:
        return [c for c in self.applicable if c.result.verdict not in (Verdict.PROVED, Verdict.COUNTEREXAMPLE)]

    @property
    def out_of_domain(self) -> list[Checked]:
        """Obligations about this engine version that could not be checked because a flag's value
        lies outside their declared domain: they block "safe" (nothing was proved for them)."""
        return [c for c in self.checked if not c.applicable and c.why_not.startswith(OUTSIDE)]

    @property
    def status(self) -> str:
        if self.failures:
            return "will fail"
        if self.undecided or not self.applicable or self.out_of_domain:
            return "undecided"
        return "safe"

    @property
    def exit_code(self) -> int:
        return {"safe": 0, "will fail": 1}.get(self.status, 2)


#: Prefix of the reason an obligation is not applied because a flag lies outside its domain.
OUTSIDE = "not checked: "

#: Parameters only a model's config.json gives (``--model-config``); an obligation over them is
#: about one model, so it is not applied without it.
MODEL_PARAMS = ("num_experts", "top_k", "index_topk", "hidden_size")


def run_check(cfg: ServeConfig, engine: str, version: str, model: dict[str, int] | None = None,
              paths=("spec",), options: Options | None = None) -> CheckOutcome:
    """Prove every obligation of ``paths`` that applies to ``engine==version`` under the flags' pins."""
    options = options or Options()
    if cfg.max_model_len is None and model and "max_position_embeddings" in model:
        cfg.max_model_len = model["max_position_embeddings"]  # vLLM's default max_model_len
    pins = pins_for(cfg, model)
    items, errors = load(paths)
    if errors:
        raise CheckError(errors[0].message)
    checked: list[Checked] = []
    for ob in items:
        if not isinstance(ob, Obligation) or not ob.applies_to(engine, version):
            continue
        mine = {k: v for k, v in pins.items() if k in ob.domain}
        outside = [f"{OUTSIDE}{k}={v} outside {ob.domain[k].describe()}" for k, v in mine.items() if not ob.domain[k].contains(v)]
        free = [p for p in ob.params if p not in mine]
        if outside:
            checked.append(Checked(ob, None, False, "; ".join(outside), mine, free))
            continue
        needs_model = [p for p in MODEL_PARAMS if p in ob.domain and p not in mine]
        if needs_model:
            checked.append(Checked(ob, None, False, f"needs --model-config for {', '.join(needs_model)}", mine, free))
            continue
        bounded = dataclasses.replace(ob, assumptions={**ob.assumptions, **_batch_bounds(ob, cfg)})
        result = prove_obligation(bounded, dataclasses.replace(options, pins=mine))
        checked.append(Checked(ob, result, True, "", mine, free))
    return CheckOutcome(engine, version, checked)


def outcome_lines(outcome: CheckOutcome, cfg: ServeConfig) -> list[str]:
    """Human-readable report: the verdict first, then one block per obligation."""
    lines: list[str] = []
    head = {"safe": "safe", "will fail": "will fail", "undecided": "undecided (not proved safe)"}[outcome.status]
    engine = {"vllm": "vLLM", "vllm-ascend": "vLLM-Ascend"}.get(outcome.engine, outcome.engine)
    lines.append(f"{head}: {engine} {outcome.version}, {cfg.describe()}")
    for c in outcome.checked:
        ob = c.obligation
        case = f" [{ob.case}]" if ob.case else ""
        if not c.applicable:
            lines.append(f"  n/a     {ob.id}{case}: {c.why_not}")
            continue
        r = c.result
        if r.verdict is Verdict.PROVED:
            free = f" for every {', '.join(c.free)}" if c.free else ""
            lines.append(f"  safe    {ob.id}{case}: holds{free}")
        elif r.verdict is Verdict.COUNTEREXAMPLE:
            cex = r.counterexample
            values = ", ".join(f"{k}={v}" for k, v in cex.values.items())
            trigger = {k: v for k, v in cex.params.items() if k not in c.pinned}
            batch = {k: v for k, v in trigger.items() if k not in CONFIG_PARAMS}
            config = {k: v for k, v in trigger.items() if k in CONFIG_PARAMS}
            lines.append(f"  FAILS   {ob.id}{case}: {r.relation or 'claim'} fails: {values}")
            if batch and not r.witnesses:
                label = "smallest triggering batch" if cex.minimized else "a triggering batch (not minimised)"
                lines.append(f"          {label}: " + ", ".join(f"{k}={v}" for k, v in batch.items()))
            for w in r.witnesses:  # trigger witnesses: the smallest batch taking each failing path
                if w.found:
                    wbatch = {k: v for k, v in w.params.items() if k not in c.pinned and k not in CONFIG_PARAMS}
                    shown = ", ".join(f"{k}={v}" for k, v in wbatch.items())
                    values = ", ".join(f"{k}={v}" for k, v in w.values.items())
                    lines.append(f"          smallest batch that {w.name}: {shown} ({values})")
                else:
                    lines.append(f"          no batch {w.name}: {w.message}")
            if config:
                lines.append("          with unpinned " + ", ".join(f"{k}={v}" for k, v in config.items()))
            if ob.sources:
                lines.append("          see " + ", ".join(ob.sources))
        else:
            lines.append(f"  {r.verdict.value.upper():7s} {ob.id}{case}: {r.message} (not counted as safe)")
    if not outcome.applicable:
        lines.append("  no obligation of spec/ applies to these flags: nothing was proved")
    if cfg.max_model_len is None:
        lines.append("  note: --max-model-len not given: max_model_len left symbolic over each obligation's domain")
    if cfg.kv_cache_dtype in DSA_CACHE_DTYPES:
        lines.append(f"  note: --kv-cache-dtype {cfg.kv_cache_dtype} (DSA on CUDA): kernel_block_size pinned to {DSA_CUDA_KERNEL_BLOCK_SIZE}")
    if cfg.block_size is None:
        lines.append("  note: --block-size not given: every block size of each obligation's domain is checked")
    return lines
