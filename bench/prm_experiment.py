"""AgentPRM on WebShop: does PRM-guided search beat unguided sampling at equal budget? TD/GAE vs MC labels?

    nice python bench/prm_experiment.py                 # the full run (~90 min on 2 shared CPU cores)
    nice python bench/prm_experiment.py --quick         # a smoke run (minutes, numbers meaningless)

Stages (each cached under --work, so a re-run resumes): 1M-step target benchmark; trajectories of a
stochastic policy (the scripted expert with epsilon noise) on *train* goals; MC labels for a
baseline set at the same sampled-step budget and for held-out *test*-goal trajectories; a TD/GAE
PRM and an MC PRM trained with `prm.train`; PRM scoring throughput; then on held-out test goals:
greedy (one policy sample) vs Best-of-N-random vs Best-of-N-PRM vs beam-PRM at N = 2, 4, 8, 16
policy samples per decision, with 95% confidence intervals over seeds.
Writes bench/results/prm.json, bench/results/prm_search.png and prints rich tables.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from rich.console import Console
from rich.table import Table

from bench.stats import ci95

log = logging.getLogger("prm_experiment")
RESULTS = ROOT / "bench" / "results"
# env name -> (registered id, the reset option that picks task g, or None where the reset seed picks it: a seed names
# the whole episode there, TextCraft's distractor recipes and BabyAI's level and grid); all have snapshot/restore
# and a scripted expert
ENVS: dict[str, tuple[str, str | None]] = {
    "webshop": ("agentsim/WebShop-v0", "goal_index"),
    "faulttree": ("agentsim/FaultTree-v0", "entry_index"),
    "textcraft": ("agentsim/TextCraft-v0", None),
    "babyai": ("agentsim/BabyAI-v0", None),
}
# the bench's held-out split ("test") by its name in each env; the others call it "eval"
HELD_OUT = {"webshop": "test", "faulttree": "test", "textcraft": "eval", "babyai": "eval"}
BABYAI_TRAIN_TASKS = 40_000  # BabyAI training indices below this never play an eval episode (envs/babyai/levels.py)
TITLES = {"webshop": "WebShop", "faulttree": "Fault-tree diagnosis", "textcraft": "TextCraft", "babyai": "BabyAI"}
# equal budget B = policy samples per decision: Best-of-N draws B whole trajectories; beam @N x M draws N*M actions a depth
BEAMS = {2: (1, 2), 4: (2, 2), 8: (2, 4), 16: (4, 4), 32: (4, 8), 64: (8, 8)}


# ---------------------------------------------------------------------------------------------- setup
def make_env(split: str, args):
    import envs  # noqa: F401
    from envs.registry import env_class

    return env_class(ENVS[args.env][0])(**env_kwargs(args, split))


def env_kwargs(args, split: str) -> dict:
    """What a trajectory record keeps so the episode can be replayed (MC labels) in the same env."""
    env_split = HELD_OUT[args.env] if split == "test" else split
    if args.env == "faulttree":  # the env's own turn limit is the search's step limit
        return {"split": env_split, "max_turns": args.max_steps}
    if args.env in ("textcraft", "babyai"):  # the search's max_steps is their step limit
        return {"split": env_split}
    return {
        "num_products": args.products,
        "split": env_split,
        "max_steps": args.max_steps,
        "observation_mode": args.observation_mode,
    }


def task(args, g: int) -> dict | None:
    """The reset options that pick task `g` (None where the reset seed picks it)."""
    option = ENVS[args.env][1]
    return {option: g} if option else None


def task_seed(args, g: int) -> int | None:
    """The reset seed that picks task `g` (None where a reset option picks it)."""
    return None if ENVS[args.env][1] else g


def at_task(args, g: int) -> dict:
    """`start`'s keywords for task `g`."""
    return {"seed": task_seed(args, g), "options": task(args, g)}


def in_task(args, g: int) -> dict:
    """The search functions' keywords for task `g`."""
    return {"reset_seed": task_seed(args, g), "options": task(args, g)}


def solved(node) -> bool:
    """Success at a real end by the runner's own rule (`agents.core.loop.is_success`: the env's verdict, else a final
    reward of 1); a cut is a failure."""
    from agents.core.loop import is_success

    return node.terminated and is_success(node.outcome(), node.info, None)


def n_tasks(env) -> int:
    base = env.unwrapped
    if hasattr(base, "pool"):  # TextCraft: the split's goals
        return len(base.pool)
    if base.__class__.__name__ == "BabyAIEnv":
        from envs.babyai.levels import EVAL_SIZE

        return EVAL_SIZE if base.split == "eval" else BABYAI_TRAIN_TASKS
    return len(base.goals) if hasattr(base, "goals") else base.num_entries


def make_sampler(args, temperature: float = 1.0, epsilon: float | None = None):
    from agents.brains.scripted import ScriptedBrain
    from prm.policy import BrainSampler

    eps = args.epsilon if epsilon is None else epsilon
    return BrainSampler(ScriptedBrain(epsilon=eps), temperature=temperature, agent_cfg={"mode": "choose"})


def record(args, node, episode_id: str, g: int, model: str, split: str = "train"):
    """A finished search node of task `g` as a trajectory record, replayable in the same env (MC labels)."""
    from prm.policy import to_episode

    return to_episode(
        node,
        episode_id=episode_id,
        env_name=args.env,
        env_id=ENVS[args.env][0],
        seed=task_seed(args, g) or 0,
        brain="scripted",
        model=model,
        env_kwargs=env_kwargs(args, split),
        meta={"reset_options": task(args, g)},
    )


def collect(env, sampler, goals: list[int], per_goal: int, seed: int, args, split: str, epsilon: float | None = None):
    """Policy trajectories as EpisodeRecords (reset options kept in meta for exact replay)."""
    from prm.policy import rollout, start

    eps, steps = [], 0
    for g in goals:
        root = start(env, **at_task(args, g))
        for j in range(per_goal):
            end, n = rollout(env, sampler, root, seed=seed * 100_003 + g * 97 + j, max_steps=args.max_steps)
            steps += n
            eps.append(
                record(
                    args,
                    end,
                    f"{split}-g{g}-s{seed}-{j}",
                    g,
                    f"expert(eps={args.epsilon if epsilon is None else epsilon})",
                    split=split,
                )
            )
    return eps, steps


def write_run(folder: Path, eps) -> None:
    from agents.trajectories.store import TrajectoryStore

    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "trajectories.jsonl"
    if f.exists():
        f.unlink()
    store = TrajectoryStore(f)
    for ep in eps:
        store.append(ep)


def label_mc(env, sampler, eps, k: int, seed: int, args, folder: Path) -> int:
    from prm.targets.mc import mc_labels, write_mc_labels

    path = folder / "mc_labels.jsonl"
    if path.exists():
        path.unlink()
    labs = [
        mc_labels(
            env, ep, sampler, k=k, seed=seed + i, max_steps=args.max_steps, outcome=args.outcome, gamma=args.gamma
        )
        for i, ep in enumerate(eps)
    ]
    write_mc_labels(path, labs, k)
    return sum(lab.sampled_steps for lab in labs)


# ---------------------------------------------------------------------------------------------- stages
def stage_targets_bench() -> dict:
    from prm.targets.td import td_targets

    rng = np.random.default_rng(0)
    lens = rng.integers(2, 30, size=70_000)
    lens = lens[: np.searchsorted(np.cumsum(lens), 1_000_000) + 1]
    n = int(lens.sum())
    values = rng.random(n)
    rewards = np.zeros(n)
    rewards[np.cumsum(lens) - 1] = rng.random(len(lens))
    terminal = rng.random(len(lens)) < 0.8
    out = {"steps": n, "trajectories": len(lens)}
    for mode in ("paper", "sarsa"):
        td_targets(values, rewards, lens, terminal, mode=mode)  # warm
        ts = []
        for _ in range(5):
            t0 = time.perf_counter()
            td_targets(values, rewards, lens, terminal, mode=mode)
            ts.append(time.perf_counter() - t0)
        out[f"{mode}_seconds_median"] = float(np.median(ts))
    return out


def stage_data(args, work: Path) -> dict:
    """TD set, MC set at the same sampled-step budget, held-out test set with MC labels."""
    meta_path = work / "data.json"
    if meta_path.exists():
        return json.loads(meta_path.read_text())
    sampler = make_sampler(args)
    train_env = make_env("train", args)
    rng = np.random.default_rng(args.seed)
    goals = rng.permutation(n_tasks(train_env)).tolist()
    td_goals, mc_pool = goals[: args.td_goals], goals[args.td_goals :]
    t0 = time.perf_counter()
    # TD set: per goal, `per_goal` trajectories at each training epsilon (many good and bad purchases per goal)
    td_eps, td_steps = [], 0
    for k, eps in enumerate(float(e) for e in args.train_epsilons.split(",")):
        more, n = collect(
            train_env,
            make_sampler(args, epsilon=eps),
            td_goals,
            args.per_goal,
            1 + 10 * k,
            args,
            f"train-e{eps}",
            epsilon=eps,
        )
        td_eps += more
        td_steps += n
    # branches: leave a low-noise path at a random state with a random listed action, then follow the policy
    if args.branches:
        from prm.policy import branch_rollouts, start

        base = make_sampler(args, epsilon=0.2)
        for g in td_goals:
            root = start(train_env, **at_task(args, g))
            ends, n = branch_rollouts(
                train_env, base, sampler, root, branches=args.branches, seed=7 + g, max_steps=args.max_steps
            )
            td_steps += n
            td_eps += [
                record(args, end, f"train-branch-g{g}-{j}", g, f"expert(eps=0.2) + branch + expert(eps={args.epsilon})")
                for j, end in enumerate(ends)
            ]
    # sibling sets: at random states of a low-noise path, every listed action (up to --sibling-max), each continued by
    # a low-noise policy, so a state's siblings are labelled by what they are worth to a policy that then acts well
    if args.sibling_states:
        from prm.policy import sibling_rollouts, start

        base = make_sampler(args, epsilon=0.2)
        cont = make_sampler(args, epsilon=args.sibling_epsilon)
        for g in td_goals:
            root = start(train_env, **at_task(args, g))
            ends, n = sibling_rollouts(
                train_env,
                base,
                cont,
                root,
                states=args.sibling_states,
                max_siblings=args.sibling_max,
                seed=11 + g,
                max_steps=args.max_steps,
            )
            td_steps += n
            td_eps += [
                record(
                    args,
                    end,
                    f"train-sibling-g{g}-{j}",
                    g,
                    f"expert(eps=0.2) + sibling + expert(eps={args.sibling_epsilon})",
                )
                for j, end in enumerate(ends)
            ]
    # ending branches: at states where an ε = 0.5 path went on, the action that would have ended the episode there
    # (a premature or wrong `buy now`), labelled by its own outcome: the contrast a policy's data rarely holds
    probe_steps = 0
    if args.ending_branches:
        from prm.policy import ending_branches, rollout, start

        for g in td_goals:
            root = start(train_env, **at_task(args, g))
            path = [root]
            end, n = rollout(train_env, sampler, root, seed=31 + g, max_steps=args.max_steps, path=path)
            kids, probed = ending_branches(
                train_env, path, branches=args.ending_branches, seed=37 + g, max_steps=args.max_steps
            )
            td_steps += n + len(kids)
            probe_steps += probed
            td_eps += [
                record(
                    args,
                    node,
                    f"train-ending-g{g}-{j}",
                    g,
                    f"expert(eps={args.epsilon})" + (" + ending branch" if j else ""),
                )
                for j, node in enumerate([end, *kids])
            ]
    write_run(work / "td", td_eps)
    # MC baseline: same budget of sampled steps (its own trajectories + its rollouts)
    mc_eps, mc_steps, spent = [], 0, 0
    from prm.targets.mc import mc_labels, write_mc_labels

    labs = []
    for g in mc_pool:  # stop before the trajectory that would overshoot the TD budget
        if args.skip_mc or mc_steps + spent >= td_steps:
            break
        eps, _ = collect(train_env, sampler, [g], args.per_goal, 2, args, "train")
        for ep in eps:
            lab = mc_labels(
                train_env,
                ep,
                sampler,
                k=args.mc_k,
                seed=1000 + len(labs),
                max_steps=args.max_steps,
                outcome=args.outcome,
                gamma=args.gamma,
            )
            if mc_eps and mc_steps + spent + len(ep.steps) + lab.sampled_steps > td_steps:
                break
            mc_eps.append(ep)
            labs.append(lab)
            mc_steps += len(ep.steps)
            spent += lab.sampled_steps
    write_run(work / "mc", mc_eps)
    (work / "mc" / "mc_labels.jsonl").unlink(missing_ok=True)
    write_mc_labels(work / "mc" / "mc_labels.jsonl", labs, args.mc_k)
    # held-out: test goals, MC labels with more rollouts (the reference for PRM quality)
    test_env = make_env("test", args)
    test_goals = list(range(n_tasks(test_env)))
    held_goals = test_goals[args.search_goals : args.search_goals + args.heldout_goals]
    if len(held_goals) < args.heldout_goals // 2:
        held_goals = test_goals[: args.heldout_goals]
    held_eps, held_steps = collect(test_env, sampler, held_goals, 2, 3, args, "test")
    write_run(work / "heldout", held_eps)
    held_spent = label_mc(test_env, sampler, held_eps, args.heldout_mc_k, 5000, args, work / "heldout")
    meta = {
        "td": {
            "trajectories": len(td_eps),
            "goals": len(td_goals),
            "sampled_steps": td_steps,
            "ending_probe_env_steps": probe_steps,
        },
        "mc": {
            "trajectories": len(mc_eps),
            "goals": len({json.dumps(e.meta["reset_options"]) for e in mc_eps}),
            "trajectory_steps": mc_steps,
            "rollout_steps": spent,
            "sampled_steps": mc_steps + spent,
            "k": args.mc_k,
        },
        "heldout": {
            "trajectories": len(held_eps),
            "goals": len(held_goals),
            "steps": held_steps,
            "mc_k": args.heldout_mc_k,
            "mc_rollout_steps": held_spent,
        },
        "policy_success_train": float(np.mean([e.outcome.success for e in td_eps])),
        "seconds": time.perf_counter() - t0,
    }
    meta_path.write_text(json.dumps(meta, indent=2))
    return meta


def stage_train(args, work: Path, name: str, labels: str) -> dict:
    from prm.train import train

    out = work / f"prm_{name}"
    if (out / "final" / "prm_config.json").exists():
        return json.loads((out / "history.json").read_text())
    cfg = {
        "data": [str(work / name)],
        "eval_data": [str(work / "heldout")],
        "out": str(out),
        "labels": labels,
        "epochs": args.epochs,
        "batch_size": 4,
        "grad_accum": 2,
        "freeze_layers": args.freeze_layers,
        "outcome": args.outcome,
        "td": {"gamma": args.gamma},
        "text": {
            "max_length": args.max_length,
            "obs_tokens": args.obs_tokens,
            "instruction_tokens": 64,
            "action_tokens": 16,
            "focus": True,
        },
        "threads": args.threads,
        "seed": args.seed,
        "progress": False,
        "rank_weight": args.rank_weight,
        "batch_by": "task" if args.rank_weight > 0 else "trajectory",
        "max_task_batch": args.max_task_batch,
        "branch_training": args.branch_training,
        "lr": args.lr,
        "rank_among": args.rank_among,
    }
    train(cfg)
    return json.loads((out / "history.json").read_text())


def stage_throughput(args, work: Path) -> dict:
    import torch

    from prm.episodes import load_trajectories
    from prm.model import PRMModel
    from prm.scoring import PRMScorer

    model = PRMModel.from_pretrained(work / "prm_td" / "final")
    trajs = load_trajectories([work / "heldout"])[:24]
    n_steps = sum(len(t) for t in trajs)
    out = {"steps": n_steps}
    # batched: every step of every trajectory, windows batched 16 at a time
    s = PRMScorer(model, batch_size=16)
    t0 = time.perf_counter()
    s.score_trajectories(trajs)
    out["batched_one_pass_steps_per_s"] = n_steps / (time.perf_counter() - t0)
    # one-by-one: one forward pass per step (the prefix ending at that step), no batching
    s1 = PRMScorer(model, batch_size=1)
    t0 = time.perf_counter()
    for t in trajs:
        s1.score_last([(t.instruction, t.observations[: k + 1], t.actions[: k + 1]) for k in range(len(t))][:1])
        for k in range(1, len(t)):
            s1.score_last([(t.instruction, t.observations[: k + 1], t.actions[: k + 1])])
    out["per_step_unbatched_steps_per_s"] = n_steps / (time.perf_counter() - t0)
    out["torch_threads"] = torch.get_num_threads()
    return out


def llm_sampler(temperature: float, adapter: str | None = "agentsim-sft"):
    """The embedded LLM (Gemma 3 270M ranking the listed actions) as the policy; one model for the whole run."""
    from agents.brains.local import LocalBrain
    from prm.policy import BrainSampler

    global _LLM
    if _LLM is None:
        _LLM = LocalBrain(n_ctx=4096, seed=0, adapter=adapter)
    return BrainSampler(_LLM, temperature=temperature, agent_cfg={"mode": "choose"})


_LLM: Any = None


def split_method(method: str) -> tuple[str, float]:
    """`beamp0.1` -> ("beam", 0.1): a search kind and the weight of the policy prior (log share of the draws)."""
    m = re.fullmatch(r"(beam|rerank)p([0-9]*\.?[0-9]+)", method)
    if m:
        return m.group(1), float(m.group(2))
    if method == "beam":
        return method, 0.0
    raise ValueError(
        f"unknown search method {method!r}: use single, greedy, bon, beam, rerank, vote, beamp<prior> or rerankp<prior>"
    )


def stage_search(
    args, work: Path, prm_name: str, budgets: list[int], methods: list[str], policy: str = "scripted"
) -> dict:
    """Per (method, budget): success and score per seed over the search goals, and per goal; cached per PRM.

    policy = scripted: the ε-expert, `--seeds` seeds x `--search-goals` goals; llm: the embedded LLM at temperature
    1 (greedy at 0 for `method=greedy`), one seed x `--llm-goals` goals."""
    split = getattr(args, "search_split", "test")
    name = (
        f"search_{prm_name}" + ("" if policy == "scripted" else f"_{policy}") + ("" if split == "test" else f"_{split}")
    )
    path = work / f"{name}.json"
    done = json.loads(path.read_text()) if path.exists() else {}
    from prm.model import PRMModel
    from prm.scoring import PRMScorer
    from prm.search import beam_search, best_of_n, ended, rerank

    scorer = PRMScorer(PRMModel.from_pretrained(work / f"prm_{prm_name}" / "final"), batch_size=16)
    env = make_env(split, args)
    llm = policy == "llm"
    sampler = llm_sampler(1.0, args.llm_adapter or None) if llm else make_sampler(args)
    seeds = 1 if llm else args.seeds
    goals = list(range(min(args.llm_goals if llm else args.search_goals, n_tasks(env))))
    if split == "train":  # validation goals: training-split tasks the PRM's TD data did not use (stage_data's order)
        unseen = np.random.default_rng(args.seed).permutation(n_tasks(env)).tolist()[args.td_goals :]
        goals = unseen[: len(goals)]
    for b in budgets:
        for method in methods:
            key = f"{method}@{b}"
            if key in done and [len(r.get("goal_score", ())) for r in done[key]["per_seed"]] == [len(goals)] * seeds:
                continue  # cached for these goals and seeds (another count of either reruns the method)
            t0 = time.perf_counter()
            per_seed, samples, scored = [], 0, 0
            for seed in range(seeds):
                succ, score, rnd_s, rnd_r, orc = [], [], [], [], []
                for g in goals:
                    sd = seed * 10_000 + g
                    if method == "greedy":  # the policy at temperature 0
                        res = best_of_n(
                            env,
                            llm_sampler(0.0, args.llm_adapter or None),
                            None,
                            n=1,
                            seed=sd,
                            max_steps=args.max_steps,
                            **in_task(args, g),
                        )
                    elif method == "single":  # one policy sample, no choice: the no-search baseline
                        res = best_of_n(env, sampler, None, n=1, seed=sd, max_steps=args.max_steps, **in_task(args, g))
                    elif method == "bon":
                        res = best_of_n(
                            env, sampler, scorer, n=b, seed=sd, max_steps=args.max_steps, **in_task(args, g)
                        )
                        # unguided baselines from the very same samples: a random pick among those that really
                        # ended (its expectation; the same rule the PRM pick follows) and the oracle
                        pool = ended(res.finished)
                        outs = [n.outcome() for n in pool]
                        rnd_s.append(float(np.mean([solved(n) for n in pool])))
                        rnd_r.append(float(np.mean(outs)))
                        orc.append(float(any(solved(n) for n in pool)))
                    elif method == "rerank":  # per step: B sampled actions, take the most promising
                        res = rerank(env, sampler, scorer, m=b, seed=sd, max_steps=args.max_steps, **in_task(args, g))
                    elif method == "vote":  # per step: B sampled actions, take the most drawn (no PRM)
                        res = rerank(
                            env, sampler, None, m=b, seed=sd, max_steps=args.max_steps, **in_task(args, g), prior=1.0
                        )
                    else:  # beam, beamp<prior>, rerankp<prior>
                        kind, prior = split_method(method)
                        n_, m_ = (1, b) if kind == "rerank" else BEAMS[b]
                        res = beam_search(
                            env,
                            sampler,
                            scorer,
                            n=n_,
                            m=m_,
                            seed=sd,
                            max_steps=args.max_steps,
                            **in_task(args, g),
                            prior=prior,
                        )
                    samples += res.samples
                    scored += res.scored
                    succ.append(float(solved(res.best)))
                    score.append(res.best.outcome())
                row = {
                    "success": float(np.mean(succ)),
                    "score": float(np.mean(score)),
                    "goal_success": succ,
                    "goal_score": score,
                }
                if method == "bon":
                    row |= {
                        "goal_random_success": rnd_s,
                        "goal_random_score": rnd_r,
                        "goal_oracle_success": orc,
                        "random_success": float(np.mean(rnd_s)),
                        "random_score": float(np.mean(rnd_r)),
                        "oracle_success": float(np.mean(orc)),
                    }
                per_seed.append(row)
            n_eps = seeds * len(goals)  # the LLM runs one seed
            done[key] = {
                "per_seed": per_seed,
                "samples_per_episode": samples / n_eps,
                "scored_per_episode": scored / n_eps,
                "seconds": time.perf_counter() - t0,
            }
            log.info(
                "%s %s: success %.3f (%.0f s)",
                prm_name,
                key,
                np.mean([r["success"] for r in per_seed]),
                time.perf_counter() - t0,
            )
            path.write_text(json.dumps(done, indent=2))
    done["_scorer"] = {
        "windows": scorer.stats.windows,
        "cache_hits": scorer.stats.cache_hits,
        "seconds": scorer.stats.seconds,
    }
    return done


def stage_siblings(args, work: Path, prm_name: str, goals: int = 15, split: str = "test") -> dict:
    """What beam search asks of a PRM: at one state, rank the best of the listed actions first.

    Along ε = 0.3 policy paths on the search goals, every listed action at every state is stepped, scored by the PRM,
    and valued by the expert finishing the episode from it (γ^steps-to-go · success; deterministic): the *best*
    siblings are those of the highest value (often several, e.g. two options both still to choose). Per kind of
    state: how often the PRM's first pick is a best one (against chance), the value it loses against the best
    (regret), and the older expert-action figures. States where no sibling can still succeed are left out.
    (Held-out pairwise accuracy compares steps across states; this compares siblings, which is what a beam does.)
    """
    path = work / f"siblings_{prm_name}{'' if split == 'test' else '_' + split}.json"
    if path.exists():
        return json.loads(path.read_text())
    from envs.contract import restore_env
    from prm.model import PRMModel
    from prm.policy import Sample, apply, rollout, start
    from prm.scoring import PRMScorer
    from prm.search import score_nodes

    scorer = PRMScorer(PRMModel.from_pretrained(work / f"prm_{prm_name}" / "final"), batch_size=16)
    env = make_env(split, args)
    sampler = make_sampler(args, epsilon=0.3)
    expert = make_sampler(args, epsilon=0.0)
    rows: dict[str, dict[str, list[float]]] = {}
    if split == "train":  # goals the PRM trained on (stage_data's draw), walked by other ε-paths: fit, not transfer
        ids = np.random.default_rng(args.seed).permutation(n_tasks(env)).tolist()[: min(goals, args.td_goals)]
    else:
        ids = list(range(min(goals, n_tasks(env))))
    for g in ids:
        root = start(env, **at_task(args, g))
        visited = [root]
        rollout(env, sampler, root, seed=g, max_steps=args.max_steps, path=visited)
        for node in visited[:-1]:
            acts = list(node.info.get("available_actions") or [])
            if node.done or len(acts) < 2:
                continue
            restore_env(env, node.snapshot)
            exp_act = env.unwrapped.expert_action()
            kids = [apply(env, node, Sample(a, "(sibling)"), args.max_steps) for a in acts]
            score_nodes(scorer, kids)
            sc = np.array([k.score for k in kids])
            q = []
            for k in kids:  # the sibling's value to a policy that acts well afterwards
                end, _ = rollout(env, expert, k, seed=0, max_steps=args.max_steps)
                q.append(args.gamma ** (len(end.steps) - len(k.steps)) * float(solved(end)))
            qa = np.array(q)
            if qa.max() <= 0:
                continue
            best = qa >= qa.max() - 1e-9
            top = int(np.argmax(sc))
            page = str(node.info.get("page", "state"))
            kind = f"{page}: ending is best" if any(best[i] and kids[i].terminated for i in range(len(kids))) else page
            r = rows.setdefault(kind, {k: [] for k in ("top_best", "chance", "regret", "beats", "exp_top1")})
            r["top_best"].append(float(best[top]))
            r["chance"].append(float(best.mean()))
            r["regret"].append(float(qa.max() - qa[top]))
            if exp_act in acts:
                e = acts.index(exp_act)
                r["beats"].append(float(np.mean(sc[e] > np.delete(sc, e))))
                r["exp_top1"].append(float(sc[e] >= sc.max()))
    out = {
        k: {
            "states": len(v["top_best"]),
            "prm_first_is_best": float(np.mean(v["top_best"])),
            "chance_first_is_best": float(np.mean(v["chance"])),
            "regret": float(np.mean(v["regret"])),
            "expert_beats_share": float(np.mean(v["beats"])) if v["beats"] else float("nan"),
            "expert_top1": float(np.mean(v["exp_top1"])) if v["exp_top1"] else float("nan"),
        }
        for k, v in rows.items()
    }
    path.write_text(json.dumps(out, indent=2))
    return out


# ---------------------------------------------------------------------------------------------- report
def by_goal(search: dict) -> dict:
    """The same results with one row per goal instead of per seed (the LLM runs one seed over many goals)."""
    out = {}
    for key, v in search.items():
        if not isinstance(v, dict) or "per_seed" not in v:
            continue
        rows = []
        for r in v["per_seed"]:
            for i in range(len(r["goal_success"])):
                rows.append({k.removeprefix("goal_"): r[k][i] for k in r if k.startswith("goal_")})
        out[key] = v | {"per_seed": rows}
    return out


def paired(res: dict, base: dict, success: str, score: str) -> dict:
    """`res` minus `base` over the same seeds (or goals), success and score: the rows every comparison reports."""
    pairs = list(zip(res["per_seed"], base["per_seed"]))
    return {
        "success": ci95([x["success"] - y[success] for x, y in pairs]),
        "score": ci95([x["score"] - y[score] for x, y in pairs]),
    }


def summarize_search(search: dict, budgets: list[int]) -> dict:
    rows = {}
    greedy = search.get("greedy@1")
    if greedy:
        rows["greedy (temperature 0)"] = {
            "success": ci95([r["success"] for r in greedy["per_seed"]]),
            "score": ci95([r["score"] for r in greedy["per_seed"]]),
            "samples": greedy["samples_per_episode"],
        }
    single = search.get("single@1")  # one policy sample per episode, no search
    if single:
        rows["one sample (no search)"] = {
            "success": ci95([r["success"] for r in single["per_seed"]]),
            "score": ci95([r["score"] for r in single["per_seed"]]),
            "samples": single["samples_per_episode"],
        }
    for b in budgets:
        bon = search.get(f"bon@{b}")
        if bon:
            rows[f"BoN-random@{b}"] = {
                "success": ci95([r["random_success"] for r in bon["per_seed"]]),
                "score": ci95([r["random_score"] for r in bon["per_seed"]]),
            }
            rows[f"BoN-PRM@{b}"] = {
                "success": ci95([r["success"] for r in bon["per_seed"]]),
                "score": ci95([r["score"] for r in bon["per_seed"]]),
                "samples": bon["samples_per_episode"],
            }
            rows[f"BoN-oracle@{b}"] = {"success": ci95([r["oracle_success"] for r in bon["per_seed"]])}
            # paired over seeds (the PRM and the random pick choose among the very same samples)
            rows[f"BoN-PRM minus random@{b} (paired)"] = {
                "success": ci95([r["success"] - r["random_success"] for r in bon["per_seed"]]),
                "score": ci95([r["score"] - r["random_score"] for r in bon["per_seed"]]),
            }
            if single:
                rows[f"BoN-PRM@{b} minus one sample (paired)"] = paired(bon, single, "success", "score")
        rr = search.get(f"rerank@{b}")
        if rr:
            rows[f"rerank-PRM@{b} (1x{b})"] = {
                "success": ci95([r["success"] for r in rr["per_seed"]]),
                "score": ci95([r["score"] for r in rr["per_seed"]]),
                "samples": rr["samples_per_episode"],
            }
        beam = search.get(f"beam@{b}")
        if beam:
            n_, m_ = BEAMS[b]
            rows[f"beam-PRM@{b} ({n_}x{m_})"] = {
                "success": ci95([r["success"] for r in beam["per_seed"]]),
                "score": ci95([r["score"] for r in beam["per_seed"]]),
                "samples": beam["samples_per_episode"],
            }
            # paired (same seeds and goals): beam against the unguided pick at the same budget, and one sample
            if bon:
                rows[f"beam-PRM minus BoN-random@{b} (paired)"] = paired(beam, bon, "random_success", "random_score")
            if single:
                rows[f"beam-PRM@{b} minus one sample (paired)"] = paired(beam, single, "success", "score")
        for key in sorted(k for k in search if k.endswith(f"@{b}")):  # the policy-prior methods and their baselines
            method = key.split("@")[0]
            if method in ("bon", "beam", "rerank", "single", "greedy"):
                continue
            res = search[key]
            shape = f"1x{b}" if method.startswith(("rerank", "vote")) else "x".join(map(str, BEAMS[b]))
            rows[f"{method}@{b} ({shape})"] = {
                "success": ci95([r["success"] for r in res["per_seed"]]),
                "score": ci95([r["score"] for r in res["per_seed"]]),
                "samples": res["samples_per_episode"],
            }
            against = [("BoN-random", bon, "random_"), ("one sample", single, "")]
            if method.startswith(("beamp", "rerankp")):  # does the PRM add anything to the policy's own vote?
                against.append(("vote", search.get(f"vote@{b}"), ""))
            for name, base, field in against:
                if base:
                    rows[f"{method}@{b} minus {name} (paired)"] = paired(res, base, field + "success", field + "score")
    return rows


def fmt(ci: tuple[float, float]) -> str:
    return f"{ci[0]:.3f} ± {ci[1]:.3f}"


def plot(
    summary: dict,
    budgets: list[int],
    path: Path,
    title: str = "WebShop",
    policy: str = "scripted expert with epsilon noise",
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    extra = sorted({m.group(1) for k in summary if (m := re.match(r"((?:beamp|rerankp)[0-9.]+|vote)@\d+ \(", k))})
    for label, prefix, suffix in (
        ("Best-of-N random", "BoN-random@", ""),
        ("Best-of-N PRM (TD)", "BoN-PRM@", ""),
        ("beam PRM (TD)", "beam-PRM@", None),
        ("per-step rerank PRM (TD)", "rerank-PRM@", None),
        *(
            (
                f"{split_method(m)[0]} PRM + {split_method(m)[1]} log share"
                if m != "vote"
                else "per-step vote (no PRM)",
                f"{m}@",
                None,
            )
            for m in extra
        ),
        ("Best-of-N oracle", "BoN-oracle@", ""),
    ):
        xs, ys, es = [], [], []
        for b in budgets:
            key = next(
                (k for k in summary if k.startswith(f"{prefix}{b}") and (suffix is None or k == f"{prefix}{b}")), None
            )
            if key:
                xs.append(b)
                ys.append(summary[key]["success"][0])
                es.append(summary[key]["success"][1])
        if xs:
            ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=label, ls="--" if "oracle" in label else "-")
    g = summary.get("one sample (no search)")
    if g:
        ax.axhline(g["success"][0], color="gray", ls=":", label="one policy sample (no search)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("policy samples per decision (N)")
    ax.set_ylabel("success rate (held-out test goals)")
    ax.set_title(f"{title}, {policy}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--work",
        default=str(Path(os.environ.get("AGENTSIM_CACHE", Path.home() / ".cache" / "agentsim")) / "prm_experiment"),
    )
    p.add_argument("--env", choices=sorted(ENVS), default="webshop")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--results-name", default="", help="bench/results/<name>.json (default: prm[_<env>][_quick])")
    p.add_argument("--products", type=int, default=2000)
    p.add_argument("--epsilon", type=float, default=0.5)
    p.add_argument("--max-steps", type=int, default=15)
    p.add_argument(
        "--observation-mode",
        default="text_rich",
        choices=["text", "text_rich"],
        help="text_rich marks the clicked options (text, WebShop's simple mode, does not show them)",
    )
    p.add_argument(
        "--gamma",
        type=float,
        default=0.9,
        help="discount of the TD targets (and the MC labels): a wasted step costs promise",
    )
    p.add_argument("--td-goals", type=int, default=160)
    p.add_argument("--per-goal", type=int, default=2, help="TD trajectories per goal at each training epsilon")
    p.add_argument(
        "--train-epsilons",
        default="0.2,0.5,0.8",
        help="policies that collect the TD training set (a value twice = twice the trajectories)",
    )
    p.add_argument(
        "--branches",
        type=int,
        default=4,
        help="per TD goal: trajectories that branch off a low-noise path with a random action (0 = none)",
    )
    p.add_argument(
        "--ending-branches",
        type=int,
        default=2,
        help="per TD goal: an ε-policy path plus this many one-step trajectories that end the episode early "
        "at one of its states (0 = none)",
    )
    p.add_argument(
        "--sibling-states",
        type=int,
        default=0,
        help="per TD goal: states of a low-noise path where every listed action is stepped and continued (0 = none)",
    )
    p.add_argument("--sibling-max", type=int, default=8, help="at most this many siblings per state")
    p.add_argument(
        "--branch-training",
        choices=("whole", "at_branch"),
        default="whole",
        help="at_branch: train a branch/sibling/ending trajectory only where it left its path (one window each)",
    )
    p.add_argument(
        "--rank-among",
        choices=("siblings", "branches"),
        default="siblings",
        help="branches: the ranking loss compares only branch steps (labelled by the policy that continued them)",
    )
    p.add_argument("--max-task-batch", type=int, default=24, help="trajectories of one task per micro-batch")
    p.add_argument(
        "--sibling-goals", type=int, default=15, help="test tasks the sibling-ranking diagnostic walks through"
    )
    p.add_argument(
        "--sibling-train-goals",
        type=int,
        default=0,
        help="also run the sibling diagnostic on this many of the PRM's training tasks (does it fit, or not transfer?)",
    )
    p.add_argument("--sibling-epsilon", type=float, default=0.1, help="noise of the policy that continues each sibling")
    p.add_argument(
        "--rank-weight",
        type=float,
        default=0.0,
        help="weight of the sibling ranking loss (> 0 also batches each task's trajectories together)",
    )
    p.add_argument("--skip-mc", action="store_true", help="skip the MC-label baseline (its data, PRM and search)")
    p.add_argument("--mc-k", type=int, default=2)
    p.add_argument("--heldout-goals", type=int, default=16)
    p.add_argument("--heldout-mc-k", type=int, default=8)
    p.add_argument("--search-goals", type=int, default=15)
    p.add_argument("--seeds", type=int, default=6)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--max-length", type=int, default=384)
    p.add_argument("--obs-tokens", type=int, default=100)
    p.add_argument("--freeze-layers", type=int, default=3)
    p.add_argument("--lr", type=float, default=5e-5, help="learning rate of the backbone (the head's is 1e-3)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--outcome", choices=["reward", "success"], default="success")
    p.add_argument("--budgets", default="2,4,8,16")
    p.add_argument(
        "--methods",
        default="bon,beam,rerank",
        help="search methods run at every budget: bon, beam, rerank, vote (per-step majority of B draws, no PRM), "
        "beamp<w> / rerankp<w> (PRM + w * log share of the draws)",
    )
    p.add_argument(
        "--search-split",
        choices=["test", "train"],
        default="test",
        help="goals the search runs on (train: training-split goals the PRM did not train on, to choose a setting "
        "such as the prior weight without the test goals)",
    )
    p.add_argument(
        "--llm-goals", type=int, default=12, help="also run the embedded LLM as the policy on this many goals"
    )
    p.add_argument("--llm-n", type=int, default=4)
    p.add_argument("--llm-methods", default="bon,beam,rerank", help="search methods of the LLM run (as --methods)")
    p.add_argument(
        "--only-llm",
        action="store_true",
        help="after data and training (cached), run only the LLM-policy search (beside a scripted run on the same --work)",
    )
    p.add_argument("--llm-adapter", default="agentsim-sft", help="LoRA of the embedded policy ('' = the base model)")
    args = p.parse_args()
    if args.quick:
        args.td_goals, args.per_goal, args.heldout_goals, args.search_goals, args.seeds, args.epochs = 6, 2, 4, 4, 2, 1
        args.heldout_mc_k, args.budgets, args.branches, args.llm_goals = 2, "2,4", 2, min(args.llm_goals, 1)
        args.ending_branches = 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    work = Path(args.work) / args.env / ("quick" if args.quick else "full")
    work.mkdir(parents=True, exist_ok=True)
    budgets = [int(b) for b in args.budgets.split(",")]
    console = Console()
    t_all = time.perf_counter()

    result: dict = {"config": vars(args), "date": time.strftime("%Y-%m-%d")}
    result["targets_1m"] = stage_targets_bench()
    log.info("targets: %s", result["targets_1m"])
    result["data"] = stage_data(args, work)
    log.info("data: %s", result["data"])
    result["train_td"] = stage_train(args, work, "td", "td")
    if not args.skip_mc:
        result["train_mc"] = stage_train(args, work, "mc", "mc")
    mc_budgets = [b for b in budgets if b == 8] or budgets[-1:]
    if not args.only_llm:
        result["throughput"] = stage_throughput(args, work)
        log.info("throughput: %s", result["throughput"])
        stage_search(args, work, "td", budgets, args.methods.split(","))
        result["search_td"] = stage_search(args, work, "td", [1], ["single"])  # (cached) + one policy sample
        if not args.skip_mc:
            # TD vs MC on the same searches: Best-of-N and the run's beams (the plain one, and any with a prior)
            beams = [m for m in args.methods.split(",") if m.startswith("beam")] or ["beam"]
            result["search_mc"] = stage_search(args, work, "mc", mc_budgets, ["bon", *beams])
        result["siblings_td"] = stage_siblings(args, work, "td", args.sibling_goals)
        if args.sibling_train_goals:
            result["siblings_td_train_goals"] = stage_siblings(
                args, work, "td", args.sibling_train_goals, split="train"
            )
        if not args.skip_mc:
            result["siblings_mc"] = stage_siblings(args, work, "mc", args.sibling_goals)
    if args.llm_goals:  # one sample first: the baseline every paired row needs, should the run be cut short
        stage_search(args, work, "td", [1], ["single"], policy="llm")
        stage_search(args, work, "td", [args.llm_n], args.llm_methods.split(","), policy="llm")
        result["llm"] = stage_search(args, work, "td", [1], ["greedy", "single"], policy="llm")
        llm_summary = summarize_search(by_goal(result["llm"]), [args.llm_n])
        result["summary_llm"] = {
            k: {kk: list(vv) if isinstance(vv, tuple) else vv for kk, vv in v.items()} for k, v in llm_summary.items()
        }
    summary = summarize_search(result.get("search_td", {}), budgets)
    result["summary_td"] = {
        k: {kk: list(vv) if isinstance(vv, tuple) else vv for kk, vv in v.items()} for k, v in summary.items()
    }
    summary_mc = summarize_search(result.get("search_mc", {}), mc_budgets)
    result["summary_mc"] = {
        k: {kk: list(vv) if isinstance(vv, tuple) else vv for kk, vv in v.items()} for k, v in summary_mc.items()
    }
    result["seconds"] = time.perf_counter() - t_all

    t = Table(
        title=f"{TITLES[args.env]} held-out test tasks: success rate, mean ± 95% CI over {args.seeds} seeds "
        f"({args.search_goals} goals each)"
    )
    for c in ("method", "success", "score", "samples/episode"):
        t.add_column(c, justify="right" if c != "method" else "left")
    for k, v in summary.items():
        t.add_row(
            k,
            fmt(v["success"]),
            fmt(v["score"]) if "score" in v else "-",
            f"{v['samples']:.1f}" if "samples" in v else "-",
        )
    console.print(t)
    t2 = Table(title="TD/GAE vs MC labels at an equal budget of sampled steps")
    for c in (
        "labels",
        "trajectories",
        "sampled steps",
        "held-out MSE vs MC",
        "pairwise acc",
        "spearman",
        "success AUC",
        "BoN-PRM@8",
        "beam-PRM@8",
        "train s/epoch",
    ):
        t2.add_column(c, justify="right")
    for name, summ in (("td", summary), ("mc", summary_mc)):
        if f"train_{name}" not in result:
            continue
        h = result[f"train_{name}"]["epochs"][-1]
        d = result["data"][name]
        t2.add_row(
            name,
            str(d["trajectories"]),
            str(d["sampled_steps"]),
            f"{h.get('mse_vs_mc', float('nan')):.4f}",
            f"{h.get('pairwise_acc', float('nan')):.3f}",
            f"{h.get('spearman', float('nan')):.3f}",
            f"{h.get('success_auc', float('nan')):.3f}",
            fmt(summ["BoN-PRM@8"]["success"]) if "BoN-PRM@8" in summ else "-",
            fmt(next(v["success"] for k, v in summ.items() if k.startswith("beam-PRM@8")))
            if any(k.startswith("beam-PRM@8") for k in summ)
            else "-",
            f"{np.mean([e['train_seconds'] for e in result[f'train_{name}']['epochs'] if 'train_seconds' in e]):.0f}",
        )
    console.print(t2)
    t3 = Table(
        title="Sibling ranking (what beam search needs): is the PRM's first pick among a state's best listed actions?"
    )
    for c in ("PRM", "state", "states", "PRM's first is a best", "by chance", "regret", "expert's outranks share"):
        t3.add_column(c, justify="right" if c not in ("PRM", "state") else "left")
    for name in ("td", "mc"):
        for kind, v in sorted(result.get(f"siblings_{name}", {}).items()):
            t3.add_row(
                name,
                kind,
                str(v["states"]),
                f"{v['prm_first_is_best']:.3f}",
                f"{v['chance_first_is_best']:.3f}",
                f"{v['regret']:.3f}",
                f"{v['expert_beats_share']:.3f}",
            )
    console.print(t3)
    th = result.get("throughput")
    if th:
        console.print(
            f"PRM scoring: {th['batched_one_pass_steps_per_s']:.1f} steps/s batched one-pass vs "
            f"{th['per_step_unbatched_steps_per_s']:.1f} steps/s one-by-one; targets for {result['targets_1m']['steps']:,}"
            f" steps: paper {result['targets_1m']['paper_seconds_median'] * 1e3:.0f} ms, "
            f"sarsa {result['targets_1m']['sarsa_seconds_median'] * 1e3:.0f} ms"
        )
    if "llm" in result:
        t4 = Table(
            title=f"{TITLES[args.env]}, the embedded LLM as the policy: mean ± 95% CI over {args.llm_goals} "
            "held-out tasks (one seed; paired rows per task)"
        )
        for c in ("method", "success", "score", "samples/episode"):
            t4.add_column(c, justify="right" if c != "method" else "left")
        for k, v in result["summary_llm"].items():
            t4.add_row(
                k,
                fmt(v["success"]),
                fmt(v["score"]) if "score" in v else "-",
                f"{v['samples']:.1f}" if "samples" in v else "-",
            )
        console.print(t4)
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = args.results_name or (
        ("prm" if args.env == "webshop" else f"prm_{args.env}") + ("_quick" if args.quick else "")
    )
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2, default=str))
    if summary:
        plot(summary, budgets, RESULTS / f"{name}_search.png", TITLES[args.env])
    if "llm" in result:
        plot(
            llm_summary,
            [args.llm_n],
            RESULTS / f"{name}_llm.png",
            TITLES[args.env],
            policy=f"the embedded LLM ({args.llm_adapter or 'base model'}) as the policy",
        )
    console.print(f"wrote {RESULTS / f'{name}.json'} and its plots in {result['seconds']:.0f} s")


if __name__ == "__main__":
    main()
