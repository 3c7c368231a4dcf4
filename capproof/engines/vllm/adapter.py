"""The vLLM adapter (:class:`capproof.engines.adapter.EngineAdapter`): ``vllm serve`` lines,
``docker run vllm/vllm-openai:TAG`` lines, and vLLM-Ascend, which runs the same command line.

Everything heavy (flag tables, the parser, the check) is imported by the method that needs it.
"""

from __future__ import annotations

import re

from ..adapter import CheckError, near_miss

__all__ = ["VLLM"]


class VllmAdapter:
    name = "vllm"
    engines = ("vllm", "vllm-ascend")
    command = "vllm serve MODEL"
    example_line = "vllm serve MODEL --max-model-len 32768"

    def display(self, engine: str) -> str:
        from .deployment import DISPLAY

        return DISPLAY.get(engine, engine)

    def versions(self) -> tuple[str, ...]:
        from .flags import VLLM_VERSIONS

        return tuple(VLLM_VERSIONS)

    def default_version(self) -> str:
        from .flags import VLLM_VERSION

        return VLLM_VERSION

    def usage(self) -> str:
        return "vllm[==VERSION], vllm-ascend==VERSION"

    def resolve(self, engine: str, version: str | None, text: str) -> tuple[str, str]:
        from .deployment import parse_version

        return parse_version(engine, version, text)

    def engine_from_line(self, args: list[str], engine: str, version: str, explicit: bool) -> tuple[str, str, str]:
        """``docker run vllm/vllm-openai:vX.Y.Z``: that release, unless ``--engine`` says otherwise."""
        from .serve import image_tag

        if engine != "vllm":
            return engine, version, ""
        tag = image_tag(args)
        tagged = re.fullmatch(r"v?(\d+\.\d+(?:\.\d+)?)", tag or "")
        if tagged and not explicit:
            try:
                engine, version = self.resolve("vllm", tagged.group(1), f"vllm=={tagged.group(1)}")
            except CheckError:
                raise CheckError(
                    f"image vllm/vllm-openai:{tag}: capproof does not model that vLLM release; "
                    "give --engine vllm==X for the release to check"
                ) from None
            return engine, version, f"engine vLLM {version}: from the image tag vllm/vllm-openai:{tag}"
        if tag and tagged is None:
            return (
                engine,
                version,
                f"engine vLLM {version}: the image tag {tag!r} names no release, so capproof's newest "
                "modelled vLLM is checked (give --engine vllm==X for yours)",
            )
        return engine, version, ""

    def _flags_version(self, version: str) -> str:
        """The release whose flag table parses the line (vLLM-Ascend releases without one: the pinned vLLM's)."""
        versions = self.versions()
        return version if version in versions else self.default_version()

    def flags(self, engine: str, version: str) -> frozenset[str] | None:
        from .flags import serve_flags

        try:
            return serve_flags(self._flags_version(version))
        except KeyError:
            return None

    def parser_label(self, engine: str, version: str) -> str:
        return f"vLLM {self._flags_version(version)}"

    def parse_line(self, args: list[str], engine: str, version: str):
        from .serve import ServeFlagError, parse_serve_args

        try:
            cfg = parse_serve_args(args, self._flags_version(version))
        except ServeFlagError as exc:
            raise CheckError(str(exc)) from exc
        if not cfg.model:
            raise CheckError(
                "no model: name it after 'vllm serve' (or --model, or model: in --config); "
                "capproof does not assume vLLM's default model"
            )
        return cfg

    def vocabulary(self) -> frozenset[str]:
        from .deployment import vocabulary

        return vocabulary()

    def did_you_mean(self, name: str) -> str | None:
        return near_miss(name, self.vocabulary())

    def check(self, cfg, engine, version, model, paths, options, gpu, num_sms):
        from .deployment import run_check

        return run_check(cfg, engine, version, model, paths=paths, options=options, gpu=gpu, num_sms=num_sms)

    def owns_spec(self, text: str) -> bool:
        return text.strip().startswith("vllm")

    def run_inventory(self, spec, json_out, write, check, out, err, trace) -> int:
        from . import buffers

        return buffers.run_inventory(spec or self.name, json_out, write, check, out=out, err=err, trace=trace)

    def run_diff(self, old, new, out, err, trace) -> int:
        from . import buffers

        return buffers.run_diff(old, new, out=out, err=err, trace=trace)


#: The vLLM adapter.
VLLM = VllmAdapter()
