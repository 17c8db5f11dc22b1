#!/usr/bin/env bash
# The WebShop default policy agentsim-oracle (docs/policy.md "Oracle data among the offered candidates"): the
# scripted expert, restricted to the candidates the agent is offered (brain.within_candidates: on the search page it
# picks the offered query with the best first page, since its own query uses the goal's hidden keywords),
# demonstrates unseen training goals in the default's prompts; agentsim-compact continues on them (DAGGER=0, what
# shipped: 80 updates, 24 min of CPU on 2 cores). DAGGER=1 adds oracle DAgger: the student plays, the expert labels
# every state it reached (measured worse: it learns to bounce between items, docs/policy.md).
# agentsim-choice, the WebShop default since (docs/policy.md "The ranking itself"): from agentsim-oracle, 1,200 more
# demonstrations and the listwise loss, stopped after update 60 of 110:
#   STUDENT=agentsim-oracle DEMOS=1200 DEMO_SEED=21000 DEMOS_USED=1200 LISTWISE=1 UPDATES=110 EVAL_EVERY=20 \
#     bash bench/oracle_dagger.sh runs/choice
# Usage: bash bench/oracle_dagger.sh [WORKDIR]   (each step is skipped when done; a cut run resumes)
set -euo pipefail
W=${1:-runs/oracle-dagger}
mkdir -p "$W"
EXPLORE=${EXPLORE:-160}    # student episodes on training goals (seeds EXPLORE_SEED..)
EXPLORE_SEED=${EXPLORE_SEED:-9000}
DEMOS=${DEMOS:-600}        # expert episodes on other training goals (seeds 20000..): ~1 min of CPU
DEMOS_USED=${DEMOS_USED:-400}
DEMO_SEED=${DEMO_SEED:-20000}  # first seed of the expert episodes
LISTWISE=${LISTWISE:-0}    # listwise_weight: the ranked-choice loss beside SFT (docs/policy.md, trainer levers)
EVAL_EVERY=${EVAL_EVERY:-20}
DAGGER=${DAGGER:-0}
UPDATES=${UPDATES:-80}     # optimiser updates of 4 sequences
STUDENT=${STUDENT:-agentsim-compact}
# the default's prompts (brain.adapter=auto on WebShop): compact turns, fields on lines
PERCEPTION=(agent.perception.turn_style=compact agent.perception.budget_tokens=2048 "agent.perception.field_separator=' [SEP] '")
DATA="$W/expert"
if [ "$DAGGER" = 1 ]; then
  # 1. the student plays unseen training goals as the main job does (brain.adapter=auto)
  [ -s "$W/explore/trajectories.jsonl" ] && [ "$(wc -l < "$W/explore/trajectories.jsonl")" -ge "$EXPLORE" ] || \
    python -m agents.collect env=webshop env.kwargs.split=train episodes="$EXPLORE" seed="$EXPLORE_SEED" \
      concurrency=1 resume=true out="$W/explore"
  # 2. the expert labels every state the student visited, choosing among the student's candidates
  [ -s "$W/relabeled/trajectories.jsonl" ] || \
    python -m agents.policy.relabel "$W/explore" "$W/relabeled" --teacher scripted
  DATA="$W/relabeled,$W/expert"
fi
# 3. expert demonstrations in the default's prompts, actions among the offered candidates
[ -s "$W/expert/trajectories.jsonl" ] || \
  python -m agents.collect env=webshop brain=scripted brain.within_candidates=true episodes="$DEMOS" seed="$DEMO_SEED" \
    env.kwargs.split=train "${PERCEPTION[@]}" out="$W/expert"
# 4. continue the shipped student: every episode counts, whatever its reward
[ -d "$W/init" ] || python -m agents.policy.peft_from_gguf "$STUDENT" "$W/init"
[ -s "$W/train/adapter.gguf" ] || \
  python -m agents.train data="[$DATA]" max_episodes="$DEMOS_USED" init_adapter="$W/init" \
    success_only=false max_updates="$UPDATES" eval_every="$EVAL_EVERY" lr=2e-4 \
    listwise_weight="$LISTWISE" out="$W/train"
echo "adapter: $W/train/adapter.gguf"
# 5. held-out, side by side with the shipped default (WebShop test split, seeds 0..N-1, interleaved):
#    python bench/policy_heldout.py --policy default=agentsim-compact --policy new=$W/train/adapter.gguf \
#      --compact default --compact new --perception "default:field_separator= [SEP] " \
#      --perception "new:field_separator= [SEP] " --webshop 200 --faulttree 0 --out $W/heldout.json
