"""Parse the sizing-relevant settings of a ``vllm serve`` command line (no evaluation: JSON/YAML only).

The command line is read the way vLLM's ``FlexibleArgumentParser.parse_args`` reads it
(``vllm/utils/argparse_utils.py``, 0.18.0-0.33.0), in the same order:

1. launcher: ``[VAR=value ...] vllm serve [MODEL] …``, ``python -m vllm.entrypoints.cli.main serve
   …`` or ``python -m vllm.entrypoints.openai.api_server --model M …`` (environment prefixes are
   recorded in :attr:`ServeConfig.env`, not interpreted);
2. ``--model M`` after ``serve`` is moved to the positional model;
3. ``--config FILE.yaml`` (``_pull_args_from_config`` / ``load_config_file``): its keys become
   flags inserted right after the model, so a flag on the command line wins over the file (``true``
   -> ``--key``, ``false`` -> ``--no-key``, list -> ``--key v1 v2``, mapping -> ``--key '<json>'``);
4. underscores -> dashes up to the first ``.``; ``-O3``/``-O=3``/``-Odecode`` and ``-O 3`` ->
   ``--optimization-level``;
5. dotted keys (``--speculative-config.num_speculative_tokens 5``, ``--x.key+ a,b``) are merged
   into one JSON value per flag and appended at the end (so they replace an earlier whole JSON
   value of that flag, as in vLLM);
6. argparse: long options may be abbreviated to a unique prefix, the last occurrence wins.

Every option string of the selected release is known (``flags.py``, generated from the wheels);
an unknown flag (with a "did you mean"), a missing value or a malformed value raises
:class:`ServeFlagError` with one line. Integers accept vLLM's human-readable forms for
``--max-model-len``/``--max-num-batched-tokens`` (``350k`` = 350,000, ``1M`` = 1,048,576).
"""

from __future__ import annotations

import difflib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..docker import strip_docker
from .flags import (
    ALIASES,
    CACHE_DTYPES,
    ENABLE_DISABLE_PAIRS,
    LISTS_FLAGS,
    OPTIONAL_FLAGS,
    VALUELESS_FLAGS,
    VLLM_SERVE_FLAGS,
    VLLM_VERSION,
    serve_flags,
)

__all__ = [
    "ServeFlagError",
    "ServeConfig",
    "parse_serve_args",
    "human_readable_int",
    "KV_CACHE_DTYPES",
    "SIZING_FLAGS",
    "user_capture_sizes",
]

#: ``CacheDType`` of the newest modelled vLLM (``vllm/config/cache.py``).
KV_CACHE_DTYPES = frozenset(CACHE_DTYPES[VLLM_VERSION])

#: Flags older releases accepted that 0.33.0 renamed (still parsed, for ``--engine vllm==<old>``).
_OLD_FLAGS = {"--cuda-graph-sizes": "--cudagraph-capture-sizes"}

#: Flags capproof reads (pinned or bounding the batch); every other flag is recorded as given but
#: not used by an obligation (listed under "not checked" by check-config).
SIZING_FLAGS = frozenset(
    {
        "--max-model-len",
        "--block-size",
        "--tensor-parallel-size",
        "--decode-context-parallel-size",
        "--max-num-seqs",
        "--max-num-batched-tokens",
        "--speculative-config",
        "--spec-tokens",
        "--spec-method",
        "--spec-model",
        "--kv-cache-dtype",
        "--cudagraph-capture-sizes",
        "--cuda-graph-sizes",
        "--max-cudagraph-capture-size",
        "--compilation-config",
        "--pipeline-parallel-size",
        "--model",
        "--config",
        "--enable-chunked-prefill",
        "--performance-mode",
        "--data-parallel-size",
    }
)

#: Module paths that start vLLM's OpenAI server with ``python -m``.
_API_SERVER_MODULES = {"vllm.entrypoints.openai.api_server", "vllm.entrypoints.launchers.api_server.entry"}
_CLI_MODULES = {"vllm.entrypoints.cli.main", "vllm"}
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.S)


class ServeFlagError(ValueError):
    """An unknown or malformed ``vllm serve`` flag (one line)."""


@dataclass
class ServeConfig:
    """The sizing-relevant settings of one ``vllm serve`` line (``None`` = not given)."""

    model: str | None = None
    version: str = VLLM_VERSION
    max_model_len: int | None = None
    #: ``--max-model-len auto`` (or ``-1``): vLLM derives it from the model and then fits it to the
    #: GPU memory at startup (``vllm/v1/core/kv_cache_planning.py`` ``_auto_fit_max_model_len``), so
    #: no single value can be pinned
    max_model_len_auto: bool = False
    block_size: int | None = None
    tp: int = 1
    pp: int = 1
    dcp: int = 1
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    num_speculative_tokens: int = 0
    speculative_method: str | None = None
    #: The tag of a ``docker run vllm/vllm-openai:TAG`` line (None: not a docker line, or no tag)
    image_tag: str | None = None
    #: ``--speculative-config``'s ``model`` (``--spec-model``): the draft model as given (None: not given)
    speculative_model: str | None = None
    kv_cache_dtype: str = "auto"
    cudagraph_capture_sizes: list[int] | None = None
    max_cudagraph_capture_size: int | None = None
    enable_chunked_prefill: bool | None = None
    performance_mode: str | None = None
    #: ``--data-parallel-size`` (DP pads every rank's batch to the largest rank's)
    dp: int = 1
    #: ``--speculative-config``'s ``parallel_drafting`` (P-EAGLE, PARD)
    parallel_drafting: bool = False
    #: ``--speculative-config``'s ``use_heterogeneous_vocab`` (a draft model with another vocabulary:
    #: vLLM 0.33.0 runs it on the V1 model runner)
    heterogeneous_vocab: bool = False
    #: ``--compilation-config``'s ``cudagraph_mode`` as given (``"FULL"``, ``"PIECEWISE"``, …; None = default)
    cudagraph_mode: str | None = None
    #: ``--attention-backend`` as given (vLLM's backend enum name, e.g. ``FLASHINFER_MLA_SPARSE``; None = vLLM selects)
    attention_backend: str | None = None
    #: Flags given but read by no obligation (long names, in order of appearance).
    ignored: list[str] = field(default_factory=list)
    #: ``VAR=value`` prefixes of the command line.
    env: dict[str, str] = field(default_factory=dict)
    #: Where each flag's final value came from: ``"command line"`` or the ``--config`` file name.
    origin: dict[str, str] = field(default_factory=dict)
    config_file: str | None = None
    #: ``--hf-overrides`` as given (JSON text; None = not given): it changes the model config vLLM
    #: reads, so check-config refuses it when it names a field capproof reads from --model-config
    hf_overrides: str | None = None
    #: ``--all2all-backend`` and ``--enable-expert-parallel``: with ``-dp`` > 1 and a low-latency
    #: backend vLLM uses batched DP MoE and another default token budget (``batch_defaults``)
    all2all_backend: str | None = None
    enable_expert_parallel: bool = False
    #: ``--speculative-config``'s ``enable_adaptive_verification`` (off by default in vLLM 0.33.0,
    #: ``vllm/config/speculative.py``): the V2 runner's post-capture profiling dummy runs
    adaptive_verification: bool = False
    #: ``--enforce-eager``: no CUDA graph is captured
    enforce_eager: bool = False
    #: ``--enable-dbo`` (dual batch overlap: micro-batching, which the V2 runner does not run
    #: unless ``VLLM_USE_V2_MODEL_RUNNER`` is set)
    enable_dbo: bool = False
    #: ``--distributed-executor-backend`` as given (None: vLLM selects)
    distributed_executor_backend: str | None = None

    def describe(self) -> str:
        parts = [
            f"{k}={v}"
            for k, v in (
                ("max_model_len", self.max_model_len),
                ("block_size", self.block_size),
                ("tp", self.tp),
                ("dcp", self.dcp),
                ("max_num_seqs", self.max_num_seqs),
                ("max_num_batched_tokens", self.max_num_batched_tokens),
                ("num_speculative_tokens", self.num_speculative_tokens),
                ("kv_cache_dtype", self.kv_cache_dtype),
            )
            if v is not None
        ]
        if self.cudagraph_capture_sizes is not None:
            parts.append(f"cudagraph_capture_sizes={self.cudagraph_capture_sizes}")
        if self.config_file:
            parts.append(f"--config {self.config_file}")
        return ", ".join(parts)


def human_readable_int(flag: str, value: str) -> int:
    """vLLM 0.33.0 ``human_readable_int``: ``k m g t`` decimal (decimals allowed), ``K M G T`` binary."""
    text = str(value).strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", text)
    if match:
        number, suffix = match.groups()
        if suffix in "kmgt":
            return int(float(number) * {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[suffix])
        if "." in number:
            raise ServeFlagError(
                f"{flag} {value!r}: decimals are not allowed with binary suffix {suffix} (did you mean {number}{suffix.lower()}?)"
            )
        return int(number) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[suffix]
    try:
        # vLLM falls back to Python's ``int``: ``16_384`` and surrounding spaces are accepted.
        return int(text)
    except ValueError:
        raise ServeFlagError(f"{flag} {value!r}: not an integer (accepted: 350000, 350k, 1M)") from None


def _int(flag: str, value: str, *, minimum: int = 1, human: bool = False) -> int:
    number = human_readable_int(flag, value) if human else None
    if number is None:
        try:
            # argparse's ``type=int``: Python's ``int``, so ``16_384`` is 16384 as vLLM reads it.
            number = int(value)
        except ValueError:
            raise ServeFlagError(f"{flag} {value!r}: not an integer") from None
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


# ---------------------------------------------------------------------------------------------
# 1. launcher and environment

#: Images whose entrypoint is ``vllm serve`` (vLLM's docs: ``docker run … vllm/vllm-openai:TAG ARGS``).
_VLLM_IMAGE = re.compile(r"(?:[\w.-]+(?::\d+)?/)?vllm/vllm-openai(?:-[\w]+)?(?::([\w.+-]+))?(?:@sha256:\w+)?")


def image_tag(argv: list[str]) -> str | None:
    """The tag of a ``docker run … vllm/vllm-openai:TAG …`` line (``v0.26.0``, ``latest``), else None."""
    _, image, _ = strip_docker(argv)
    match = _VLLM_IMAGE.fullmatch(image or "")
    return match.group(1) if match else None


def _strip_launcher(argv: list[str]) -> tuple[dict[str, str], list[str], bool]:
    """-> (environment prefix, arguments after the launcher, serve-style (positional model) or not)."""
    docker_env, image, rest = strip_docker(argv)
    if image is not None:
        if not _VLLM_IMAGE.fullmatch(image):
            if rest[:1] and (
                os.path.basename(rest[0]) in ("vllm", "env")
                or re.fullmatch(r"python(\d+(\.\d+)?)?", os.path.basename(rest[0]))
            ):
                env, args, style = _strip_launcher(rest)  # an image run with an explicit vllm command
                return {**docker_env, **env}, args, style
            raise ServeFlagError(
                f"docker image {image!r}: not vllm/vllm-openai[:TAG] and no vllm serve command after it"
            )
        if rest[:2] == ["vllm", "serve"]:
            rest = rest[2:]
        return docker_env, rest, True
    if os.path.basename(argv[0]) in ("docker", "podman") if argv else False:
        raise ServeFlagError(
            f"{' '.join(argv[:2])!r}: expected docker run [OPTIONS] vllm/vllm-openai[:TAG] [MODEL] [FLAGS]"
        )
    args = list(argv)
    env: dict[str, str] = {}
    if args[:1] == ["env"]:
        args = args[1:]
    while args and _ENV.fullmatch(args[0]) and not args[0].startswith("-"):
        name, _, value = args.pop(0).partition("=")
        env[name] = value
    if not args:
        return env, args, True
    head = os.path.basename(args[0])
    if re.fullmatch(r"python(\d+(\.\d+)?)?", head):
        if len(args) < 3 or args[1] != "-m":
            raise ServeFlagError(
                f"{' '.join(args[:3])!r}: expected python -m vllm.entrypoints.openai.api_server or python -m vllm.entrypoints.cli.main serve"
            )
        module, args = args[2], args[3:]
        if module in _API_SERVER_MODULES:
            return env, args, False
        if module in _CLI_MODULES:
            if args[:1] != ["serve"]:
                raise ServeFlagError(f"python -m {module}: only the 'serve' subcommand is checked")
            return env, args[1:], True
        if module.split(".")[0] == "sglang":
            raise ServeFlagError(
                f"python -m {module}: an SGLang launch line; give --engine sglang before '--' "
                "(capproof check-config --engine sglang -- python -m sglang.launch_server …)"
            )
        raise ServeFlagError(
            f"python -m {module}: not a vLLM server entry point (expected vllm.entrypoints.openai.api_server)"
        )
    if head == "vllm":
        args = args[1:]
        if args[:1] != ["serve"]:
            raise ServeFlagError(f"vllm {args[0] if args else ''}: only 'vllm serve' is checked".replace("  ", " "))
        return env, args[1:], True
    if args[0] == "serve":
        return env, args[1:], True
    if head == "sglang" or head.startswith("sglang."):
        raise ServeFlagError(
            f"{args[0]!r}: not a vllm serve command line (for SGLang give --engine sglang before '--')"
        )
    if head == "trtllm-serve":
        raise ServeFlagError(
            f"{args[0]!r}: TensorRT-LLM is not modelled (capproof checks vLLM and SGLang launch lines)"
        )
    return env, args, True


# ---------------------------------------------------------------------------------------------
# 2-3. --model and --config


def _move_model(args: list[str]) -> list[str]:
    """``vllm serve … --model M …`` -> ``M …`` (vLLM warns and does the same)."""
    for i, arg in enumerate(args):
        if re.match(r"^--model(=.+|$)", arg):
            if arg == "--model":
                if i + 1 >= len(args):
                    raise ServeFlagError("--model needs a value")
                return [args[i + 1], *args[:i], *args[i + 2 :]]
            return [arg.removeprefix("--model="), *args[:i], *args[i + 1 :]]
    return args


def _load_config_file(path: str, flags: frozenset, subcommand: bool = True) -> list[str]:
    """vLLM's ``load_config_file``: YAML keys -> flag tokens, in file order (``subcommand``: read by
    ``vllm serve``'s top-level parser, else by the api_server module's own)."""
    import yaml

    extension = path.split(".")[-1]
    if extension not in ("yaml", "yml"):
        raise ServeFlagError(f"--config {path}: config file must be of a yaml/yml type, {extension} supplied")
    try:
        with open(path, encoding="utf-8") as fh:
            config = yaml.safe_load(fh)
    except OSError as exc:
        raise ServeFlagError(f"--config {path}: {exc.strerror or exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ServeFlagError(f"--config {path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if config is None:
        return []
    if not isinstance(config, dict):
        raise ServeFlagError(
            f"--config {path}: expected a mapping of flag names to values, got {type(config).__name__}"
        )
    out: list[str] = []
    for key, value in config.items():
        key = str(key)
        if isinstance(value, bool):
            if value:
                out.append("--" + key)
            elif not subcommand and "_" not in key and (f"--no-{key}" in flags or f"--{key}" in VALUELESS_FLAGS):
                # vLLM appends ``--no-<key>`` only when the parser reading the file has that exact
                # option string (``argparse_utils.py:654-658``): under ``vllm serve`` that parser is
                # the top-level CLI one, which has none, so ``false`` is always dropped; for the
                # api_server module a key written with underscores is. The flag keeps its default.
                out.append(f"--no-{key}")
        elif isinstance(value, list):
            if value:
                out.append("--" + key)
                out.extend(str(item) for item in value)
        elif isinstance(value, dict):
            out += ["--" + key, json.dumps(value)]
        else:
            out += ["--" + key, str(value)]
    return out


def _pull_config(args: list[str], serve_style: bool, flags: frozenset) -> tuple[list[str], str | None, int]:
    """vLLM's ``_pull_args_from_config``: the file's flags go right after the model (CLI > file).

    Returns (args, config path, number of tokens that came from the file, starting at the insert point).
    """
    hits = [i for i, a in enumerate(args) if a == "--config" or a.startswith("--config=")]
    if not hits:
        return args, None, 0
    if any(args[i] != "--config" for i in hits):  # vLLM pulls only the token "--config" (argparse_utils.py:371)
        raise ServeFlagError(
            f"{args[hits[0]]}: vLLM reads a config file only as two words, --config FILE; "
            "with '=' it ignores the file (and serves its defaults)"
        )
    if len(hits) > 1:
        raise ServeFlagError("more than one --config file given")
    index = hits[0]
    if args[index] == "--config":
        if index == len(args) - 1:
            raise ServeFlagError("--config needs a file name")
        path, rest = args[index + 1], args[index + 2 :]
    else:
        path, rest = args[index].removeprefix("--config="), args[index + 1 :]
    config_args = _load_config_file(path, flags, subcommand=serve_style)
    before = args[:index]
    if serve_style and before and not before[0].startswith("-"):
        return [before[0], *config_args, *before[1:], *rest], path, len(config_args)
    if serve_style and "--model" not in config_args:
        raise ServeFlagError("no model given: name it after 'vllm serve' or as 'model:' in the config file")
    return [*config_args, *before, *rest], path, len(config_args)


# ---------------------------------------------------------------------------------------------
# 4-5. spelling and dotted keys


def _spell(args: list[str]) -> list[str]:
    """Underscores to dashes in option names (up to the first '.'); ``-O`` forms to ``--optimization-level``."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            head, dot, tail = key[2:].partition(".")
            out.append("--" + head.replace("_", "-") + dot + tail + eq + value)
        elif arg.startswith("-O") and arg != "-O":
            out += ["--optimization-level", arg[3:] if arg[2:3] == "=" else arg[2:]]
        elif arg == "-O" and i + 1 < len(args) and args[i + 1] in {"0", "1", "2", "3"}:
            out.append("--optimization-level")
        else:
            out.append(arg)
    return out


def _gather_dotted(args: list[str]) -> list[str]:
    """``--x.a.b v`` -> one ``--x '{"a": {"b": v}}'`` per flag, appended at the end."""
    from collections import defaultdict

    def update(original: dict, new: dict) -> None:
        for k, v in new.items():
            if isinstance(v, dict) and isinstance(original.get(k), dict):
                update(original[k], v)
            elif isinstance(v, list) and isinstance(original.get(k), list):
                original[k] += v
            else:
                original[k] = v

    keep: list[str] = []
    dicts: dict[str, dict] = defaultdict(dict)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not (arg.startswith("-") and "." in arg.partition("=")[0]) or re.fullmatch(r"-\d+(\.\d+)?", arg):
            keep.append(arg)
            continue
        if "=" in arg:
            name, value = arg.split("=", 1)
        else:
            if i >= len(args):
                raise ServeFlagError(f"{arg} needs a value")
            name, value = arg, args[i]
            i += 1
        if name.endswith("+"):
            name = name[:-1]
            value = json.dumps(value.split(","))
        key, *keys = name.split(".")
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            try:
                parsed = human_readable_int(name, value)
            except ServeFlagError:
                parsed = value
        for k in reversed(keys):
            parsed = {k: parsed}
        update(dicts[key], parsed)
    for key, value in dicts.items():
        keep += [key, json.dumps(value)]
    return keep


# ---------------------------------------------------------------------------------------------
# 6. argparse


def _resolve(option: str, flags: frozenset, version: str) -> str:
    """Exact option, short alias, ``--no-x``, ``--disable-x`` (0.33.0), or a unique prefix; else one error line."""
    if option in ALIASES and option in flags:
        return ALIASES[option]
    if option in flags or option in _OLD_FLAGS:
        return option
    if option.startswith("--no-") and f"--{option[5:]}" in flags and f"--{option[5:]}" in VALUELESS_FLAGS:
        return option
    if version in ENABLE_DISABLE_PAIRS and option.startswith("--disable-") and f"--enable-{option[10:]}" in flags:
        return option
    if option.startswith("--") and len(option) > 2:
        matches = sorted(f for f in flags if f.startswith(option) and f.startswith("--"))
        if len(matches) == 1:  # argparse allow_abbrev (vLLM keeps the default)
            return matches[0]
        if len(matches) > 1:
            raise ServeFlagError(f"ambiguous option {option}: could match {', '.join(matches[:6])}")
    close = difflib.get_close_matches(option, sorted(flags), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise ServeFlagError(f"unknown vllm serve flag {option!r} (not an option of vLLM {version}{hint})")


def _base(flag: str) -> str:
    """``--no-x`` -> ``--x``; ``--disable-x`` (pair of ``--enable-x``) -> ``--enable-x``."""
    if flag.startswith("--no-"):
        return "--" + flag[5:]
    if flag.startswith("--disable-") and flag not in VLLM_SERVE_FLAGS and "--enable-" + flag[10:] in VLLM_SERVE_FLAGS:
        return "--enable-" + flag[10:]
    return flag


def parse_serve_args(argv: list[str], version: str = VLLM_VERSION) -> ServeConfig:
    """Parse a ``vllm serve`` command line as vLLM ``version`` does (see the module docstring).

    Raises ServeFlagError (one line) for anything vLLM ``version`` would refuse or capproof cannot read.
    """
    try:
        flags = serve_flags(version)
    except KeyError:
        raise ServeFlagError(f"no flag table for vLLM {version} (regenerate capproof/engines/vllm/flags.py)") from None
    env, args, serve_style = _strip_launcher(argv)
    cfg = ServeConfig(version=version, env=env, image_tag=image_tag(argv))
    if serve_style:
        args = _move_model(args)
    cli_tokens = [a for a in args]
    args, cfg.config_file, _ = _pull_config(args, serve_style, flags)
    if serve_style and args and not args[0].startswith("-"):
        cfg.model = args.pop(0)
    tokens = _gather_dotted(_spell(args))
    values, order = _parse(tokens, flags, version)
    if cfg.config_file:  # a flag the command line also gives comes from the command line (CLI > file)
        cli_flags = set()
        for tok in _gather_dotted(_spell([t for t in cli_tokens if not t.startswith("--config")])):
            if tok.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", tok):
                try:
                    cli_flags.add(_base(_OLD_FLAGS.get(f := _resolve(tok.partition("=")[0], flags, version), f)))
                except ServeFlagError:
                    pass
        cfg.origin = {f: ("command line" if f in cli_flags else cfg.config_file) for f in order}
    else:
        cfg.origin = {f: "command line" for f in order}
    _interpret(cfg, values, order)
    return cfg


def _parse(tokens: list[str], flags: frozenset, version: str) -> tuple[dict[str, Any], list[str]]:
    """argparse over the prepared tokens: {long flag: final value}, flags in order of first appearance."""
    values: dict[str, Any] = {}
    order: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-") or re.fullmatch(r"-\d+(\.\d+)?", token):
            raise ServeFlagError(
                f"unexpected argument {token!r} (only one positional MODEL is accepted, before the flags)"
            )
        option, eq, value = token.partition("=")
        flag = _resolve(option, flags, version)
        flag = _OLD_FLAGS.get(flag, flag)
        base = _base(flag)
        if flag != base or flag in VALUELESS_FLAGS:
            if eq:
                raise ServeFlagError(f"{option} takes no value, got {value!r}")
            values[base] = not (flag.startswith("--no-") or flag.startswith("--disable-") and flag != base)
        elif flag in LISTS_FLAGS and not eq:
            items = []
            while i < len(tokens) and not (tokens[i].startswith("-") and not re.fullmatch(r"-\d+", tokens[i])):
                items.append(tokens[i])
                i += 1
            if not items:
                raise ServeFlagError(f"{option} needs at least one value")
            values[flag] = items
        elif flag in OPTIONAL_FLAGS and not eq:
            if i < len(tokens) and not tokens[i].startswith("-"):
                values[flag] = tokens[i]
                i += 1
            else:
                values[flag] = True
        else:
            if not eq:
                if i >= len(tokens) or (tokens[i].startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", tokens[i])):
                    raise ServeFlagError(f"{option} needs a value")
                value = tokens[i]
                i += 1
            values[flag] = [v for v in value.split(",") if v] if flag in LISTS_FLAGS else value
        if base not in order:
            order.append(base)
    return values, order


def _interpret(cfg: ServeConfig, values: dict[str, Any], order: list[str]) -> None:
    """Final values (last occurrence won) -> the sizing fields; the rest listed as ignored."""
    version = cfg.version
    spec_json: dict[str, Any] = {}
    comp_json: dict[str, Any] = {}
    for flag in order:
        value = values[flag]
        if flag == "--hf-overrides":
            cfg.hf_overrides = str(value)
        elif flag == "--all2all-backend":
            cfg.all2all_backend = str(value)
        elif flag == "--enable-expert-parallel":
            cfg.enable_expert_parallel = bool(value)
        elif flag == "--attention-backend":
            cfg.attention_backend = str(value).strip().upper()
        elif flag == "--enforce-eager":
            cfg.enforce_eager = bool(value)
        elif flag == "--enable-dbo":
            cfg.enable_dbo = bool(value)
        elif flag == "--distributed-executor-backend":
            cfg.distributed_executor_backend = str(value).strip()
        if flag not in SIZING_FLAGS:
            cfg.ignored.append(flag)
            continue
        if flag == "--model":
            cfg.model = value
        elif flag == "--max-model-len":
            cfg.max_model_len_auto = str(value).strip().lower() == "auto" or str(value).strip() == "-1"
            cfg.max_model_len = None if cfg.max_model_len_auto else _int(flag, value, human=True)
        elif flag == "--block-size":
            cfg.block_size = _int(flag, value)
        elif flag == "--tensor-parallel-size":
            cfg.tp = _int(flag, value)
        elif flag == "--pipeline-parallel-size":
            cfg.pp = _int(flag, value)
        elif flag == "--data-parallel-size":
            cfg.dp = _int(flag, value)
        elif flag == "--decode-context-parallel-size":
            cfg.dcp = _int(flag, value)
        elif flag == "--max-num-seqs":
            cfg.max_num_seqs = _int(flag, value)
        elif flag == "--max-num-batched-tokens":
            cfg.max_num_batched_tokens = _int(flag, value, human=True)
        elif flag == "--speculative-config":
            spec_json = _json_object(flag, value)
        elif flag == "--compilation-config":
            comp_json = _json_object(flag, value)
        elif flag == "--kv-cache-dtype":
            dtypes = CACHE_DTYPES.get(version, CACHE_DTYPES[VLLM_VERSION])
            if value not in dtypes:
                raise ServeFlagError(
                    f"--kv-cache-dtype {value!r}: not a vLLM {version} cache dtype ({', '.join(sorted(dtypes))})"
                )
            cfg.kv_cache_dtype = value
        elif flag == "--max-cudagraph-capture-size":
            cfg.max_cudagraph_capture_size = _int(flag, value)
        elif flag == "--cudagraph-capture-sizes":
            items = value if isinstance(value, list) else [value]
            cfg.cudagraph_capture_sizes = _int_list(flag, [v for part in items for v in str(part).split(",") if v])
        elif flag == "--enable-chunked-prefill":
            cfg.enable_chunked_prefill = bool(value)
        elif flag == "--performance-mode":
            cfg.performance_mode = str(value)
    # EngineArgs.create_speculative_config (vllm/engine/arg_utils.py:2100-2139): the --spec-* flags
    # merged in, then every key's dashes read as underscores
    for flag, key in (
        ("--spec-method", "method"),
        ("--spec-model", "model"),
        ("--spec-tokens", "num_speculative_tokens"),
    ):
        if flag in values:
            if key in spec_json:
                raise ServeFlagError(f"{flag} and --speculative-config['{key}'] are mutually exclusive")
            spec_json[key] = _int(flag, values[flag]) if key == "num_speculative_tokens" else values[flag]
    spec_json = {str(k).replace("-", "_"): v for k, v in spec_json.items()}
    if spec_json:
        if "num_speculative_tokens" not in spec_json:
            raise ServeFlagError(
                "speculative decoding (--speculative-config, --spec-method or --spec-model) without num_speculative_tokens: vLLM takes it from the draft model's config "
                "(n_predict, block_size) or the method's default, which capproof does not read; give num_speculative_tokens"
            )
        if "num_speculative_tokens" in spec_json:
            cfg.num_speculative_tokens = _json_int(
                "--speculative-config", "num_speculative_tokens", spec_json["num_speculative_tokens"], 1
            )
        method = spec_json.get("method")
        if method is not None and not isinstance(method, str):
            raise ServeFlagError(f"--speculative-config: method must be a string, got {method!r}")
        cfg.speculative_method = method
        draft = spec_json.get("model")
        if draft is not None and not isinstance(draft, str):
            raise ServeFlagError(f"--speculative-config: model must be a string, got {draft!r}")
        cfg.speculative_model = draft
        if not isinstance(spec_json.get("parallel_drafting", False), bool):
            raise ServeFlagError(
                f"--speculative-config: parallel_drafting must be true or false, got {spec_json['parallel_drafting']!r}"
            )
        cfg.parallel_drafting = spec_json.get("parallel_drafting", False)
        if not isinstance(spec_json.get("use_heterogeneous_vocab", False), bool):
            raise ServeFlagError(
                "--speculative-config: use_heterogeneous_vocab must be true or false, got "
                f"{spec_json['use_heterogeneous_vocab']!r}"
            )
        cfg.heterogeneous_vocab = spec_json.get("use_heterogeneous_vocab", False)
        if not isinstance(spec_json.get("enable_adaptive_verification", False), bool):
            raise ServeFlagError(
                "--speculative-config: enable_adaptive_verification must be true or false, got "
                f"{spec_json['enable_adaptive_verification']!r}"
            )
        cfg.adaptive_verification = spec_json.get("enable_adaptive_verification", False)
    if comp_json:
        cfg.cudagraph_mode = _cudagraph_mode(comp_json, values.get("--optimization-level"))
        sizes = comp_json.get("cudagraph_capture_sizes")
        if sizes is not None:
            if not isinstance(sizes, list):
                raise ServeFlagError("--compilation-config: cudagraph_capture_sizes must be a JSON list of integers")
            if cfg.cudagraph_capture_sizes is not None:
                raise ServeFlagError(
                    "--cudagraph-capture-sizes and compilation_config.cudagraph_capture_sizes are mutually exclusive"
                )
            cfg.cudagraph_capture_sizes = _int_list("--compilation-config", sizes)
        if comp_json.get("max_cudagraph_capture_size") is not None:
            cfg.max_cudagraph_capture_size = _json_int(
                "--compilation-config", "max_cudagraph_capture_size", comp_json["max_cudagraph_capture_size"], 1
            )


#: vLLM 0.33.0 ``CUDAGraphMode`` (``vllm/config/compilation.py:53-63``): names, and the values
#: pydantic also accepts for the three plain modes.
CUDAGRAPH_MODES = {"NONE": 0, "PIECEWISE": 1, "FULL": 2, "FULL_DECODE_ONLY": None, "FULL_AND_PIECEWISE": None}


def _cudagraph_mode(comp_json: dict[str, Any], level: object = None) -> str | None:
    """``--compilation-config``'s CUDA-graph mode as vLLM 0.33.0 resolves it (None: not given).

    A name is read case-insensitively and an integer as the enum's value (``2`` is ``FULL``:
    ``validate_cudagraph_mode_before`` upper-cases strings, pydantic takes the value). The
    default-or-``FULL_AND_PIECEWISE`` mode becomes ``FULL`` with ``splitting_ops: []``
    (``CompilationConfig.set_splitting_ops_for_v1``, ``compilation.py:1215-1239``) or
    ``pass_config.fuse_attn_quant`` (``set_splitting_ops_for_attn_fusion``, ``:1260-1274``);
    under the ``VLLM_COMPILE`` mode, and with the mode not given only at ``-O2``/``-O3`` (``level``,
    the default 2), this is read as ``FULL``, so the obligations about FULL graphs for mixed
    batches apply. Anything else is a ServeFlagError.
    """
    mode = comp_json.get("cudagraph_mode")
    if isinstance(mode, str) and mode.upper() in CUDAGRAPH_MODES:
        mode = mode.upper()
    elif isinstance(mode, int) and not isinstance(mode, bool) and mode in CUDAGRAPH_MODES.values():
        mode = next(k for k, v in CUDAGRAPH_MODES.items() if v == mode)
    elif mode is not None:
        raise ServeFlagError(
            f"--compilation-config: cudagraph_mode {mode!r} is not a vLLM cudagraph mode ({', '.join(CUDAGRAPH_MODES)})"
        )
    pass_config = comp_json.get("pass_config")
    fused = isinstance(pass_config, dict) and pass_config.get("fuse_attn_quant") is True
    # both rules run under the VLLM_COMPILE compilation mode only (``set_splitting_ops_for_v1``
    # returns first otherwise); -O0/-O1 default to NONE/PIECEWISE graphs (vllm/config/vllm.py:255-335)
    compiled = comp_json.get("mode") in (None, 3, "VLLM_COMPILE", "vllm_compile")
    default_full = mode == "FULL_AND_PIECEWISE" or mode is None and str(level) not in ("0", "1")
    if default_full and compiled and (comp_json.get("splitting_ops") == [] or fused):
        return "FULL"
    return mode


def user_capture_sizes(
    sizes: list[int], max_num_batched_tokens: int, num_speculative_tokens: int
) -> tuple[list[int], list[int]]:
    """The CUDA-graph capture sizes vLLM 0.33.0 keeps from a user list -> (kept sizes, dropped sizes).

    ``VllmConfig._set_cudagraph_sizes`` (``vllm/config/vllm.py:2560-2610``) keeps the sizes
    ``<= max_num_batched_tokens`` and sets ``max_cudagraph_capture_size`` to the largest kept;
    with speculative decoding ``CompilationConfig.adjust_cudagraph_sizes_for_spec_decode``
    (``vllm/config/compilation.py:1537-1565``) rounds each up to a multiple of ``1 + K`` and keeps
    those ``<= max_cudagraph_capture_size`` (or ``[1 + K]`` when none is left but it fits; vLLM
    raises when nothing fits, here: kept empty). Sizes and counts are tokens; ints only.
    """
    kept = sorted({s for s in sizes if s <= max_num_batched_tokens})
    dropped = sorted(set(sizes) - set(kept))
    q = 1 + num_speculative_tokens
    if not kept or q <= 1:
        return kept, dropped
    top = kept[-1]
    rounded = sorted({-(-s // q) * q for s in kept if -(-s // q) * q <= top})
    if not rounded and q <= top:
        rounded = [q]
    return rounded, dropped
