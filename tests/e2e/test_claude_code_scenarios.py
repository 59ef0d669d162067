"""hookd against the real Claude Code 2.1.332, offline: one scenario per test.

Every scenario spawns a builder with ``hookd spawn`` (both forms are covered: ``--worktree``,
which writes ``<project>/.claude/settings.local.json``, and ``--settings-file PATH`` passed
to ``claude --settings PATH``), drives the real binary against the scripted fake Messages
API, and asserts on hookd's own record (``hookd questions/events/status --json`` and, for
raw payload bytes, the store itself, read-only) AND on what reached the model (the fake
API's request log) or what Claude Code wrote (its transcript).

Facts of 2.1.332 these tests pin (found with these very drivers):

* Esc on an AskUserQuestion menu sends NO hook at all: no PostToolUseFailure, no Stop. Only
  the transcript shows it (an ``is_error`` tool_result "The user doesn't want to proceed
  ...", ``toolUseResult: "User rejected tool use"``, then "[Request interrupted by user for
  tool use]"). The next turn's UserPromptSubmit (or Stop) is the hooks' only sign that the
  question is gone: hookd resolves it there as ``dismissed``, ``inferred_from`` that hook.
* Multi-select menus: Up/Down move, Space toggles the row under the cursor, Tab goes to the
  next question; the answer is the checked labels in the order they were CHECKED (not
  option order) joined by ", " (2.1.332 quotes a label holding a comma or a quote).
  "Type something." is a row: move onto it and type; Enter accepts it. After the last
  question a "Review your answers" screen needs "1. Submit answers" (Enter).
* Plain ``-p``: AskUserQuestion is not offered; a call gets "No such tool available" and
  fires no hook.
* The subagent tool is ``Agent`` (input ``description``, ``prompt``, ``subagent_type``,
  ``run_in_background``); the subagent's hooks carry ``agent_id`` (= the API header
  ``x-claude-code-agent-id``) and ``agent_type``.
* ``Bash`` exiting non-zero and ``Read`` of a missing file both fire PostToolUseFailure.
* ``--resume ID`` keeps the session id (SessionStart ``source: "resume"``);
  ``--resume ID --fork-session`` starts a new id (SessionStart ``source: "fork"``).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hookd.config import Home

from .drivers import PrintResult, TmuxClaude, hermetic_env, run_print, wait_until
from .fake_api import FakeAnthropicAPI
from .test_claude_code_hookd import _Hookd

pytestmark = pytest.mark.e2e

BYPASS = ("--permission-mode", "bypassPermissions")


# ------------------------------------------------------------------------ model turns
def text_turn(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}]}


def tool_turn(tool_id: str, name: str, tool_input: dict, text: str | None = None) -> dict:
    content: list[dict] = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
    return {"content": content}


def bash_turn(tool_id: str, command: str) -> dict:
    return tool_turn(tool_id, "Bash", {"command": command, "description": "Run a command"})


def option(label: str) -> dict:
    return {"label": label, "description": f"The {label} option"}


# ------------------------------------------------------------------------------- rig
@dataclass
class Rig:
    """One scenario's world: a hookd home (daemon started or not), the fake API, a private
    HOME and project for Claude Code, and the builder spawned into them."""

    hookd: _Hookd
    api: FakeAnthropicAPI
    env: dict[str, str]
    project: Path
    claude_bin: Path
    tmp: Path
    builder: str = ""
    settings: Path | None = None  # the --settings file, for the --settings-file form

    @property
    def home(self) -> Home:
        return Home.resolve(self.hookd.home)

    # -- setup ------------------------------------------------------------------------
    def spawn(self, builder: str, form: str) -> dict[str, Any]:
        """``hookd spawn`` in ``form`` ``worktree`` or ``settings-file``; returns the manifest."""
        self.builder = builder
        local = self.project / ".claude" / "settings.local.json"
        if form == "worktree":
            m = json.loads(self.hookd.cli("spawn", builder, "--worktree", os.fspath(self.project), "--json"))
            assert Path(m["settings_file"]) == local and local.is_file()
            self.settings = None
        else:
            assert form == "settings-file", form
            path = self.tmp / "settings" / f"{builder}.json"
            m = json.loads(self.hookd.cli("spawn", builder, "--settings-file", os.fspath(path), "--json"))
            assert Path(m["settings_file"]) == path and path.is_file()
            assert not local.exists()  # this form leaves the worktree alone
            self.settings = path
        text = Path(m["settings_file"]).read_text()
        assert f"# hookd builder={builder}" in text
        return m

    # -- drive Claude Code ---------------------------------------------------------------
    def run_print(self, prompt: str, *extra: str, timeout: float = 60) -> PrintResult:
        res = run_print(prompt, self.project, self.env, settings=self.settings,
                        extra_args=(*BYPASS, *extra), timeout=timeout, claude_bin=self.claude_bin)
        assert res.returncode == 0, f"claude -p exited {res.returncode}: {res.stderr[-2000:]}"
        assert res.result is not None, res.stdout[-2000:]
        return res

    def tui(self, tmux_bin: str) -> TmuxClaude:
        return TmuxClaude(self.project, self.env, settings=self.settings, extra_args=BYPASS,
                          claude_bin=self.claude_bin, tmux=tmux_bin)

    # -- hookd's record (each call runs the `hookd` CLI: fetch once, then filter) --------
    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        """``hookd events --json``, optionally only one ``kind``."""
        return [e for e in self.hookd.events() if kind is None or e["kind"] == kind]

    def wait_events(self, pred: Any, what: str, timeout: float = 15) -> list[dict[str, Any]]:
        """Poll ``hookd events --json`` until ``pred(events)`` holds; returns the events. On a
        timeout, the error names the newest 40 events (kind, and the hook's or interaction's
        name), so a CI log says what did happen."""
        seen: list[dict[str, Any]] = []

        def poll():
            seen[:] = self.events()
            return seen if pred(seen) else None

        def said() -> str:
            tail = [f"{e['kind']}({(e.get('data') or {}).get('hook_event_name') or (e.get('data') or {}).get('id') or ''})"
                    for e in seen[-40:]]
            return f"{what}; the newest events: {' '.join(tail)}"
        return wait_until(poll, timeout, 0.1, said)

    def wait_hook(self, name: str, timeout: float = 15, **match: Any) -> list[dict[str, Any]]:
        """Wait until a ``hook_received`` for hook ``name`` whose data matches ``match`` is
        recorded; returns all events."""
        return self.wait_events(lambda ev: find_hook(ev, name, **match) is not None,
                                f"hook_received {name} {match} in hookd", timeout)

    def questions(self) -> list[dict[str, Any]]:
        return self.hookd.questions()

    def status(self) -> dict[str, Any]:
        return json.loads(self.hookd.cli("status", "--json"))

    def builder_status(self) -> dict[str, Any]:
        rows = [b for b in self.status()["builders"] if b["builder"] == self.builder]
        assert len(rows) == 1, rows
        return rows[0]

    def stored_hooks(self) -> list[dict[str, Any]]:
        """Rows of the store's ``hook_events`` (``raw``: the payload bytes as stored), in
        arrival order.
        Read-only: the daemon may be running."""
        db = sqlite3.connect(f"file:{self.home.db}?mode=ro", uri=True)
        try:
            rows = db.execute(
                "SELECT id, delivery_id, builder, source, hook_event_name, session_id, tool_use_id,"
                " raw FROM hook_events ORDER BY id").fetchall()
        finally:
            db.close()
        keys = ("id", "delivery_id", "builder", "source", "hook_event_name", "session_id",
                "tool_use_id", "raw")
        return [dict(zip(keys, r)) for r in rows]

    def close(self) -> None:
        self.hookd.stop()
        self.api.stop()


@pytest.fixture
def rig(claude_bin: Path, e2e_home: Path, e2e_project: Path, tmp_path: Path):
    """Factory: ``rig(script, builder=, form=, subagent_script=, daemon=True)`` -> a Rig with
    the builder spawned (before Claude Code starts, as hookd requires) and, unless
    ``daemon=False``, the daemon running. Everything is stopped after the test."""
    pytest.importorskip("hookd.cli")
    made: list[Rig] = []

    def make(script: Any, *, builder: str, form: str, subagent_script: Any = None,
             daemon: bool = True) -> Rig:
        api = FakeAnthropicAPI(script, default_subagent_script=subagent_script).start()
        r = Rig(hookd=_Hookd(tmp_path / "hookd"), api=api, env=hermetic_env(e2e_home, api.url),
                project=e2e_project, claude_bin=claude_bin, tmp=tmp_path)
        made.append(r)
        r.spawn(builder, form)
        if daemon:
            r.hookd.start()
        return r

    yield make
    for r in made:
        r.close()


def transcript_rows(path: str | os.PathLike) -> list[dict[str, Any]]:
    rows = []
    for line in Path(path).read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def wait_transcript_result(r: Any, tool_use_id: str, timeout: float = 30) -> list[dict]:
    """Wait until the session's transcript holds the tool_result of ``tool_use_id`` (Claude
    Code writes its transcript rows after the screen shows the turn, and rows not yet written
    when the session is ended are lost); returns those rows."""
    def rows() -> list[dict]:
        sessions = r.builder_status()["sessions"]
        return tool_result_rows(transcript_rows(sessions[0]["transcript_path"]), tool_use_id) if sessions else []
    return wait_until(rows, timeout, 0.1, f"the transcript's tool_result of {tool_use_id}")


def tool_result_rows(rows: list[dict], tool_use_id: str) -> list[dict]:
    """Transcript ``user`` rows holding a tool_result for ``tool_use_id``."""
    out = []
    for r in rows:
        content = (r.get("message") or {}).get("content") if r.get("type") == "user" else None
        if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result"
                and b.get("tool_use_id") == tool_use_id for b in content):
            out.append(r)
    return out


def tool_result_block(request, tool_use_id: str) -> dict | None:
    """The raw ``tool_result`` block for ``tool_use_id`` in a logged model request."""
    for msg in request.body.get("messages") or []:
        for b in msg.get("content") if isinstance(msg.get("content"), list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == tool_use_id:
                return b
    return None


def hooks_of(events: list[dict]) -> list[dict]:
    """The ``hook_received`` events among ``events``."""
    return [e for e in events if e["kind"] == "hook_received"]


def find_hook(events: list[dict], name: str, **match: Any) -> dict | None:
    """The first ``hook_received`` for hook ``name`` whose data matches ``match``."""
    for e in hooks_of(events):
        d = e["data"]
        if d.get("hook_event_name") == name and all(d.get(k) == v for k, v in match.items()):
            return e
    return None


def of_kind(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["kind"] == kind]


def about(events: list[dict], kind: str, interaction_id: str) -> list[dict]:
    """Events of ``kind`` about the interaction ``interaction_id``."""
    return [e for e in events if e["kind"] == kind and e["data"].get("id") == interaction_id]


def press_once(tui: TmuxClaude, key: str, predicate: Any, settle: float = 1.0,
               timeout: float = 10.0) -> str:
    """Press ``key`` until ``predicate`` holds on screen (as ``wait_for_screen``); returns
    the screen. 2.1.332's menus ignore keys for ~0.1 s after they appear, so a key may need
    repeating; unlike ``press_until`` it is re-sent only after ``settle`` seconds without
    effect, for keys that must not land twice (Space toggles; a second Esc at the prompt
    opens the rewind menu)."""
    deadline = time.monotonic() + timeout
    while True:
        tui.send_keys(key)
        try:
            return tui.wait_for_screen(predicate, timeout=settle)
        except TimeoutError:
            if time.monotonic() >= deadline:
                raise


# ================================================================ 1. Esc at the TUI menu
ESC_ASK = "toolu_01SCNESCASK0000000000001"
ESC_Q = "Which database should we use?"


def test_tui_escape_on_question_menu(rig, tmux_bin):
    """Esc on the menu. 2.1.332 sends no hook for it (not PostToolUseFailure, as the docs
    say), but cancels the held PermissionRequest hook (SIGTERM) and writes the rejection to its
    transcript: hookd resolves the question `dismissed` at the terminal, without inventing an
    answer, from whichever it takes first: the transcript's rejection row (at once, the hooks
    being quiet), or the hook's cancellation once the agent has outlived it
    (hookd.core.holds.AGENT_GONE_S: an agent that exits cancels its held hook too)."""
    r = rig({"turns": [
        tool_turn(ESC_ASK, "AskUserQuestion", {"questions": [{
            "question": ESC_Q, "header": "DB", "multiSelect": False,
            "options": [option("Postgres"), option("SQLite")]}]}),
        text_turn("NEXT-TURN-ESC-55"),
    ]}, builder="b-esc", form="worktree")

    with r.tui(tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Ask me which database")
        tui.wait_for_screen(lambda s: "Enter to select" in s and "2. SQLite" in s, timeout=30)
        ev = r.wait_events(lambda ev: about(ev, "question_pending", ESC_ASK)
                           and find_hook(ev, "PermissionRequest", tool_name="AskUserQuestion"),
                           "question_pending and the PermissionRequest hook")
        assert about(ev, "question_pending", ESC_ASK)[0]["builder"] == "b-esc"

        press_once(tui, "Escape", lambda s: "Enter to select" not in s)
        tui.wait_for_screen("Declined to answer Claude's questions", timeout=30)
        # dismissed by the held hook's cancellation, seen before anything else happens: a
        # prompt typed at once can reach a busy daemon before the hook's end does (then the
        # prompt's turn boundary dismisses it: the same outcome by the other path,
        # hookd.core.questions.Questions.close_open_questions)
        r.wait_events(lambda ev: about(ev, "question_resolved", ESC_ASK), "the question dismissed", timeout=30)
        # A further turn: its Stop hook proves every hook of the escaped turn had its chance.
        # Typed once the idle prompt is back: on a busy machine a key typed while the TUI
        # still redraws after the menu was lost ("arry on")
        tui.wait_ready(timeout=30)
        tui.submit("carry on")
        tui.wait_for_screen("NEXT-TURN-ESC-55", timeout=30)
        ev = r.wait_hook("Stop")

    # What Claude Code sent hookd for the escaped call: PreToolUse + PermissionRequest only.
    hooks = hooks_of(ev)
    for_call = [e["data"]["hook_event_name"] for e in hooks if e["data"].get("tool_use_id") == ESC_ASK]
    assert for_call == ["PreToolUse"], for_call  # PermissionRequest carries no tool_use_id
    names = [e["data"]["hook_event_name"] for e in hooks]
    assert "PostToolUseFailure" not in names and "PostToolUse" not in names, names
    assert names.count("PermissionRequest") == 1 and names.count("Stop") == 1, names
    assert names.index("Stop") > names.index("PermissionRequest")

    # What Claude Code wrote and told the model: a rejection, no answers.
    builder = r.builder_status()
    assert [s["session_id"] for s in builder["sessions"]] == [find_hook(ev, "Stop")["session_id"]]
    rows = transcript_rows(builder["sessions"][0]["transcript_path"])
    result_rows = tool_result_rows(rows, ESC_ASK)
    assert len(result_rows) == 1
    assert result_rows[0]["toolUseResult"] == "User rejected tool use"
    block = result_rows[0]["message"]["content"][0]
    assert block["is_error"] is True and "doesn't want to proceed" in block["content"]
    assert any(row.get("type") == "user" and "[Request interrupted by user for tool use]"
               in json.dumps(row.get("message")) for row in rows)
    main = r.api.main_requests()
    assert len(main) == 2  # the escaped turn made no request; "carry on" made the second
    sent = tool_result_block(main[1], ESC_ASK)
    assert sent is not None and sent.get("is_error") is True
    assert "doesn't want to proceed" in json.dumps(sent["content"])

    # hookd: one interaction, dismissed at the terminal by the transcript's rejection or the
    # held PermissionRequest hook's cancellation (SIGTERM on Esc), no answer invented, nothing
    # left pending.
    qs = r.questions()
    assert [q["id"] for q in qs] == [ESC_ASK], qs
    q = qs[0]
    assert q["state"] == "dismissed", q
    assert q["answers"] is None and q["selections"] is None and q["builder"] == "b-esc"
    assert q["questions"][0]["question"] == ESC_Q
    assert len(about(ev, "question_pending", ESC_ASK)) == 1
    [resolved] = about(ev, "question_resolved", ESC_ASK)
    assert resolved["data"]["outcome"] == "dismissed"
    assert (resolved["data"].get("inferred_from"), resolved["data"].get("via")) in (
        ("hook cancelled", None), (None, "transcript")), resolved["data"]
    assert resolved["data"]["surface"] == "terminal"
    carry_on = [e for e in hooks_of(ev) if e["data"]["hook_event_name"] == "UserPromptSubmit"][-1]
    assert resolved["seq"] < carry_on["seq"]  # before the human's next prompt
    assert builder["pending"] == 0


# ====================================== 2. multi-select + "Other" free text at the TUI
MULTI_ASK = "toolu_01SCNMULTIASK00000000001"
Q_MULTI = "Which toppings do you want?"
Q_CITY = "Which city do you live in?"
FREE_TEXT = 'Lyon, "la capitale" & more'


def test_tui_multiselect_and_free_text_answers(rig, tmux_bin):
    r = rig({"turns": [
        tool_turn(MULTI_ASK, "AskUserQuestion", {"questions": [
            {"question": Q_MULTI, "header": "Toppings", "multiSelect": True,
             "options": [option("Cheese"), option("Ham"), option("Olives")]},
            {"question": Q_CITY, "header": "City", "multiSelect": False,
             "options": [option("Paris"), option("Rome")]}]}),
        text_turn("FINAL-MULTI-321"),
    ]}, builder="b-multi", form="settings-file")

    with r.tui(tmux_bin) as tui:
        tui.wait_ready(timeout=20)
        tui.submit("Ask me two questions")
        tui.wait_for_screen(lambda s: Q_MULTI in s and "3. [ ] Olives" in s, timeout=30)
        # Olives first, then Cheese: 2.1.332 lists the labels in the order they were checked.
        tui.send_keys("Down", "Down")
        tui.wait_for_screen(r"❯ 3\. \[ \] Olives", timeout=5)
        press_once(tui, "Space", re.compile(r"\[✔\] Olives"))
        tui.send_keys("Up", "Up")
        tui.wait_for_screen(r"❯ 1\. \[ \] Cheese", timeout=5)
        press_once(tui, "Space", re.compile(r"\[✔\] Cheese"))
        assert "[ ] Ham" in tui.capture()
        tui.send_keys("Tab")  # next question
        tui.wait_for_screen(lambda s: Q_CITY in s and "3. Type something." in s, timeout=5)
        tui.send_keys("Down", "Down")
        tui.wait_for_screen(r"❯ 3\. Type something\.", timeout=5)
        tui.send_text(FREE_TEXT)
        tui.wait_for_screen(re.escape(f"❯ 3. {FREE_TEXT}"), timeout=5)
        tui.send_keys("Enter")
        review = tui.wait_for_screen(
            lambda s: "Review your answers" in s and "1. Submit answers" in s, timeout=5)
        assert "→ Olives, Cheese" in review and f"→ {FREE_TEXT}" in review, review
        # Still pending while the review screen is up.
        assert [(q["id"], q["state"]) for q in r.questions()] == [(MULTI_ASK, "pending")]
        press_once(tui, "Enter", lambda s: "Submit answers" not in s)
        tui.wait_for_screen("FINAL-MULTI-321", timeout=30)
        ev = r.wait_events(lambda ev: about(ev, "question_resolved", MULTI_ASK),
                           "question_resolved")
        # Claude Code writes its transcript behind the screen: read before the session ends
        wait_transcript_result(r, MULTI_ASK)

    expected_answers = {Q_MULTI: "Olives, Cheese", Q_CITY: FREE_TEXT}
    # Claude Code's own record: the transcript's toolUseResult and the model's tool_result.
    builder = r.builder_status()
    rows = transcript_rows(builder["sessions"][0]["transcript_path"])
    result_rows = tool_result_rows(rows, MULTI_ASK)
    assert len(result_rows) == 1
    assert result_rows[0]["toolUseResult"]["answers"] == expected_answers
    main = r.api.main_requests()
    assert len(main) == 2
    sent = main[1].tool_results()[MULTI_ASK]
    assert f'"{Q_MULTI}"="Olives, Cheese"' in sent and f'"{Q_CITY}"="{FREE_TEXT}"' in sent

    # hookd: answers verbatim, selections decoded.
    resolved = about(ev, "question_resolved", MULTI_ASK)
    assert len(resolved) == 1 and len(about(ev, "question_pending", MULTI_ASK)) == 1
    data = resolved[0]["data"]
    assert data["outcome"] == "answered" and data["surface"] == "terminal"
    assert data["answers"] == expected_answers
    assert data["selections"] == [
        {"question": Q_MULTI, "raw": "Olives, Cheese", "labels": ["Olives", "Cheese"], "other": None},
        {"question": Q_CITY, "raw": FREE_TEXT, "labels": [], "other": FREE_TEXT},
    ]
    assert resolved[0]["session_id"] == find_hook(ev, "PostToolUse", tool_use_id=MULTI_ASK)["session_id"]
    qs = r.questions()
    assert [(q["id"], q["state"]) for q in qs] == [(MULTI_ASK, "answered")]
    assert qs[0]["answers"] == expected_answers and qs[0]["selections"] == data["selections"]
    assert builder["pending"] == 0


# ====================================================== 3. AskUserQuestion in plain -p
PRINT_ASK = "toolu_01SCNPRINTASK0000000001"


def test_print_mode_question_leaves_no_phantom(rig):
    r = rig({"turns": [
        tool_turn(PRINT_ASK, "AskUserQuestion", {"questions": [{
            "question": "Tabs or spaces?", "header": "Indent", "multiSelect": False,
            "options": [option("Tabs"), option("Spaces")]}]}),
        text_turn("FINAL-PRINT-ASK-7"),
    ]}, builder="b-print", form="worktree")

    res = r.run_print("Ask me about indentation")
    assert res.result["result"] == "FINAL-PRINT-ASK-7"
    main = r.api.main_requests()
    assert len(main) == 2
    offered = [t.get("name") for t in main[0].body.get("tools") or []]
    assert "Bash" in offered and "AskUserQuestion" not in offered, offered
    sent = tool_result_block(main[1], PRINT_ASK)
    assert sent is not None and sent.get("is_error") is True
    assert "No such tool available" in json.dumps(sent["content"])

    ev = r.wait_hook("SessionEnd")
    names = [e["data"]["hook_event_name"] for e in hooks_of(ev)]
    assert names == ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"], names
    assert [e for e in hooks_of(ev) if e["data"].get("tool_use_id") == PRINT_ASK] == []
    # No hook saw the call; the transcript tailer did (B05): the question opened and was
    # resolved `denied` in the same poll (one transaction: consecutive seqs), so it was never
    # pending for anyone to stall on, and no answer was invented from "FINAL-PRINT-ASK-7".
    ev = r.wait_events(lambda e: about(e, "question_resolved", PRINT_ASK), "the transcript's refusal")
    [pending] = about(ev, "question_pending", PRINT_ASK)
    [resolved] = about(ev, "question_resolved", PRINT_ASK)
    assert pending["data"]["via"] == resolved["data"]["via"] == "transcript"
    assert resolved["seq"] == pending["seq"] + 1
    assert resolved["data"]["outcome"] == "denied" and resolved["data"]["answers"] is None
    assert "No such tool available" in resolved["data"]["error"]
    [q] = r.questions()
    assert (q["id"], q["state"], q["answers"]) == (PRINT_ASK, "denied", None)
    b = r.builder_status()
    assert b["pending"] == 0 and b["hooks_seen"] == len(names)


# ================================================================= 4. a subagent run
AGENT_CALL = "toolu_01SCNAGENTCALL000000001"
SUB_BASH = "toolu_01SCNSUBBASH0000000001"
MAIN_BASH = "toolu_01SCNMAINBASH000000001"


def test_subagent_tool_calls_carry_agent_id(rig):
    r = rig({"turns": [
        # 2.1.332's subagent tool is "Agent" (input: description, prompt, subagent_type,
        # run_in_background, ...); checked against the offered tools below.
        tool_turn(AGENT_CALL, "Agent", {"description": "Probe the shell",
                                        "prompt": "Run echo sub-probe and report",
                                        "subagent_type": "general-purpose",
                                        "run_in_background": False}),
        bash_turn(MAIN_BASH, "echo main-probe"),
        text_turn("FINAL-MAIN-AGENT-9"),
    ]}, subagent_script={"turns": [bash_turn(SUB_BASH, "echo sub-probe"),
                                   text_turn("SUB-REPORT-42")]},
        builder="b-agent", form="settings-file")

    res = r.run_print("Delegate a probe")
    assert res.result["result"] == "FINAL-MAIN-AGENT-9"
    main, sub = r.api.main_requests(), r.api.messages_requests("subagent")
    tools = {t.get("name"): t for t in main[0].body.get("tools") or []}
    props = tools["Agent"]["input_schema"]["properties"]
    assert {"description", "prompt", "subagent_type", "run_in_background"} <= set(props)
    assert len(sub) == 2 and len({s.agent_id for s in sub}) == 1
    agent_id = sub[0].agent_id
    assert agent_id
    assert sub[1].tool_results() == {SUB_BASH: "sub-probe"}
    # A foreground agent: its report came back as the Agent tool's result, then main went on.
    assert len(main) == 3 and "SUB-REPORT-42" in main[1].tool_results()[AGENT_CALL]
    assert main[2].tool_results()[MAIN_BASH] == "main-probe"

    ev = r.wait_hook("SessionEnd")
    hooks = hooks_of(ev)
    sub_hooks = [e["data"] for e in hooks if e["data"].get("tool_use_id") == SUB_BASH]
    assert [d["hook_event_name"] for d in sub_hooks] == ["PreToolUse", "PostToolUse"]
    for d in sub_hooks:
        assert d["agent_id"] == agent_id and d["agent_type"] == "general-purpose", d
    stops = [e["data"] for e in hooks if e["data"]["hook_event_name"] == "SubagentStop"]
    assert len(stops) == 1 and stops[0]["agent_id"] == agent_id
    for tid in (AGENT_CALL, MAIN_BASH):
        main_hooks = [e["data"] for e in hooks if e["data"].get("tool_use_id") == tid]
        assert [d["hook_event_name"] for d in main_hooks] == ["PreToolUse", "PostToolUse"]
        for d in main_hooks:
            assert "agent_id" not in d and "agent_type" not in d, d
    for name in ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"):
        d = [e["data"] for e in hooks if e["data"]["hook_event_name"] == name]
        assert len(d) == 1 and "agent_id" not in d[0], (name, d)
    # One session: the subagent's hooks come with the parent's session id.
    assert {e["session_id"] for e in hooks} == {res.result["session_id"]}
    assert of_kind(ev, "question_pending") == [] and r.questions() == []
    assert r.builder_status()["pending"] == 0
    # The raw payloads hookd stored agree with the events.
    stored = [h for h in r.stored_hooks() if h["tool_use_id"] == SUB_BASH]
    assert [json.loads(h["raw"])["agent_id"] for h in stored] == [agent_id, agent_id]


# ============================================================== 5. a failing tool
FAIL_BASH = "toolu_01SCNFAILBASH000000001"
FAIL_READ = "toolu_01SCNFAILREAD000000001"


def test_failing_tools_record_post_tool_use_failure(rig):
    r = rig({"turns": [
        bash_turn(FAIL_BASH, "echo partial; echo oops >&2; exit 3"),
        tool_turn(FAIL_READ, "Read", {"file_path": "/nonexistent/hookd-e2e/missing.txt"}),
        text_turn("FINAL-FAIL-5"),
    ]}, builder="b-fail", form="worktree")

    res = r.run_print("Run a failing command, then read a missing file")
    assert res.result["result"] == "FINAL-FAIL-5"
    main = r.api.main_requests()
    assert len(main) == 3
    bash_result = tool_result_block(main[1], FAIL_BASH)
    assert bash_result["is_error"] is True and "Exit code 3" in json.dumps(bash_result["content"])
    read_result = tool_result_block(main[2], FAIL_READ)
    assert read_result["is_error"] is True
    assert "File does not exist" in json.dumps(read_result["content"])

    ev = r.wait_hook("SessionEnd")
    for tid, tool in ((FAIL_BASH, "Bash"), (FAIL_READ, "Read")):
        got = [e["data"] for e in hooks_of(ev) if e["data"].get("tool_use_id") == tid]
        assert [(d["hook_event_name"], d["tool_name"], d["source"]) for d in got] == [
            ("PreToolUse", tool, "live"), ("PostToolUseFailure", tool, "live")], got
    assert find_hook(ev, "PostToolUse") is None
    stored = {h["tool_use_id"]: json.loads(h["raw"]) for h in r.stored_hooks()
              if h["hook_event_name"] == "PostToolUseFailure"}
    assert set(stored) == {FAIL_BASH, FAIL_READ}
    assert "Exit code 3" in stored[FAIL_BASH]["error"]
    assert "File does not exist" in stored[FAIL_READ]["error"]
    assert of_kind(ev, "question_pending") == [] and r.questions() == []


# ================================================ 6. --resume of a finished session
def test_resume_and_fork_of_finished_headless_session(rig):
    r = rig({"turns": [text_turn("FIRST-RUN-6"), text_turn("RESUMED-RUN-6"),
                       text_turn("FORKED-RUN-6")]}, builder="b-resume", form="settings-file")

    first = r.run_print("first prompt")
    sid = first.result["session_id"]
    resumed = r.run_print("second prompt", "--resume", sid)
    # 2.1.332 keeps the session id on --resume ...
    assert resumed.result["result"] == "RESUMED-RUN-6" and resumed.result["session_id"] == sid
    forked = r.run_print("third prompt", "--resume", sid, "--fork-session")
    # ... and --fork-session makes a new one.
    fork_sid = forked.result["session_id"]
    assert forked.result["result"] == "FORKED-RUN-6" and fork_sid != sid
    main = r.api.main_requests()
    assert len(main) == 3
    assert "first prompt" in main[1].text and "FIRST-RUN-6" in main[1].text
    assert "second prompt" in main[2].text and "RESUMED-RUN-6" in main[2].text

    ev = r.wait_events(lambda ev: sum(1 for e in hooks_of(ev)
                                      if e["data"]["hook_event_name"] == "SessionEnd") == 3,
                       "three SessionEnd hooks")
    starts = [(h["session_id"], json.loads(h["raw"]).get("source")) for h in r.stored_hooks()
              if h["hook_event_name"] == "SessionStart"]
    assert starts == [(sid, "startup"), (sid, "resume"), (fork_sid, "fork")]

    # hookd: both ids belong to the one builder, in start order; the same-id resume reopens
    # the session; the fork is linked to the session it came from.
    sessions = r.builder_status()["sessions"]
    assert [(s["session_id"], s["source"]) for s in sessions] == [(sid, "resume"), (fork_sid, "fork")]
    started = of_kind(ev, "session_started")
    assert [(e["session_id"], e["data"]["source"]) for e in started] == [
        (sid, "startup"), (sid, "resume"), (fork_sid, "fork")]
    assert all(e["builder"] == "b-resume" for e in started)
    assert started[0]["data"]["parent_session_id"] is None
    assert len([e for e in hooks_of(ev) if e["session_id"] == sid
                and e["data"]["hook_event_name"] == "SessionStart"]) == 2
    assert sessions[1]["parent_session_id"] == sid
    assert started[2]["data"]["parent_session_id"] == sid
    assert [e["session_id"] for e in of_kind(ev, "session_ended")] == [sid, sid, fork_sid]


# ==================================================== 7. daemon down for a whole run
DOWN_BASH = "toolu_01SCNDOWNBASH000000001"
UP_BASH = "toolu_01SCNUPBASH00000000001"
ONE_RUN = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"]


def test_daemon_down_spools_then_ingests_exactly_once(rig):
    r = rig({"turns": [bash_turn(DOWN_BASH, "echo while-down"), text_turn("FINAL-DOWN-7"),
                       bash_turn(UP_BASH, "echo while-up"), text_turn("FINAL-UP-7")]},
            builder="b-down", form="worktree", daemon=False)
    spool = r.home.spool_dir("b-down")
    assert not r.home.endpoint_file.exists()  # the daemon was never started

    down = r.run_print("Run echo while the daemon is down")
    assert down.result["result"] == "FINAL-DOWN-7"
    assert r.api.main_requests()[1].tool_results() == {DOWN_BASH: "while-down"}
    files = sorted(spool.glob("*.json"))
    payloads = [json.loads(f.read_bytes()) for f in files]
    names = [p["hook_event_name"] for p in payloads]
    # delivery ids start with the invocation's microsecond clock: name order = call order
    assert names == ONE_RUN, names
    assert [p.get("tool_use_id") for p in payloads if p.get("tool_use_id")] == [DOWN_BASH] * 2
    assert all(f.name.endswith(".claude-code.json") for f in files)
    raws = [f.read_bytes() for f in files]
    ids = [f.name[: -len(".claude-code.json")] for f in files]

    r.hookd.start()  # ingests the spool before it accepts hooks
    stored = r.stored_hooks()
    assert [h["source"] for h in stored] == ["spool"] * len(files)
    assert [h["delivery_id"] for h in stored] == ids
    assert [h["raw"] for h in stored] == raws
    ev = r.events()
    assert [(e["data"]["hook_event_name"], e["data"]["source"]) for e in hooks_of(ev)] == [
        (n, "spool") for n in names]
    assert {e["session_id"] for e in hooks_of(ev)} == {down.result["session_id"]}
    assert [e["data"]["source"] for e in of_kind(ev, "session_started")] == ["startup"]
    assert list(spool.glob("*")) == []
    assert r.status()["counts"]["spooled"] == 0

    # The same run with the daemon up: live. (What a spooling hook costs the agent is measured,
    # not asserted: bench/run.py's fail-open client timings; CI's loaded run once took 4.2 s
    # down against 1.6 s up, over a wall-clock bound this test used to hold.)
    up = r.run_print("Run echo while the daemon is up")
    assert up.result["result"] == "FINAL-UP-7"
    ev = r.wait_hook("SessionEnd", source="live")
    live = [e for e in hooks_of(ev) if e["data"]["source"] == "live"]
    assert [e["data"]["hook_event_name"] for e in live] == ONE_RUN
    assert {e["session_id"] for e in live} == {up.result["session_id"]}
    assert list(spool.glob("*")) == []

    # A restart ingests nothing twice.
    r.hookd.stop()
    r.hookd.start()
    assert len(r.stored_hooks()) == 2 * len(ONE_RUN)
    assert [e["data"]["source"] for e in hooks_of(r.events())] == ["spool"] * 6 + ["live"] * 6
