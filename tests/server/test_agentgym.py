"""An AgentGym-style client (plain `requests`, the calls AgentGym's WebshopEnvClient makes) drives WebShop."""

from __future__ import annotations

import re

import requests


class AgentGymStyleClient:
    """What agentenv's WebShop client does: POST /create, /reset, /step with env_idx; GET ?env_idx=."""

    def __init__(self, base: str) -> None:
        self.base = base
        r = requests.post(f"{base}/create", timeout=30)
        assert r.status_code == 200, r.text
        self.env_id = r.json()

    def _post(self, path: str, data: dict) -> object:
        data["env_idx"] = self.env_id
        r = requests.post(f"{self.base}/{path}", json=data, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()

    def _get(self, path: str) -> object:
        r = requests.get(f"{self.base}/{path}?env_idx={self.env_id}", timeout=30)
        assert r.status_code == 200, r.text
        return r.json()

    def observe(self) -> str:
        return self._get("observation")

    def reset(self, idx: int) -> list:
        response = self._post("reset", {"session_id": idx})
        response[0] = self.observe()
        return response

    def step(self, action: str) -> dict:
        return self._post("step", {"action": action})


def policy(instruction: str, page: dict, step: int) -> str:
    """A naive shopper: search the instruction, open the first result, buy it."""
    if page["has_search_bar"]:
        words = re.sub(r"[^a-z0-9 ]", " ", instruction.lower()).split()
        return "search[" + " ".join(words[3:12]) + "]"
    products = [c for c in page["clickables"] if re.fullmatch(r"b0[a-z0-9]{8}", c)]
    if products:
        return f"click[{products[0]}]"
    return "click[buy now]" if "buy now" in page["clickables"] else f"click[{page['clickables'][0]}]"


def test_agentgym_client_drives_a_webshop_episode(server):
    client = AgentGymStyleClient(server.url)
    assert isinstance(client.env_id, int)
    assert client.env_id in requests.get(f"{server.url}/list_envs", timeout=30).json()
    assert requests.get(f"{server.url}/", timeout=30).json() == "ok"
    first = client.reset(7)
    assert first[1] is None and first[0].startswith("WebShop [SEP] Instruction:")
    instruction = client._get("instruction_text")
    assert instruction and instruction in first[0]
    state = client._get("state")
    assert state["instruction_text"] == instruction and "<form" in state["html"]
    done, reward, steps = False, 0.0, 0
    while not done and steps < 10:
        page = client._get("available_actions")
        out = client.step(policy(instruction, page, steps))
        assert set(out) == {"state", "reward", "done", "info"} and out["info"] is None
        done, reward = out["done"], out["reward"]
        steps += 1
    assert done and steps == 3 and 0.0 < reward <= 1.0  # bought something that partly matches
    # the same goal again gives the same first page (session_id is the goal index)
    assert client.reset(7)[0] == first[0]
    bad = requests.post(f"{server.url}/step", json={"env_idx": client.env_id, "action": "jump[now]"}, timeout=30).json()
    assert "Invalid action" in bad["state"] and bad["done"] is False
    closed = requests.post(f"{server.url}/close", json={"env_idx": client.env_id}, timeout=30).json()
    assert closed == {"closed": True}
    assert requests.post(f"{server.url}/close", json={"env_idx": client.env_id}, timeout=30).json() == {"closed": False}
    assert requests.get(f"{server.url}/observation?env_idx={client.env_id}", timeout=30).status_code == 404
