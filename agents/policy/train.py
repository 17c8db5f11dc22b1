"""`python -m agents.train data=[runs/x] ...`: LoRA fine-tuning of the embedded model on trajectories.

The loop, top to bottom: read the stores, keep the episodes that worked (`success_only`,
`min_reward`), hold some out; turn each episode into token sequences exactly as the embedded brain
scores its prompts (`agents.policy.sft_data`); attach LoRA to the top `lora.layers` decoder layers
(embeddings frozen, so the backward pass stops below them); for each sequence compute the logits at
the action tokens only (the 262k-word output layer is most of a step's cost otherwise), take their
cross-entropy, accumulate, step AdamW with a short warmup and linear decay. Every `eval_every`
updates: held-out loss and action accuracy (every token of the action predicted, teacher-forced),
a resumable checkpoint, and `best/` by held-out action loss (the brain ranks actions by likelihood), or with
`select_episodes=N` by the mean reward of N fixed held-out goals played by the checkpoint (`agents.policy.select`).
At the end `best/` is converted to a llama.cpp adapter (`adapter.gguf`) that `brain.adapter=` serves at llama.cpp speed.

Outputs in ${out}: checkpoint/ (adapter + trainer_state.pt), best/, adapter.gguf, history.json.
"""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from agents.cli import hydra_command
from agents.config import validate_config
from agents.policy.choices import Packed, branch_masks, choice_scores, listwise_loss, pack
from agents.policy.config import PolicyTrainConfig
from agents.policy.frozen_layers import DecoderPass, FrozenStore
from agents.policy.hf_model import load_hf_model, tokenize
from agents.policy.sft_data import Sequence, build_sequences
from agents.policy.training import is_held_out, resolve_device, seed_everything, write_folder

log = logging.getLogger("agents.train")
STATE = "trainer_state.pt"


def split_heldout(seqs: list[Sequence], fraction: float, seed: int) -> tuple[list[Sequence], list[Sequence]]:
    """Hold out whole episodes, chosen by a seeded hash of the episode id (stable as data grows)."""
    held = [is_held_out(s.source, fraction, seed) for s in seqs]
    return [s for s, h in zip(seqs, held) if not h], [s for s, h in zip(seqs, held) if h]


def attach_lora(model: Any, cfg: PolicyTrainConfig) -> Any:
    """Freeze the base model and add LoRA to the top `lora.layers` layers (or a previous round's adapter)."""
    from peft import LoraConfig, PeftModel, get_peft_model

    for p in model.parameters():
        p.requires_grad_(False)
    if cfg.init_adapter:
        return PeftModel.from_pretrained(model, cfg.init_adapter, is_trainable=True)
    n_layers = int(model.config.num_hidden_layers)
    layers = list(range(n_layers - cfg.lora.layers, n_layers)) if cfg.lora.layers else None
    lc = LoraConfig(
        r=cfg.lora.r,
        lora_alpha=cfg.lora.alpha,
        lora_dropout=cfg.lora.dropout,
        target_modules=cfg.lora.targets,
        layers_to_transform=layers,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lc)


def output_logits(model: Any, hidden: torch.Tensor) -> torch.Tensor:
    """The output layer (and Gemma's logit soft cap) on the given rows of final hidden states only."""
    inner = model.get_base_model()
    logits = inner.lm_head(hidden)
    cap = getattr(inner.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def sequence_hidden(decoder: DecoderPass, seq: Sequence, with_choices: bool) -> tuple[torch.Tensor, Packed | None]:
    """Final hidden states of a sequence, with its choices' candidates packed in as branches when asked."""
    if not (with_choices and seq.choices):
        return decoder.hidden(seq.ids), None
    packed = pack(seq.ids, seq.choices)
    window = getattr(decoder.decoder.config, "sliding_window", None)
    masks = branch_masks(packed, window, decoder.device)
    return decoder.hidden(packed.ids, positions=packed.positions, masks=masks), packed


def action_logits(
    model: Any, seq: Sequence, decoder: DecoderPass | None = None, hidden: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits at the positions that predict the action tokens, and those tokens."""
    if hidden is None:
        hidden = (decoder or DecoderPass(model, None)).hidden(seq.ids)
    targets = torch.tensor(seq.targets, device=hidden.device)
    ids = torch.tensor(seq.ids, device=hidden.device)
    return output_logits(model, hidden[targets - 1]), ids[targets]  # row p-1 predicts token p


def sequence_loss(
    model: Any, seq: Sequence, decoder: DecoderPass, listwise_weight: float
) -> tuple[torch.Tensor, dict[str, float]]:
    """Token-level SFT on the action tokens, plus `listwise_weight` x the listwise loss over the ranked steps."""
    use_choices = listwise_weight > 0 and bool(seq.choices)
    hidden, packed = sequence_hidden(decoder, seq, use_choices)
    parts: dict[str, float] = {}
    loss = hidden.new_zeros(())
    if seq.targets:
        logits, gold = action_logits(model, seq, hidden=hidden)
        sft = torch.nn.functional.cross_entropy(logits, gold)
        parts["sft"] = sft.item()
        loss = loss + sft
    if use_choices and packed is not None:
        scores = choice_scores(hidden, packed, seq.choices, lambda h: output_logits(model, h))
        lw = listwise_loss(scores, seq.choices)
        parts["listwise"] = lw.item()
        loss = loss + listwise_weight * lw
    return loss, parts


@torch.no_grad()
def evaluate(model: Any, seqs: list[Sequence], decoder: DecoderPass | None = None) -> dict[str, float]:
    """Held-out mean token loss, token accuracy, and action accuracy (all of an action's tokens right); where the
    sequences carry ranked steps, also choice accuracy (the label has the best mean log-prob among the candidates:
    what the brain picks at temperature 0) and the listwise loss."""
    model.eval()
    decoder = decoder or DecoderPass(model, None)
    loss_sum, n_tok, right_tok, actions, right_actions = 0.0, 0, 0, 0, 0
    n_choices, right_choices, choice_loss = 0, 0, 0.0
    for s in seqs:
        hidden, packed = sequence_hidden(decoder, s, True)
        if packed is not None:
            scores = choice_scores(hidden, packed, s.choices, lambda h: output_logits(model, h))
            for sc, ch in zip(scores, s.choices):
                n_choices += 1
                right_choices += int(sc.argmax()) == ch.label
                choice_loss += float(
                    torch.nn.functional.cross_entropy(sc[None], torch.tensor([ch.label], device=sc.device))
                )
        if not s.targets:
            continue
        logits, gold = action_logits(model, s, hidden=hidden)
        loss_sum += float(torch.nn.functional.cross_entropy(logits, gold, reduction="sum"))
        ok = (logits.argmax(-1) == gold).tolist()
        n_tok += len(ok)
        right_tok += sum(ok)
        # consecutive target positions form one action
        run: list[bool] = []
        prev = None
        for p, hit in zip(s.targets, ok):
            if prev is not None and p != prev + 1:
                actions += 1
                right_actions += all(run)
                run = []
            run.append(hit)
            prev = p
        if run:
            actions += 1
            right_actions += all(run)
    model.train()
    out = {
        "loss": loss_sum / max(1, n_tok),
        "token_acc": right_tok / max(1, n_tok),
        "action_acc": right_actions / max(1, actions),
        "actions": float(actions),
    }
    if n_choices:
        out |= {"choice_acc": right_choices / n_choices, "listwise_loss": choice_loss / n_choices}
        out["choices"] = float(n_choices)
    return out


class PolicyTrainer:
    """One training run; `run()` resumes from `out/checkpoint` when it exists."""

    def __init__(self, cfg: PolicyTrainConfig, console: Console | None = None) -> None:
        self.cfg = cfg
        self.out = Path(cfg.out)
        self.console = console or Console(stderr=True)
        self.history: list[dict[str, Any]] = []
        self.decoder: DecoderPass | None = None  # set when the model is loaded

    def _sequences(self) -> tuple[list[Sequence], list[Sequence], dict[str, Any]]:
        cfg = self.cfg

        def tok(text: str) -> list[int]:
            return tokenize(text, cfg.model)

        kw: dict[str, Any] = dict(
            min_reward=cfg.min_reward,
            success_only=cfg.success_only,
            max_len=cfg.max_len,
            max_episodes=cfg.max_episodes,
            max_steps=cfg.max_steps,
            choices=cfg.listwise_weight > 0 or cfg.eval_choices,
        )
        seqs: list[Sequence] = []
        stats: dict[str, Any] = {}
        for path in cfg.data:  # `max_episodes` applies per store, so a mix of envs stays a mix
            got, st = build_sequences([path], tok, **kw)
            seqs.extend(got)
            stats[path] = st
        if cfg.eval_data:
            heldout, st = build_sequences(cfg.eval_data, tok, **kw)
            stats["eval_data"] = st
            train = seqs
        else:
            train, heldout = split_heldout(seqs, cfg.eval_fraction, cfg.seed)
        if cfg.listwise_weight == 0:  # ranked steps only evaluated: train exactly today's token-level SFT
            for s in train:
                s.choices = []
            train = [s for s in train if s.targets]
        if not cfg.eval_choices:
            for s in heldout:
                s.choices = []
        if not train:
            raise ValueError(
                f"no training sequences in {cfg.data}: every episode was filtered out (success_only="
                f"{cfg.success_only}, min_reward={cfg.min_reward}, max_steps={cfg.max_steps}) or had no recorded prompts (collect with messages kept)"
            )
        return train, heldout, stats

    def _save(self, model: Any, opt: torch.optim.Optimizer, state: dict[str, Any], folder: Path) -> None:
        def write(tmp: Path) -> None:
            model.save_pretrained(str(tmp))
            torch.save({**state, "optimizer": opt.state_dict(), "torch_rng": torch.get_rng_state()}, tmp / STATE)

        write_folder(folder, write)

    def run(self) -> list[dict[str, Any]]:
        cfg = self.cfg
        device = resolve_device(cfg.device)  # before any work: a missing GPU is a usage error
        seed_everything(cfg.seed)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        train, heldout, stats = self._sequences()
        n_tokens = sum(len(s.ids) for s in train)
        log.info(
            "%d training sequences (%d tokens, %d action tokens), %d held out; built in %.0f s",
            len(train),
            n_tokens,
            sum(s.n_targets for s in train),
            len(heldout),
            time.perf_counter() - t0,
        )
        model = attach_lora(load_hf_model(cfg.model), cfg).to(device)
        model.train()
        store = None
        if cfg.frozen_cache:
            store = FrozenStore(
                cfg.frozen_cache_memory_mb << 20, self.out / "frozen_cache", cfg.frozen_cache_disk_mb << 20
            )
        self.decoder = DecoderPass(model, store)
        log.info("training on %s; frozen layers 0..%d computed once per sequence", device, self.decoder.start - 1)
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
        per_epoch = math.ceil(len(train) / cfg.accumulate)
        total = min(cfg.max_updates or per_epoch * cfg.epochs, per_epoch * cfg.epochs)
        warmup = max(1, total // 10)
        state: dict[str, Any] = {"update": 0, "best": -math.inf, "history": []}
        ckpt = self.out / "checkpoint"
        if (ckpt / STATE).exists():
            from peft import set_peft_model_state_dict
            from safetensors.torch import load_file

            saved = torch.load(ckpt / STATE, weights_only=False)
            set_peft_model_state_dict(model, load_file(str(ckpt / "adapter_model.safetensors")))
            opt.load_state_dict(saved.pop("optimizer"))
            torch.set_rng_state(saved.pop("torch_rng"))
            state = saved
            log.info("resumed at update %d of %d from %s", state["update"], total, ckpt)
        for group in opt.param_groups:
            group.setdefault("initial_lr", cfg.lr)
        sched = torch.optim.lr_scheduler.LambdaLR(  # warmup, then linear decay; resumes where it stopped
            opt,
            lambda u: min(1.0, (u + 1) / warmup) * max(0.05, 1 - u / max(1, total)),
            last_epoch=state["update"] - 1,
        )
        self.history = state["history"]
        order = [
            i for e in range(cfg.epochs) for i in random.Random(cfg.seed + e).sample(range(len(train)), len(train))
        ]
        start_seq = state["update"] * cfg.accumulate
        train_tokens = 0
        epoch_tokens: dict[int, int] = {}
        epoch_seconds: dict[int, float] = {}
        epoch_cpu: dict[
            int, float
        ] = {}  # CPU seconds of this process: what the work cost, whatever else shares the cores
        t_train = time.perf_counter()
        with Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            disable=not cfg.progress,
        ) as bar:
            task = bar.add_task("train", total=total, completed=state["update"], loss="-")
            losses: list[float] = []
            part_losses: dict[str, list[float]] = {}
            for k in range(start_seq, total * cfg.accumulate):
                if k >= len(order):
                    break
                s = train[order[k]]
                t_seq, c_seq = time.perf_counter(), time.process_time()
                loss, parts = sequence_loss(model, s, self.decoder, cfg.listwise_weight)
                if loss.requires_grad:
                    (loss / cfg.accumulate).backward()
                losses.append(loss.item())
                for name, v in parts.items():
                    part_losses.setdefault(name, []).append(v)
                train_tokens += len(s.ids)
                epoch = k // len(train)
                epoch_tokens[epoch] = epoch_tokens.get(epoch, 0) + len(s.ids)
                epoch_seconds[epoch] = epoch_seconds.get(epoch, 0.0) + time.perf_counter() - t_seq
                epoch_cpu[epoch] = epoch_cpu.get(epoch, 0.0) + time.process_time() - c_seq
                if (k + 1) % cfg.accumulate and k + 1 < len(order):  # the last update may take fewer sequences
                    continue
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                sched.step()
                opt.zero_grad(set_to_none=True)
                state["update"] += 1
                bar.update(task, advance=1, loss=f"{np.mean(losses[-cfg.accumulate * 5 :]):.3f}")
                if state["update"] % cfg.eval_every == 0 or state["update"] == total:
                    recent = {k: float(np.mean(v[-cfg.accumulate * 5 :])) for k, v in part_losses.items()}
                    self._checkpoint(model, opt, state, heldout, float(np.mean(losses[-cfg.accumulate * 5 :])), recent)
        elapsed = time.perf_counter() - t_train
        summary = {
            "train_sequences": len(train),
            "train_tokens_per_epoch": n_tokens,
            "heldout_sequences": len(heldout),
            "updates": state["update"],
            "best_update": state.get("best_update"),
            "selected_by": "heldout_reward" if cfg.select_episodes else "heldout_loss",
            "train_seconds_this_run": elapsed,
            "train_tokens_per_s": train_tokens / elapsed if elapsed > 0 else 0.0,
            "seconds_per_epoch_estimate": n_tokens / (train_tokens / elapsed) if train_tokens else None,
            # forward + backward only (no optimiser step or evaluation), per epoch of this run
            "epoch_train_tokens_per_s": {e: epoch_tokens[e] / epoch_seconds[e] for e in sorted(epoch_tokens)},
            "epoch_train_tokens_per_cpu_s": {
                e: epoch_tokens[e] / max(epoch_cpu[e], 1e-9) for e in sorted(epoch_tokens)
            },
            "device": device,
            "frozen_layers_skipped": self.decoder.start if store else 0,
            "frozen_cache": {
                "hits": store.hits,
                "misses": store.misses,
                "memory_mb": store.used_memory / 2**20,
                "disk_mb": store.used_disk / 2**20,
            }
            if store
            else None,
            "data": stats,
            "history": self.history,
        }
        (self.out / "history.json").write_text(json.dumps(summary, indent=2))
        shutil.rmtree(self.out / "frozen_cache", ignore_errors=True)
        if cfg.gguf and (self.out / "best").exists():
            from agents.policy.gguf_adapter import convert_peft_to_gguf

            convert_peft_to_gguf(self.out / "best", self.out / "adapter.gguf", model=cfg.model)
            log.info(
                "llama.cpp adapter: %s (use brain.adapter=%s)", self.out / "adapter.gguf", self.out / "adapter.gguf"
            )
        return self.history

    def _checkpoint(
        self,
        model: Any,
        opt: torch.optim.Optimizer,
        state: dict[str, Any],
        heldout: list[Sequence],
        train_loss: float,
        parts: dict[str, float] | None = None,
    ) -> None:
        cfg = self.cfg
        metrics = evaluate(model, heldout, self.decoder) if heldout else {}
        row = {
            "update": state["update"],
            "train_loss": train_loss,
            **{f"train_{k}": v for k, v in (parts or {}).items()},
        }
        row |= {f"heldout_{k}": v for k, v in metrics.items()}
        # the brain ranks actions by their mean token log-likelihood, so held-out loss on actions is the
        # quantity it acts on; greedy action accuracy (every token the argmax) is reported beside it
        score = -metrics["loss"] if metrics else -train_loss
        if cfg.select_episodes:  # or what the user gets: the checkpoint played on fixed held-out goals
            from agents.policy.select import play_checkpoint

            write_folder(self.out / "select", lambda tmp: model.save_pretrained(str(tmp)))
            played = play_checkpoint(
                self.out / "select",
                model=cfg.model,
                envs=cfg.select_envs,
                episodes=cfg.select_episodes,
                agent=cfg.select_agent,
                seed=cfg.select_seed,
                temperature=cfg.select_temperature,
                threads=cfg.threads,
            )
            row |= {"heldout_reward": played.reward, "heldout_success": played.success}
            row |= {f"heldout_reward_{env}": r for env, r in played.per_env.items()}
            score = played.reward
        self.history.append(row)
        state["history"] = self.history
        log.info("update %d: %s", state["update"], {k: round(v, 4) for k, v in row.items()})
        if score > state["best"]:
            state["best"] = score
            state["best_update"] = state["update"]
            write_folder(self.out / "best", lambda tmp: model.save_pretrained(str(tmp)))
        self._save(model, opt, state, self.out / "checkpoint")


def history_table(history: list[dict[str, Any]]) -> Table:
    table = Table(title="policy training")
    cols = ["update", "train_loss", "heldout_loss", "heldout_action_acc", "heldout_choice_acc", "heldout_reward"]
    for c in cols:
        table.add_column(c, justify="right")
    for row in history:
        table.add_row(*[f"{row[c]:.4f}" if isinstance(row.get(c), float) else str(row.get(c, "-")) for c in cols])
    return table


def train(cfg: PolicyTrainConfig | dict[str, Any], console: Console | None = None) -> list[dict[str, Any]]:
    """Train from a config (a `PolicyTrainConfig` or a plain dict); returns the evaluation history."""
    cfg = cfg if isinstance(cfg, PolicyTrainConfig) else validate_config(PolicyTrainConfig, cfg)
    return PolicyTrainer(cfg, console).run()


def job(plain: dict[str, Any]) -> int:
    cfg = validate_config(PolicyTrainConfig, plain)
    console = Console(stderr=True)
    history = train(cfg, console)
    console.print(history_table(history))
    console.print(f"adapter: {Path(cfg.out) / 'best'}   llama.cpp: {Path(cfg.out) / 'adapter.gguf'}")
    return 0


main = hydra_command(
    str(Path(__file__).parent / "conf"),
    "train",
    job,
    model=PolicyTrainConfig,
    schemas={"policy_train_schema": PolicyTrainConfig},
)


if __name__ == "__main__":
    main()
