"""Engine adapters: everything that knows an engine's flags, wheels and classes.

``engines/adapter.py`` (the ``EngineAdapter`` protocol the command line and check-config use),
``engines/registry.py`` (the adapters, and ``--engine NAME[==VERSION]`` -> one of them),
``engines/checkconfig.py`` (the engine-neutral half of ``capproof check-config``),
``engines/tracing/`` (the engine-neutral tracer) and one package per engine (``vllm/``,
``sglang/``). Nothing below this layer (core, encode/solve, analyses, outputs) imports it.
"""
