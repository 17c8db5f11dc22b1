"""A verifiers chat client for llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`).

verifiers 0.3.1's `OpenAIChatCompletionsClient` speaks today's OpenAI dialect, which that server (0.3.x)
reads differently in two ways (docs/adapters.md, "verifiers against llama.cpp's server"):

- it renames `max_tokens` to `max_completion_tokens`, a field the server's request model does not have and
  silently drops: the length is then unbounded and every turn generates to the end of the context window
  (956 tokens instead of 24 for the test's first turn; minutes per turn on a busy CPU, which looked like a hang);
- it writes earlier assistant turns with `"tool_calls": null` (and `"reasoning_content": null`); the server's
  message schema allows `tool_calls` absent or a list, never null, so the second turn is refused with a 500.

This client sends the length as `max_tokens` and leaves out message fields that are null; all else is verifiers'.
"""

from __future__ import annotations

from typing import Any

from verifiers.clients import OpenAIChatCompletionsClient


class LlamaCppChatClient(OpenAIChatCompletionsClient):
    """`OpenAIChatCompletionsClient` whose requests llama-cpp-python's server reads as meant."""

    async def to_native_prompt(self, messages: Any) -> tuple[list[Any], dict]:
        prompt, extra = await super().to_native_prompt(messages)
        return [{k: v for k, v in dict(m).items() if v is not None} for m in prompt], extra

    async def get_native_response(
        self, prompt: Any, model: str, sampling_args: Any, tools: Any = None, **kwargs: Any
    ) -> Any:
        args = dict(sampling_args or {})
        length = args.pop("max_tokens", None)
        if length is None:
            length = args.pop("max_completion_tokens", None)
        if length is not None:  # verifiers renames a top-level max_tokens; extra_body goes into the body as is
            args["extra_body"] = {**(args.get("extra_body") or {}), "max_tokens": length}
        return await super().get_native_response(prompt, model, args, tools, **kwargs)
