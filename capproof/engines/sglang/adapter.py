"""The SGLang adapter (:class:`capproof.engines.adapter.EngineAdapter`): ``python -m
sglang.launch_server`` / ``sglang serve`` lines.

Everything heavy (flag tables, the parser, the check) is imported by the method that needs it.
"""

from __future__ import annotations

from ..adapter import CheckError, near_miss

__all__ = ["SGLANG"]


class SglangAdapter:
    name = "sglang"
    engines = ("sglang",)
    command = "python -m sglang.launch_server --model-path MODEL"
    example_line = "python -m sglang.launch_server --model-path MODEL --context-length 32768"

    def display(self, engine: str) -> str:
        return "SGLang"

    @property
    def headline_dtypes(self) -> frozenset[str]:
        """SGLang's coverage headline is over its index buffers (the issue's goal: a share of SGLang's
        index buffers verified): the element types of :data:`.deployment.INDEX_DTYPES`."""
        from .deployment import INDEX_DTYPES

        return INDEX_DTYPES

    def versions(self) -> tuple[str, ...]:
        from .flags import SGLANG_VERSION

        return (SGLANG_VERSION,)

    def default_version(self) -> str:
        from .flags import SGLANG_VERSION

        return SGLANG_VERSION

    def usage(self) -> str:
        return f"sglang[=={self.default_version()}]"

    def resolve(self, engine: str, version: str | None, text: str) -> tuple[str, str]:
        modelled = self.default_version()
        version = version.strip() if version is not None else modelled
        if version != modelled:
            raise CheckError(f"--engine {text!r}: capproof models sglang {modelled} only")
        return engine, version

    def engine_from_line(self, args: list[str], engine: str, version: str, explicit: bool) -> tuple[str, str, str]:
        """``docker run lmsysorg/sglang:vX.Y.Z[-SUFFIX]`` (``v0.5.23-cu129``, ``v0.5.8-rocm700-mi35x``):
        the image runs SGLang X.Y.Z, refused unless it is the modelled release or ``--engine`` says
        which release to check; a tag naming no release (``latest``, ``dev``) is checked as the
        modelled release, and the answer says so."""
        import re

        from ..docker import strip_docker

        try:
            _, image, _ = strip_docker(list(args))
        except ValueError:
            return engine, version, ""
        found = re.fullmatch(r"(?:[\w.-]+(?::\d+)?/)?lmsysorg/sglang(?::([\w.+-]+))?(?:@sha256:\w+)?", image or "")
        if found is None or explicit:
            return engine, version, ""
        tag = found.group(1) or "latest"
        release = re.match(r"v?(\d+\.\d+\.\d+)(?![\w.])", tag)
        if release is None:
            return (
                engine,
                version,
                f"engine SGLang {version}: the image tag {tag!r} names no release, so capproof's modelled "
                f"SGLang {version} is checked (give --engine sglang==X for yours)",
            )
        if release.group(1) != version:
            raise CheckError(
                f"image lmsysorg/sglang:{tag}: runs SGLang {release.group(1)}; capproof models sglang {version} "
                f"only (give --engine sglang=={version} to check the line as {version})"
            )
        return engine, version, f"engine SGLang {version}: from the image tag lmsysorg/sglang:{tag}"

    def owns_line(self, args: list[str]) -> bool:
        from .launch import is_sglang_line

        return is_sglang_line(args)

    def flags(self, engine: str, version: str) -> frozenset[str] | None:
        from .flags import SGLANG_FLAGS

        return SGLANG_FLAGS

    def parser_label(self, engine: str, version: str) -> str:
        return "SGLang"

    def parse_line(self, args: list[str], engine: str, version: str):
        from .launch import LaunchFlagError, parse_launch_args

        try:
            cfg = parse_launch_args(args)
        except LaunchFlagError as exc:
            raise CheckError(str(exc)) from exc
        if not cfg.model:
            raise CheckError("no model: SGLang needs --model-path MODEL")
        return cfg

    def vocabulary(self) -> frozenset[str]:
        from .deployment import vocabulary

        return vocabulary()

    def did_you_mean(self, name: str) -> str | None:
        return near_miss(name, self.vocabulary())

    def check(self, cfg, engine, version, model, paths, options, gpu, num_sms):
        from .deployment import run_check

        return run_check(cfg, version, model, paths=paths, options=options, gpu=gpu)

    def owns_spec(self, text: str) -> bool:
        return text.strip().startswith("sglang")

    def run_inventory(self, spec, json_out, write, check, out, err, trace) -> int:
        from . import buffers

        return buffers.run_inventory(spec, json_out, write, check, out=out, err=err, trace=trace)

    def run_diff(self, old, new, out, err, trace) -> int:
        from . import buffers

        return buffers.run_diff(old, new, out=out, err=err, trace=trace)


#: The SGLang adapter.
SGLANG = SglangAdapter()
