"""AgentGym's TextCraft and BabyAI clients' calls (plain `requests`, as agentenv's clients make them)
against a real server started with `--agentgym-env textcraft|babyai`."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import requests

from envs.textcraft.expert import plan
from envs.textcraft.recipes import item_id, load_book
from tests.server.conftest import Server, start_server


@pytest.fixture(scope="module")
def textcraft_server(tmp_path_factory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("tc"), "--agentgym-env", "textcraft")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def babyai_server(tmp_path_factory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("ba"), "--agentgym-env", "babyai")
    yield s
    s.stop()


def post(server: Server, path: str, body: dict) -> requests.Response:
    return requests.post(f"{server.url}/{path}", json=body, timeout=60)


def test_textcraft_client_crafts_the_goal(textcraft_server: Server) -> None:
    # TextCraftEnvClient.__init__: POST /create with its three fields, reads id and observation
    made = post(textcraft_server, "create", {"minecraft_dir": "agentenv_textcraft/", "commands": None, "goal": None})
    assert made.status_code == 200, made.text
    env_id = made.json()["id"]
    assert made.json()["observation"].startswith("Crafting commands:\n")
    first = post(textcraft_server, "reset", {"id": env_id, "data_idx": 3}).json()
    again = post(textcraft_server, "reset", {"id": env_id, "data_idx": 3}).json()
    assert first == again and (first["reward"], first["done"]) == (0.0, False)
    goal = re.search(r"Goal: craft (.+)\.$", first["observation"]).group(1)  # type: ignore[union-attr]
    steps = plan(load_book(), item_id(goal), {})
    for i, action in enumerate(steps):
        out = post(textcraft_server, "step", {"id": env_id, "action": action}).json()
        assert set(out) >= {"observation", "reward", "done"}
        assert out["done"] == (i == len(steps) - 1)
    assert out["reward"] == 1.0 and out["observation"].startswith("Crafted ") and out["observation"].endswith(goal)
    detail = requests.get(f"{textcraft_server.url}/detail?id={env_id}", timeout=30).json()
    assert detail["done"] is True and detail["reward"] == 1.0 and detail["goal"] == goal
    assert post(textcraft_server, "close", {"id": env_id}).json() == {"closed": True}
    assert post(textcraft_server, "close", {"id": env_id}).json() == {"closed": False}
    assert requests.get(f"{textcraft_server.url}/observation?id={env_id}", timeout=30).status_code == 404


def test_textcraft_refuses_custom_commands_and_failed_actions_say_why(textcraft_server: Server) -> None:
    refused = post(textcraft_server, "create", {"commands": "craft 1 diamond using 1 dirt"})
    assert refused.status_code == 422 and "custom 'commands' are not supported" in refused.text
    made = post(textcraft_server, "create", {"goal": "crafting table"}).json()
    assert made["observation"].endswith("Goal: craft crafting table.")
    out = post(textcraft_server, "step", {"id": made["id"], "action": "craft 1 crafting table using 4 oak planks"})
    assert "not enough items to craft crafting table" in out.json()["observation"] and out.json()["done"] is False
    assert post(textcraft_server, "reset", {"id": made["id"], "data_idx": -1}).status_code == 422
    assert post(textcraft_server, "step", {"id": 10_000, "action": "inventory"}).status_code == 404


def test_babyai_client_plays_data_idx_0(babyai_server: Server) -> None:
    made = requests.post(f"{babyai_server.url}/create", timeout=60)  # BabyAIEnvClient posts no body
    assert made.status_code == 200, made.text
    env_id = made.json()["id"]
    first = post(babyai_server, "reset", {"id": env_id, "data_idx": 0}).json()
    assert first["observation"].startswith("Your goal: go to the red ball\n")
    assert '"go to red ball 1"' in first["observation"].split("Available actions: ")[1]
    assert (first["reward"], first["score"], first["done"]) == (0.0, 0.0, False)
    wall = post(babyai_server, "step", {"id": env_id, "action": "dance"}).json()
    assert "is not an action" in wall["observation"] and wall["done"] is False
    out = post(babyai_server, "step", {"id": env_id, "action": "go to red ball 1"}).json()
    assert out["done"] is True and 0.0 < out["reward"] == out["score"] <= 1.0
    assert "The task is completed." in out["observation"]
    assert post(babyai_server, "create", {"goal": "x"}).status_code == 422
