"""`hookd mcp`: the stdio MCP server as a real subprocess, driven by the official SDK's stdio
client, against a real daemon. The server is started with exactly the command `hookd spawn`
wrote into the worktree's ``.mcp.json`` (cwd = the worktree, as Claude Code starts it).

ask -> an id at once and a pending ``async`` interaction in the daemon (with the session id
from ``CLAUDE_CODE_SESSION_ID``); a CLI answer -> await_answers returns it (and its inbox copy
is adopted, so it is not injected again); nothing answered -> await_answers returns after its
timeout naming the pending ids; check_answers never waits; bad arguments and a daemon that is
down give an error result and the server keeps serving. Spoken to line by line: a protocol
version it does not offer gets the newest; a cancelled wait gets no reply and holds nothing up;
stdin's end ends the server, a wait under way or not.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from hookd.daemonproc import DaemonProcess  # noqa: E402
from tests.conftest import hookd_cli, hookd_run  # noqa: E402

pytestmark = pytest.mark.daemon

BUILDER = "b-mcp"
SESSION = "sess-0f0e0d0c"
ASK_ID = re.compile(r"\bask_[0-9a-f]{12}\b")


class Tools:
    """One MCP client session with the server; ``call`` returns (text, is_error)."""

    def __init__(self, session: ClientSession):
        self.session = session

    async def call(self, name: str, **args: Any) -> tuple[str, bool]:
        r = await self.session.call_tool(name, args)
        texts = [c.text for c in r.content if getattr(c, "type", None) == "text"]
        assert len(texts) == 1, r
        return texts[0], bool(r.is_error)

    async def ask(self, question: str, options: list[str] | None = None) -> str:
        text, err = await self.call("ask_user_async", question=question, options=options)
        assert not err, text
        [iid] = set(ASK_ID.findall(text))
        return iid


def result_json(text: str) -> dict[str, Any]:
    """The JSON line the tools put after their sentence."""
    return json.loads(text.splitlines()[-1])


@pytest.fixture
def spawned(home: Path, worktree: Path) -> dict[str, Any]:
    """The builder spawned into the worktree; returns hookd's ``.mcp.json`` entry."""
    r = hookd_run(home, "spawn", BUILDER, "--worktree", os.fspath(worktree))
    assert r.returncode == 0, r.stderr
    return json.loads((worktree / ".mcp.json").read_text())["mcpServers"]["hookd"]


@asynccontextmanager
async def mcp_server(entry: dict[str, Any], cwd: Path, errlog: Path) -> AsyncIterator[Tools]:
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=cwd,
                                   env={"CLAUDE_CODE_SESSION_ID": SESSION})
    with open(errlog, "w") as err:
        async with stdio_client(params, errlog=err) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield Tools(session)


def answer_cli(home: Path, iid: str, *args: str) -> None:
    r = hookd_cli(home, "answer", iid, *args)
    assert r.returncode == 0, r.stderr


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))


def test_tools_listed_with_their_shapes(daemon: DaemonProcess, spawned: dict, worktree: Path, tmp_path: Path) -> None:
    async def go() -> None:
        async with mcp_server(spawned, worktree, tmp_path / "mcp.err") as t:
            tools = {x.name: x for x in (await t.session.list_tools()).tools}
            assert set(tools) == {"ask_user_async", "await_answers", "check_answers"}
            assert tools["ask_user_async"].input_schema["required"] == ["question"]
            assert tools["await_answers"].input_schema["required"] == ["timeout_s"]
            assert "required" not in tools["check_answers"].input_schema
            for x in tools.values():  # plain text results, no {"result": ...} wrapper
                assert x.output_schema is None and x.description and "\n        " not in x.description
    run(go())


def test_ask_returns_an_id_at_once_and_a_cli_answer_reaches_await(
        daemon: DaemonProcess, spawned: dict, worktree: Path, home: Path, tmp_path: Path) -> None:
    async def go() -> None:
        async with mcp_server(spawned, worktree, tmp_path / "mcp.err") as t:
            text, err = await t.call("ask_user_async", question="Which database?", options=["postgres", "sqlite"])
            assert not err, text
            [iid] = set(ASK_ID.findall(text))
            assert "keep working" in text and "await_answers" in text and "check_answers" in text
            assert "message naming this id" in text and f"[Answer to question {iid}]" not in text
            assert result_json(text) == {"id": iid, "state": "pending", "question": "Which database?",
                                         "options": ["postgres", "sqlite"]}

            i = daemon.client().get(f"/v1/interactions/{iid}")
            assert (i["kind"], i["state"], i["builder"], i["session_id"]) == ("async", "pending", BUILDER, SESSION)
            assert [q["question"] for q in i["questions"]] == ["Which database?"]
            [ev] = [e for e in events(home) if e["kind"] == "human_input_requested"]
            assert ev["data"]["id"] == iid and ev["data"]["async"] is True

            waiting = asyncio.create_task(t.call("await_answers", timeout_s=60))
            t0 = time.monotonic()
            await asyncio.to_thread(answer_cli, home, iid, "--text", "sqlite, it is a prototype")
            text, err = await waiting
            assert not err, text
            assert time.monotonic() - t0 < 30
            assert text.startswith(f"All 1 answered: {iid}.")
            r = result_json(text)
            assert r["pending"] == [] and r["closed"] == [] and r["timed_out"] is False
            [a] = r["answered"]
            assert a["id"] == iid and a["surface"] == "cli" and a["questions"] == ["Which database?"]
            assert a["answers"] == {"Which database?": "sqlite, it is a prototype"}

        # collected by await_answers: its inbox copy is adopted, never injected again
        inbox = json.loads(hookd_cli(home, "inbox", BUILDER, "--json").stdout)
        [m] = [m for m in inbox if f"[Answer to question {iid}]" in m["text"]]
        assert m["state"] == "adopted" and m["adopted_via"] == "await_answers"
    run(go())


def test_await_with_nothing_answered_returns_after_its_timeout_naming_the_pending_ids(
        daemon: DaemonProcess, spawned: dict, worktree: Path, tmp_path: Path) -> None:
    async def go() -> None:
        async with mcp_server(spawned, worktree, tmp_path / "mcp.err") as t:
            a = await t.ask("First?")
            b = await t.ask("Second?", ["x", "y"])
            t0 = time.monotonic()
            text, err = await t.call("await_answers", timeout_s=2)
            elapsed = time.monotonic() - t0
            assert not err, text
            assert elapsed >= 2, elapsed  # not before its timeout
            assert text.startswith(f"Still pending after waiting 2 s: {a}, {b}.")
            r = result_json(text)
            assert r == {"answered": [], "closed": [], "pending": [a, b], "timed_out": True}
            # explicit ids: only those
            text, err = await t.call("await_answers", timeout_s=0.5, ids=[b])
            assert not err and result_json(text)["pending"] == [b]
    run(go())


def test_check_answers_never_waits(daemon: DaemonProcess, spawned: dict, worktree: Path, home: Path,
                                   tmp_path: Path) -> None:
    async def go() -> None:
        async with mcp_server(spawned, worktree, tmp_path / "mcp.err") as t:
            a = await t.ask("Ship it?", ["yes", "no"])
            b = await t.ask("Which colour?")
            text, err = await t.call("check_answers")  # nothing will answer: it returns what is pending now
            assert not err, text
            assert text.startswith(f"Still pending now: {a}, {b}.")
            await asyncio.to_thread(answer_cli, home, a, "--option", "yes")
            text, err = await t.call("check_answers")
            assert not err, text
            assert text.startswith(f"Answered: {a}. Still pending now: {b}.")
            r = result_json(text)
            assert [x["answers"] for x in r["answered"]] == [{"Ship it?": "yes"}] and r["pending"] == [b]
            text, err = await t.call("check_answers", ids=[a])
            assert not err and text.startswith(f"All 1 answered: {a}.")
    run(go())


def test_bad_arguments_are_error_results(daemon: DaemonProcess, spawned: dict, worktree: Path, home: Path,
                                         tmp_path: Path) -> None:
    async def go() -> None:
        async with mcp_server(spawned, worktree, tmp_path / "mcp.err") as t:
            text, err = await t.call("check_answers")
            assert err and "no question was asked" in text
            for bad in (0, -1):
                text, err = await t.call("await_answers", timeout_s=bad)
                assert err and "timeout_s must be" in text, text
            text, err = await t.call("await_answers", timeout_s="soon")
            assert err, text
            text, err = await t.call("ask_user_async", question="   ")
            assert err and "question must be" in text, text
            text, err = await t.call("ask_user_async", question="Pick", options=["a", "a"])
            assert err and "options must be" in text, text
            text, err = await t.call("check_answers", ids=["ask_000000000000"])
            assert err and "no interaction ask_000000000000" in text, text
            # above the cap: cut to 600 s and said so (answered first, so it returns at once)
            a = await t.ask("Fine?")
            await asyncio.to_thread(answer_cli, home, a, "--text", "fine")
            text, err = await t.call("await_answers", timeout_s=10_000)
            assert not err and "cut to 600 s" in text and text.startswith(f"All 1 answered: {a}.")
    run(go())


def test_daemon_down_gives_an_error_result_and_the_server_survives(
        home: Path, spawned: dict, worktree: Path, tmp_path: Path) -> None:
    err_log = tmp_path / "mcp.err"

    async def go() -> None:
        async with mcp_server(spawned, worktree, err_log) as t:
            text, err = await t.call("ask_user_async", question="Anyone there?")
            assert err and "the daemon is not running" in text and "serve" in text, text
            d = await asyncio.to_thread(lambda: DaemonProcess(home).start())
            try:
                iid = await t.ask("Anyone there now?")  # the same server process, still serving
                text, err = await t.call("check_answers")
                assert not err and result_json(text)["pending"] == [iid]
                await asyncio.to_thread(d.stop)
                text, err = await t.call("await_answers", timeout_s=1)
                assert err and "the daemon is not running" in text, text
            finally:
                await asyncio.to_thread(d.stop)
                await asyncio.to_thread(d.kill)
            assert len((await t.session.list_tools()).tools) == 3
    run(go())
    assert "Traceback" not in err_log.read_text()


def events(home: Path) -> list[dict[str, Any]]:
    r = hookd_cli(home, "events", "--json")
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def test_hookd_mcp_refuses_a_bad_builder_id(home: Path) -> None:
    r = hookd_cli(home, "mcp", "--builder", "../x")
    assert r.returncode == 2 and "invalid builder id" in r.stderr and r.stdout == ""


def test_describe_await_names_closed_ids_with_their_state() -> None:
    from hookd.mcp_server import describe_await

    text = describe_await({"answered": [], "closed": [{"id": "ask_1", "state": "expired", "warning": "w"}],
                           "pending": [], "timed_out": False}, 3)
    assert text.startswith("Closed without an answer: ask_1 (expired).")
    assert json.loads(text.splitlines()[1])["closed"][0]["state"] == "expired"


class RawServer:
    """``hookd mcp`` spoken to line by line (JSON-RPC over its stdin/stdout), for what the SDK's
    client does not let a test do: a version it does not offer, a cancellation, stdin's end."""

    def __init__(self, entry: dict[str, Any], cwd: Path, errlog: Path):
        import subprocess

        self.err = open(errlog, "wb")
        self.proc = subprocess.Popen([entry["command"], *entry["args"]], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err)

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **msg}).encode() + b"\n")
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its stdout"
        return json.loads(line)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        rc = self.proc.wait(30)
        self.err.close()
        return rc


def test_cancelled_wait_gets_no_reply_and_the_server_keeps_answering(
        daemon: DaemonProcess, spawned: dict, worktree: Path, tmp_path: Path) -> None:
    s = RawServer(spawned, worktree, tmp_path / "mcp.err")
    try:
        s.send({"id": 1, "method": "initialize", "params": {"protocolVersion": "2099-01-01", "capabilities": {},
                                                            "clientInfo": {"name": "t", "version": "1"}}})
        r = s.reply()
        assert r["id"] == 1 and r["result"]["protocolVersion"] == "2025-11-25"  # not offered: the newest
        assert r["result"]["capabilities"] == {"tools": {"listChanged": False}}
        s.send({"method": "notifications/initialized"})
        s.send({"id": 2, "method": "tools/call", "params": {"name": "ask_user_async", "arguments": {"question": "Q?"}}})
        r = s.reply()
        assert r["id"] == 2 and not r["result"]["isError"]
        [iid] = set(ASK_ID.findall(r["result"]["content"][0]["text"]))
        s.send({"id": 3, "method": "tools/call", "params": {"name": "await_answers", "arguments": {"timeout_s": 600}}})
        s.send({"id": 4, "method": "ping"})
        assert s.reply() == {"jsonrpc": "2.0", "id": 4, "result": {}}  # the wait holds nothing up
        s.send({"method": "notifications/cancelled", "params": {"requestId": 3, "reason": "user interrupted"}})
        s.send({"id": 5, "method": "tools/call", "params": {"name": "check_answers", "arguments": {"ids": [iid]}}})
        r = s.reply()  # the next reply is 5's: 3 got none
        assert r["id"] == 5 and r["result"]["content"][0]["text"].startswith(f"Still pending now: {iid}.")
        s.send({"id": 6, "method": "resources/list"})
        assert s.reply()["result"] == {"resources": []}
        s.send({"id": 7, "method": "no/such"})
        assert s.reply()["error"]["code"] == -32601
        s.send({"id": 8, "method": "tools/call", "params": {"name": "await_answers", "arguments": {"timeout_s": 600}}})
        s.send({"id": 9, "method": "ping"})
        assert s.reply()["id"] == 9
    finally:
        assert s.close() == 0  # stdin's end ends the server, a 600 s wait under way or not
    assert (tmp_path / "mcp.err").read_text() == ""
