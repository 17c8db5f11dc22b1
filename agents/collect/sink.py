"""Where executors deliver results: the one append-only store, the failure log, the progress bar.

Only the driver writes (Ray workers send records back), so there is one writer per file and a
kill -9 loses at most the episodes in flight. The sink also decides when to stop scheduling:
on a fatal error (env server down, bad config) or when failures pass `max_failures`.
"""

from __future__ import annotations

import logging

from agents.collect.failures import FailureLog
from agents.collect.progress import CollectProgress
from agents.collect.worker import episode_id
from agents.trajectories.schema import EpisodeRecord
from agents.trajectories.store import TrajectoryStore

log = logging.getLogger(__name__)


def is_user_error(exc: BaseException) -> bool:
    """A failure the user can fix (config, brain endpoint), as opposed to a crash inside one episode."""
    from agents.brains.base import BrainError
    from agents.config import ConfigError

    return isinstance(exc, (ConfigError, BrainError))


class Sink:
    """The one place results land: store, failure log, progress, and the stop decision."""

    def __init__(
        self,
        store: TrajectoryStore,
        failures: FailureLog,
        progress: CollectProgress,
        env_name: str,
        done_ids: set[str],
        max_failures: int | None,
    ) -> None:
        self.store, self.failures, self.progress = store, failures, progress
        self.env_name, self.done_ids, self.max_failures = env_name, done_ids, max_failures
        self.failed: dict[int, str] = {}  # seed -> error, for this invocation
        self.abort_reason: str | None = None
        self.user_error: BaseException | None = (
            None  # the first failure that was a user mistake (bad config, dead endpoint)
        )
        self.tokens = 0

    @property
    def stopping(self) -> bool:
        return self.abort_reason is not None

    def stop(self, reason: str) -> None:
        """Stop scheduling (a signal): the run ends with what it finished, `reason` in its summary."""
        if self.abort_reason is None:
            self.abort_reason = reason
            log.warning("%s", reason)

    def done(self, rec: EpisodeRecord) -> None:
        """Append a finished episode (once) and count it."""
        if rec.episode_id in self.done_ids:  # a retried task that also finished: keep the first
            log.warning("episode %s delivered twice; keeping the first", rec.episode_id)
            return
        self.store.append(rec)
        self.done_ids.add(rec.episode_id)
        self.failed.pop(rec.seed, None)
        tokens = rec.stats.tokens_in + rec.stats.tokens_out
        self.tokens += tokens
        self.progress.episode(tokens, rec.outcome.success)

    def fail(self, seed: int, error: str, fatal: bool = False, exc: BaseException | None = None) -> None:
        """Log a failed episode (never stored as a trajectory) and decide whether to stop scheduling."""
        if exc is not None and self.user_error is None and is_user_error(exc):
            self.user_error = exc
        self.failures.append(episode_id(self.env_name, seed), seed, error, fatal)
        self.failed[seed] = error
        self.progress.failure()
        log.warning("episode %s failed: %s", episode_id(self.env_name, seed), error)
        if fatal and self.abort_reason is None:
            self.abort_reason = error
        elif self.max_failures is not None and len(self.failed) > self.max_failures and self.abort_reason is None:
            self.abort_reason = f"more than max_failures={self.max_failures} episodes failed; last error: {error}"
