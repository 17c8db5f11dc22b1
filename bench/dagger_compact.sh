#!/usr/bin/env bash
# DAgger for the compact-turn policy (docs/policy.md "DAgger"): the student (the shipped agentsim-compact, compact
# turns) plays unseen WebShop training goals, the teacher (agentsim-evol1, full turns) names its action in every
# state the student visited, and the student trains on its own states: its action where the teacher agrees, the
# teacher's where not. Usage: bash bench/dagger_compact.sh [WORKDIR]   (each step is skipped when done)
set -euo pipefail
W=${1:-runs/dagger}
mkdir -p "$W"
EXPLORE=${EXPLORE:-120}
UPDATES=${UPDATES:-40}
EVAL_EVERY=${EVAL_EVERY:-20}
STUDENT=${STUDENT:-agentsim-compact}
SEED=${SEED:-8000}  # exploration goals: training seeds SEED..SEED+EXPLORE-1
EXTRA_DATA=${EXTRA_DATA:-}  # a DAgger round aggregates: earlier rounds' relabeled stores, comma-separated
# 1. the student explores (one episode in flight: one in-process model)
python -m agents.collect env=webshop env.kwargs.split=train episodes="$EXPLORE" seed="$SEED" concurrency=1 \
  brain.adapter="$STUDENT" agent.perception.turn_style=compact out="$W/explore-student"
# 2. the teacher labels every visited state (it reads the full turns it was trained on)
[ -s "$W/relabeled/trajectories.jsonl" ] || \
  python -m agents.policy.relabel "$W/explore-student" "$W/relabeled" --teacher agentsim-evol1 --turn-style full
# 3. compact expert episodes on unseen training goals, as in distill_compact.sh (fault trees with the tree kept)
python -m agents.collect env=webshop brain=scripted episodes=16 seed=7000 env.kwargs.split=train \
  agent.perception.turn_style=compact out="$W/expert-ws-compact"
python -m agents.collect env=faulttree brain=scripted episodes=8 seed=7000 env.kwargs.split=train \
  agent.perception.turn_style=compact agent.perception.budget_tokens=3072 out="$W/expert-ft-compact"
# 4. continue the student on all of it: every relabeled episode counts, whatever its reward
[ -d "$W/init" ] || python -m agents.policy.peft_from_gguf "$STUDENT" "$W/init"
[ -s "$W/train/adapter.gguf" ] || \
  python -m agents.train data="[$W/relabeled,$W/expert-ws-compact,$W/expert-ft-compact${EXTRA_DATA:+,$EXTRA_DATA}]" \
    init_adapter="$W/init" success_only=false max_updates="$UPDATES" eval_every="$EVAL_EVERY" lr=2e-4 out="$W/train"
echo "adapter: $W/train/adapter.gguf"
