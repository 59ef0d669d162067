"""MCP elicitations, in process (tests/inproc.py): an MCP server asks the human for a form
through Claude Code's Elicitation hook; hookd records an ``elicitation`` interaction (message,
schema, server), holds the hook for a remote answer (``hookd answer ID --option accept --field
NAME=VALUE``, the content checked against the requested schema before the hook sends it), and
resolves it when the desk answers (ElicitationResult). Payloads are shaped as Claude Code
2.1.332 sends them (recorded: fixtures/claude-code/2.1.332/elicitation-*; docs/harness-claude-code.md
"MCP elicitation"). The real binary end to end: tests/e2e/test_elicitation_e2e.py."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click
import pytest

from hookd.cli_render import _interaction
from hookd.harness import claude_code, claude_code_hooks
from hookd.harness.base import ElicitationAsked, ElicitationResolved

from .conftest import wait_until
from .inproc import WAIT_S, InProc
from .test_answers_inproc import Rig, finish, reads_recorded_late

pytestmark = pytest.mark.inproc

SID = "ea45027b-9b9e-4e07-94f7-f8f5bad19d59"
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Name on the booking"},
        "party": {"type": "integer", "title": "Party", "description": "How many people", "minimum": 1, "maximum": 12},
    },
    "required": ["name", "party"],
}


def base(event: str) -> dict[str, Any]:
    return {"session_id": SID, "transcript_path": f"/home/dev/.claude/projects/-home-dev-proj/{SID}.jsonl",
            "cwd": "/home/dev/proj", "prompt_id": "e36481dc-f882-49e6-9d92-00ce711a4dca", "hook_event_name": event}


ELICIT = {**base("Elicitation"), "mcp_server_name": "booker", "message": "Who is the table for?", "mode": "form",
          "requested_schema": SCHEMA}


def result(action: str, content: dict[str, Any] | None = None) -> dict[str, Any]:
    p = {**base("ElicitationResult"), "mcp_server_name": "booker", "mode": "form", "action": action}
    if content is not None:
        p["content"] = content
    return p


class ElicitRig(Rig):
    def start_hook(self, p: dict[str, Any]) -> Any:
        if p["hook_event_name"] == "Elicitation" and self.hold:  # spawn gives it the hold command
            return self.app.submit_hook(p, self.name, route="/hold", deadline_ms=self.hold * 1000)
        return super().start_hook(p)

    def pending(self) -> dict[str, Any]:
        """The one pending elicitation, once the daemon has it (a hook started in the
        background may not have reached it yet)."""
        def one() -> dict[str, Any] | None:
            found = [i for i in self.app.questions("pending") if i["kind"] == "elicitation"]
            return found[0] if len(found) == 1 else None
        return wait_until(one, 60, what="one pending elicitation")

    def answer_content(self, iid: str, option: str, content: dict[str, Any] | None = None) -> Any:
        body = {"surface": "cli", "options": [option], "actor": "ana"}
        if content is not None:
            body["content"] = content
        return self.api("POST", f"/v1/interactions/{iid}/answer", body)


@pytest.fixture
def rig(inproc: InProc, worktree: Path) -> ElicitRig:
    return ElicitRig(inproc, worktree)


def test_the_adapter_observes_both_events() -> None:
    p = claude_code.parse(json.dumps(ELICIT).encode())
    assert claude_code.observe(p) == [ElicitationAsked(
        server="booker", message="Who is the table for?", mode="form", url=None, elicitation_id=None,
        requested_schema=SCHEMA)]
    r = claude_code.parse(json.dumps(result("accept", {"name": "Ada", "party": 3})).encode())
    assert claude_code.observe(r) == [ElicitationResolved(
        server="booker", elicitation_id=None, action="accept", content={"name": "Ada", "party": 3})]
    assert claude_code.known_fields("Elicitation") >= {"mcp_server_name", "message", "mode", "url",
                                                         "elicitation_id", "requested_schema"}
    assert claude_code_hooks.elicitation_reply("accept", {"name": "Ada", "party": 3}) == (
        b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"accept","content":{"name":"Ada","party":3}}}')
    assert claude_code_hooks.elicitation_reply("decline", None) == (
        b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"decline"}}')


def test_a_remote_accept_is_validated_then_sent_through_the_held_hook(rig: ElicitRig) -> None:
    held = rig.start_hook(ELICIT)
    i = rig.pending()
    rig.held(i["id"])
    assert i["id"].startswith("el_") and i["tool_name"] == "booker" and i["held"] is True
    assert i["input"] == {"server": "booker", "message": "Who is the table for?", "mode": "form", "url": None,
                          "elicitation_id": None, "requested_schema": SCHEMA}
    assert i["fields"] == [
        {"name": "name", "type": "string", "required": True, "title": "Name", "description": "Name on the booking",
         "enum": None},
        {"name": "party", "type": "integer", "required": True, "title": "Party", "description": "How many people",
         "enum": None}]
    # content that does not fit the schema never reaches the hook
    bad = rig.answer_content(i["id"], "accept", {"name": "Ada", "party": "20"})
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == (
        "the content does not fit the requested schema: party: 20 is greater than the maximum of 12")
    missing = rig.answer_content(i["id"], "accept", {"party": "2"})
    assert missing.json()["error"]["message"] == (
        "the content does not fit the requested schema: 'name' is a required property")
    # a field the form does not have (a misspelt one) is refused, not dropped unsaid by the server
    typo = rig.answer_content(i["id"], "accept", {"name": "Ada", "party": "2", "notes": "by the window"})
    assert typo.json()["error"]["message"] == "the form has no field 'notes'; its fields: name, party"
    # a value as JSON spells it, not Python
    assert rig.answer_content(i["id"], "accept", {"name": True, "party": "2"}).json()["error"]["message"] == (
        "the content does not fit the requested schema: name: true is not of type 'string'")
    assert rig.answer_content(i["id"], "decline", {"name": "x"}).json()["error"]["message"] == (
        "--option decline takes no fields (only accept sends content)")
    assert rig.answer_content(i["id"], "allow").status_code == 400
    assert not held.done()
    # the CLI sends text; the schema's integer reads it as one
    r = rig.answer_content(i["id"], "accept", {"name": "Ada", "party": "3"})
    assert r.status_code == 200, r.text
    assert r.json()["delivery"] == "hook"
    assert finish(held) == (200, b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"accept",'
                                 b'"content":{"name":"Ada","party":3}}}')
    done = rig.interaction(i["id"])
    assert (done["state"], done["decision"], done["answers"], done["surface"], done["actor"]) == (
        "answered", "accept", {"name": "Ada", "party": 3}, "cli", "ana")
    kinds = [(e["kind"], e["data"].get("decision")) for e in rig.events()
             if e["kind"].startswith("elicitation_") or e["kind"] in ("interaction_answered", "answer_delivered")]
    assert kinds == [("elicitation_pending", None), ("interaction_answered", "accept"),
                     ("elicitation_resolved", "accept"), ("answer_delivered", None)]
    [delivered] = [e for e in rig.events() if e["kind"] == "answer_delivered"]
    assert delivered["data"] == {"id": i["id"], "kind": "elicitation", "via": "Elicitation"}
    # a second answer is refused (nothing kept for the model: the content was the server's)
    again = rig.answer_content(i["id"], "cancel")
    assert again.status_code == 409 and "already answered" in again.json()["error"]["message"]
    # one that would not fit either: that it is over comes first (a trial got the schema's error)
    misfit = rig.answer_content(i["id"], "accept", {"party": "99"})
    assert misfit.status_code == 409, misfit.text
    assert misfit.json()["error"]["message"].startswith(f"{i['id']} is already answered from the CLI by ana at ")
    assert "the answer did not fit it: the content does not fit the requested schema" in misfit.json()["error"]["message"]


def test_decline_and_cancel_carry_no_content(rig: ElicitRig) -> None:
    held = rig.start_hook(ELICIT)
    i = rig.pending()
    rig.held(i["id"])
    assert rig.answer_content(i["id"], "cancel").status_code == 200
    assert finish(held) == (200, b'{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"cancel"}}')
    assert rig.interaction(i["id"])["decision"] == "cancel"


def test_the_desk_answers_after_the_hold_ended(inproc: InProc, worktree: Path) -> None:
    """The hold window passes with no answer: the hook returns nothing (Claude Code then shows
    its dialog); the desk's answer comes as ElicitationResult and resolves the interaction."""
    rig = ElicitRig(inproc, worktree, hold=0)
    assert rig.hook(ELICIT) == ""
    i = rig.pending()
    assert i["held"] is False
    unheld = rig.answer_content(i["id"], "accept", {"name": "Ada", "party": 3})
    assert unheld.status_code == 409
    assert unheld.json()["error"]["message"].startswith(f"no hook is holding {i['id']}")
    assert rig.inbox() == []  # (nothing kept for the model: the content was the server's)
    rig.hook(result("accept", {"name": "Bo", "party": 2}))
    done = rig.interaction(i["id"])
    assert (done["state"], done["decision"], done["answers"], done["surface"]) == (
        "answered", "accept", {"name": "Bo", "party": 2}, "terminal")
    [ev] = [e for e in rig.events() if e["kind"] == "elicitation_resolved"]
    assert ev["data"] == {"id": i["id"], "kind": "elicitation", "server": "booker", "outcome": "answered",
                          "decision": "accept", "answers": {"name": "Bo", "party": 2}, "surface": "terminal"}
    late = rig.answer_content(i["id"], "decline")
    assert late.status_code == 409 and late.json()["error"]["message"].startswith("the desk answered first")


def test_a_cancel_at_the_desk_dismisses_it_and_lets_the_held_hook_go(rig: ElicitRig) -> None:
    held = rig.start_hook(ELICIT)
    i = rig.pending()
    rig.held(i["id"])
    rig.hook(result("cancel"))
    assert finish(held, timeout=WAIT_S) == (200, b"")
    done = rig.interaction(i["id"])
    assert (done["state"], done["decision"], done["surface"]) == ("dismissed", "cancel", "terminal")


def test_hookd_questions_shows_the_form_and_the_commands() -> None:
    item = {"id": "el_0123", "kind": "elicitation", "builder": "b1", "state": "pending", "created_at": 1000.0,
            "tool_name": "booker", "held": True,
            "input": {"server": "booker", "message": "Who is the table for?", "mode": "form", "url": None,
                      "elicitation_id": None, "requested_schema": SCHEMA},
            "fields": [{"name": "name", "type": "string", "required": True, "title": "Name",
                        "description": "Name on the booking", "enum": None},
                       {"name": "party", "type": "integer", "required": False, "title": "Party",
                        "description": None, "enum": None}]}
    assert click.unstyle(_interaction(item, 1065.0)) == "\n".join([
        "el_0123  elicitation from b1, waiting 1m",
        "  booker asks: Who is the table for?",
        "    name (string)  Name on the booking",
        "    party (integer, optional)  Party",
        "  accept:  hookd answer el_0123 --option accept --field name=VALUE --field party=VALUE",
        "  decline: hookd answer el_0123 --option decline",
        "  cancel:  hookd answer el_0123 --option cancel",
    ])
    unheld = click.unstyle(_interaction({**item, "held": False}, 1065.0)).splitlines()
    assert unheld[-1] == "  answer at the desk: no hook is holding this elicitation"
    done = {**item, "state": "answered", "decision": "accept", "answers": {"name": "Ada", "party": 3},
            "resolved_at": 1060.0, "surface": "cli", "actor": "ana", "outcome": "answered", "by": "from the CLI by ana"}
    assert click.unstyle(_interaction(done, 1065.0)).splitlines()[0] == "el_0123  elicitation from b1, answered from the CLI by ana, 5s ago"
    assert click.unstyle(_interaction(done, 1065.0)).splitlines()[-1] == "  -> accept; name = Ada; party = 3"
    flags = {**done, "answers": {"name": "Ada", "vip": True, "note": None}}  # as JSON spells them, not Python
    assert click.unstyle(_interaction(flags, 1065.0)).splitlines()[-1] == "  -> accept; name = Ada; vip = true; note = null"


def test_an_elicitation_left_open_when_the_turn_ends_is_dismissed(inproc: InProc, worktree: Path) -> None:
    rig = ElicitRig(inproc, worktree, hold=0)
    rig.hook(ELICIT)
    i = rig.pending()
    rig.hook({**base("Stop"), "stop_hook_active": False, "last_assistant_message": "done"})
    done = rig.interaction(i["id"])
    assert (done["state"], done["warning"]) == ("dismissed", "no answer to the elicitation was seen before Stop")


def test_the_desk_supersedes_a_remote_answer_no_hook_read(inproc: InProc, worktree: Path) -> None:
    """A remote answer accepted as the hold ended (recorded, never read by a hook: the dialog
    opened at the desk): the desk's ElicitationResult wins, the remote answer is kept as a
    message, never dropped."""
    rig = ElicitRig(inproc, worktree, hold=0)
    rig.hook(ELICIT)
    i = rig.pending()
    ok, _ = inproc.call(inproc.core.store.write(lambda tx: tx.interactions.record_answer(
        i["id"], expected_revision=i["revision"], answers={"name": "Ada", "party": 3}, selections=None,
        decision="accept", message=None, surface="cli", actor="ana", response_id=None, at=time.time())))
    assert ok
    rig.hook(result("decline"))
    done = rig.interaction(i["id"])
    assert (done["state"], done["decision"], done["surface"], done["answers"]) == ("answered", "decline", "terminal", None)
    [kept] = rig.inbox()
    assert kept["text"] == (f"[Late answer to elicitation {i['id']} from booker (not used: the desk answered the"
                            " elicitation (decline) after the hold ended)] accept; name = Ada; party = 3")
    assert [e["kind"] for e in rig.events() if e["data"].get("id") == i["id"]][-1] == "answer_superseded"


def test_the_remote_answer_reported_before_its_read_was_recorded_is_not_superseded(
        rig: ElicitRig, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code reports the hook's own answer in ElicitationResult; a busy daemon may take
    that hook before the held hook's close (its client read the answer). The same action and
    content are not the desk's: nothing is superseded, nothing kept as a late answer."""
    replied, read_now = reads_recorded_late(rig, monkeypatch)
    held = rig.start_hook(ELICIT)
    i = rig.pending()
    rig.held(i["id"])
    assert rig.answer_content(i["id"], "accept", {"name": "Ada", "party": "3"}).status_code == 200
    assert replied.wait(WAIT_S)
    rig.hook(result("accept", {"name": "Ada", "party": 3}))
    read_now.set()
    assert finish(held)[0] == 200  # (the held hook's ASGI cycle ends once the read is recorded)
    done = rig.interaction(i["id"])
    assert (done["state"], done["decision"], done["surface"], done["answers"]) == (
        "answered", "accept", "cli", {"name": "Ada", "party": 3})
    assert done["delivered_at"] and rig.inbox() == []
    assert [e["kind"] for e in rig.events() if e["data"].get("id") == i["id"]][-1] == "answer_delivered"
