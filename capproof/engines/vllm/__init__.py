"""The vLLM adapter: ``flags`` (option table), ``serve`` (``vllm serve`` parsing), ``wheels``
(fetching and activating the pinned wheel's sources)."""
