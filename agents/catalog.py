"""The shipped policies: which adapter and which prompt each env's default policy uses (`brain.adapter=auto`,
`agent.perception.*` left at auto), as measured on held-out goals (docs/policy.md).

One catalog, read by one resolver (`agents.resolve`): a new measurement changes a line here, nothing else.
The files themselves (which adapters ship, for which base model, on which turns they were trained) are
`agents.brains.model_files`'s.
"""

from __future__ import annotations

import logging
from typing import Any

from agents.brains.model_files import ADAPTER_TURN_STYLES, AUTO, KNOWN_ADAPTERS

log = logging.getLogger(__name__)

DEFAULT_ADAPTER = "agentsim-sft"
# `brain.adapter=auto`: the shipped adapter measured best on an env's held-out goals (docs/policy.md, Results);
# an env not listed gets DEFAULT_ADAPTER
ENV_ADAPTERS = {"webshop": "agentsim-evol1"}


# `brain.adapter=auto` under `agent.perception.turn_style=compact`: the adapter trained on compact turns
COMPACT_ADAPTER = "agentsim-compact"
# ... per env where one was measured better there: WebShop's agentsim-choice (bench/oracle_dagger.sh with LISTWISE=1,
# docs/policy.md "The ranking itself"; 200 held-out goals paired: +17.2 +- 4.0 score over agentsim-oracle, +14.0 +- 5.4
# points success)
ENV_COMPACT_ADAPTERS = {"webshop": "agentsim-choice"}
# `brain.adapter=auto` with `agent.perception.*` left at auto: the prompt of the policy measured best on an env's
# held-out goals (docs/policy.md, Results); an env not listed gets full turns in 2,048 tokens and ENV_ADAPTERS'
# WebShop: the DAgger-trained agentsim-compact on compact turns ties agentsim-evol1 on full turns (+0.1 +- 4.1 score,
# 100 paired goals) at 2.3x less model time an episode, and reads its ` [SEP] ` fields as lines as well (+0.5 +- 3.1,
# 17% fewer tokens a step); fault trees keep full turns (compact ones take more steps)
ENV_PERCEPTION: dict[str, dict[str, Any]] = {
    "webshop": {"turn_style": "compact", "budget_tokens": 2048, "field_separator": " [SEP] "}
}


# `brain.temperature=auto`: the temperature each shipped adapter was measured best at on held-out goals; others
# sample at SAMPLING_TEMPERATURE. agentsim-choice at argmax: 100 WebShop goals side by side (docs/policy.md,
# "Argmax"), where older policies looped (docs/policy.md, temperature 0.3 against 0.7)
SAMPLING_TEMPERATURE = 0.7
ADAPTER_TEMPERATURES = {"agentsim-choice": 0.0}


def temperature_for(temperature: float | str, adapter: str | None) -> float:
    """Resolve `brain.temperature=auto` for the adapter the brain will serve (already resolved); a number passes."""
    if temperature != AUTO:
        return float(temperature)
    return ADAPTER_TEMPERATURES.get(adapter or "", SAMPLING_TEMPERATURE)


def perception_for(adapter: str | None, env: str | None, turn_style: str = AUTO) -> dict[str, Any]:
    """The perception keys (`turn_style`, `budget_tokens`, `field_separator`) a brain's adapter was measured with in `env`:
    `auto` (and turns not chosen otherwise) = the env's default policy's (ENV_PERCEPTION); a shipped adapter =
    the turns it was trained on; anything else (a LoRA path, no adapter, another brain) = nothing preferred."""
    if adapter == AUTO:
        preferred = ENV_PERCEPTION.get(env or "", {})
        if turn_style in (AUTO, preferred.get("turn_style")):
            return dict(preferred)
        return {}
    if adapter in KNOWN_ADAPTERS:
        return {"turn_style": ADAPTER_TURN_STYLES.get(adapter, "full")}
    return {}


def adapter_for_env(adapter: str | None, env: str | None, turn_style: str = "full") -> str | None:
    """Resolve `brain.adapter=auto` for the env the brain will act in (its short name) and the prompt turns it
    will read (`agent.perception.turn_style`; `auto` = the env's default, ENV_PERCEPTION); others pass through."""
    if adapter != AUTO:
        return adapter
    if turn_style == AUTO:
        turn_style = perception_for(AUTO, env).get("turn_style", "full")
    if turn_style == "compact":
        return ENV_COMPACT_ADAPTERS.get(env or "", COMPACT_ADAPTER)
    return ENV_ADAPTERS.get(env or "", DEFAULT_ADAPTER)


def warn_turn_style_mismatch(adapter: str | None, turn_style: str) -> bool:
    """Warn (and say True) when a shipped adapter will read prompt turns other than those it was trained on."""
    trained = ADAPTER_TURN_STYLES.get(adapter or "", "full")
    if adapter not in KNOWN_ADAPTERS or trained == turn_style:
        return False
    log.warning(
        "adapter %s was trained on %s turns but the agent reads %s turns (agent.perception.turn_style): "
        "it will pick worse actions; use brain.adapter=auto",
        adapter,
        trained,
        turn_style,
    )
    return True
