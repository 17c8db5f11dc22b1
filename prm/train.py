"""`python -m prm.train data=[runs/x] ...`: train AgentPRM on trajectories from the store.

The loop, top to bottom: load trajectories and split held-out tasks; tokenize every trajectory
into windows (cached); for each micro-batch of trajectories run one forward pass, recompute the
labels from the detached scores (TD/GAE with the current model), take L_Q + beta * L_A, accumulate
gradients, step AdamW with warmup + linear decay; after each epoch evaluate on held-out
trajectories, write a checkpoint (resumable), `best/` (lowest held-out error), history and curves.

Outputs in ${out}: checkpoint/ (model + trainer_state.pt), best/, final/, history.json, curves.png.
"""

from __future__ import annotations

import functools
import json
import logging
import random
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
from agents.policy.training import is_held_out, seed_everything, write_folder
from prm.config import TrainConfig
from prm.data import Window, collate
from prm.episodes import Trajectory, flatten, load_trajectories
from prm.loss import labels, prm_loss, rank_loss, sibling_pairs
from prm.metrics import prm_metrics
from prm.model import PRMConfig, PRMModel
from prm.plots import plot_history
from prm.scoring import PRMScorer
from prm.targets.td import monte_carlo_returns

log = logging.getLogger("prm.train")
STATE = "trainer_state.pt"


def split_by_task(trajs: list[Trajectory], fraction: float, seed: int) -> tuple[list[Trajectory], list[Trajectory]]:
    """Hold out whole tasks (all trajectories of an instruction), chosen by a seeded hash."""
    train = [t for t in trajs if not is_held_out(t.group, fraction, seed)]
    heldout = [t for t in trajs if is_held_out(t.group, fraction, seed)]
    return train, heldout


def batch_scores(
    model: PRMModel, batch_trajs: list[Trajectory], windows: list[list[Window]]
) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward pass over the given windows of the trajectories: scores flat in (trajectory, step) order, and
    which steps the windows scored (a branch trained only where it left its path has one window; the rest are 0)."""
    flat_windows = [w for ws in windows for w in ws]
    scores = model(collate(flat_windows, model.steps.pad_id))
    offsets = np.cumsum([0] + [len(t) for t in batch_trajs])
    index = torch.empty(len(scores), dtype=torch.long)
    pos = 0
    for ti, ws in enumerate(windows):
        for w in ws:
            for s in w.steps:
                index[pos] = int(offsets[ti] + s)
                pos += 1
    out = scores.new_zeros(int(offsets[-1]))
    out[index] = scores  # window order -> trajectory/step order
    scored = torch.zeros(int(offsets[-1]), dtype=torch.bool)
    scored[index] = True
    return out, scored


def evaluate(scorer: PRMScorer, heldout: list[Trajectory], cfg: TrainConfig) -> dict[str, float]:
    """Held-out metrics: MSE vs MC labels (where present) and vs each trajectory's own return, ranking, AUC."""
    if not heldout:
        return {}
    scorer.clear()  # the model changed
    preds = scorer.score_trajectories(heldout)
    flat = np.concatenate(preds)
    rewards, lengths, _ = flatten(heldout)
    ret = monte_carlo_returns(rewards, lengths, gamma=cfg.td.gamma)
    with_mc = [i for i, t in enumerate(heldout) if t.mc_q is not None]
    mc_pred = np.concatenate([preds[i] for i in with_mc]) if with_mc else np.zeros(0)
    mc = np.concatenate([heldout[i].mc_q for i in with_mc]) if with_mc else np.zeros(0)
    groups = [heldout[i].group for i in with_mc for _ in range(len(heldout[i]))]
    finals = np.array([p[-1] for p in preds])
    success = np.array([t.success for t in heldout])
    out = prm_metrics(mc_pred, mc, groups, finals, success)
    out["mse_vs_return"] = float(np.mean((flat - ret) ** 2))
    return out


class Trainer:
    """One training run: data, model, optimiser, held-out evaluation, checkpoints (resumable) and outputs."""

    def __init__(self, cfg: TrainConfig, console: Console | None = None) -> None:
        self.cfg = cfg
        self.out = Path(cfg.out)
        self.console = console or Console(stderr=True)
        self.history: list[dict[str, Any]] = []
        self.step_log: list[dict[str, float]] = []
        self.epoch = 0
        self.update = 0

    # ------------------------------------------------------------------ setup
    def setup(self) -> None:
        """Load and split the data, build the model and optimiser; resume from the checkpoint if one exists."""
        cfg = self.cfg
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        seed_everything(cfg.seed)
        load = functools.partial(
            load_trajectories,
            outcome=cfg.outcome,
            truncated_as_failure=cfg.truncated_as_failure,
            reward_scale=cfg.reward_scale,
        )
        trajs = load(cfg.data)
        if cfg.eval_data:
            self.train_trajs = trajs
            self.heldout = load(cfg.eval_data)
        else:
            self.train_trajs, self.heldout = split_by_task(trajs, cfg.eval_fraction, cfg.seed)
        if cfg.max_train_trajectories is not None:
            self.train_trajs = self.train_trajs[: cfg.max_train_trajectories]
        if not self.train_trajs:
            raise ValueError(f"no training trajectories in {cfg.data}")
        ckpt = self.out / "checkpoint"
        resuming = cfg.resume and (ckpt / STATE).is_file()
        if resuming:
            self.model = PRMModel.from_pretrained(ckpt)
        else:
            self.model = PRMModel.from_backbone(
                PRMConfig(base_backbone=cfg.backbone, text=cfg.text, dropout=cfg.dropout)
            )
        trainable = self.model.freeze(cfg.freeze_embeddings, cfg.freeze_layers)
        cache = self.out / "cache" / "tokens.json"
        self.model.steps.load_cache(cache)
        t0 = time.perf_counter()
        self.trained_at = [self.trained_step(t) for t in self.train_trajs]
        # a branch trained at its branch step: one window ending there, labelled once with its own return from there
        self.branch_q = {
            i: float(monte_carlo_returns(t.rewards, np.array([len(t)]), gamma=cfg.td.gamma)[k])
            for i, (t, k) in enumerate(zip(self.train_trajs, self.trained_at))
            if k is not None
        }
        self.windows = [
            self.model.steps.windows(
                t.instruction, t.observations[:end], t.actions[:end], traj=i, last_only=end is not None
            )
            for i, (t, end) in enumerate(zip(self.train_trajs, [None if k is None else k + 1 for k in self.trained_at]))
        ]
        self.model.steps.save_cache(cache)
        n_win = sum(len(w) for w in self.windows)
        log.info(
            "train: %d trajectories, %d steps, %d windows (tokenized in %.1f s, cache hits %d); held out: %d; "
            "trainable params %.1fM",
            len(self.train_trajs),
            sum(len(t) for t in self.train_trajs),
            n_win,
            time.perf_counter() - t0,
            self.model.steps.hits,
            len(self.heldout),
            trainable / 1e6,
        )
        head = list(self.model.head.parameters())
        body = [p for n, p in self.model.named_parameters() if p.requires_grad and not n.startswith("head.")]
        self.opt = torch.optim.AdamW(
            [{"params": body, "lr": cfg.lr}, {"params": head, "lr": cfg.head_lr}], weight_decay=cfg.weight_decay
        )
        per_epoch = -(-len(self.micro_batches(np.random.default_rng(0))) // cfg.grad_accum)
        total = per_epoch * cfg.epochs
        warm = int(total * cfg.warmup_ratio)
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            self.opt, lambda u: (u + 1) / max(1, warm) if u < warm else max(0.0, (total - u) / max(1, total - warm))
        )
        self.scorer = PRMScorer(self.model, batch_size=cfg.eval_batch_size)
        if resuming:
            self._load_state(ckpt / STATE)
            log.info("resumed from %s at epoch %d (update %d)", ckpt, self.epoch, self.update)

    # ------------------------------------------------------------------ loop
    def train_epoch(self, progress: Progress, task) -> dict[str, float]:
        """One pass over the training trajectories; returns the mean loss terms and the time it took."""
        cfg, model = self.cfg, self.model
        model.train()
        micro = self.micro_batches(np.random.default_rng(cfg.seed * 1000 + self.epoch))
        sums = {"loss": 0.0, "l_q": 0.0, "l_a": 0.0, "l_r": 0.0}
        t0 = time.perf_counter()
        self.opt.zero_grad(set_to_none=True)
        for k, idx in enumerate(micro):
            trajs = [self.train_trajs[i] for i in idx]
            values, scored = batch_scores(model, trajs, [self.windows[i] for i in idx])
            q = torch.as_tensor(labels(cfg.labels, trajs, values.detach().double().numpy(), cfg.td), dtype=values.dtype)
            trained = self.trained_mask(idx, scored, q)
            parts = prm_loss(values, q, [len(t) for t in trajs], cfg.beta, trained)
            if cfg.rank_weight > 0:
                better, worse = sibling_pairs(trajs, cfg.rank_margin, q.numpy())
                keep = (self.branch_mask(idx) if cfg.rank_among == "branches" else trained).numpy()
                both = keep[better] & keep[worse]
                better, worse = better[both], worse[both]
                l_r = rank_loss(values, better, worse, cfg.rank_scale)
                parts.loss = parts.loss + cfg.rank_weight * l_r
                parts.l_r = float(l_r.detach())
            (parts.loss / cfg.grad_accum).backward()
            for name, v in (
                ("loss", float(parts.loss.detach())),
                ("l_q", parts.l_q),
                ("l_a", parts.l_a),
                ("l_r", parts.l_r),
            ):
                sums[name] += v
            if (k + 1) % cfg.grad_accum == 0 or k + 1 == len(micro):
                torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], cfg.max_grad_norm)
                self.opt.step()
                self.sched.step()
                self.opt.zero_grad(set_to_none=True)
                self.update += 1
                self.step_log.append(
                    {
                        "update": self.update,
                        "loss": float(parts.loss.detach()),
                        "l_q": parts.l_q,
                        "l_a": parts.l_a,
                        "l_r": parts.l_r,
                    }
                )
            progress.update(task, advance=len(idx), loss=f"{sums['loss'] / (k + 1):.4f}")
        n = max(1, len(micro))
        return {k: v / n for k, v in sums.items()} | {"train_seconds": time.perf_counter() - t0}

    def trained_step(self, t: Trajectory) -> int | None:
        """The one step a trajectory is trained at (`branch_training=at_branch` and it left a path), else None."""
        return t.branch_step if self.cfg.branch_training == "at_branch" else None

    def trained_mask(self, idx: np.ndarray, scored: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """The steps of a micro-batch the loss covers; at a branch step, `q` is set to the trajectory's own discounted
        return from there (its continuation was not scored, so a TD label would bootstrap from nothing)."""
        trained = scored.clone()
        at = 0
        for i in idx:
            t, k = self.train_trajs[i], self.trained_at[i]
            if k is not None:
                trained[at : at + len(t)] = False
                trained[at + k] = True
                q[at + k] = self.branch_q[int(i)]
            at += len(t)
        return trained

    def branch_mask(self, idx: np.ndarray) -> torch.Tensor:
        """Flat over a micro-batch: the steps where a trajectory left its path (whatever `branch_training` is)."""
        out = torch.zeros(sum(len(self.train_trajs[i]) for i in idx), dtype=torch.bool)
        at = 0
        for i in idx:
            t = self.train_trajs[i]
            if t.branch_step is not None:
                out[at + t.branch_step] = True
            at += len(t)
        return out

    def micro_batches(self, rng: np.random.Generator) -> list[np.ndarray]:
        """Trajectory indices per micro-batch, shuffled: `batch_size` at a time, or one task's trajectories together
        (`batch_by=task`, so the sibling ranking loss sees a state's siblings side by side)."""
        cfg = self.cfg
        if cfg.batch_by == "trajectory":
            order = rng.permutation(len(self.train_trajs))
            return [order[i : i + cfg.batch_size] for i in range(0, len(order), cfg.batch_size)]
        tasks: dict[str, list[int]] = {}
        for i, t in enumerate(self.train_trajs):
            tasks.setdefault(t.group, []).append(i)
        out = []
        for members in tasks.values():
            out += [np.asarray(members[i : i + cfg.max_task_batch]) for i in range(0, len(members), cfg.max_task_batch)]
        return [out[i] for i in rng.permutation(len(out))]

    def run(self) -> list[dict[str, Any]]:
        """Train every remaining epoch, evaluating and checkpointing after each; returns the per-epoch history."""
        cfg = self.cfg
        self.out.mkdir(parents=True, exist_ok=True)
        self.setup()
        if self.epoch == 0:
            row = {"epoch": 0} | evaluate(self.scorer, self.heldout, cfg)
            self.history.append(row)
            self._report(row)
        progress = Progress(
            TextColumn("[bold]epoch {task.fields[epoch]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            disable=not cfg.progress,
        )
        best = min((h.get(self._key(), float("inf")) for h in self.history[1:]), default=float("inf"))
        with progress:
            while self.epoch < cfg.epochs:
                task = progress.add_task("train", total=len(self.train_trajs), epoch=self.epoch + 1, loss="-")
                row = {"epoch": self.epoch + 1} | self.train_epoch(progress, task)
                t0 = time.perf_counter()
                row |= evaluate(self.scorer, self.heldout, cfg)
                row["eval_seconds"] = time.perf_counter() - t0
                self.epoch += 1
                self.history.append(row)
                self._report(row)
                metric = row.get(self._key(), float("inf"))
                if metric < best or not (self.out / "best").exists():
                    best = min(best, metric)
                    self.model.save_pretrained(self.out / "best")
                self._save_checkpoint()
        self.model.save_pretrained(self.out / "final")
        self._write_outputs()
        return self.history

    # ------------------------------------------------------------------ bookkeeping
    def _key(self) -> str:
        return "mse_vs_mc" if any(t.mc_q is not None for t in self.heldout) else "mse_vs_return"

    def _report(self, row: dict[str, Any]) -> None:
        log.info(
            "epoch %d: %s",
            row["epoch"],
            ", ".join(f"{k}={v:.4g}" for k, v in row.items() if k != "epoch" and isinstance(v, float)),
        )

    def _save_checkpoint(self) -> None:
        write_folder(self.out / "checkpoint", self._write_checkpoint)
        self._write_outputs()

    def _write_checkpoint(self, tmp: Path) -> None:
        self.model.save_pretrained(tmp)
        torch.save(
            {
                "epoch": self.epoch,
                "update": self.update,
                "optimizer": self.opt.state_dict(),
                "scheduler": self.sched.state_dict(),
                "history": self.history,
                "step_log": self.step_log,
                "torch_rng": torch.get_rng_state(),
                "numpy_rng": np.random.get_state(),
                "random_rng": random.getstate(),
                "config": self.cfg.model_dump(),
            },
            tmp / STATE,
        )

    def _load_state(self, path: Path) -> None:
        st = torch.load(path, weights_only=False)
        self.opt.load_state_dict(st["optimizer"])
        self.sched.load_state_dict(st["scheduler"])
        self.epoch, self.update = int(st["epoch"]), int(st["update"])
        self.history, self.step_log = list(st["history"]), list(st["step_log"])
        torch.set_rng_state(st["torch_rng"])
        np.random.set_state(st["numpy_rng"])
        random.setstate(st["random_rng"])

    def _write_outputs(self) -> None:
        (self.out / "history.json").write_text(json.dumps({"epochs": self.history, "updates": self.step_log}, indent=2))
        if self.cfg.plot:
            plot_history(self.history, self.step_log, self.out / "curves.png")


def history_table(history: list[dict[str, Any]]) -> Table:
    """The per-epoch held-out metrics as a rich table."""
    t = Table(title="AgentPRM training (held-out)")
    cols = ["epoch", "loss", "mse_vs_mc", "mse_vs_return", "pairwise_acc", "spearman", "success_auc", "train_seconds"]
    for c in cols:
        t.add_column(c, justify="right")
    for h in history:
        t.add_row(*[("-" if c not in h else f"{h[c]:.4f}" if isinstance(h[c], float) else str(h[c])) for c in cols])
    return t


def train(cfg: TrainConfig | dict[str, Any], console: Console | None = None) -> list[dict[str, Any]]:
    """Train from a config (a `TrainConfig` or a plain dict); returns the per-epoch history."""
    cfg = cfg if isinstance(cfg, TrainConfig) else validate_config(TrainConfig, cfg)
    return Trainer(cfg, console).run()


def job(plain: dict[str, Any]) -> int:
    """`python -m prm.train` after Hydra: validate, train, print the history table."""
    cfg = validate_config(TrainConfig, plain)
    console = Console(stderr=True)
    history = train(cfg, console)
    console.print(history_table(history))
    console.print(f"model: {Path(cfg.out) / 'best'}   curves: {Path(cfg.out) / 'curves.png'}")
    return 0


main = hydra_command(
    str(Path(__file__).parent / "conf"), "train", job, model=TrainConfig, schemas={"train_schema": TrainConfig}
)


if __name__ == "__main__":
    main()
