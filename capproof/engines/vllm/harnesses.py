"""Every vLLM harness, registered: import this module (not :mod:`.trace`) to trace.

:mod:`.trace` holds the tracer, the registry (:data:`~.trace.HARNESSES`, filled by the
:func:`~.trace.harness` decorator) and the harnesses of the input batch, block tables and a few
builders; :mod:`.harness_worker` (worker, V2 runner, spec decode, MoE alignment; it also adds
stand-ins through :data:`~.trace.PATCH_PROVIDERS` and names through :data:`~.trace.EXTRA_VALUES`)
and :mod:`.harness_attention` (attention backends) register theirs when imported. This module
imports all three, so :data:`HARNESSES` is complete and :func:`trace_all` runs every harness.
"""

from __future__ import annotations

# isort: off
# In this order, as the tracer always loaded them: both extend the tracer's name tables (POSITIVE).
from . import harness_worker  # noqa: F401 - imported for its registrations
from . import harness_attention  # noqa: F401 - imported for its registrations

# isort: on
from .trace import HARNESSES, trace_all

__all__ = ["HARNESSES", "trace_all"]
