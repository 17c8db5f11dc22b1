"""The parts of the engine (`agents.engine`) that run episodes: which are owed, who runs them, where they go.

`worker` (one episode from a config), `plan` (seeds, what is missing, the run's manifest), `local`
(asyncio executor), `ray_executor` (Ray actors), `sink` (the one writer), `failures`, `progress`.
`python -m agents.collect` is the collection command; `agents.engine.collect` the same as a function.
"""
