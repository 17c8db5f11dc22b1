"""Embedded brain: a GGUF model run in-process by llama.cpp. The default: no server, no key.

Besides free generation it can *rank* candidate actions by the model's likelihood. The prompt
is evaluated once; every candidate is then scored as a continuation on top of the prompt's KV
cache (the cache is rolled back after each), and the prompt's KV is reused across steps by
longest-common-prefix matching. `choose` takes the argmax or samples at a temperature.
Low-level llama.cpp calls go through `agents.brains.llama_adapter` (the only user of its internals).
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agents.brains.base import BrainError, BrainOutput, CandidateScore, Message
from agents.brains.chat_templates import TEMPLATES, template_for
from agents.brains.kv_slots import SlotTable
from agents.brains.kv_slots import common_prefix as common_prefix
from agents.brains.llama_adapter import LlamaRuntime, check_adapter_file
from agents.brains.merged_model import merged_weights
from agents.brains.model_files import adapter_path, model_path
from agents.brains.registry import register_brain
from envs.contract import SLOT


def scoring_texts(prompt: str, prefix: str, candidate: str) -> tuple[str, str]:
    """(the context a candidate is scored after, that context + the candidate): how `choose` lays them out.

    Training data (`agents.policy.sft_data`) uses the same split, so it trains exactly what is ranked."""
    head = prompt + prefix.rstrip(" ")
    shown = candidate.split(SLOT)[0] if SLOT in candidate else candidate  # a template is scored by its fixed head
    return head, head + (" " if prefix.endswith(" ") else "") + shown


_NO_TOKENS = np.zeros(0, dtype=np.float64)  # the per-token logprobs of an empty continuation
SHARE_MIN_TOKENS = 32  # a batch-mate's prefix worth waiting one decode for (KV slots)
RANKINGS_KEPT = 64  # choose() rankings remembered (search samples N actions at one state; rollouts revisit states)


@dataclass
class _Ranking:
    """What ranking candidates after one prompt computed: the prompt's ids, each candidate's ids, where its own
    tokens start, and their logprobs (deterministic for a model and prompt, so a repeat costs nothing)."""

    base: list[int]
    fulls: list[list[int]]
    owns: list[int]
    by_index: dict[int, np.ndarray]


@dataclass(frozen=True)
class _Request:
    """One `choose` call's arguments, queued for a batched decode."""

    messages: list[Message]
    candidates: list[str]
    temperature: float = 0.0
    prefix: str = ""
    seed: int | None = None


def _resolve(fut: asyncio.Future[BrainOutput], out: BrainOutput | None = None, error: Exception | None = None) -> None:
    """Answer a queued call on its own event loop (a cancelled caller is skipped)."""

    def answer() -> None:
        if fut.done():
            return
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(cast(BrainOutput, out))

    fut.get_loop().call_soon_threadsafe(answer)


def _log_softmax_at(logits: np.ndarray, token: int) -> float:
    """log p(token | logits) for one row."""
    m = float(logits.max())
    return float(logits[token] - m - math.log(float(np.exp(logits - m).sum())))


class LocalBrainOptions(BaseModel):
    """`brain=local`'s options and their defaults (the preset is made from this model). They differ from
    `LocalBrain`'s library defaults (base model, argmax) in two keys: the shipped policy and sampling."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(default="gemma3-270m", description="gemma3-270m | smollm2-135m | a path to any .gguf file")
    n_ctx: int = 4096
    n_threads: int | None = Field(default=None, description="default: all cores")
    temperature: float = Field(
        default=0.7,
        description="sampling among ranked actions (seeded per episode and step, so runs repeat); "
        "0 = argmax, which loops on WebShop",
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
        lora = adapter_path(adapter, model)
        weights = self.path
        if lora is not None and merge_adapter:
            lora = cast(str, check_adapter_file(lora))
            weights, lora_at_run_time = str(merged_weights(self.path, lora, adapter_scale)), None
        else:
            lora_at_run_time = lora
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
        self._format, self._stops = TEMPLATES[self.template]
        self._lock = threading.Lock()  # llama.cpp contexts are not thread-safe
        self._n_vocab = self.runtime.n_vocab
        self._last_logits: np.ndarray | None = None  # logits after the tokens currently in the KV cache
        # choose(): the ranking of (prompt, prefix, candidates), so N samples at one state cost one ranking
        self._rankings: OrderedDict[tuple, _Ranking] = OrderedDict()
        n_slots = 0 if kv_slots is None else kv_slots
        if n_slots < 0 or (n_slots and n_slots > self.n_seq - 2):
            raise ValueError(
                f"kv_slots must be in 0..{max(0, self.n_seq - 2)} (n_seq={self.n_seq} leaves one for scoring)"
            )
        # sequence 0: Llama's own (generation); 1..n_slots: cached prompts; the rest: candidates being scored
        self._slots = SlotTable(list(range(1, 1 + n_slots)), self.runtime.n_ctx) if n_slots else None
        self._scratch = list(range(1 + n_slots, self.n_seq))
        self.batch_window_s = batch_window_ms / 1000.0
        self.share_prefixes = share_prefixes
        self._pending: list[tuple[_Request, asyncio.Future[BrainOutput]]] = []
        self._pending_lock = threading.Lock()
        self._flushing = False
        self.batches: list[int] = []  # requests per batched decode (the last 256), for benches and tests

    # ------------------------------------------------------------------ helpers
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

    def _check_fits(self, n: int) -> None:
        if n >= self.runtime.n_ctx:
            raise BrainError(
                f"prompt of {n} tokens does not fit the context window of {self.runtime.n_ctx} tokens; "
                "raise brain.n_ctx or lower agent.perception.budget_tokens"
            )

    def _eval_context(self, tokens: list[int]) -> np.ndarray:
        """Make the KV cache hold exactly `tokens` (reusing the common prefix); return the last position's logits."""
        rt = self.runtime
        self._check_fits(len(tokens))
        cached = rt.cached_tokens()
        common = common_prefix(cached, tokens)
        if common == len(tokens) and common == len(cached) and self._last_logits is not None:
            return self._last_logits
        common = min(common, len(tokens) - 1)  # re-evaluate at least the last token to get its logits
        logits = rt.eval_after(common, tokens[common:])
        self._last_logits = logits
        return logits

    def _score_continuation(
        self, ctx_len: int, ctx_logits: np.ndarray, tokens: list[int], score_from: int
    ) -> np.ndarray:
        """Logprob of each of tokens[score_from:], where `tokens` follows the `ctx_len` cached tokens."""
        rt = self.runtime
        lps: list[float] = []
        if score_from == 0:
            lps.append(_log_softmax_at(ctx_logits, tokens[0]))
        if len(tokens) > 1:
            self._check_fits(ctx_len + len(tokens))
            feed = tokens[:-1]
            for start in range(0, len(feed), rt.n_batch):
                part = feed[start : start + rt.n_batch]
                rows = rt.decode_rows(part, ctx_len + start)
                for i in range(len(part)):
                    j = start + i + 1  # the token predicted by row i
                    if j >= score_from:
                        lps.append(_log_softmax_at(rows[i], tokens[j]))
            rt.forget_after(ctx_len)  # roll the candidate back off the cache
        return np.asarray(lps, dtype=np.float64)

    def _score_batched(
        self, ctx_len: int, ctx_logits: np.ndarray, conts: list[tuple[list[int], int]]
    ) -> list[np.ndarray]:
        """Per-token logprobs of many continuations of the cached context, one sequence each, as many at once as there
        are scratch sequences (sorted, so those that start alike share a decode and their common tokens)."""
        rt = self.runtime
        results: list[np.ndarray] = [_NO_TOKENS] * len(conts)
        pending = sorted((i for i, (toks, _) in enumerate(conts) if len(toks) > 1), key=lambda i: conts[i][0])
        for i, (toks, start) in enumerate(conts):  # the first token is predicted by the context's own logits
            if start == 0:
                results[i] = np.array([_log_softmax_at(ctx_logits, toks[0])])
        self._check_fits(ctx_len + sum(len(conts[i][0]) for i in pending))
        while pending:
            group, pending = pending[: len(self._scratch)], pending[len(self._scratch) :]
            scores = rt.score_shared(
                [(0, ctx_len, conts[i][0]) for i in group], first_seq=self._scratch[0], share=self.share_prefixes
            )
            for i, lp in zip(group, scores):
                keep = lp[max(0, conts[i][1] - 1) :]  # lp[j] scores token j + 1
                results[i] = np.concatenate((results[i], keep)) if len(results[i]) else keep
            for seq in self._scratch[: len(group)]:
                rt.drop_sequence(seq)
        return results

    def _score_tokens(self, tokens: list[int], start: int) -> list[float] | None:
        """Logprob of each of tokens[start:] given all tokens before it, on top of the KV cache.

        Re-scores an output whose ids llama.cpp's generation does not report (a slot fill, free
        text). None when there is nothing to condition on or the tokens overflow the context.
        """
        if start >= len(tokens):
            return []
        if start == 0 or len(tokens) >= self.runtime.n_ctx:
            return None
        ctx_logits = self._eval_context(tokens[:start])
        cont = (tokens[start:], 0)
        if self._scratch:
            lps = self._score_batched(start, ctx_logits, [cont])[0]
        else:
            lps = self._score_continuation(start, ctx_logits, *cont)
        return [float(x) for x in lps]

    # ------------------------------------------------------------------ ranking
    def _choose_many_locked(self, reqs: list[_Request]) -> list[BrainOutput]:
        """Rank every request's candidates (new prompts in shared decodes), then pick per request.

        Without KV slots the prompts are ranked one after another in sequence 0 anyway, so each request is ranked
        and finished before the next: a slot fill then generates after the prompt sequence 0 still holds, instead
        of evaluating it again after the batch's last prompt replaced it."""
        for r in reqs:
            if not r.candidates:
                raise ValueError("choose() needs at least one candidate")
        if self._slots is None:
            return [out for r in reqs for out in self._rank_and_finish([r])]
        return self._rank_and_finish(reqs)

    def _rank_and_finish(self, reqs: list[_Request]) -> list[BrainOutput]:
        t0 = time.perf_counter()
        prompts = [self.prompt_text(r.messages) for r in reqs]
        keys = [(prompt, r.prefix, tuple(r.candidates)) for prompt, r in zip(prompts, reqs)]
        missing = list(dict.fromkeys(k for k in keys if k not in self._rankings))
        if missing:
            ranked = self._rank_many([(k[0], k[1], list(k[2])) for k in missing])
            for k, ranking in zip(missing, ranked):
                self._rankings[k] = ranking
        rankings = [self._rankings[k] for k in keys]
        for k in keys:
            self._rankings.move_to_end(k)
        while len(self._rankings) > RANKINGS_KEPT:
            self._rankings.popitem(last=False)
        shared = (time.perf_counter() - t0) / len(reqs)  # a batch's ranking time, split evenly
        outs = []
        for r, prompt, ranking in zip(reqs, prompts, rankings):
            t1 = time.perf_counter()
            out = self._finish(r, prompt, ranking)
            out.latency_s = shared + time.perf_counter() - t1
            outs.append(out)
        return outs

    def _finish(self, req: _Request, prompt: str, ranking: _Ranking) -> BrainOutput:
        """The choice among ranked candidates (argmax, or a sample at the temperature), as a BrainOutput."""
        candidates, temperature, prefix, seed = req.candidates, req.temperature, req.prefix, req.seed
        _, lead = scoring_texts(prompt, prefix, "")  # lead = the prompt + the separator a candidate follows
        base, fulls, owns, by_index = ranking.base, ranking.fulls, ranking.owns, ranking.by_index
        m = min(owns)
        scores: list[CandidateScore] = []
        for i, c in enumerate(candidates):
            if i not in by_index:
                scores.append(CandidateScore(c, -1e9, 0, -1e9))  # nothing to score: never preferred
                continue
            lp, n = float(by_index[i].sum()), len(by_index[i])
            score = lp / max(1, n) if self.score == "mean" else lp
            scores.append(CandidateScore(c, lp, n, score))
        vals = np.array([s.score for s in scores], dtype=np.float64)
        if temperature and temperature > 0:
            rng = np.random.default_rng(seed)
            z = vals / temperature
            z = np.exp(z - z.max())
            idx = int(rng.choice(len(scores), p=z / z.sum()))
        else:
            idx = int(vals.argmax())
        chosen = candidates[idx]
        tokens_out = 0
        # token-in/token-out: the chosen candidate's tokenization split where its own tokens start
        # (the prompt ids the KV cache held before them), and the logprobs its ranking computed
        own = owns[idx]
        prompt_ids, output_ids = fulls[idx][:own], fulls[idx][own:]
        output_lps: list[float] | None = [float(x) for x in by_index.get(idx, _NO_TOKENS)]
        if SLOT in chosen:
            filled, tokens_out = self._fill_slot(lead, chosen, temperature, seed)
            chosen = filled
            # the filled action's ids (template head + generated text + tail), re-scored in one decode
            full = self.tokenize(lead + filled)
            own = common_prefix(base, full)
            prompt_ids, output_ids = full[:own], full[own:]
            output_lps = self._score_tokens(full, own)
        tokens_in = len(base) + sum(max(0, len(f) - m) for f in fulls)
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

    def _rank_many(self, items: list[tuple[str, str, list[str]]]) -> list[_Ranking]:
        """Rank candidates after each (prompt, prefix): every candidate's own tokens' logprobs.

        With KV slots, each prompt reuses the longest prefix any slot holds (an agent's own last prompt), the
        new tails of all prompts go in one decode, then every candidate of every prompt in as few as fit.
        """
        tokenized = []
        for prompt, prefix, candidates in items:
            head, _ = scoring_texts(prompt, prefix, "")
            base = self.tokenize(head)
            fulls = [self.tokenize(scoring_texts(prompt, prefix, c)[1]) for c in candidates]
            # shared context = longest prefix common to the prompt and every candidate's tokenization;
            # a candidate's own tokens start where its tokenization leaves the prompt's
            owns = [common_prefix(base, f) for f in fulls]
            self._check_fits(max(len(f) for f in fulls))
            tokenized.append((base, fulls, owns))
        if self._slots is None or not self._scratch:
            return [self._rank_in_sequence_0(*t) for t in tokenized]
        rankings: dict[int, _Ranking] = {}
        todo = list(enumerate(tokenized))
        self._check_slots()
        while todo:
            wave, todo = self._wave(todo)
            contexts = [base[: min(owns)] for _, (base, _, owns) in wave]
            reserve = len(self.runtime.cached_tokens()) + sum(sum(len(f) for f in t[1]) for _, t in wave + todo)
            placements, evict = self._slots.place(contexts, reserve)
            if not placements:
                raise BrainError("no KV slot is free for a prompt; raise brain.n_seq or brain.kv_slots")
            rt = self.runtime
            for seq in evict:
                rt.drop_sequence(seq)
                self._slots.clear(seq)
            for pl in placements:
                if pl.source is not None:
                    rt.copy_prefix(pl.source, pl.seq, pl.keep)
            for pl in placements:
                if pl.source is None:
                    rt.forget_after(pl.keep, pl.seq)
            tails = [(pl.seq, pl.keep, ctx[pl.keep :], False) for pl, ctx in zip(placements, contexts)]
            rt.prompt_tokens_evaluated += sum(len(t[2]) for t in tails)
            last = rt.decode_batch(tails)
            for pl, ctx in zip(placements, contexts):
                self._slots.commit(pl.seq, ctx)
            done, todo = wave[: len(placements)], wave[len(placements) :] + todo
            conts = [
                [(f[len(ctx) :], own - len(ctx)) for f, own in zip(fulls, owns)]
                for (_, (_, fulls, owns)), ctx in zip(done, contexts)
            ]
            scored = self._score_in_slots(
                [(pl.seq, len(ctx), rows[-1], c) for pl, ctx, rows, c in zip(placements, contexts, last, conts)]
            )
            for (k, (base, fulls, owns)), per in zip(done, scored):
                rankings[k] = _Ranking(base, fulls, owns, {i: lp for i, lp in enumerate(per) if lp is not None})
        return [rankings[k] for k in range(len(tokenized))]

    def _wave(self, todo: list[tuple[int, Any]]) -> tuple[list[tuple[int, Any]], list[tuple[int, Any]]]:
        """The prompts to decode now, and those to hold back one decode: a prompt sharing a longer prefix with an
        earlier prompt of this batch than with any cached slot (agents' common system text, first round) waits, so
        it copies those cells once they exist instead of evaluating them again."""
        assert self._slots is not None
        cached = [slot.tokens for slot in self._slots.slots.values()]
        now: list[tuple[int, Any]] = []
        later: list[tuple[int, Any]] = []
        for item in todo:
            base, _, owns = item[1]
            ctx = base[: min(owns)]
            in_slots = max((common_prefix(c, ctx) for c in cached), default=0)
            in_batch = max((common_prefix(o[1][0], ctx) for o in now), default=0)
            (later if in_batch > in_slots + SHARE_MIN_TOKENS else now).append(item)
        return now, later

    def _score_in_slots(
        self, reqs: list[tuple[int, int, np.ndarray, list[tuple[list[int], int]]]]
    ) -> list[list[np.ndarray | None]]:
        """Per request (slot, context length, its logits, continuations): each continuation's own tokens' logprobs.

        Continuations of all requests are decoded together, each on a scratch sequence sharing its slot's cells.
        An empty continuation gets None (nothing to score)."""
        rt = self.runtime
        results: list[list[np.ndarray | None]] = []
        pending: list[tuple[int, int]] = []
        for r, (_, _, logits, conts) in enumerate(reqs):
            row: list[np.ndarray | None] = []
            for i, (toks, start) in enumerate(conts):
                if not toks:
                    row.append(None)
                    continue
                row.append(np.array([_log_softmax_at(logits, toks[0])]) if start == 0 else _NO_TOKENS)
                if len(toks) > 1:
                    pending.append((r, i))
            results.append(row)
        while pending:
            group, pending = pending[: len(self._scratch)], pending[len(self._scratch) :]
            items = [(reqs[r][0], reqs[r][1], reqs[r][3][i][0]) for r, i in group]
            scores = rt.score_shared(items, first_seq=self._scratch[0], share=self.share_prefixes)
            for k, (r, i) in enumerate(group):
                lp = scores[k][max(0, reqs[r][3][i][1] - 1) :]  # scores[k][j] scores token j + 1
                prev = results[r][i]
                results[r][i] = np.concatenate((prev, lp)) if prev is not None and len(prev) else lp
            for scratch in self._scratch[: len(group)]:
                rt.drop_sequence(scratch)
        return results

    def _check_slots(self) -> None:
        """Trust a slot only as far as its cells reach: evaluation in sequence 0 (generation, `Llama.eval`) removes
        cells after a position, of sequence 0 in llama-cpp-python 0.3 but of every sequence in llama.cpp's own
        convention for -1; removals only ever cut a suffix, so the cells below a sequence's end are intact."""
        assert self._slots is not None
        for seq, slot in self._slots.slots.items():
            n = self.runtime.seq_length(seq)
            if n < len(slot.tokens):
                slot.tokens = slot.tokens[:n]

    def _make_room(self, cells: int) -> None:
        """Before sequence 0 grows to `cells` (a prompt and its generation): evict cached prompts, least recently used
        first, so the unified KV cache holds both (a reflection's generation once overflowed it)."""
        if self._slots is None:
            return
        for seq in self._slots.evict_for(cells):
            self.runtime.drop_sequence(seq)
            self._slots.clear(seq)

    def _room_for(self, tokens: list[int], max_new: int) -> list[int]:
        """`tokens`, ready for generation in sequence 0: room made for them and `max_new` more, and the longest prefix
        a KV slot holds (the agent's own prompt, just ranked there) shared into sequence 0, so generation evaluates
        only what follows it rather than the whole prompt again."""
        self._make_room(min(self.runtime.n_ctx, len(tokens) + max_new))
        if self._slots is not None:
            best, n = None, common_prefix(self.runtime.cached_tokens(), tokens)
            for seq, slot in self._slots.slots.items():
                k = min(common_prefix(slot.tokens, tokens), self.runtime.seq_length(seq))
                if k > n:
                    best, n = seq, k
            if best is not None:
                self.runtime.adopt_prefix(best, tokens[: min(n, len(tokens) - 1)])
                self._last_logits = None
        return tokens

    def _drop_slots(self) -> None:
        """Forget every cached prompt (and remove its cells)."""
        if self._slots is not None and self._slots.cells():
            for seq in self._slots.slots:
                self.runtime.drop_sequence(seq)
            self._slots.clear()

    def _rank_in_sequence_0(self, base: list[int], fulls: list[list[int]], owns: list[int]) -> _Ranking:
        """Ranking on the one-prompt path (no slots): the prompt in sequence 0, candidates one after another or batched."""
        m = min(owns)
        ctx_logits = self._eval_context(base[:m])
        conts = [(f[m:], own - m) for f, own in zip(fulls, owns)]
        scorable = [i for i, (cont, _) in enumerate(conts) if cont]
        if self._scratch:
            scored = self._score_batched(m, ctx_logits, [conts[i] for i in scorable])
        else:
            scored = [self._score_continuation(m, ctx_logits, *conts[i]) for i in scorable]
        return _Ranking(base, fulls, owns, dict(zip(scorable, scored)))

    def _fill_slot(self, head: str, template: str, temperature: float, seed: int | None) -> tuple[str, int]:
        """Generate the free text of a template's `...` slot, stopping at what follows the slot."""
        before, after = template.split(SLOT, 1)
        stop = [after[:1]] if after else []
        stop += ["\n"] + self._stops
        out = cast(
            dict[str, Any],
            self.llm.create_completion(
                prompt=self._room_for(self.tokenize(head + before), 32),
                max_tokens=32,
                temperature=temperature or 0.0,
                stop=stop,
                seed=seed if seed is not None else self.seed,
            ),
        )
        text = out["choices"][0]["text"].strip()
        self._last_logits = None  # generation moved the cache
        return before + text + after, int(out["usage"]["completion_tokens"])

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
            return self._choose_many_locked([_Request(messages, candidates, temperature, prefix, seed)])[0]

    def choose_many(self, calls: list[dict[str, Any]]) -> list[BrainOutput]:
        """Several `choose` calls (dicts of its arguments) ranked together: their prompts' new tokens in one decode,
        their candidates in as few as fit. Same answers as one call each, at a fraction of the llama.cpp calls."""
        reqs = [_Request(**c) for c in calls]
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
        req = _Request(messages, candidates, temperature, prefix, seed)
        fut: asyncio.Future[BrainOutput] = asyncio.get_running_loop().create_future()
        with self._pending_lock:
            self._pending.append((req, fut))
            start, self._flushing = not self._flushing, True
        if start:
            asyncio.get_running_loop().create_task(self._flush())
        return await fut

    async def _flush(self) -> None:
        """Serve queued `achoose` calls in batches until the queue is empty."""
        await asyncio.sleep(self.batch_window_s)
        while True:
            with self._pending_lock:
                batch, self._pending = self._pending, []
                if not batch:
                    self._flushing = False
                    return
            self.batches = (self.batches + [len(batch)])[-256:]
            try:
                outs = await asyncio.to_thread(self._choose_batch, [r for r, _ in batch])
            except Exception:  # one bad call must not fail the others: each is retried alone for its own answer
                for req, fut in batch:
                    try:
                        _resolve(fut, out=(await asyncio.to_thread(self._choose_batch, [req]))[0])
                    except Exception as e:
                        _resolve(fut, error=e)
                continue
            for (_, fut), out in zip(batch, outs):
                _resolve(fut, out=out)

    def _choose_batch(self, reqs: list[_Request]) -> list[BrainOutput]:
        with self._lock:
            return self._choose_many_locked(reqs)

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
            self._check_fits(len(tokens))
            self._room_for(tokens, max_tokens or self.max_tokens)
            out = cast(
                dict[str, Any],
                self.llm.create_completion(  # not streaming: one response dict
                    prompt=tokens,
                    max_tokens=max_tokens or self.max_tokens,
                    temperature=self.temperature if temperature is None else temperature,
                    stop=(stop or []) + self._stops,
                    seed=self.seed if seed is None else seed,
                ),
            )
            self._last_logits = None
            # llama.cpp's completion reports text, not ids (and logprobs only with logits for every
            # position, which would cost n_ctx x n_vocab floats): the generated text's ids are
            # re-scored after the prompt's in one decode
            generated = out["choices"][0]["text"]
            output_ids = self.tokenize(generated)
            output_lps = self._score_tokens(tokens + output_ids, len(tokens))
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
