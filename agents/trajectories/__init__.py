from agents.trajectories.schema import SCHEMA_VERSION, CandidateRecord, EpisodeRecord, EpisodeStats, Outcome, StepRecord
from agents.trajectories.store import TrajectoryStore

__all__ = [
    "SCHEMA_VERSION",
    "CandidateRecord",
    "EpisodeRecord",
    "EpisodeStats",
    "Outcome",
    "StepRecord",
    "TrajectoryStore",
]
