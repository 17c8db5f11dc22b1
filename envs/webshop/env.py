"""`agentsim/WebShop-v0`: the gymnasium view of the shop state machine.

Construct with zero arguments for a 10k-product synthetic shop (built in seconds, cached under
`$AGENTSIM_CACHE` or `~/.cache/agentsim`), or point `catalog_path` (+ `attributes_path`,
`human_goals_path`) at the original WebShop files. Every instance with the same catalog
options shares one catalog and one search index in the process.

Invalid actions change nothing but the `steps` counter in `info`. Step limits come from the
registration (`max_episode_steps=20`, applied by `gymnasium.make` through `TimeLimit`); the
`max_steps` argument is a deprecated alias kept for direct constructions (see `WebShopEnv`).
After the purchase every step is refused with `terminated=True` (the contract's after-end rule).
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
from pydantic import BaseModel, ConfigDict, Field

from envs.contract import MAX_ACTION_CHARS, SLOT, episode_over_message, invalid_action_message
from envs.registry import register_env
from envs.spaces import FreeText

from .actions import Parsed, parse_action
from .catalog import SPLITS, Split
from .expert import best_query, expert_action, settle_for
from .render import MODES, ObservationMode, View, compact_text_rich, render
from .resources import CatalogSpec, get_shop
from .reward import RewardBreakdown, compute_reward
from .search import Backend
from .serving import SERVER
from .shop import Page, ShopState, action_templates, available_actions, transition
from .types import Goal

log = logging.getLogger(__name__)

MAX_OBS_CHARS = 200_000
# words of a shopping task that name buying and paying, not the product: slot filling keeps them out of search[...]
SLOT_STOPWORDS = (
    "buy",
    "cost",
    "help",  # "can you help me find ..." / "search for ...": task verbs, not product words (search[search] looped)
    "costing",
    "costs",
    "dollar",
    "dollars",
    "price",
    "priced",
    "purchase",
    "search",
    "shop",
    "shopping",
    "show",
)


class WebShopConfig(BaseModel):
    """Constructor options, validated once at the boundary."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_products: int = Field(10_000, ge=10, le=5_000_000)
    catalog_seed: int = 0
    split: Split = "train"
    observation_mode: ObservationMode = "text"
    max_steps: int | None = Field(None, ge=1)  # deprecated: use gymnasium.make(..., max_episode_steps=)
    catalog_path: Path | None = None
    attributes_path: Path | None = None
    human_goals_path: Path | None = None
    search_backend: Backend | None = None

    def catalog_spec(self) -> CatalogSpec:
        return CatalogSpec(
            num_products=self.num_products,
            catalog_seed=self.catalog_seed,
            catalog_path=self.catalog_path,
            attributes_path=self.attributes_path,
            human_goals_path=self.human_goals_path,
            search_backend=self.search_backend,
        )


@dataclass(frozen=True)
class Snapshot:
    state: ShopState
    goal_index: int
    steps: int
    breakdown: RewardBreakdown | None


@register_env("webshop", id="agentsim/WebShop-v0", max_episode_steps=15, server=SERVER)
class WebShopEnv(gym.Env):
    metadata = {"render_modes": ["ansi"], "render_fps": 4}
    # `envs.contract.CompactsObservations`: a text_rich page in fewer tokens (the PRM reads it so)
    compact_observation = staticmethod(compact_text_rich)

    def __init__(
        self,
        *,
        num_products: int = 10_000,
        catalog_seed: int = 0,
        split: Split = "train",
        observation_mode: ObservationMode = "text",
        max_steps: int | None = None,
        catalog_path: str | Path | None = None,
        attributes_path: str | Path | None = None,
        human_goals_path: str | Path | None = None,
        search_backend: Backend | None = None,
        render_mode: str | None = None,
    ) -> None:
        """`max_steps` is deprecated (kept so direct constructions keep their cut-off): step limits
        belong to `TimeLimit`, i.e. `gymnasium.make("agentsim/WebShop-v0", max_episode_steps=N)`."""
        if max_steps is not None:
            warnings.warn(
                "WebShopEnv(max_steps=) is deprecated; use gymnasium.make(..., max_episode_steps=) "
                "or gymnasium.wrappers.TimeLimit",
                DeprecationWarning,
                stacklevel=2,
            )
        # model_validate: the paths may be given as str, which the model turns into Path
        self.config = WebShopConfig.model_validate(
            dict(
                num_products=num_products,
                catalog_seed=catalog_seed,
                split=split,
                observation_mode=observation_mode,
                max_steps=max_steps,
                catalog_path=catalog_path,
                attributes_path=attributes_path,
                human_goals_path=human_goals_path,
                search_backend=search_backend,
            )
        )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode
        shop = get_shop(self.config.catalog_spec())
        self.catalog, self.index = shop.catalog, shop.index
        self.goals = self.catalog.goals(self.config.split)
        if len(self.goals) == 0:
            raise ValueError(f"the catalog has no goals in split {split!r}")
        self.observation_space = FreeText(MAX_OBS_CHARS)
        self.action_space = FreeText(MAX_ACTION_CHARS)
        self._state = ShopState()
        self._goal_index = 0
        self._goal: Goal = self.goals[0]
        self._steps = 0
        self._breakdown: RewardBreakdown | None = None
        self._expert_memo: dict[tuple[int, ...], int | None] = {}
        self._last_obs = ""

    # gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        if "goal_index" in options:
            gi = int(options["goal_index"])
            if not 0 <= gi < len(self.goals):
                raise ValueError(f"goal_index must be in [0, {len(self.goals)}), got {gi}")
        else:
            gi = int(self.np_random.integers(len(self.goals)))
        self._goal_index, self._goal = gi, self.goals[gi]
        self._state, self._steps, self._breakdown = ShopState(), 0, None
        self._expert_memo = {}
        obs = self._observe()
        return obs, self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._state.page is Page.DONE:
            return self._after_end()
        self._steps += 1
        parsed = parse_action(action)
        error: str | None = None
        reward, terminated = 0.0, False
        if isinstance(parsed, Parsed):
            outcome = transition(self._state, parsed, self.catalog, self.index)
            error = outcome.error
            if error is None:
                self._state = outcome.state
                if outcome.bought:
                    product = self.catalog.product(self._state.open_item)
                    self._breakdown = compute_reward(product, self._goal, self._state.chosen_dict())
                    reward, terminated = self._breakdown.reward, True
        else:
            error = parsed.problem
        limit = self.config.max_steps  # deprecated alias; None unless given
        truncated = not terminated and limit is not None and self._steps >= limit
        info = self._info()
        if error is not None:
            message = invalid_action_message(error, info["available_actions"], info["action_templates"])
            return self._refused(message, info, terminated=False, truncated=truncated)
        obs = self._observe()
        if terminated:
            self._add_outcome(info)
        return obs, float(reward), terminated, truncated, info

    def _after_end(self) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """The contract's after-end rule: refused, nothing changes, `terminated` again."""
        info = self._info()
        self._add_outcome(info)
        return self._refused(episode_over_message("the item was bought"), info, terminated=True, truncated=False)

    def _refused(
        self, message: str, info: dict[str, Any], *, terminated: bool, truncated: bool
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        info["error"] = message
        return message + "\n\n" + self._observe(), 0.0, terminated, truncated, info

    def _add_outcome(self, info: dict[str, Any]) -> None:
        if self._breakdown is not None:
            info["reward_breakdown"] = self._breakdown.as_dict()
            info["success"] = self._breakdown.reward >= 1.0

    def render(self) -> str | None:
        """`ansi`: the current observation as text."""
        return self._last_obs if self.render_mode == "ansi" else None

    # optional capabilities -----------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        return Snapshot(self._state, self._goal_index, self._steps, self._breakdown)

    def restore(self, snapshot: Snapshot) -> None:
        if snapshot.goal_index != self._goal_index:
            self._goal_index, self._goal = snapshot.goal_index, self.goals[snapshot.goal_index]
            self._expert_memo = {}
        self._state, self._steps, self._breakdown = snapshot.state, snapshot.steps, snapshot.breakdown

    def expert_action(self) -> str:
        return expert_action(self._state, self._goal, self.catalog, self._expert_memo)

    def expert_choice(self, candidates: list[str], settle: float | None = None) -> str:
        """`envs.capabilities.HasCandidateExpert`: the expert's action where offered; on the search page, where
        the expert's own query (the goal's hidden keywords) never is, the offered query with the best first page.
        `settle`: keep to the open item or the current results page when its best buy scores at least this much
        (`expert.settle_for`), rather than leave for the one best product."""
        if settle is not None and self._state.page in (Page.ITEM, Page.RESULTS):
            kept = settle_for(self._state, self._goal, self.catalog, settle)
            if kept is not None and kept in candidates:
                return kept
        action = self.expert_action()
        if action in candidates or self._state.page is not Page.SEARCH:
            return action
        filled = [c for c in candidates if c.startswith("search[") and c.endswith("]") and SLOT not in c]
        i = best_query([c[len("search[") : -1] for c in filled], self._goal, self.catalog, self.index.search)
        return filled[i] if i is not None else action

    # views ---------------------------------------------------------------------------------
    @property
    def goal(self) -> Goal:
        return self._goal

    @property
    def state(self) -> ShopState:
        return self._state

    def view(self) -> View:
        return View(self._state, self.catalog, self._goal.instruction, self._breakdown)

    def _observe(self) -> str:
        self._last_obs = render(self.view(), self.config.observation_mode)
        return self._last_obs

    def _info(self) -> dict[str, Any]:
        templates = action_templates(self._state)
        info = {
            "instruction": self._goal.instruction,
            "available_actions": available_actions(self._state, self.catalog),
            "action_templates": templates,
            "page": self._state.page.value,
            "goal_index": self._goal_index,
            "steps": self._steps,
        }
        if templates:  # the contract's optional `slot_stopwords`: shopping words, not product words
            info["slot_stopwords"] = list(SLOT_STOPWORDS)
        return info


__all__ = ["WebShopEnv", "WebShopConfig", "Snapshot", "MODES", "SPLITS"]
