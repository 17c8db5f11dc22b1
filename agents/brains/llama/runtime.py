"""The one module that touches llama-cpp-python's private internals.

`LocalBrain` scores candidate actions on top of a cached prompt, in several KV sequences at
once. The public `Llama` class cannot do that, so this runtime reaches into
`llama_cpp._internals.LlamaContext`, `Llama._ctx`, `Llama._batch` and `Llama._model`. Every
such use sits here behind a small typed surface; `REQUIRED_INTERNALS` lists them, and
`missing_internals()` (run by the tests and on construction) names whatever a new
llama-cpp-python release renamed, instead of failing later with an AttributeError deep
inside a decode. The dependency is bounded in pyproject.toml to the versions tested.

llama.cpp logs through a C callback; the one llama-cpp-python installs maps the log levels
of the current ggml wrongly (warnings print as errors) and writes to stderr. We install our
own that routes every line to the Python logger `llama_cpp.native` at DEBUG, so it is silent
unless the run's log level is DEBUG.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.brains.base import BrainError

log = logging.getLogger(__name__)
native_log = logging.getLogger("llama_cpp.native")

# (module, dotted attribute) pairs the runtime uses that are not public API.
REQUIRED_INTERNALS: list[tuple[str, str]] = [
    ("llama_cpp", "llama_log_set"),
    ("llama_cpp", "llama_log_callback"),
    ("llama_cpp", "llama_max_parallel_sequences"),
    ("llama_cpp", "llama_get_logits"),
    ("llama_cpp", "llama_get_memory"),
    ("llama_cpp", "llama_memory_seq_pos_max"),
    ("llama_cpp", "llama_batch.token"),
    ("llama_cpp", "llama_batch.pos"),
    ("llama_cpp", "llama_batch.n_seq_id"),
    ("llama_cpp", "llama_batch.seq_id"),
    ("llama_cpp", "llama_batch.logits"),
    ("llama_cpp", "llama_batch.n_tokens"),
    ("llama_cpp", "llama_context_params.n_seq_max"),
    ("llama_cpp", "llama_context_params.kv_unified"),
    ("llama_cpp", "llama_set_adapters_lora"),
    ("llama_cpp", "llama_adapter_lora_p_ctypes"),
    ("llama_cpp._internals", "LlamaContext"),
    ("llama_cpp._internals", "LlamaContext.decode"),
    ("llama_cpp._internals", "LlamaContext.close"),
    ("llama_cpp._internals", "LlamaContext.get_logits"),
    ("llama_cpp._internals", "LlamaContext.get_logits_ith"),
    ("llama_cpp._internals", "LlamaContext.kv_cache_seq_rm"),
    ("llama_cpp._internals", "LlamaContext.kv_cache_seq_cp"),
    ("llama_cpp._internals", "LlamaBatch.set_batch"),
]
# Attributes of a live `Llama` instance the runtime uses (set in `Llama.__init__`, so not checkable on the class).
REQUIRED_INSTANCE_ATTRS: list[str] = [
    "_ctx",
    "_batch",
    "_model",
    "_lora_adapter",
    "context_params",
    "input_ids",
    "n_tokens",
    "n_batch",
]


def missing_internals() -> list[str]:
    """`module.attr` for every private llama-cpp-python name the runtime needs that is not there."""
    missing = []
    for module_name, dotted in REQUIRED_INTERNALS:
        try:
            obj: Any = importlib.import_module(module_name)
        except ImportError:
            missing.append(f"{module_name} (module)")
            continue
        for part in dotted.split("."):
            if not hasattr(obj, part):
                missing.append(f"{module_name}.{dotted}")
                break
            obj = getattr(obj, part)
    return missing


def missing_instance_attrs(llm: Any) -> list[str]:
    """`Llama.attr` for every instance attribute the runtime needs that a live `Llama` lacks."""
    return [f"llama_cpp.Llama.{a}" for a in REQUIRED_INSTANCE_ATTRS if not hasattr(llm, a)]


def _version() -> str:
    try:
        import llama_cpp

        return str(getattr(llama_cpp, "__version__", "?"))
    except ImportError:
        return "not installed"


def declared_requirement() -> str:
    """The llama-cpp-python requirement agentsim declares (its tested bound), from the installed metadata."""
    try:
        from importlib.metadata import PackageNotFoundError, requires

        reqs = requires("agentsim") or []
    except PackageNotFoundError:
        reqs = []
    found = [r.split(";")[0].replace("[server]", "").replace(" ", "") for r in reqs if r.startswith("llama-cpp-python")]
    return found[0] if found else "llama-cpp-python (the version bounded in pyproject.toml)"


def _fail_if_missing(missing: list[str]) -> None:
    if missing:
        raise BrainError(
            f"llama-cpp-python {_version()} lacks internals agents.brains.llama.runtime needs: "
            f"{', '.join(missing)}. Install the tested version (pip install '{declared_requirement()}') "
            "or update agents/brains/llama/runtime.py."
        )


# ---------------------------------------------------------------------------------------- logging
_LEVELS = {0: "none", 1: "debug", 2: "info", 3: "warn", 4: "error"}  # enum ggml_log_level (5 = continue the line)
_callback: Any = None  # the ctypes callback must outlive every call llama.cpp makes to it
_pending: list[str] = []
_errors: deque[str] = deque(maxlen=4)  # llama.cpp's last error lines, kept at any log level to explain a failure


def _on_native_log(level: int, text: bytes | None, user_data: Any) -> None:
    """Collect llama.cpp's log fragments into lines and hand them to Python logging at DEBUG."""
    if text and level == 4:
        _errors.append(text.decode("utf-8", errors="replace").strip())
    if not text or not native_log.isEnabledFor(logging.DEBUG):
        return
    _pending.append(text.decode("utf-8", errors="replace"))
    if _pending[-1].endswith("\n"):
        line = "".join(_pending).rstrip("\n")
        _pending.clear()
        native_log.debug("[%s] %s", _LEVELS.get(level, "cont"), line)


def route_native_logs() -> None:
    """Send llama.cpp's own log lines to the `llama_cpp.native` logger at DEBUG (idempotent)."""
    global _callback
    import llama_cpp

    if _callback is None:
        _callback = llama_cpp.llama_log_callback(_on_native_log)
    llama_cpp.llama_log_set(_callback, ctypes.c_void_p(0))


# ---------------------------------------------------------------------------------------- runtime
class LlamaRuntime:
    """A `Llama` plus the low-level calls `LocalBrain` scores with: KV-cache reuse, rollback, multi-sequence decode.

    `llm` stays the public `Llama` object (tokenize, create_completion, metadata, reset); all private
    attribute access goes through the methods below.
    """

    def __init__(
        self,
        path: str,
        *,
        n_ctx: int,
        n_threads: int,
        seed: int,
        n_seq: int,
        adapter: str | None = None,
        adapter_scale: float = 1.0,
    ) -> None:
        try:
            import llama_cpp
        except ImportError as e:
            raise BrainError(f"brain=local needs llama-cpp-python: pip install '{declared_requirement()}'") from e
        _fail_if_missing(missing_internals())
        route_native_logs()
        self.adapter, self.adapter_scale = check_adapter_file(adapter), adapter_scale
        _errors.clear()
        try:
            self.llm = llama_cpp.Llama(
                model_path=path,
                n_ctx=n_ctx,
                n_threads=n_threads,
                seed=seed,
                logits_all=False,
                verbose=False,
                lora_path=self.adapter,
                lora_scale=adapter_scale,
            )
        except RuntimeError as e:
            if self.adapter is None:
                raise
            raise self._adapter_error(path) from e
        _fail_if_missing(missing_instance_attrs(self.llm))
        if self.adapter is not None and not self.llm._lora_adapter:
            # llama-cpp-python 0.3.36 tests the returned pointer with `is None`, but ctypes hands back a NULL
            # pointer object: a file llama.cpp refused would pass silently, a NULL adapter set on the context
            self.llm._lora_adapter = None
            self.llm.close()
            raise self._adapter_error(path)
        self.n_vocab: int = self.llm.n_vocab()
        self.n_seq = self._multi_sequence_context(n_seq)

    def _multi_sequence_context(self, n_seq: int) -> int:
        """Swap in a context with `n_seq` sequences over one unified KV cache; return the sequences granted.

        Candidates are then scored in one decode, each in its own sequence that shares the
        prompt's cells (`seq_cp` adds a sequence id to a cell, it copies nothing). The Llama
        class builds a one-sequence context, hence the swap; on failure we keep it and score
        candidates one after another.
        """
        if n_seq <= 1:
            return 1
        import llama_cpp
        from llama_cpp import _internals

        params = self.llm.context_params
        params.n_seq_max = min(n_seq, int(llama_cpp.llama_max_parallel_sequences()))
        params.kv_unified = True
        try:
            ctx = _internals.LlamaContext(model=self.llm._model, params=params, verbose=False)
        except ValueError:
            log.warning("llama.cpp refused a %d-sequence context; scoring candidates one by one", n_seq)
            return 1
        self._apply_adapter(ctx)
        old, self.llm._ctx = self.llm._ctx, ctx
        old.close()
        self.llm.n_tokens = 0
        return int(params.n_seq_max)

    def _adapter_error(self, path: str) -> BrainError:
        """What went wrong, in llama.cpp's own words (its log lines go nowhere below DEBUG), and the fix."""
        reason = "; ".join(_errors) or "no reason logged"
        return BrainError(
            f"llama.cpp could not load the LoRA adapter {self.adapter} onto {path} ({reason}); brain.adapter takes a "
            "llama.cpp LoRA GGUF for this base model, built with: python -m agents.policy.gguf_adapter <peft_dir> <out.gguf>"
        )

    def _apply_adapter(self, ctx: Any) -> None:
        """Put the LoRA adapter `Llama` loaded on a context we built: adapters belong to a context, not the model."""
        adapter: Any = self.llm._lora_adapter  # a ctypes pointer; NULL when llama.cpp refused the file
        if not adapter:
            return
        import llama_cpp

        adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(adapter)
        scales = (ctypes.c_float * 1)(self.adapter_scale)
        if llama_cpp.llama_set_adapters_lora(ctx.ctx, adapters, 1, scales):
            ctx.close()
            raise BrainError(f"llama.cpp refused to apply the LoRA adapter {self.adapter} to the scoring context")

    # -- sizes and state ---------------------------------------------------------------------
    @property
    def n_ctx(self) -> int:
        """Context window in tokens."""
        return int(self.llm.n_ctx())

    @property
    def n_batch(self) -> int:
        """Most tokens one decode call takes."""
        return int(self.llm.n_batch)

    def cached_tokens(self) -> list[int]:
        """The tokens whose keys/values are in sequence 0 of the KV cache now."""
        return self.llm.input_ids[: self.llm.n_tokens].tolist()

    def last_logits(self) -> np.ndarray:
        """A copy of the logits after the last evaluated token (one row of n_vocab)."""
        return np.ctypeslib.as_array(self.llm._ctx.get_logits_ith(-1), shape=(self.n_vocab,)).copy()

    prompt_tokens_evaluated: int = 0  # prompt tokens decoded (after KV reuse): the cost a prompt layout controls

    def eval_after(self, keep: int, tokens: Sequence[int]) -> np.ndarray:
        """Keep the first `keep` cached tokens, evaluate `tokens` after them; return the last position's logits."""
        self.prompt_tokens_evaluated += len(tokens)
        self.llm.n_tokens = keep
        self.llm.eval(list(tokens))  # removes stale KV after `keep`, decodes the rest
        return self.last_logits()

    # -- scoring -----------------------------------------------------------------------------
    def decode_rows(self, tokens: Sequence[int], n_past: int) -> np.ndarray:
        """Decode `tokens` at positions n_past.. in sequence 0 (at most n_batch); return one logits row per token.

        The view is valid until the next decode.
        """
        batch = self.llm._batch
        batch.set_batch(batch=list(tokens), n_past=n_past, logits_all=True)
        self.llm._ctx.decode(batch)
        return np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(len(tokens), self.n_vocab))

    def forget_after(self, pos: int, seq: int = -1) -> None:
        """Remove the KV cells at positions >= pos (of one sequence, or of all with -1): rolls a candidate back."""
        self.llm._ctx.kv_cache_seq_rm(seq, pos, -1)

    def drop_sequence(self, seq: int) -> None:
        """Remove every KV cell of sequence `seq`."""
        self.llm._ctx.kv_cache_seq_rm(seq, -1, -1)

    def seq_length(self, seq: int) -> int:
        """Positions sequence `seq` holds cells for (its highest position + 1; 0 when empty)."""
        import llama_cpp

        return int(llama_cpp.llama_memory_seq_pos_max(llama_cpp.llama_get_memory(self.llm._ctx.ctx), seq)) + 1

    def adopt_prefix(self, src: int, tokens: Sequence[int]) -> None:
        """Make sequence 0 (the one `Llama.generate` / `eval` use) hold `tokens` by sharing the cells sequence `src`
        holds for them (no decode), and tell the `Llama` object so, so its prefix reuse starts after them."""
        n = len(tokens)
        ctx = self.llm._ctx
        ctx.kv_cache_seq_rm(0, -1, -1)
        ctx.kv_cache_seq_cp(src, 0, 0, n)
        self.llm.input_ids[:n] = tokens
        self.llm.n_tokens = n

    def copy_prefix(self, src: int, dst: int, n: int) -> None:
        """Give sequence `dst` the cells of `src` at positions < n (shared, not copied)."""
        self.llm._ctx.kv_cache_seq_cp(src, dst, 0, n)

    def decode_batch(self, items: Sequence[tuple[int, int, Sequence[int], bool]]) -> list[np.ndarray]:
        """Decode several sequences' tokens together: items are (seq, first position, tokens, all_logits).

        Returns per item the logits rows of all its tokens (all_logits) or of its last token only. Tokens go
        in decodes of at most n_batch, in item order, so a long item may span decodes. Why: prompts of many
        agents (or many candidates) in one `llama_decode` instead of one call each.
        """
        import llama_cpp

        ctx = self.llm._ctx
        b = self.llm._batch.batch
        flat = [
            (seq, pos + j, t, k, all_logits or j == len(toks) - 1)
            for k, (seq, pos, toks, all_logits) in enumerate(items)
            for j, t in enumerate(toks)
        ]
        rows: list[list[np.ndarray]] = [[] for _ in items]
        for start in range(0, len(flat), self.n_batch):
            chunk = flat[start : start + self.n_batch]
            b.n_tokens = 0
            owners = []
            for seq, pos, t, k, want in chunk:
                i = b.n_tokens
                b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = t, pos, 1, want
                b.seq_id[i][0] = seq
                b.n_tokens += 1
                if want:
                    owners.append(k)
            ctx.decode(self.llm._batch)
            if owners:
                out = np.ctypeslib.as_array(llama_cpp.llama_get_logits(ctx.ctx), shape=(len(owners), self.n_vocab))
                for r, k in enumerate(owners):
                    rows[k].append(out[r].copy())
        return [np.stack(r) if r else np.zeros((0, self.n_vocab), np.float32) for r in rows]

    def score_shared(
        self, items: Sequence[tuple[int, int, Sequence[int]]], first_seq: int = 1, share: bool = True
    ) -> list[np.ndarray]:
        """Score continuations: item i = (source sequence, context length, tokens) is decoded as sequence
        first_seq + i on the source's first `context length` cells (shared, not copied). Returns per item
        log p(tokens[j + 1] | context, tokens[: j + 1]) for j < len(tokens) - 1 (the first token's logprob comes
        from the context's own logits, which the caller has).

        Why `share`: candidate actions mostly start alike (`click[b0...`), and every scored token needs a full
        vocabulary row, the costly part of ranking. Tokens that several items of one context begin with are
        decoded once, their cells belonging to all those sequences (a prefix tree in one batch; the unified KV
        cache's attention mask keeps each sequence to its own path), so the scores are the same as decoding each
        item alone. Each decoded row is normalised once, however many items pass through it, and read in
        llama.cpp's buffer (no copies). The caller keeps first_seq + len(items) <= n_seq and drops the sequences
        after."""
        import llama_cpp

        ctx = self.llm._ctx
        node_of: dict[tuple[int, int, int, int], int] = {}  # (source, context, parent node, token) -> node
        tokens: list[int] = []
        positions: list[int] = []
        owners: list[list[int]] = []  # per node: the sequences its cell belongs to
        wanted: list[dict[int, float]] = []  # per node: the next tokens scored from its row -> logprob
        paths: list[list[tuple[int, int]]] = []  # per item: (node, next token) for each scored token
        for i, (src, ctx_len, toks) in enumerate(items):
            seq = first_seq + i
            ctx.kv_cache_seq_cp(src, seq, 0, ctx_len)
            path, parent = [], -1
            for j, t in enumerate(toks[:-1]):  # the last token's row would predict past the item: not decoded
                key = (src, ctx_len, parent, t) if share else (seq, ctx_len, parent, t)
                k = node_of.get(key)
                if k is None:
                    k = node_of[key] = len(tokens)
                    tokens.append(t)
                    positions.append(ctx_len + j)
                    owners.append([])
                    wanted.append({})
                owners[k].append(seq)
                wanted[k][toks[j + 1]] = 0.0
                path.append((k, toks[j + 1]))
                parent = k
            paths.append(path)
        b = self.llm._batch.batch
        for start in range(0, len(tokens), self.n_batch):  # parents precede children, so any split is safe
            end = min(start + self.n_batch, len(tokens))
            b.n_tokens = 0
            for k in range(start, end):
                i = b.n_tokens
                b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = tokens[k], positions[k], len(owners[k]), True
                for m, seq in enumerate(owners[k]):
                    b.seq_id[i][m] = seq
                b.n_tokens += 1
            ctx.decode(self.llm._batch)
            rows = np.ctypeslib.as_array(llama_cpp.llama_get_logits(ctx.ctx), shape=(end - start, self.n_vocab))
            for lo in range(0, end - start, 16):  # 16 rows at a time: the exp temporary stays at 16 MB
                part = rows[lo : lo + 16]
                top = part.max(axis=1)
                lse = top + np.log(np.exp(part - top[:, None]).sum(axis=1, dtype=np.float64))
                for r in range(len(part)):
                    row, norm, scored = part[r], float(lse[r]), wanted[start + lo + r]
                    for t in scored:
                        scored[t] = float(row[t]) - norm
        self.candidate_tokens_decoded += len(tokens)
        return [np.array([wanted[k][t] for k, t in path], dtype=np.float64) for path in paths]

    candidate_tokens_decoded: int = 0  # continuation tokens decoded with full logits rows (shared ones once)


def check_adapter_file(adapter: str | None) -> str | None:
    """The adapter path if it is a file; else a BrainError that says how to build one."""
    if adapter is None:
        return None
    p = Path(adapter).expanduser()
    if p.is_file():
        return str(p)
    build = "python -m agents.policy.gguf_adapter <peft_dir> <out.gguf>"
    if p.is_dir() and (p / "adapter_config.json").exists():
        raise BrainError(
            f"brain.adapter={adapter} is a PEFT adapter folder; llama.cpp needs a GGUF LoRA: {build.replace('<peft_dir>', str(p))}"
        )
    raise BrainError(
        f"LoRA adapter file {p} does not exist; brain.adapter takes a llama.cpp LoRA GGUF, built from a "
        f"peft save_pretrained() folder with: {build}"
    )


def max_parallel_sequences() -> int:
    """Most KV sequences this llama.cpp build supports in one context."""
    import llama_cpp

    return int(llama_cpp.llama_max_parallel_sequences())
