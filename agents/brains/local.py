"""Embedded brain: a GGUF model run in-process by llama.cpp. The default: no server, no key.

Besides free generation it can *rank* candidate actions by the model's likelihood. The prompt
is evaluated once; every candidate is then scored as a continuation on top of the prompt's KV
cache (the cache is rolled back after each), and the prompt's KV is reused across steps by
longest-common-prefix matching. `choose` takes the argmax or samples at a temperature.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
import time
from typing import Any

import numpy as np

from agents.brains.base import BrainError, BrainOutput, CandidateScore, Message
from agents.brains.chat_templates import TEMPLATES, template_for
from agents.brains.model_files import model_path
from envs.contract import SLOT

log = logging.getLogger(__name__)


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def llama_cpp_max_seqs() -> int:
    import llama_cpp

    return llama_cpp.llama_max_parallel_sequences()


def _log_softmax_rows(rows: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """log p(tokens[i] | row i) for every row, in float64 for stable sums."""
    r = rows.astype(np.float64, copy=False)
    m = r.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(r - m).sum(axis=1))
    return r[np.arange(len(tokens)), tokens] - lse


def _log_softmax_at(logits: np.ndarray, token: int) -> float:
    m = float(logits.max())
    return float(logits[token] - m - math.log(float(np.exp(logits - m).sum())))


class LocalBrain:
    name = "local"

    def __init__(self, model: str = "gemma3-270m", n_ctx: int = 4096, n_threads: int | None = None,
                 temperature: float = 0.0, max_tokens: int = 128, score: str = "mean", seed: int = 0,
                 chat_template: str | None = None, n_seq: int = 16) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as e:
            raise BrainError("brain=local needs llama-cpp-python: pip install llama-cpp-python") from e
        if score not in ("mean", "sum"):
            raise ValueError(f"score must be 'mean' or 'sum', got {score!r}")
        self.path = str(model_path(model))
        self.model = model
        self.temperature, self.max_tokens, self.score, self.seed = temperature, max_tokens, score, seed
        self.llm = Llama(model_path=self.path, n_ctx=n_ctx, n_threads=n_threads or os.cpu_count(), seed=seed,
                         logits_all=False, verbose=False)
        self.n_seq = self._multi_sequence_context(n_seq)
        arch = str(self.llm.metadata.get("general.architecture", ""))
        self.template = chat_template or template_for(self.path, arch)
        self._format, self._stops = TEMPLATES[self.template]
        self._lock = threading.Lock()  # llama.cpp contexts are not thread-safe
        self._n_vocab = self.llm.n_vocab()
        self._last_logits: np.ndarray | None = None  # logits after the tokens currently in the KV cache

    # ------------------------------------------------------------------ helpers
    def _multi_sequence_context(self, n_seq: int) -> int:
        """Swap in a context with `n_seq` sequences over one unified KV cache.

        Candidates are then scored in one decode, each in its own sequence that shares the
        prompt's cells (`seq_cp` adds a sequence id to a cell, it copies nothing). The Llama
        class builds a one-sequence context, hence the swap; on failure we keep it and score
        candidates one after another.
        """
        if n_seq <= 1:
            return 1
        from llama_cpp import _internals

        params = self.llm.context_params
        params.n_seq_max = min(n_seq, int(llama_cpp_max_seqs()))
        params.kv_unified = True
        try:
            ctx = _internals.LlamaContext(model=self.llm._model, params=params, verbose=False)
        except ValueError:
            log.warning("llama.cpp refused a %d-sequence context; scoring candidates one by one", n_seq)
            return 1
        old, self.llm._ctx = self.llm._ctx, ctx
        old.close()
        self.llm.n_tokens = 0
        return int(params.n_seq_max)

    def tokenize(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0

    def prompt_text(self, messages: list[Message]) -> str:
        return self._format(messages)

    def _check_fits(self, n: int) -> None:
        if n >= self.llm.n_ctx():
            raise BrainError(f"prompt of {n} tokens does not fit the context window of {self.llm.n_ctx()} tokens; "
                             "raise brain.n_ctx or lower agent.perception.budget_tokens")

    def _eval_context(self, tokens: list[int]) -> np.ndarray:
        """Make the KV cache hold exactly `tokens` (reusing the common prefix); return the last position's logits."""
        llm = self.llm
        self._check_fits(len(tokens))
        common = common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens)
        if common == len(tokens) and common == llm.n_tokens and self._last_logits is not None:
            return self._last_logits
        common = min(common, len(tokens) - 1)  # re-evaluate at least the last token to get its logits
        llm.n_tokens = common
        llm.eval(tokens[common:])  # removes stale KV after `common`, decodes the rest
        logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(self._n_vocab,)).copy()
        self._last_logits = logits
        return logits

    def _score_continuation(self, ctx_len: int, ctx_logits: np.ndarray, tokens: list[int], score_from: int) -> tuple[float, int]:
        """Sum of logprobs of tokens[score_from:], where `tokens` follows the `ctx_len` cached tokens."""
        llm = self.llm
        total, n = 0.0, 0
        if score_from == 0:
            total += _log_softmax_at(ctx_logits, tokens[0])
            n += 1
        if len(tokens) > 1:
            self._check_fits(ctx_len + len(tokens))
            feed = tokens[:-1]
            batch = llm._batch
            for start in range(0, len(feed), llm.n_batch):
                part = feed[start: start + llm.n_batch]
                batch.set_batch(batch=part, n_past=ctx_len + start, logits_all=True)
                llm._ctx.decode(batch)
                rows = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(len(part), self._n_vocab))
                for i in range(len(part)):
                    j = start + i + 1  # the token predicted by row i
                    if j >= score_from:
                        total += _log_softmax_at(rows[i], tokens[j])
                        n += 1
            llm._ctx.kv_cache_seq_rm(-1, ctx_len, -1)  # roll the candidate back off the cache
        return total, n

    def _score_batched(self, ctx_len: int, ctx_logits: np.ndarray, conts: list[tuple[list[int], int]]) -> list[tuple[float, int]]:
        """Score many continuations of the cached context in as few decodes as fit, one sequence each."""
        import llama_cpp

        llm, ctx = self.llm, self.llm._ctx
        results: list[tuple[float, int]] = [(0.0, 0)] * len(conts)
        pending = [i for i, (toks, _) in enumerate(conts) if len(toks) > 1]
        for i, (toks, start) in enumerate(conts):  # the first token is predicted by the context's own logits
            if start == 0:
                results[i] = (_log_softmax_at(ctx_logits, toks[0]), 1)
        self._check_fits(ctx_len + sum(len(conts[i][0]) for i in pending))
        while pending:
            group: list[int] = []
            total = 0
            while pending and len(group) < self.n_seq - 1 and total + len(conts[pending[0]][0]) - 1 <= llm.n_batch:
                total += len(conts[pending[0]][0]) - 1
                group.append(pending.pop(0))
            if not group:  # one candidate longer than a batch: fall back to the sequential path
                i = pending.pop(0)
                toks, start = conts[i]
                results[i] = self._score_continuation(ctx_len, ctx_logits, toks, start)
                continue
            b = llm._batch.batch
            b.n_tokens = 0
            for seq, i in enumerate(group, start=1):
                ctx.kv_cache_seq_cp(0, seq, 0, ctx_len)
                for j, t in enumerate(conts[i][0][:-1]):
                    k = b.n_tokens
                    b.token[k], b.pos[k], b.n_seq_id[k], b.logits[k] = t, ctx_len + j, 1, True
                    b.seq_id[k][0] = seq
                    b.n_tokens += 1
            ctx.decode(llm._batch)
            rows = np.ctypeslib.as_array(llama_cpp.llama_get_logits(ctx.ctx), shape=(total, self._n_vocab))
            row = 0
            for i in group:
                toks, start = conts[i]
                n = len(toks) - 1
                lp = _log_softmax_rows(rows[row: row + n], np.asarray(toks[1:]))
                keep = lp[max(0, start - 1):]  # row r predicts token r+1
                prev, pn = results[i]
                results[i] = (prev + float(keep.sum()), pn + len(keep))
                row += n
            for seq in range(1, len(group) + 1):
                ctx.kv_cache_seq_rm(seq, -1, -1)
        return results

    # ------------------------------------------------------------------ ranking
    def _choose_locked(self, messages: list[Message], candidates: list[str], temperature: float, prefix: str,
                       seed: int | None) -> BrainOutput:
        t0 = time.perf_counter()
        if not candidates:
            raise ValueError("choose() needs at least one candidate")
        head = self.prompt_text(messages) + prefix.rstrip(" ")
        sep = " " if prefix.endswith(" ") else ""
        base = self.tokenize(head)
        fulls = []
        for c in candidates:
            shown = c.split(SLOT)[0] if SLOT in c else c  # a template is scored by its fixed head
            fulls.append(self.tokenize(head + sep + shown))
        # shared context = longest prefix common to the prompt and every candidate's tokenization;
        # a candidate's own tokens start where its tokenization leaves the prompt's
        owns = [common_prefix(base, f) for f in fulls]
        m = min(owns)
        ctx_logits = self._eval_context(base[:m])
        conts = [(f[m:], own - m) for f, own in zip(fulls, owns)]
        scorable = [i for i, (cont, _) in enumerate(conts) if cont]
        if self.n_seq > 1:
            scored = self._score_batched(m, ctx_logits, [conts[i] for i in scorable])
        else:
            scored = [self._score_continuation(m, ctx_logits, *conts[i]) for i in scorable]
        by_index = dict(zip(scorable, scored))
        scores: list[CandidateScore] = []
        for i, c in enumerate(candidates):
            if i not in by_index:
                scores.append(CandidateScore(c, -1e9, 0, -1e9))  # nothing to score: never preferred
                continue
            lp, n = by_index[i]
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
        if SLOT in chosen:
            filled, tokens_out = self._fill_slot(head + sep, chosen, temperature, seed)
            chosen = filled
        tokens_in = len(base) + sum(max(0, len(f) - m) for f in fulls)
        return BrainOutput(text=prefix + chosen, tokens_in=tokens_in, tokens_out=tokens_out + scores[idx].n_tokens,
                           latency_s=time.perf_counter() - t0, candidates=scores, model=self.model,
                           logprobs=None, finish_reason="choice")

    def _fill_slot(self, head: str, template: str, temperature: float, seed: int | None) -> tuple[str, int]:
        """Generate the free text of a template's `...` slot, stopping at what follows the slot."""
        before, after = template.split(SLOT, 1)
        stop = [after[:1]] if after else []
        stop += ["\n"] + self._stops
        out = self.llm.create_completion(prompt=self.tokenize(head + before), max_tokens=32, temperature=temperature or 0.0,
                                         stop=stop, seed=seed if seed is not None else self.seed)
        text = out["choices"][0]["text"].strip()
        self._last_logits = None  # generation moved the cache
        return before + text + after, int(out["usage"]["completion_tokens"])

    def choose(self, messages: list[Message], candidates: list[str], *, temperature: float = 0.0, prefix: str = "",
               seed: int | None = None) -> BrainOutput:
        with self._lock:
            return self._choose_locked(messages, candidates, temperature, prefix, seed)

    async def achoose(self, messages: list[Message], candidates: list[str], **kw: Any) -> BrainOutput:
        return await asyncio.to_thread(self.choose, messages, candidates, **kw)

    # ------------------------------------------------------------------ generation
    def complete(self, messages: list[Message], *, temperature: float | None = None, max_tokens: int | None = None,
                 stop: list[str] | None = None, tools: list[dict] | None = None, seed: int | None = None) -> BrainOutput:
        """Free generation. `tools` are described in the prompt (small local models have no native tool calling)."""
        if tools:
            names = ", ".join(t["function"]["name"] for t in tools)
            messages = list(messages) + [{"role": "user", "content": f"(Tools available: {names}. Answer with 'Action: name[argument]'.)"}]
        prompt = self.prompt_text(messages)
        t0 = time.perf_counter()
        with self._lock:
            tokens = self.tokenize(prompt)
            self._check_fits(len(tokens))
            out = self.llm.create_completion(prompt=tokens, max_tokens=max_tokens or self.max_tokens,
                                             temperature=self.temperature if temperature is None else temperature,
                                             stop=(stop or []) + self._stops, seed=self.seed if seed is None else seed)
            self._last_logits = None
        usage = out["usage"]
        return BrainOutput(text=out["choices"][0]["text"].strip(), tokens_in=int(usage["prompt_tokens"]),
                           tokens_out=int(usage["completion_tokens"]), latency_s=time.perf_counter() - t0,
                           finish_reason=out["choices"][0].get("finish_reason"), model=self.model)

    async def acomplete(self, messages: list[Message], **kw: Any) -> BrainOutput:
        return await asyncio.to_thread(self.complete, messages, **kw)
