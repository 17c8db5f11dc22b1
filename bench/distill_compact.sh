#!/usr/bin/env bash
# Rebuild the compact-turn policy by distilling agentsim-evol1 (docs/policy.md "Distilling agentsim-evol1"):
# evol1 explores WebShop training goals on full turns, episodes with reward >= 0.5 are replayed as compact turns,
# and with a few compact expert episodes they continue the shipped agentsim-compact.
# Usage: bash bench/distill_compact.sh [WORKDIR]   (36 min on 2 cores; each step is skipped when done)
set -euo pipefail
W=${1:-runs/distill}
mkdir -p "$W"
EXPLORE=${EXPLORE:-240}
UPDATES=${UPDATES:-16}
# 1. explore: the full-turn WebShop default plays unseen training goals (one episode in flight: one in-process model)
python -m agents.collect env=webshop env.kwargs.split=train episodes="$EXPLORE" seed=6000 concurrency=1 \
  brain.adapter=agentsim-evol1 agent.perception.turn_style=full out="$W/explore-evol1"
# 2. replay the episodes that reached 0.5 as compact turns (an episode that does not reproduce is refused)
[ -s "$W/explore-compact/trajectories.jsonl" ] || \
  python -m agents.policy.rerender "$W/explore-evol1" "$W/explore-compact" --min-reward 0.5
# 3. compact expert episodes on unseen training goals (fault trees with the tree kept: budget 3072)
python -m agents.collect env=webshop brain=scripted episodes=16 seed=7000 env.kwargs.split=train \
  agent.perception.turn_style=compact out="$W/expert-ws-compact"
python -m agents.collect env=faulttree brain=scripted episodes=8 seed=7000 env.kwargs.split=train \
  agent.perception.turn_style=compact agent.perception.budget_tokens=3072 out="$W/expert-ft-compact"
# 4. continue the shipped compact adapter on all of it
[ -d "$W/init" ] || python -m agents.policy.peft_from_gguf agentsim-compact "$W/init"
[ -s "$W/train/adapter.gguf" ] || \
  python -m agents.train data="[$W/explore-compact,$W/expert-ws-compact,$W/expert-ft-compact]" \
    init_adapter="$W/init" success_only=false min_reward=0.5 max_updates="$UPDATES" eval_every=8 lr=2e-4 out="$W/train"
echo "adapter: $W/train/adapter.gguf"
