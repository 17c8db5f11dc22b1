"""Any OpenAI-compatible endpoint (OpenAI, vLLM, SGLang, llama.cpp server, Ollama) via the `openai` SDK.

Retries with exponential backoff on 429 / 5xx / connection errors and timeouts are the SDK's
own (`max_retries`, `timeout_s`); what they cannot fix becomes a `BrainError` that names the
URL and says what to do.

Token-in/token-out: `logprobs=true` asks for per-token logprobs (`output_logprobs`);
`return_token_ids=true` also asks for token ids with extras only some servers know (vLLM's
`return_token_ids` -> `prompt_token_ids` and `choices[].token_ids`, and its
`return_tokens_as_token_ids`). Ids are read wherever the server puts them: vLLM's fields,
llama.cpp's C++ `llama-server` (`id` on every logprobs entry), or vLLM's `token_id:<n>` strings.
Both are off by default: OpenAI itself rejects unknown parameters, and llama.cpp servers only
give logprobs for models loaded with `logits_all`. What a server does not return is None.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import openai

from agents.brains.base import BrainError, BrainOutput, Message, ToolCall, approx_tokens
from agents.brains.registry import register_brain
from envs.util import is_loopback_url

log = logging.getLogger(__name__)

LOCAL_SERVER_HINT = (
    "start a local one with: python -m llama_cpp.server --model $(python -m agents.brains.model_files) "
    "--host 127.0.0.1 --port 8000   and pass brain.base_url=http://127.0.0.1:8000/v1"
)


def _int_list(value: Any) -> list[int] | None:
    """`value` as a list of token ids, or None unless it is a list of integers."""
    if isinstance(value, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        return list(value)
    return None


def _extra(obj: Any, key: str) -> Any:
    """A field the SDK's models do not declare (server extras), or None."""
    extra = getattr(obj, "model_extra", None) or {}
    return extra.get(key, getattr(obj, key, None))


def response_token_ids(resp: Any) -> tuple[list[int] | None, list[int] | None]:
    """(prompt ids, output ids) from a chat completion, wherever the server put them; None where absent.

    Prompt ids: vLLM's `prompt_token_ids` (with `return_token_ids`). Output ids, first found of:
    vLLM's `choices[0].token_ids`; an `id` on every logprobs entry (llama.cpp's C++ llama-server);
    vLLM's `token_id:<n>` logprob tokens (`return_tokens_as_token_ids`).
    """
    prompt_ids = _int_list(_extra(resp, "prompt_token_ids"))
    choice = resp.choices[0]
    output_ids = _int_list(_extra(choice, "token_ids"))
    content = getattr(getattr(choice, "logprobs", None), "content", None) or []
    if output_ids is None and content:
        output_ids = _int_list([_extra(t, "id") for t in content])
    if output_ids is None and content and all(str(t.token).startswith("token_id:") for t in content):
        try:
            output_ids = [int(str(t.token).removeprefix("token_id:")) for t in content]
        except ValueError:
            output_ids = None
    return prompt_ids, output_ids


@register_brain("openai")
class OpenAIBrain:
    """A brain behind any OpenAI-compatible HTTP endpoint, with retries and errors that say what to fix."""

    name = "openai"
    can_write_text = True

    def __init__(
        self,
        base_url: str = "https://api.openai.com/v1",
        model: str = "gpt-4o-mini",
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        logprobs: bool = False,
        tool_choice: Any = "auto",
        return_token_ids: bool = False,
    ) -> None:
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if not is_loopback_url(base_url):  # a server on this machine needs no API key
                raise BrainError(f"no API key for {base_url}: set OPENAI_API_KEY or pass brain.api_key=...")
            key = "sk-no-key-needed"  # local servers ignore it, the SDK requires one
        self.base_url, self.model = base_url.rstrip("/"), model
        self.temperature, self.max_tokens, self.logprobs = temperature, max_tokens, logprobs
        self.tool_choice = tool_choice  # "auto" | "required" | a tool name (forced)
        self.return_token_ids = return_token_ids
        self._warned_no_ids = False
        # the SDK's own Timeout: openai 3.x ships its own HTTP stack (httpx2), so an httpx.Timeout is refused
        timeout = openai.Timeout(timeout_s, connect=min(10.0, timeout_s))
        self._kw: dict[str, Any] = {
            "base_url": self.base_url,
            "api_key": key,
            "timeout": timeout,
            "max_retries": max_retries,
        }
        self._sync: openai.OpenAI | None = None
        self._async: openai.AsyncOpenAI | None = None

    @property
    def client(self) -> openai.OpenAI:
        """The sync SDK client, built on first use (so a brain can be made without network)."""
        if self._sync is None:
            self._sync = openai.OpenAI(**self._kw)
        return self._sync

    @property
    def aclient(self) -> openai.AsyncOpenAI:
        """The async SDK client, built on first use."""
        if self._async is None:
            self._async = openai.AsyncOpenAI(**self._kw)
        return self._async

    def count_tokens(self, text: str) -> int:
        """Approximate count (about 4 characters a token)."""
        return approx_tokens(text)  # no tokenizer download at run time; ~4 chars a token

    def _request(
        self,
        messages: list[Message],
        temperature: float | None,
        max_tokens: int | None,
        stop: list[str] | None,
        tools: list[dict] | None,
    ) -> dict[str, Any]:
        req: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or self.max_tokens,
        }
        if stop:
            req["stop"] = stop
        if tools:
            req["tools"] = tools
            tc = self.tool_choice
            if tc not in ("auto", "required", "none"):
                tc = {"type": "function", "function": {"name": tc}}
            req["tool_choice"] = tc
        if self.logprobs:
            req["logprobs"] = True
            req["top_logprobs"] = 1  # some servers (llama.cpp's) return none without it
        if self.return_token_ids:  # vLLM extras; servers that ignore unknown fields just answer without ids
            extra: dict[str, Any] = {"return_token_ids": True}
            if self.logprobs:
                extra["return_tokens_as_token_ids"] = True
            req["extra_body"] = extra
        return req

    def _error(self, e: Exception) -> BrainError:
        url = f"{self.base_url}/chat/completions"
        if isinstance(e, openai.APITimeoutError):
            return BrainError(
                f"{url} did not answer in time after retries ({e}). Raise brain.timeout_s or check the server."
            )
        if isinstance(e, openai.APIConnectionError):
            return BrainError(
                f"could not reach {url} ({e.__cause__ or e}). Check brain.base_url, or {LOCAL_SERVER_HINT}"
            )
        if isinstance(e, openai.AuthenticationError):
            return BrainError(f"{url} rejected the API key (401). Set OPENAI_API_KEY or brain.api_key.")
        if isinstance(e, openai.NotFoundError):
            return BrainError(
                f"{url} answered 404: wrong brain.base_url (it should end in /v1) or unknown model {self.model!r}."
            )
        if isinstance(e, openai.APIStatusError):
            return BrainError(f"{url} answered HTTP {e.status_code} after retries: {str(e)[:300]}")
        return BrainError(
            f"{url} returned a response that is not a valid chat completion ({type(e).__name__}: {str(e)[:300]})"
        )

    def _output(self, resp: Any, t0: float) -> BrainOutput:
        try:
            choice = resp.choices[0]
            msg = choice.message
        except (AttributeError, IndexError, TypeError) as e:
            raise BrainError(f"{self.base_url}/chat/completions returned no choices: {str(resp)[:300]}") from e
        calls = [
            ToolCall(id=c.id or "", name=c.function.name, arguments=c.function.arguments or "")
            for c in (msg.tool_calls or [])
            if getattr(c, "function", None)
        ]
        lps = None
        if getattr(choice, "logprobs", None) is not None and choice.logprobs.content:
            lps = [float(t.logprob) for t in choice.logprobs.content]
        prompt_ids, output_ids = response_token_ids(resp)
        if self.return_token_ids and output_ids is None and not self._warned_no_ids:
            self._warned_no_ids = True
            log.warning(
                "%s returned no token ids for return_token_ids (recent vLLM does); steps record none",
                self.base_url,
            )
        usage = resp.usage
        text = msg.content or ""
        return BrainOutput(
            text=text,
            tool_calls=calls,
            tokens_in=int(usage.prompt_tokens) if usage else approx_tokens(str(resp)),
            tokens_out=int(usage.completion_tokens) if usage else approx_tokens(text),
            latency_s=time.perf_counter() - t0,
            logprobs=lps,
            finish_reason=choice.finish_reason,
            model=getattr(resp, "model", None) or self.model,
            prompt_token_ids=prompt_ids,
            output_token_ids=output_ids,
            output_logprobs=lps if output_ids is None or lps is None or len(lps) == len(output_ids) else None,
        )

    _FAIL = (openai.OpenAIError, ValueError, TypeError)

    def complete(
        self,
        messages: list[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
        tools: list[dict] | None = None,
    ) -> BrainOutput:
        """One chat completion; failures the SDK's retries cannot fix become a BrainError."""
        t0 = time.perf_counter()
        try:
            resp = self.client.chat.completions.create(**self._request(messages, temperature, max_tokens, stop, tools))
        except self._FAIL as e:
            raise self._error(e) from e
        return self._output(resp, t0)

    async def acomplete(
        self,
        messages: list[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
        tools: list[dict] | None = None,
    ) -> BrainOutput:
        """`complete` over the async client (no thread per request)."""
        t0 = time.perf_counter()
        try:
            resp = await self.aclient.chat.completions.create(
                **self._request(messages, temperature, max_tokens, stop, tools)
            )
        except self._FAIL as e:
            raise self._error(e) from e
        return self._output(resp, t0)

    def check(self) -> None:
        """Fail fast, before a run starts, if the endpoint is unreachable."""
        try:
            self.client.with_options(max_retries=0, timeout=10.0).models.list()
        except openai.APIStatusError:
            return  # reachable; some servers do not implement /models
        except self._FAIL as e:
            raise self._error(e) from e
