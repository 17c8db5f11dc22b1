"""Embedded brain: a GGUF model run in-process by llama.cpp. The default: no server, no key.

Besides free generation it *ranks* candidate actions by the model's likelihood: the prompt is evaluated
once and every candidate scored as a continuation on top of its KV cache, the prompt's KV reused across
steps by longest-common-prefix matching; `choose` takes the argmax or samples at a temperature.
`LocalBrain` composes the parts in `agents.brains.llama` (one job each: the llama.cpp runtime, which weights
run, continuation scoring, the candidate ranker, the KV-slot scheduler, generation, call batching) and
keeps the one lock llama.cpp needs.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.brains.base import BrainOutput, Message
from agents.brains.chat_templates import TEMPLATES, template_for
from agents.brains.llama.batching import ChooseBatcher, ChooseRequest
from agents.brains.llama.generation import Generator
from agents.brains.llama.ranking import CandidateRanker, Ranking, pick
from agents.brains.llama.ranking import scoring_texts as scoring_texts
from agents.brains.llama.runtime import LlamaRuntime
from agents.brains.llama.scoring import NO_TOKENS, ContinuationScorer
from agents.brains.llama.slot_table import common_prefix as common_prefix
from agents.brains.llama.slots import SlotScheduler
from agents.brains.llama.weights import resolve_adapter
from agents.brains.model_files import model_path
from agents.brains.registry import register_brain
from envs.contract import SLOT


class LocalBrainOptions(BaseModel):
    """`brain=local`'s options and their defaults (the preset is made from this model). They differ from
    `LocalBrain`'s library defaults (base model, argmax) in two keys, both resolved per env and adapter by
    `agents.resolve`: the shipped policy and its temperature."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(default="gemma3-270m", description="gemma3-270m | smollm2-135m | a path to any .gguf file")
    n_ctx: int = 4096
    n_threads: int | None = Field(default=None, description="default: all cores")
    temperature: Annotated[float, Field(ge=0.0)] | Literal["auto"] = Field(
        default="auto",
        description="sampling among ranked actions (seeded per episode and step, so runs repeat); 0 = argmax; "
        "auto = the temperature the adapter was measured best at (agents.catalog: argmax for agentsim-choice, "
        "the WebShop default), else 0.7",
    )
    max_tokens: int = 128
    score: str = Field(default="mean", description="how candidate actions are ranked: mean | sum (token logprob)")
    seed: int = 0
    chat_template: str | None = None
    n_seq: int = Field(default=16, description="candidates scored together in one decode; 1 = one by one")
    adapter: str | None = Field(
        default="auto",
        description="auto = the shipped fine-tune measured best on the env and turns (docs/policy.md); "
        "a shipped name; null = the base model; or a LoRA GGUF path",
    )
    adapter_scale: float = Field(default=1.0, description="multiplies the LoRA's alpha/rank scale (0 = base model)")
    kv_slots: int = Field(default=0, description="KV sequences keeping agents' prompts (societies, async collection)")
    batch_window_ms: float = Field(default=5.0, description="how long a concurrent choose waits for others to join")
    share_prefixes: bool = Field(default=True, description="decode the tokens candidate actions start alike with once")
    merge_adapter: bool = Field(default=False, description="fold the adapter into the weights once (cached)")


_DEFAULTS = LocalBrainOptions()  # the constructor's defaults are these, but for temperature and adapter


@register_brain("local", options=LocalBrainOptions, in_process=True)
class LocalBrain:
    """The default brain: a small GGUF model in-process that generates text and ranks candidate actions."""

    name = "local"
    can_write_text = True

    def __init__(
        self,
        model: str = _DEFAULTS.model,
        n_ctx: int = _DEFAULTS.n_ctx,
        n_threads: int | None = _DEFAULTS.n_threads,
        temperature: float = 0.0,  # the library's default: argmax (brain=local samples, LocalBrainOptions)
        max_tokens: int = _DEFAULTS.max_tokens,
        score: str = _DEFAULTS.score,
        seed: int = _DEFAULTS.seed,
        chat_template: str | None = _DEFAULTS.chat_template,
        n_seq: int = _DEFAULTS.n_seq,
        adapter: str | None = None,  # the library's default: the base model (brain=local: the shipped policy)
        adapter_scale: float = _DEFAULTS.adapter_scale,
        kv_slots: int | None = _DEFAULTS.kv_slots,
        batch_window_ms: float = _DEFAULTS.batch_window_ms,
        share_prefixes: bool = _DEFAULTS.share_prefixes,
        merge_adapter: bool = _DEFAULTS.merge_adapter,
    ) -> None:
        """`adapter`: a llama.cpp LoRA GGUF (from `python -m agents.policy.gguf_adapter`) or a shipped adapter's
        name (`model_files.KNOWN_ADAPTERS`), applied at `adapter_scale`.

        `kv_slots`: KV sequences that keep recent prompts (default 0, opt-in; e.g. half of `n_seq`), so agents taking turns
        each reuse their own cached transcript; the other sequences score candidates. 0 = one cached prompt.
        `batch_window_ms`: how long `achoose` waits for concurrent calls to join one batched decode.
        `share_prefixes`: decode the tokens candidates start alike with once (same scores; off only to measure it).
        `merge_adapter`: fold the adapter into the weights once (`agents.brains.merged_model`, cached) instead of
        applying it at every decode: faster steps, scores within re-quantization noise of the run-time LoRA's."""
        if score not in ("mean", "sum"):
            raise ValueError(f"score must be 'mean' or 'sum', got {score!r}")
        self.path = str(model_path(model))
        self.model = model
        self.temperature, self.max_tokens, self.score, self.seed = temperature, max_tokens, score, seed
        weights, lora_at_run_time, lora = resolve_adapter(self.path, model, adapter, adapter_scale, merge_adapter)
        self.runtime = LlamaRuntime(
            weights,
            n_ctx=n_ctx,
            n_threads=n_threads or os.cpu_count() or 1,
            seed=seed,
            n_seq=n_seq,
            adapter=lora_at_run_time,
            adapter_scale=adapter_scale,
        )
        self.adapter = lora if merge_adapter else self.runtime.adapter  # the LoRA GGUF in use (merged or not), or None
        self.merged = weights != self.path  # the weights llama.cpp runs have the adapter folded in
        self.llm = self.runtime.llm  # the public `Llama` object: tokenizer, generation, metadata
        self.n_seq = self.runtime.n_seq
        arch = str(self.llm.metadata.get("general.architecture", ""))
        self.template = chat_template or template_for(self.path, arch)
        self._format, stops = TEMPLATES[self.template]
        self._lock = threading.Lock()  # llama.cpp contexts are not thread-safe
        n_slots = 0 if kv_slots is None else kv_slots
        if n_slots < 0 or (n_slots and n_slots > self.n_seq - 2):
            raise ValueError(
                f"kv_slots must be in 0..{max(0, self.n_seq - 2)} (n_seq={self.n_seq} leaves one for scoring)"
            )
        # sequence 0: Llama's own (generation); 1..n_slots: cached prompts; the rest: candidates being scored
        self.scorer = ContinuationScorer(self.runtime, list(range(1 + n_slots, self.n_seq)), share_prefixes)
        self.slots = SlotScheduler(self.runtime, list(range(1, 1 + n_slots))) if n_slots else None
        self.ranker = CandidateRanker(self.tokenize, self.scorer, self.slots)
        self.generator = Generator(self.runtime, self.scorer, self.slots, self.tokenize, stops, seed)
        self.batcher = ChooseBatcher(self._choose_batch, batch_window_ms / 1000.0)

    # ------------------------------------------------------------------ tokens and prompts
    def tokenize(self, text: str) -> list[int]:
        """Model tokens of `text`, special tokens (turn markers) parsed, no BOS added."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def detokenize(self, tokens: list[int]) -> str:
        """The text of `tokens`, special tokens (turn markers) written out: the inverse of `tokenize`."""
        return self.llm.detokenize(tokens, special=True).decode("utf-8", errors="replace")

    def count_tokens(self, text: str) -> int:
        """Exact token count with the model's tokenizer (for perception budgets)."""
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0

    def prompt_text(self, messages: list[Message]) -> str:
        """The chat-formatted prompt, ending where the assistant's reply starts."""
        return self._format(messages)

    @property
    def share_prefixes(self) -> bool:
        """Whether candidates' common leading tokens are decoded once (settable, to measure the difference)."""
        return self.scorer.share_prefixes

    @share_prefixes.setter
    def share_prefixes(self, value: bool) -> None:
        self.scorer.share_prefixes = value

    @property
    def batches(self) -> list[int]:
        """Requests per batched `achoose` decode (the last 256), for benches and tests."""
        return self.batcher.batches

    def forget_cache(self) -> None:
        """Forget every remembered ranking and cached prompt: the next call evaluates from nothing (cold costs)."""
        with self._lock:
            self.ranker.rankings.clear()
            self.scorer.last_logits = None
            if self.slots is not None:
                self.slots.drop_all()

    # ------------------------------------------------------------------ ranking
    def choose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        """Rank `candidates` as continuations after `prefix`; argmax at temperature 0, else sample (see ChoosingBrain)."""
        with self._lock:
            return self._choose_many_locked([ChooseRequest(messages, candidates, temperature, prefix, seed)])[0]

    def choose_many(self, calls: list[dict[str, Any]]) -> list[BrainOutput]:
        """Several `choose` calls (dicts of its arguments) ranked together: their prompts' new tokens in one decode,
        their candidates in as few as fit. Same answers as one call each, at a fraction of the llama.cpp calls."""
        reqs = [ChooseRequest(**c) for c in calls]
        with self._lock:
            return self._choose_many_locked(reqs) if reqs else []

    async def achoose(
        self,
        messages: list[Message],
        candidates: list[str],
        *,
        temperature: float = 0.0,
        prefix: str = "",
        seed: int | None = None,
    ) -> BrainOutput:
        """`choose` off the event loop. Calls made concurrently (agents of one society round, episodes of an async
        collection) are batched: the first waits `batch_window_ms` for others, and calls arriving while a batch
        decodes form the next one."""
        return await self.batcher.submit(ChooseRequest(messages, candidates, temperature, prefix, seed))

    def _choose_batch(self, reqs: list[ChooseRequest]) -> list[BrainOutput]:
        with self._lock:
            return self._choose_many_locked(reqs)

    def _choose_many_locked(self, reqs: list[ChooseRequest]) -> list[BrainOutput]:
        """Rank every request's candidates (new prompts in shared decodes), then pick per request.

        Without KV slots the prompts are ranked one after another in sequence 0 anyway, so each request is ranked
        and finished before the next: a slot fill then generates after the prompt sequence 0 still holds, instead
        of evaluating it again after the batch's last prompt replaced it."""
        for r in reqs:
            if not r.candidates:
                raise ValueError("choose() needs at least one candidate")
        if self.slots is None:
            return [out for r in reqs for out in self._rank_and_finish([r])]
        return self._rank_and_finish(reqs)

    def _rank_and_finish(self, reqs: list[ChooseRequest]) -> list[BrainOutput]:
        t0 = time.perf_counter()
        prompts = [self.prompt_text(r.messages) for r in reqs]
        rankings = self.ranker.rank([(prompt, r.prefix, tuple(r.candidates)) for prompt, r in zip(prompts, reqs)])
        shared = (time.perf_counter() - t0) / len(reqs)  # a batch's ranking time, split evenly
        outs = []
        for r, prompt, ranking in zip(reqs, prompts, rankings):
            t1 = time.perf_counter()
            out = self._finish(r, prompt, ranking)
            out.latency_s = shared + time.perf_counter() - t1
            outs.append(out)
        return outs

    def _finish(self, req: ChooseRequest, prompt: str, ranking: Ranking) -> BrainOutput:
        """The choice among ranked candidates (argmax, or a sample at the temperature), as a BrainOutput."""
        candidates, temperature, prefix, seed = req.candidates, req.temperature, req.prefix, req.seed
        _, lead = scoring_texts(prompt, prefix, "")  # lead = the prompt + the separator a candidate follows
        base, fulls, owns, by_index = ranking.base, ranking.fulls, ranking.owns, ranking.by_index
        scores, idx = pick(ranking, candidates, self.score, temperature, seed)
        chosen = candidates[idx]
        tokens_out = 0
        # token-in/token-out: the chosen candidate's tokenization split where its own tokens start
        # (the prompt ids the KV cache held before them), and the logprobs its ranking computed
        own = owns[idx]
        prompt_ids, output_ids = fulls[idx][:own], fulls[idx][own:]
        output_lps: list[float] | None = [float(x) for x in by_index.get(idx, NO_TOKENS)]
        if SLOT in chosen:
            filled, tokens_out = self.generator.fill_slot(lead, chosen, temperature, seed)
            chosen = filled
            # the filled action's ids (template head + generated text + tail), re-scored in one decode
            full = self.tokenize(lead + filled)
            own = common_prefix(base, full)
            prompt_ids, output_ids = full[:own], full[own:]
            output_lps = self.scorer.score_tokens(full, own)
        tokens_in = len(base) + sum(max(0, len(f) - min(owns)) for f in fulls)
        return BrainOutput(
            text=prefix + chosen,
            tokens_in=tokens_in,
            tokens_out=tokens_out + scores[idx].n_tokens,
            latency_s=0.0,
            candidates=scores,
            model=self.model,
            logprobs=None,
            finish_reason="choice",
            prompt_token_ids=prompt_ids,
            output_token_ids=output_ids,
            output_logprobs=output_lps,
        )

    # ------------------------------------------------------------------ generation
    def complete(
        self,
        messages: list[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
        tools: list[dict] | None = None,
        seed: int | None = None,
    ) -> BrainOutput:
        """Free generation. `tools` are described in the prompt (small local models have no native tool calling)."""
        if tools:
            names = ", ".join(t["function"]["name"] for t in tools)
            messages = list(messages) + [
                {"role": "user", "content": f"(Tools available: {names}. Answer with 'Action: name[argument]'.)"}
            ]
        prompt = self.prompt_text(messages)
        t0 = time.perf_counter()
        with self._lock:
            tokens = self.tokenize(prompt)
            self.scorer.check_fits(len(tokens))
            out = self.generator.generate(
                tokens,
                max_tokens=max_tokens or self.max_tokens,
                temperature=self.temperature if temperature is None else temperature,
                stop=stop or [],
                seed=seed,
            )
            # llama.cpp's completion reports text, not ids (and logprobs only with logits for every
            # position, which would cost n_ctx x n_vocab floats): the generated text's ids are
            # re-scored after the prompt's in one decode
            generated = out["choices"][0]["text"]
            output_ids = self.tokenize(generated)
            output_lps = self.scorer.score_tokens(tokens + output_ids, len(tokens))
        usage = out["usage"]
        return BrainOutput(
            text=generated.strip(),
            tokens_in=int(usage["prompt_tokens"]),
            tokens_out=int(usage["completion_tokens"]),
            latency_s=time.perf_counter() - t0,
            finish_reason=out["choices"][0].get("finish_reason"),
            model=self.model,
            prompt_token_ids=tokens,
            output_token_ids=output_ids,
            output_logprobs=output_lps,
        )

    async def acomplete(self, messages: list[Message], **kw: Any) -> BrainOutput:
        """`complete` in a worker thread."""
        return await asyncio.to_thread(self.complete, messages, **kw)
