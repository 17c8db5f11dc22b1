from agents.core.agent import Agent, Decision
from agents.core.loop import EpisodeRunner, arun_episode, run_episode, run_many

__all__ = ["Agent", "Decision", "EpisodeRunner", "arun_episode", "run_episode", "run_many"]
