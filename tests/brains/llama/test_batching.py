"""Concurrent `achoose` calls gathered into batches (`agents.brains.llama.batching`), served by any `serve`."""

from __future__ import annotations

import asyncio

import pytest

from agents.brains.base import BrainOutput
from agents.brains.llama.batching import ChooseBatcher, ChooseRequest


class _Server:
    """Answers each request with its first candidate; refuses requests without candidates (as `choose` does)."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, reqs: list[ChooseRequest]) -> list[BrainOutput]:
        self.calls.append(len(reqs))
        for r in reqs:
            if not r.candidates:
                raise ValueError("choose() needs at least one candidate")
        return [BrainOutput(text=r.prefix + r.candidates[0]) for r in reqs]


def _req(i: int, candidates: list[str] | None = None) -> ChooseRequest:
    return ChooseRequest([{"role": "user", "content": f"agent {i}"}], [f"act{i}"] if candidates is None else candidates)


def test_calls_made_together_are_served_in_one_batch_each_with_its_own_answer() -> None:
    server = _Server()
    batcher = ChooseBatcher(server, window_s=0.05)

    async def together() -> list[BrainOutput]:
        return await asyncio.gather(*(batcher.submit(_req(i)) for i in range(5)))

    outs = asyncio.run(together())
    assert [o.text for o in outs] == [f"act{i}" for i in range(5)]
    assert server.calls == [5] and batcher.batches == [5]


def test_a_bad_call_fails_alone() -> None:
    server = _Server()
    batcher = ChooseBatcher(server, window_s=0.05)

    async def with_a_bad_one() -> list[object]:
        calls = [batcher.submit(_req(0)), batcher.submit(_req(1, [])), batcher.submit(_req(2))]
        return await asyncio.gather(*calls, return_exceptions=True)

    good0, bad, good2 = asyncio.run(with_a_bad_one())
    assert isinstance(good0, BrainOutput) and good0.text == "act0"
    assert isinstance(good2, BrainOutput) and good2.text == "act2"
    assert isinstance(bad, ValueError) and "at least one candidate" in str(bad)
    assert server.calls == [3, 1, 1, 1]  # the batch failed, so each call was retried alone


def test_a_later_call_after_the_queue_drained_starts_a_new_batch() -> None:
    server = _Server()
    batcher = ChooseBatcher(server, window_s=0.0)

    async def one_then_another() -> tuple[BrainOutput, BrainOutput]:
        first = await batcher.submit(_req(0))
        return first, await batcher.submit(_req(1))

    a, b = asyncio.run(one_then_another())
    assert (a.text, b.text) == ("act0", "act1") and server.calls == [1, 1]


@pytest.mark.parametrize("window_s", [0.0, 0.02])
def test_every_caller_gets_an_answer_whatever_the_window(window_s: float) -> None:
    batcher = ChooseBatcher(_Server(), window_s=window_s)

    async def many() -> list[BrainOutput]:
        return await asyncio.gather(*(batcher.submit(_req(i)) for i in range(12)))

    assert [o.text for o in asyncio.run(many())] == [f"act{i}" for i in range(12)]
