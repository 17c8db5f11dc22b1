"""Placing prompts in KV-cache slots: own prefix reused, shared prefixes copied, LRU eviction under a cell budget."""

import pytest

from agents.brains.llama.slot_table import Placement, SlotTable


def test_a_prompt_continuing_a_slot_reuses_it_in_place():
    t = SlotTable([1, 2, 3], capacity=1000)
    t.commit(1, [1, 2, 3, 4])
    t.commit(2, [9, 9, 9])
    placements, evict = t.place([[1, 2, 3, 4, 5, 6], [9, 9, 9, 7]])
    assert placements == [Placement(1, 4, None), Placement(2, 3, None)] and evict == []


def test_an_identical_prompt_still_decodes_its_last_token():
    t = SlotTable([1], capacity=100)
    t.commit(1, [5, 6, 7])
    assert t.place([[5, 6, 7]])[0] == [Placement(1, 2, None)]


def test_a_shared_system_prompt_is_copied_not_overwritten():
    """A new agent sharing only the system prompt with agent A's long transcript must not cut A's slot back."""
    t = SlotTable([1, 2], capacity=1000)
    system = list(range(10))
    t.commit(1, system + list(range(100, 160)))
    placements, evict = t.place([system + [500, 501]])
    assert placements == [Placement(2, 10, 1)] and evict == [2]


def test_two_prompts_of_one_batch_never_share_a_destination():
    t = SlotTable([1, 2], capacity=1000)
    t.commit(1, [1, 2, 3])
    placements, _ = t.place([[1, 2, 3, 4], [1, 2, 3, 5]])
    assert [p.seq for p in placements] == [1, 2] and placements[1] == Placement(2, 3, 1)


def test_more_prompts_than_slots_are_left_for_the_next_batch():
    t = SlotTable([1, 2], capacity=1000)
    placements, _ = t.place([[1], [2], [3]])
    assert len(placements) == 2


def test_least_recently_used_slots_are_evicted_to_fit_the_budget():
    t = SlotTable([1, 2, 3], capacity=50)
    t.commit(1, [1] * 20)
    t.commit(2, [2] * 20)
    t.commit(3, [3] * 5)
    placements, evict = t.place([[3] * 5 + [4] * 15], reserve=5)
    assert placements == [Placement(3, 5, None)]
    assert evict == [1]  # 20 + 20 + 20 + 5 > 50: the oldest other slot goes


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="at least one sequence"):
        SlotTable([], capacity=10)
    with pytest.raises(ValueError, match="empty prompt"):
        SlotTable([1], capacity=10).place([[]])


def test_room_for_generation_is_made_least_recently_used_first():
    t = SlotTable([1, 2, 3], capacity=50)
    t.commit(2, [2] * 20)
    t.commit(1, [1] * 20)
    t.commit(3, [3] * 5)
    assert t.evict_for(5) == []  # 45 + 5 fit
    assert t.evict_for(10) == [2]  # the oldest goes first, and only as much as needed
    assert t.evict_for(48) == [2, 1, 3]  # more than the others free: everything
