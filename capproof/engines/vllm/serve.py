"""Parse the sizing-relevant flags of a ``vllm serve`` command line (no evaluation: JSON only).

Every option string vLLM 0.33.0 accepts is known (``capproof/engines/vllm/flags.py``, extracted from the
wheel); the sizing-relevant ones are parsed and validated, the others are accepted and listed as
ignored. An unknown flag, a missing value or a malformed value raises :class:`ServeFlagError`
with one line. Forms accepted as vLLM's ``FlexibleArgumentParser`` does: ``--flag value``,
``--flag=value``, underscores for dashes (``--max_model_len``), dotted JSON keys
(``--speculative-config.num_speculative_tokens 5``), and human-readable integers for
``--max-model-len``/``--max-num-batched-tokens`` (``350k`` = 350,000, ``1M`` = 1,048,576;
``vllm/utils/argparse_utils.py::human_readable_int``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .flags import VLLM_SERVE_FLAGS

__all__ = ["ServeFlagError", "ServeConfig", "parse_serve_args", "human_readable_int", "KV_CACHE_DTYPES"]

#: ``CacheDType`` of vLLM 0.33.0 (``vllm/config/cache.py``).
KV_CACHE_DTYPES = frozenset({
    "auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla", "nvfp4_ds_mla",
    "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc", "octave_k3v4",
    "octave_k3v3", "octave_k3v3_compact", "ultraquant_4bit", "int4_per_token_head", "int8_per_token_head",
    "fp8_per_token_head", "nvfp4", "nvfp4_4over6",
})

#: Flags older releases accepted that 0.33.0 renamed (still parsed, for ``--engine vllm==<old>``).
_OLD_FLAGS = {"--cuda-graph-sizes": "--cudagraph-capture-sizes"}

_ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-dcp": "--decode-context-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-sc": "--speculative-config",
    "-cc": "--compilation-config",
    "-q": "--quantization",
}

#: Flags that take no value (store_true / BooleanOptionalAction in vLLM 0.33.0) among those a
#: deployment line commonly carries; any ``--no-X`` of a known ``--X`` is also valueless.
_VALUELESS = frozenset({
    "--trust-remote-code", "--enforce-eager", "--enable-prefix-caching", "--enable-chunked-prefill",
    "--enable-expert-parallel", "--disable-log-stats", "--enable-log-requests", "--headless",
    "--disable-custom-all-reduce", "--enable-eplb", "--async-scheduling", "--enable-lora",
    "--skip-tokenizer-init", "--enable-sleep-mode", "--disable-cascade-attn", "--enable-dbo",
    "--enable-auto-tool-choice", "--disable-sliding-window", "--disable-hybrid-kv-cache-manager",
    "--language-model-only", "--enable-prompt-embeds", "--help", "-h",
})

_SIZING = {
    "--max-model-len", "--block-size", "--tensor-parallel-size", "--decode-context-parallel-size",
    "--max-num-seqs", "--max-num-batched-tokens", "--speculative-config", "--spec-tokens",
    "--kv-cache-dtype", "--cudagraph-capture-sizes", "--cuda-graph-sizes", "--max-cudagraph-capture-size",
    "--compilation-config", "--pipeline-parallel-size",
}
_LISTS = {"--cudagraph-capture-sizes", "--cuda-graph-sizes"}


class ServeFlagError(ValueError):
    """An unknown or malformed ``vllm serve`` flag (one line)."""


@dataclass
class ServeConfig:
    """The sizing-relevant settings of one ``vllm serve`` line (``None`` = not given)."""

    model: str | None = None
    max_model_len: int | None = None
    block_size: int | None = None
    tp: int = 1
    pp: int = 1
    dcp: int = 1
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    num_speculative_tokens: int = 0
    speculative_method: str | None = None
    kv_cache_dtype: str = "auto"
    cudagraph_capture_sizes: list[int] | None = None
    max_cudagraph_capture_size: int | None = None
    ignored: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in (
            ("max_model_len", self.max_model_len), ("block_size", self.block_size), ("tp", self.tp),
            ("dcp", self.dcp), ("max_num_seqs", self.max_num_seqs),
            ("max_num_batched_tokens", self.max_num_batched_tokens),
            ("num_speculative_tokens", self.num_speculative_tokens), ("kv_cache_dtype", self.kv_cache_dtype),
        ) if v is not None]
        if self.cudagraph_capture_sizes is not None:
            parts.append(f"cudagraph_capture_sizes={self.cudagraph_capture_sizes}")
        return ", ".join(parts)


def human_readable_int(flag: str, value: str) -> int:
    """vLLM 0.33.0 ``human_readable_int``: ``k m g t`` decimal (decimals allowed), ``K M G T`` binary."""
    text = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", text)
    if match:
        number, suffix = match.groups()
        if suffix in "kmgt":
            return int(float(number) * {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[suffix])
        if "." in number:
            raise ServeFlagError(f"{flag} {value!r}: decimals are not allowed with binary suffix {suffix} (did you mean {number}{suffix.lower()}?)")
        return int(number) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[suffix]
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    raise ServeFlagError(f"{flag} {value!r}: not an integer (accepted: 350000, 350k, 1M)")


def _int(flag: str, value: str, *, minimum: int = 1, human: bool = False) -> int:
    number = human_readable_int(flag, value) if human else None
    if number is None:
        if not re.fullmatch(r"[+-]?\d+", value.strip()):
            raise ServeFlagError(f"{flag} {value!r}: not an integer")
        number = int(value)
    if number < minimum:
        raise ServeFlagError(f"{flag} {value!r}: must be >= {minimum}")
    return number


def _json_object(flag: str, value: str) -> dict[str, Any]:
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ServeFlagError(f"{flag}: malformed JSON ({exc.msg} at column {exc.colno}): {value!r}") from None
    if not isinstance(data, dict):
        raise ServeFlagError(f"{flag}: expected a JSON object, got {type(data).__name__}")
    return data


def _json_int(flag: str, key: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ServeFlagError(f"{flag}: {key} must be an integer >= {minimum}, got {value!r}")
    return value


def _int_list(flag: str, values: list[object]) -> list[int]:
    out = []
    for v in values:
        if isinstance(v, str):
            v = _int(flag, v)
        out.append(_json_int(flag, "size", v, 1))
    return sorted(set(out))


def _normalise(token: str) -> str:
    if token.startswith("--"):
        head, dot, rest = token[2:].partition(".")
        return "--" + head.replace("_", "-") + dot + rest
    return token


def parse_serve_args(argv: list[str]) -> ServeConfig:
    """Parse a ``vllm serve`` argument list (with or without a leading ``vllm serve MODEL``)."""
    args = list(argv)
    if args[:1] == ["vllm"]:
        args = args[1:]
    if args[:1] == ["serve"]:
        args = args[1:]
    cfg = ServeConfig()
    if args and not args[0].startswith("-"):
        cfg.model = args.pop(0)
    spec_json: dict[str, Any] = {}
    comp_json: dict[str, Any] = {}
    i = 0
    while i < len(args):
        token = _normalise(args[i])
        i += 1
        if not token.startswith("-"):
            raise ServeFlagError(f"unexpected argument {token!r} (only one positional MODEL is accepted, before the flags)")
        flag, eq, value = token.partition("=")
        flag, dot, key = flag.partition(".")
        flag = _ALIASES.get(flag, flag)
        base = flag[5:] if flag.startswith("--no-") else None
        known = flag in VLLM_SERVE_FLAGS or flag in _OLD_FLAGS or (base is not None and f"--{base}" in VLLM_SERVE_FLAGS)
        if not known:
            raise ServeFlagError(f"unknown vllm serve flag {args[i - 1]!r} (not an option of vLLM 0.33.0)")
        if flag in _VALUELESS or base is not None:
            if eq:
                raise ServeFlagError(f"{flag} takes no value, got {value!r}")
            cfg.ignored.append(flag)
            continue
        if flag in _LISTS and not eq:
            values = []
            while i < len(args) and not args[i].startswith("-"):
                values.append(args[i])
                i += 1
            if not values:
                raise ServeFlagError(f"{flag} needs at least one size")
            if flag == "--cuda-graph-sizes" or flag == "--cudagraph-capture-sizes":
                cfg.cudagraph_capture_sizes = _int_list(flag, [v for part in values for v in part.split(",") if v])
            continue
        if not eq:
            if i >= len(args) or (args[i].startswith("-") and not re.fullmatch(r"-\d+", args[i])):
                raise ServeFlagError(f"{flag} needs a value")
            value = args[i]
            i += 1
        if dot:  # --speculative-config.num_speculative_tokens 5
            if flag == "--speculative-config":
                spec_json[key] = _parse_scalar(value)
            elif flag == "--compilation-config":
                comp_json[key] = _parse_scalar(value)
            else:
                cfg.ignored.append(f"{flag}.{key}")
            continue
        if flag not in _SIZING:
            cfg.ignored.append(flag)
            continue
        if flag == "--max-model-len":
            if value.strip().lower() == "auto" or value.strip() == "-1":
                cfg.max_model_len = None
            else:
                cfg.max_model_len = _int(flag, value, human=True)
        elif flag == "--block-size":
            cfg.block_size = _int(flag, value)
        elif flag == "--tensor-parallel-size":
            cfg.tp = _int(flag, value)
        elif flag == "--pipeline-parallel-size":
            cfg.pp = _int(flag, value)
        elif flag == "--decode-context-parallel-size":
            cfg.dcp = _int(flag, value)
        elif flag == "--max-num-seqs":
            cfg.max_num_seqs = _int(flag, value)
        elif flag == "--max-num-batched-tokens":
            cfg.max_num_batched_tokens = _int(flag, value, human=True)
        elif flag == "--spec-tokens":
            spec_json["num_speculative_tokens"] = _int(flag, value)
        elif flag == "--speculative-config":
            spec_json.update(_json_object(flag, value))
        elif flag == "--compilation-config":
            comp_json.update(_json_object(flag, value))
        elif flag == "--kv-cache-dtype":
            if value not in KV_CACHE_DTYPES:
                raise ServeFlagError(f"--kv-cache-dtype {value!r}: not a vLLM 0.33.0 cache dtype ({', '.join(sorted(KV_CACHE_DTYPES))})")
            cfg.kv_cache_dtype = value
        elif flag == "--max-cudagraph-capture-size":
            cfg.max_cudagraph_capture_size = _int(flag, value)
        elif flag in _LISTS:  # --cudagraph-capture-sizes=1,2,4
            cfg.cudagraph_capture_sizes = _int_list(flag, [v for v in value.split(",") if v])
    if spec_json:
        if "num_speculative_tokens" in spec_json:
            cfg.num_speculative_tokens = _json_int("--speculative-config", "num_speculative_tokens", spec_json["num_speculative_tokens"], 1)
        method = spec_json.get("method")
        if method is not None and not isinstance(method, str):
            raise ServeFlagError(f"--speculative-config: method must be a string, got {method!r}")
        cfg.speculative_method = method
    if comp_json:
        sizes = comp_json.get("cudagraph_capture_sizes")
        if sizes is not None:
            if not isinstance(sizes, list):
                raise ServeFlagError("--compilation-config: cudagraph_capture_sizes must be a JSON list of integers")
            if cfg.cudagraph_capture_sizes is not None:
                raise ServeFlagError("--cudagraph-capture-sizes and compilation_config.cudagraph_capture_sizes are mutually exclusive")
            cfg.cudagraph_capture_sizes = _int_list("--compilation-config", sizes)
        if comp_json.get("max_cudagraph_capture_size") is not None:
            cfg.max_cudagraph_capture_size = _json_int("--compilation-config", "max_cudagraph_capture_size", comp_json["max_cudagraph_capture_size"], 1)
    return cfg


def _parse_scalar(value: str) -> object:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
