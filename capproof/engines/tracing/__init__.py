"""Engine-neutral tracing of an inference engine's buffer allocations on symbolic config values.

The pieces (used by :mod:`capproof.engines.vllm.trace` and :mod:`capproof.engines.sglang.trace`):

- :mod:`.fake`: :class:`~.fake.FakeTensor` (a tensor whose shape entries are ints or capproof
  SymInts) and :func:`~.fake.recording`, which replaces torch/numpy allocation calls made from the
  engine's sources with a recorder;
- :mod:`.interpret`: :func:`~.interpret.construct` / :func:`~.interpret.run_statements`, which run
  a constructor body one statement at a time, skipping (and poisoning) what cannot run on symbolic
  values;
- :mod:`.run`: :func:`~.run.trace_all`, which runs an engine's harnesses on every path through
  their branches and turns the recorded allocations into traced inventory entries;
- :mod:`.scan`: the static scan of an engine's sources for pre-allocated buffers.

An engine is described to :mod:`.run` by an object with the attributes of :class:`Engine` (the
vLLM tracer passes its own module, whose tables harness modules extend at import time).
"""

from __future__ import annotations

from typing import Callable, Protocol

__all__ = ["Engine"]


class Engine(Protocol):
    """What :mod:`.run` needs to know about an engine."""

    #: the engine's top-level package (``"vllm"``, ``"sglang"``): error texts are cut to paths in it
    PACKAGE: str
    #: config names that are sizes (>= 1) and counts (>= 0), for the printer and the path facts
    POSITIVE: tuple
    NONNEGATIVE: tuple
    #: harness name -> ``fn(values, device)`` building one class as the engine does; it returns
    #: ``(instance, StepLog)`` or a list of them
    HARNESSES: dict
    #: harness name -> the modules to import before recording
    MODULES: dict
    #: harness name -> a note added to the ``why`` of every entry it traces
    NOTES: dict
    #: harness name -> owners whose allocations it makes with other arguments (not recorded)
    FOREIGN_OWNERS: dict
    #: GPU-only packages replaced by CudaOnly modules when a harness's modules import them
    CUDA_ONLY_PACKAGES: tuple
    #: paths explored per harness
    FORK_BUDGET: int

    def config_values(self, symbolic: bool = True, **overrides) -> dict:
        """The config names: SymInts named after themselves, or the real tier's ints."""

    def patches(self) -> list:
        """Stand-ins ``[(object, attribute, value)]`` set while recording."""


#: the type of :attr:`Engine.patches`
Patches = Callable[[], list]
