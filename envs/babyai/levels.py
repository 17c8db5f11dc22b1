"""The BabyAI levels AgentGym serves, in its order, and its `data_idx` -> (level, seed) rule.

AgentGym's BabyAI server plays `data_idx` as level `idx % 40` (this list) with seed `idx // 40`,
so index i of this project's BabyAI env is the same minigrid episode as AgentGym's `data_idx` i.
minigrid renamed one level since AgentGym pinned it (`GoToObjS6-v0` is `-v1` now).
"""

from __future__ import annotations

AGENTGYM_LEVELS: tuple[str, ...] = tuple(
    f"BabyAI-{name}"
    for name in (
        "GoToRedBallGrey-v0",
        "GoToRedBall-v0",
        "GoToRedBallNoDists-v0",
        "GoToObjS6-v1",
        "GoToLocalS8N7-v0",
        "GoToObjMazeS7-v0",
        "GoToImpUnlock-v0",
        "GoToSeqS5R2-v0",
        "GoToRedBlueBall-v0",
        "GoToDoor-v0",
        "GoToObjDoor-v0",
        "Open-v0",
        "OpenRedDoor-v0",
        "OpenDoorLoc-v0",
        "OpenRedBlueDoorsDebug-v0",
        "OpenDoorsOrderN4Debug-v0",
        "Pickup-v0",
        "UnblockPickup-v0",
        "PickupLoc-v0",
        "PickupDistDebug-v0",
        "PickupAbove-v0",
        "PutNextLocalS6N4-v0",
        "PutNextS7N4Carrying-v0",
        "Unlock-v0",
        "UnlockLocalDist-v0",
        "KeyInBox-v0",
        "UnlockPickupDist-v0",
        "BlockedUnlockPickup-v0",
        "UnlockToUnlock-v0",
        "ActionObjDoor-v0",
        "FindObjS7-v0",
        "KeyCorridorS6R3-v0",
        "OneRoomS20-v0",
        "MoveTwoAcrossS8N9-v0",
        "SynthS5R2-v0",
        "SynthLoc-v0",
        "SynthSeq-v0",
        "MiniBossLevel-v0",
        "BossLevel-v0",
        "BossLevelNoUnlock-v0",
    )
)


def episode_of(index: int, levels: tuple[str, ...] = AGENTGYM_LEVELS) -> tuple[str, int]:
    """AgentGym's rule: task `index` is level `index % len(levels)` played with seed `index // len(levels)`."""
    if index < 0:
        raise ValueError(f"a task index must be >= 0, got {index}")
    return levels[index % len(levels)], index // len(levels)


EVAL_SIZE = 90  # as many as AgentGym's BabyAI test set (its ids are in a data set not shipped on PyPI)
EVAL_LEVEL_SEED = 1000  # eval episodes use level seeds 1000-1002; training indices below 40,000 never do


def eval_index(i: int, levels: tuple[str, ...] = AGENTGYM_LEVELS) -> int:
    """The AgentGym-style task index of evaluation episode `i % 90`: every level in turn, seeds from 1000 on."""
    k = i % EVAL_SIZE
    return len(levels) * (EVAL_LEVEL_SEED + k // len(levels)) + k % len(levels)
