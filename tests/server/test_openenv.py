"""OpenEnv's protocol on the env server, driven by OpenEnv's own client (openenv-core) over real sockets.

The WebSocket round trip uses openenv-core's `EnvClient` (through `envs.server.openenv_client.TextEnvClient`,
the three hooks every OpenEnv env client defines); the HTTP routes are checked against openenv-core's own
result types (`ResetResponse`, `StepResponse`, `State`), and every client fault gets a clear answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import gymnasium as gym
import pytest
import requests
from openenv.core.env_server.types import ResetResponse, State, StepResponse
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

import envs  # noqa: F401  (registers the envs)
from envs.server.openenv_client import TextEnvClient, openenv_url
from tests.server.conftest import Server, start_server

TOKEN = "Zq8-vN3_rT6wLp2Xy7Kd4Fh"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("openenv"), "--max-sessions", "4")
    yield s
    s.stop()


def ws_url(server: Server, env: str) -> str:
    return openenv_url(server.url, env).replace("http://", "ws://") + "/ws"


def test_openenv_client_plays_a_textcraft_episode_to_the_goal(server: Server) -> None:
    local = gym.make("agentsim/TextCraft-v0")
    obs, info = local.reset(seed=3)
    with TextEnvClient(base_url=openenv_url(server.url, "textcraft")) as env:
        result = env.reset(seed=3)
        assert result.observation["text"] == obs and result.reward is None and result.done is False
        assert result.observation["instruction"] == info["instruction"]
        total, steps = 0.0, 0
        while not result.done:
            action = local.unwrapped.expert_action()
            obs, reward, terminated, truncated, info = local.step(action)
            result = env.step(action)
            steps += 1
            # the same episode as in-process: OpenEnv's client sees exactly what gymnasium does
            assert result.observation["text"] == obs and result.reward == reward
            assert result.done == (terminated or truncated) and result.observation["terminated"] == terminated
            total += result.reward or 0.0
        assert total > 0 and result.observation["terminated"]
        state = env.state()
        assert state["step_count"] == steps and state["env"] == "textcraft" and state["episode_id"]


def test_a_refused_action_is_the_envs_error_and_a_bad_shape_a_validation_error(server: Server) -> None:
    with TextEnvClient(base_url=openenv_url(server.url, "textcraft")) as env:
        env.reset(seed=0)
        result = env.step("fly to the moon")
        assert result.observation["error"] and result.reward == 0 and not result.done
        with pytest.raises(RuntimeError, match=r"invalid action: action: Field required.*VALIDATION_ERROR"):
            env.step({"act": "get 1 oak log"})
        assert env.state()["step_count"] == 1  # the malformed one never reached the env; the socket still works


def test_step_before_reset_and_unknown_types_are_errors_not_disconnects(server: Server) -> None:
    with connect(ws_url(server, "textcraft")) as ws:
        for sent, code in [
            ({"type": "step", "data": {"action": "get 1 oak log"}}, "SESSION_ERROR"),
            ({"type": "dance"}, "UNKNOWN_TYPE"),
            ({"type": "reset", "data": {"seed": -1}}, "VALIDATION_ERROR"),
            ({"type": "reset", "data": {"colour": "red"}}, "VALIDATION_ERROR"),
            ([1, 2], "VALIDATION_ERROR"),
        ]:
            ws.send(json.dumps(sent))
            reply = json.loads(ws.recv(timeout=30))
            assert reply["type"] == "error" and reply["data"]["code"] == code, reply
        ws.send("{not json")
        assert json.loads(ws.recv(timeout=30))["data"]["code"] == "INVALID_JSON"
        ws.send("x" * ((1 << 20) + 1))  # over the server's body limit (1 MiB): refused, or the socket closed (1009)
        try:
            reply = json.loads(ws.recv(timeout=30))
            assert (
                reply["data"]["code"] == "VALIDATION_ERROR" and "over this server's limit" in reply["data"]["message"]
            )
        except Exception as e:  # noqa: BLE001 - uvicorn's ws_max_size may close first; both are bounded answers
            assert "1009" in str(e) or "too big" in str(e).lower(), e


def test_an_unknown_env_is_told_over_http_and_websocket(server: Server) -> None:
    r = requests.post(f"{openenv_url(server.url, 'nosuchenv')}/reset", json={}, timeout=30)
    assert r.status_code == 404 and "nosuchenv" in r.json()["detail"]
    with connect(ws_url(server, "nosuchenv")) as ws:
        reply = json.loads(ws.recv(timeout=30))
        assert reply["type"] == "error" and "nosuchenv" in reply["data"]["message"]


def test_http_routes_answer_in_openenvs_own_result_types(server: Server) -> None:
    base = openenv_url(server.url, "textcraft")
    reset = requests.post(f"{base}/reset", json={"seed": 1}, timeout=30)
    assert reset.status_code == 200, reset.text
    first = ResetResponse.model_validate(reset.json())
    episode = first.observation["episode_id"]
    step = requests.post(f"{base}/step", json={"action": {"action": "inventory"}, "episode_id": episode}, timeout=30)
    assert step.status_code == 200, step.text
    StepResponse.model_validate(step.json())
    state = requests.get(f"{base}/state", params={"episode_id": episode}, timeout=30)
    assert State.model_validate(state.json()).step_count == 1
    schema = requests.get(f"{base}/schema", timeout=30).json()
    assert set(schema) == {"action", "observation", "state"} and "action" in schema["action"]["properties"]
    assert requests.get(f"{base}/health", timeout=30).json() == {"status": "healthy"}
    assert requests.post(f"{base}/close", params={"episode_id": episode}, timeout=30).json() == {"closed": True}
    gone = requests.get(f"{base}/state", params={"episode_id": episode}, timeout=30)
    assert gone.status_code == 404 and "create a new one" in gone.json()["detail"]


@pytest.mark.parametrize(
    ("route", "body", "status", "says"),
    [
        ("step", {"action": {"action": "inventory"}}, 422, "needs the episode_id"),
        ("step", {"action": {"action": "inventory"}, "episode_id": "nope"}, 404, "unknown session"),
        ("step", {"action": "inventory"}, 422, "action"),
        ("reset", {"seed": -3}, 422, "seed"),
        ("reset", {"colour": "red"}, 422, "colour"),
    ],
)
def test_http_client_faults_are_clear_4xx(server: Server, route: str, body: dict, status: int, says: str) -> None:
    r = requests.post(f"{openenv_url(server.url, 'textcraft')}/{route}", json=body, timeout=30)
    assert r.status_code == status and says in r.json()["detail"], r.text


def test_a_wrong_action_field_over_http_names_the_allowed_shape(server: Server) -> None:
    base = openenv_url(server.url, "textcraft")
    episode = requests.post(f"{base}/reset", json={}, timeout=30).json()["observation"]["episode_id"]
    r = requests.post(f"{base}/step", json={"action": {"cmd": "inventory"}, "episode_id": episode}, timeout=30)
    assert r.status_code == 422 and '{"action": "<one action string>"}' in r.json()["detail"]
    requests.post(f"{base}/close", params={"episode_id": episode}, timeout=30)


def wait_no_sessions(server: Server) -> int:
    """Sessions still open once the server has finished closing disconnected sockets (polled, bounded)."""
    for _ in range(200):
        if not (n := requests.get(f"{server.url}/health", timeout=30).json()["sessions"]):
            return 0
        time.sleep(0.05)
    return n


def test_a_closed_websocket_frees_its_session_and_the_cap_holds(server: Server) -> None:
    assert wait_no_sessions(server) == 0
    clients = [TextEnvClient(base_url=openenv_url(server.url, "corridor")) for _ in range(4)]
    for c in clients:
        c.connect()
        c.reset(seed=0)
    with connect(ws_url(server, "corridor")) as ws:  # a fifth: the server holds at most 4 sessions
        reply = json.loads(ws.recv(timeout=30))
        assert reply["data"]["code"] == "CAPACITY_REACHED" and "server is full" in reply["data"]["message"]
    for c in clients:
        c.close()
    assert wait_no_sessions(server) == 0


def test_the_websocket_needs_the_token_like_every_route(tmp_path) -> None:
    s = start_server(tmp_path, token=TOKEN)
    try:
        with pytest.raises(InvalidStatus) as refused:
            connect(ws_url(s, "corridor"))
        assert refused.value.response.status_code == 403
        with connect(ws_url(s, "corridor"), additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
        r = requests.post(f"{openenv_url(s.url, 'corridor')}/reset", json={}, timeout=30)
        assert r.status_code == 401
    finally:
        s.stop()
