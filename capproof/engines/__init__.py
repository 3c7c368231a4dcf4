"""Engine adapters: everything that knows an engine's flags, wheels and classes.

``engines/vllm/`` (flag table, ``vllm serve`` parsing, wheel fetching, tracing stand-ins) and
``engines/checkconfig.py`` (composes the adapters into ``capproof check-config``). Nothing below
this layer (core, encode/solve, analyses, outputs) imports it.
"""
