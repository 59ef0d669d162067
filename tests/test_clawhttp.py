"""claw-http: in-process agent loops talk to a real daemon through hookd.clawclient
(a scripted loop: ask, keep working, answered with the CLI, drain before final)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

import pytest

from hookd.clawclient import ClawClient
from hookd.http.claw import OPERATIONS, PREFIX, openapi
from hookd.config import Home
from hookd.daemonproc import DaemonProcess

from .conftest import REPO, events, hookd_cli, questions

pytestmark = pytest.mark.daemon


def send(home: Path, text: str, builder: str = "b1") -> str:
    r = hookd_cli(home, "send", builder, text, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["message"]["id"]


def inbox(home: Path) -> dict[str, str]:
    return {m["id"]: m["state"] for m in json.loads(hookd_cli(home, "inbox", "--json").stdout)}


def scripted_loop(hk: ClawClient, script: list[Any], on_tool: Any) -> tuple[list[str], int]:
    """A tiny agent loop in the iterion style: a scripted "model" whose turns are tool calls
    ``(name, input)`` or ``"final"`` (an answer with no tool call); hookd is called at every
    boundary; drained texts become user turns. A before_final drain that delivers keeps the
    loop going (the model works on: ``on_tool(None, None)`` gives its next turn). Returns
    (what reached the model as user turns, how many finals were accepted)."""
    inputs: list[str] = []
    finals = 0
    hk.register()
    script = list(script)
    while script:
        turn = script.pop(0)
        if callable(turn):
            turn = turn()
        if turn == "final":
            got = hk.drain("before_final")
            if got.continue_:
                inputs.append(got.text)
                script.insert(0, ("bash", {"step": "after-final"}))  # the model goes on working
                continue
            finals += 1
            continue
        name, tool_input = turn
        hk.pre_tool(name, tool_input)
        out = on_tool(name, tool_input)
        hk.post_tool(name, tool_input, out)
        got = hk.drain("between_tools")
        if got.text:
            inputs.append(got.text)
    hk.stop()
    return inputs, finals


def test_scripted_loop_end_to_end(daemon: DaemonProcess, home: Path):
    """ask, keep working, the answer (CLI) arrives between tools; a message sent mid-run is
    drained between tools; one sent after the last tool is drained before_final and the loop
    continues; every drained message is acked (consumed) exactly once."""
    hk = ClawClient.for_endpoint(home, "b1", "run-1")  # TCP + bearer token, as a Go loop would
    state: dict[str, Any] = {}

    def on_tool(name: str, tool_input: Any) -> str:
        if tool_input.get("step") == 1:
            state["ask"] = hk.ask("Ship on Friday?", ["yes", "no"])
            state["mid"] = send(home, "also run the linter")
        elif tool_input.get("step") == 2:
            [q] = questions(home, "pending")
            assert q["id"] == state["ask"] and q["kind"] == "async" and q["session_id"] == "run-1"
            r = hookd_cli(home, "answer", state["ask"], "--text", "no, wait for QA")
            assert r.returncode == 0, r.stderr
        return "done"

    def send_late() -> str:
        state["late"] = send(home, "one more thing: bump the version")  # after the last tool
        return "final"

    inputs, finals = scripted_loop(hk, [("bash", {"step": 1}), ("bash", {"step": 2}), send_late, "final"], on_tool)
    mid, late, ask = state["mid"], state["late"], state["ask"]
    # turn 1's drain: the mid-run message; turn 2's drain: the CLI answer to the async ask
    assert len(inputs) == 3
    assert f"[human msg {mid} " in inputs[0] and "also run the linter" in inputs[0]
    assert f"[Answer to question {ask}]" in inputs[1] and "no" in inputs[1] and "wait for QA" in inputs[1]
    # the message sent after the last tool came at before_final, and the loop continued
    assert f"[human msg {late} " in inputs[2] and finals == 1
    evs = events(home)
    drained = [e for e in evs if e["kind"] == "inbox_delivered" and e["data"]["via"] == "Drain"]
    assert sum(len(e["data"]["ids"]) for e in drained) == 3  # each delivered once
    states = inbox(home)
    assert states[mid] == states[late] == "adopted" and len(states) == 3 and set(states.values()) == {"adopted"}
    acks = [e for e in evs if e["kind"] == "inbox_adopted"]
    assert all(e["data"]["via"] == "ack" for e in acks) and sorted(i for e in acks for i in e["data"]["ids"]) == sorted(states)
    [done] = [q for q in questions(home, "all") if q["id"] == ask]
    assert done["state"] == "answered"
    assert [e["data"]["reason"] for e in evs if e["kind"] == "session_ended"] == [None]
    hk.close()


def test_before_final_is_capped_and_a_blocking_question_guards_delivery(daemon: DaemonProcess, home: Path):
    with ClawClient.for_home(home, "b1", "run-2", fail_open=False) as hk:
        hk.register()
        # a blocking question of the loop's own (pre_tool AskUserQuestion): no delivery into it
        r = hk.pre_tool("AskUserQuestion", {"question": "Which DB?", "options": ["pg", "lite"]}, "t1")
        assert r["question"] == "t1"
        send(home, "hello")
        assert hk.drain("between_tools").ids == []
        hk.post_tool("AskUserQuestion", {"question": "Which DB?", "options": ["pg", "lite"]},
                     {"question": "Which DB?", "answer": "pg", "status": "answered"}, "t1")
        [q] = questions(home, "all")
        assert q["state"] == "answered" and q["answers"] == {"Which DB?": "pg"} and q["tool_use_id"] == "t1"
        got = hk.drain("between_tools")
        assert len(got.ids) == 1 and not got.continue_
        # before_final delivers at most 3 times in a row (the Stop cap), then lets it finish
        conts = []
        for n in range(4):
            send(home, f"more {n}")
            conts.append(hk.drain("before_final").continue_)
        assert conts == [True, True, True, False]


def test_unacked_message_is_redelivered_after_daemon_restart(home: Path):
    d = DaemonProcess(home).start()
    try:
        hk = ClawClient.for_home(home, "b1", "run-3", fail_open=False)
        hk.register()
        m1 = send(home, "first")
        got = hk.drain("between_tools")
        assert got.ids == [m1] and "first" in got.text
        # the loop crashed before its next boundary: m1 is never acked; another drain of the
        # session (no ack) gets no duplicate within this daemon's life
        assert ClawClient.for_home(home, "b1", "run-3", fail_open=False).drain("between_tools").ids == []
        m2 = send(home, "second")
        got2 = ClawClient.for_home(home, "b1", "run-3", fail_open=False).drain("between_tools")
        assert got2.ids == [m2]
        ClawClient.for_home(home, "b1", "run-3", fail_open=False).ack([m2])
        assert inbox(home) == {m1: "delivered", m2: "adopted"}
        d.stop()
        d = DaemonProcess(home).start()
        again = ClawClient.for_home(home, "b1", "run-3", fail_open=False)
        got3 = again.drain("between_tools")
        assert got3.ids == [m1] and got3.redelivered == [m1] and "first" in got3.text
        again.ack()
        assert inbox(home) == {m1: "adopted", m2: "adopted"}
        assert again.drain("between_tools").ids == []
        # a re-register (a restarted loop) also gets what it never acked
        m3 = send(home, "third")
        assert again.drain("between_tools").ids == [m3]
        again.unacked.clear()
        again.register()
        assert again.drain("between_tools").ids == [m3]
    finally:
        d.stop()
        d.kill()


def test_auth_and_errors(daemon: DaemonProcess, home: Path):
    ep = Home.resolve(home).read_endpoint()  # the hook token: it admits the claw routes
    port, token = ep.port, ep.hook_token
    url = f"http://127.0.0.1:{port}{PREFIX.format(builder='b1')}"
    r = httpx.post(url, json={"session_id": "s"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    ok = httpx.post(url, json={"session_id": "s"}, headers={"Authorization": f"Bearer {token}"})
    assert ok.status_code == 201 and ok.json()["session_id"] == "s"
    bad = httpx.post(url + "/s/drain", json={"boundary": "later"}, headers={"Authorization": f"Bearer {token}"})
    assert bad.status_code == 400 and set(bad.json()) == {"error"}
    bad = httpx.post(url + "/has space/drain", json={"boundary": "before_final"},
                     headers={"Authorization": f"Bearer {token}"})
    assert bad.status_code == 400
    # a session never registered is refused, never created on the fly
    unknown = httpx.post(url + "/nosuch/drain", json={"boundary": "between_tools"},
                         headers={"Authorization": f"Bearer {token}"})
    assert unknown.status_code == 404 and "register it first" in unknown.json()["error"]["message"]
    other = httpx.post(f"http://127.0.0.1:{port}{PREFIX.format(builder='b2')}/s/drain", json={"boundary": "between_tools"},
                       headers={"Authorization": f"Bearer {token}"})
    assert other.status_code == 404  # b1's session is not b2's
    # a fail-open client with the daemon unreachable returns empty results
    down = ClawClient("http://127.0.0.1:1", None, "b1", "s")
    assert down.drain("before_final").ids == [] and down.ask("q?") is None


def test_openapi_document(daemon: DaemonProcess, home: Path):
    """The served schema is the committed docs copy, and it covers every claw-http route."""
    served = daemon.client().get("/v1/claw/openapi.json")
    doc = json.loads((REPO / "docs" / "claw-http.openapi.json").read_text())
    assert served == doc == json.loads(json.dumps(openapi()))
    assert sorted(doc["paths"]) == sorted(PREFIX + op[0] for op in OPERATIONS)
    for path in doc["paths"].values():
        ref = path["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.split("/")[-1] in doc["components"]["schemas"]
