"""Log-likelihoods of continuations on top of a cached context: what ranking candidate actions costs.

The prompt is evaluated once into sequence 0 (reusing the longest prefix the KV cache already holds);
each continuation is then decoded after it, either one after another (rolled back after each) or
together, one scratch sequence each sharing the context's cells. `agents.brains.llama.ranking` decides
what to score; this module only scores.
"""

from __future__ import annotations

import math

import numpy as np

from agents.brains.base import BrainError
from agents.brains.llama.runtime import LlamaRuntime
from agents.brains.llama.slot_table import common_prefix

NO_TOKENS = np.zeros(0, dtype=np.float64)  # the per-token logprobs of an empty continuation

# (source sequence, context length, the context's last logits, continuations as (tokens, first scored index))
SequenceRequest = tuple[int, int, np.ndarray, list[tuple[list[int], int]]]


def log_softmax_at(logits: np.ndarray, token: int) -> float:
    """log p(token | logits) for one row."""
    m = float(logits.max())
    return float(logits[token] - m - math.log(float(np.exp(logits - m).sum())))


class ContinuationScorer:
    """Scores token continuations of the context sequence 0 holds, or of contexts other sequences hold.

    `scratch`: the KV sequences continuations are decoded in (none: one by one in sequence 0).
    `share_prefixes`: decode the tokens continuations start alike with once (same scores; off only to measure it).
    """

    def __init__(self, runtime: LlamaRuntime, scratch: list[int], share_prefixes: bool) -> None:
        self.runtime = runtime
        self.scratch = scratch
        self.share_prefixes = share_prefixes
        self.last_logits: np.ndarray | None = None  # logits after the tokens currently in sequence 0

    def check_fits(self, n: int) -> None:
        """A BrainError that says what to raise when `n` tokens exceed the context window."""
        if n >= self.runtime.n_ctx:
            raise BrainError(
                f"prompt of {n} tokens does not fit the context window of {self.runtime.n_ctx} tokens; "
                "raise brain.n_ctx or lower agent.perception.budget_tokens"
            )

    def eval_context(self, tokens: list[int]) -> np.ndarray:
        """Make the KV cache hold exactly `tokens` (reusing the common prefix); return the last position's logits."""
        rt = self.runtime
        self.check_fits(len(tokens))
        cached = rt.cached_tokens()
        common = common_prefix(cached, tokens)
        if common == len(tokens) and common == len(cached) and self.last_logits is not None:
            return self.last_logits
        common = min(common, len(tokens) - 1)  # re-evaluate at least the last token to get its logits
        logits = rt.eval_after(common, tokens[common:])
        self.last_logits = logits
        return logits

    def score_one(self, ctx_len: int, ctx_logits: np.ndarray, tokens: list[int], score_from: int) -> np.ndarray:
        """Logprob of each of tokens[score_from:], where `tokens` follows the `ctx_len` cached tokens."""
        rt = self.runtime
        lps: list[float] = []
        if score_from == 0:
            lps.append(log_softmax_at(ctx_logits, tokens[0]))
        if len(tokens) > 1:
            self.check_fits(ctx_len + len(tokens))
            feed = tokens[:-1]
            for start in range(0, len(feed), rt.n_batch):
                part = feed[start : start + rt.n_batch]
                rows = rt.decode_rows(part, ctx_len + start)
                for i in range(len(part)):
                    j = start + i + 1  # the token predicted by row i
                    if j >= score_from:
                        lps.append(log_softmax_at(rows[i], tokens[j]))
            rt.forget_after(ctx_len)  # roll the candidate back off the cache
        return np.asarray(lps, dtype=np.float64)

    def score_batched(
        self, ctx_len: int, ctx_logits: np.ndarray, conts: list[tuple[list[int], int]]
    ) -> list[np.ndarray]:
        """Per-token logprobs of many continuations of the cached context, one sequence each, as many at once as there
        are scratch sequences (sorted, so those that start alike share a decode and their common tokens)."""
        rt = self.runtime
        results: list[np.ndarray] = [NO_TOKENS] * len(conts)
        pending = sorted((i for i, (toks, _) in enumerate(conts) if len(toks) > 1), key=lambda i: conts[i][0])
        for i, (toks, start) in enumerate(conts):  # the first token is predicted by the context's own logits
            if start == 0:
                results[i] = np.array([log_softmax_at(ctx_logits, toks[0])])
        self.check_fits(ctx_len + sum(len(conts[i][0]) for i in pending))
        while pending:
            group, pending = pending[: len(self.scratch)], pending[len(self.scratch) :]
            scores = rt.score_shared(
                [(0, ctx_len, conts[i][0]) for i in group], first_seq=self.scratch[0], share=self.share_prefixes
            )
            for i, lp in zip(group, scores):
                keep = lp[max(0, conts[i][1] - 1) :]  # lp[j] scores token j + 1
                results[i] = np.concatenate((results[i], keep)) if len(results[i]) else keep
            for seq in self.scratch[: len(group)]:
                rt.drop_sequence(seq)
        return results

    def score_in_sequences(self, reqs: list[SequenceRequest]) -> list[list[np.ndarray | None]]:
        """Per request (sequence, context length, its logits, continuations): each continuation's own tokens' logprobs.

        Continuations of all requests are decoded together, each on a scratch sequence sharing its source's cells.
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
                row.append(np.array([log_softmax_at(logits, toks[0])]) if start == 0 else NO_TOKENS)
                if len(toks) > 1:
                    pending.append((r, i))
            results.append(row)
        while pending:
            group, pending = pending[: len(self.scratch)], pending[len(self.scratch) :]
            items = [(reqs[r][0], reqs[r][1], reqs[r][3][i][0]) for r, i in group]
            scores = rt.score_shared(items, first_seq=self.scratch[0], share=self.share_prefixes)
            for k, (r, i) in enumerate(group):
                lp = scores[k][max(0, reqs[r][3][i][1] - 1) :]  # scores[k][j] scores token j + 1
                prev = results[r][i]
                results[r][i] = np.concatenate((prev, lp)) if prev is not None and len(prev) else lp
            for scratch in self.scratch[: len(group)]:
                rt.drop_sequence(scratch)
        return results

    def score_tokens(self, tokens: list[int], start: int) -> list[float] | None:
        """Logprob of each of tokens[start:] given all tokens before it, on top of the KV cache.

        Re-scores an output whose ids llama.cpp's generation does not report (a slot fill, free
        text). None when there is nothing to condition on or the tokens overflow the context.
        """
        if start >= len(tokens):
            return []
        if start == 0 or len(tokens) >= self.runtime.n_ctx:
            return None
        ctx_logits = self.eval_context(tokens[:start])
        cont = (tokens[start:], 0)
        if self.scratch:
            lps = self.score_batched(start, ctx_logits, [cont])[0]
        else:
            lps = self.score_one(start, ctx_logits, *cont)
        return [float(x) for x in lps]
