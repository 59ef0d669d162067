"""The operator page in a real browser (issue 9): Playwright driving Debian's headless Chromium
(/usr/bin/chromium-headless-shell, installed by .ci/run; tests/conftest.py ``_Chromium``)
against a real daemon; the builder's hooks are the generated commands run as Claude Code runs
them (``sh -c "<command>"``, a recorded payload on stdin), its PermissionRequest hook held for an answer (``hookd spawn --hold``).

Screenshots of each view go to tests/artifacts/web/ (gitignored).
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from hookd.daemonproc import DaemonProcess

from .conftest import REPO, TUI, events, hookd_cli, hookd_run, questions, run_hook, settings_command, wait_until
from .test_answers import Rig as Builder

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("browser")]  # (one worker: one Chromium at a time)

SHOTS = REPO / "tests" / "artifacts" / "web"
ASK_ID = "toolu_01ASK0000000000000000001"
Q = "Which color do you prefer?"

expect.set_options(timeout=15_000)


def payload(name: str) -> dict[str, Any]:
    return json.loads((TUI / name).read_bytes())


def bash_permission(command: str) -> dict[str, Any]:
    """A Bash PermissionRequest as Claude Code 2.1.332 sends it (no tool_use_id), from the
    recorded Bash PreToolUse."""
    p = {k: v for k, v in payload("004-PreToolUse.json").items() if k != "tool_use_id"}
    p.update(hook_event_name="PermissionRequest", permission_mode="default",
             tool_input={"command": command, "description": "clean the build"})
    return p


def finish(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    """The held hook's exit: 0, nothing on stderr; its stdout as JSON."""
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and err == b"", (proc.returncode, err)
    return json.loads(out)


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def about(evs: list[dict[str, Any]], kind: str, iid: str) -> list[dict[str, Any]]:
    return [e for e in evs if e["kind"] == kind and e["data"].get("id") == iid]


def sign_in_link(home: Path) -> str:
    r = hookd_cli(home, "open", "--no-browser", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["url"]


@pytest.fixture
def page(browser: Browser, daemon: DaemonProcess, home: Path) -> Iterator[Page]:
    """A signed-in page: `hookd open`'s link followed, the page live on the event stream."""
    ctx = browser.new_context(viewport={"width": 1200, "height": 820})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(sign_in_link(home))
    expect(pg).to_have_url(f"http://127.0.0.1:{daemon_port(home)}/")
    expect(pg.locator("#conn")).to_have_attribute("data-state", "live")
    yield pg
    ctx.close()
    assert errors == []


def daemon_port(home: Path) -> int:
    return int((home / "run" / "endpoint").read_text().split()[0])


@pytest.fixture
def builder(home: Path, worktree: Path, daemon: DaemonProcess) -> Builder:
    """Builder b1 spawned into a worktree, its PermissionRequest held up to 60 s."""
    return Builder(home, worktree, hold=60)


def test_without_the_session_cookie_the_page_is_refused_and_a_link_works_once(
        browser: Browser, daemon: DaemonProcess, home: Path) -> None:
    ctx = browser.new_context()
    try:
        pg = ctx.new_page()
        r = pg.goto(f"http://127.0.0.1:{daemon_port(home)}/")
        assert r is not None and r.status == 401 and r.headers["content-type"].startswith("text/html")
        # a browser gets a page saying what to do, not the API's JSON error
        expect(pg.locator("#signin-needed")).to_have_text(
            "Not signed in. Run hookd open in a terminal to get a sign-in link.")
        shot(pg, "signin-needed")
        assert pg.request.get(f"http://127.0.0.1:{daemon_port(home)}/v1/questions").status == 401
        link = sign_in_link(home)
        pg.goto(link)
        expect(pg.locator("#conn")).to_have_attribute("data-state", "live")
        [cookie] = ctx.cookies()
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["name"].startswith("hookd_")
        assert pg.evaluate("document.cookie") == ""  # HttpOnly: no script sees it
        # the same link again, in another browser: already used
        other = browser.new_context()
        try:
            p2 = other.new_page()
            p2.goto(link)
            expect(p2.locator("#signin-status")).to_contain_text("already used or has expired")
            shot(p2, "signin-link-used")
            assert p2.goto(f"http://127.0.0.1:{daemon_port(home)}/").status == 401  # type: ignore[union-attr]
        finally:
            other.close()
    finally:
        ctx.close()


def test_replayed_question_arrives_live_and_is_answered_in_the_browser(
        page: Page, builder: Builder, daemon: DaemonProcess, home: Path) -> None:
    for name in ("001-SessionStart.json", "002-UserPromptSubmit.json", "004-PreToolUse.json", "005-PostToolUse.json"):
        assert builder.hook(payload(name)) == ""
    expect(page.locator("#pending-empty")).to_be_visible()
    assert builder.hook(payload("007-PreToolUse.json")) == ""  # the agent asks
    card = page.locator(f'#pending-list article[data-id="{ASK_ID}"]')
    expect(card).to_be_visible()  # live: no reload
    expect(card.locator(".qheader")).to_have_text("Color")
    expect(card.locator(".qtext")).to_have_text(Q)
    expect(card.locator("label.option", has_text="Red")).to_contain_text("The red option")
    expect(card.locator("label.option", has_text="Blue")).to_contain_text("The blue option")
    assert card.locator("input[type=radio]").count() == 2 and card.locator("input[type=checkbox]").count() == 0
    expect(card.locator("input.other")).to_be_visible()
    expect(page.locator("#count-pending")).to_have_text("1")
    held = builder.start_hook(payload("008-PermissionRequest.json"))
    builder.held(ASK_ID)
    card.locator("label.option", has_text="Red").click()
    shot(page, "pending-question")
    card.locator("button.submit").dblclick()  # a double click answers once
    # a confirmation stays on screen (the card itself moves to History)
    expect(page.locator("#toast")).to_have_text("Answered Red — see History")
    expect(page.locator("#toast")).not_to_have_class(re.compile(r"\bwarn\b"))
    doc = finish(held)
    decision = doc["hookSpecificOutput"]["decision"]
    assert doc["hookSpecificOutput"]["hookEventName"] == "PermissionRequest" and decision["behavior"] == "allow"
    assert decision["updatedInput"] == {**payload("007-PreToolUse.json")["tool_input"], "answers": {Q: "Red"}}
    expect(page.locator(f'#pending-list article[data-id="{ASK_ID}"]')).to_have_count(0)
    done = page.locator(f'#history-list article[data-id="{ASK_ID}"]')
    expect(done).to_have_attribute("data-surface", "web")
    expect(done.locator("dd.answer")).to_have_text("Red")
    expect(done.locator(".badge")).to_have_text("answered")
    expect(done.locator(".by")).to_have_text(f"on the page by {page.evaluate('hookdPage.user')}")
    # Claude Code runs the tool with that answer: adopted
    post = copy.deepcopy(payload("010-PostToolUse.json"))
    post["tool_input"]["answers"] = post["tool_response"]["answers"] = {Q: "Red"}
    assert builder.hook(post) == ""
    # how it reached the agent in the CLI's words (was "delivered via PermissionRequest")
    expect(done.locator(".trail")).to_have_text("reached the agent through its hook · adopted by the agent")
    evs = events(home)
    assert len(about(evs, "interaction_answered", ASK_ID)) == 1
    assert about(evs, "answer_refused", ASK_ID) == [] and about(evs, "answer_superseded", ASK_ID) == []
    [i] = [q for q in questions(home) if q["id"] == ASK_ID]
    assert (i["state"], i["surface"], i["answers"]) == ("answered", "web", {Q: "Red"})
    assert i["actor"] and i["response_id"].startswith("web-")
    assert page.locator("body").get_attribute("data-connects") == "1"  # never reloaded
    page.locator('#tabs button[data-view="history"]').click()
    shot(page, "history")  # (its trail: "reached the agent through its hook · adopted by the agent")


def held_permission(page: Page, builder: Builder, home: Path, command: str,
                    ) -> tuple[subprocess.Popen[bytes], str, Any]:
    """A session started and a Bash PermissionRequest for ``command`` held: (its hook's
    process, the prompt's id, its card on the page)."""
    assert builder.hook(payload("001-SessionStart.json")) == ""
    held = builder.start_hook(bash_permission(command))
    pid = wait_until(lambda: [q["id"] for q in questions(home, "pending") if q["kind"] == "permission"], 60,
                     what="a pending permission prompt")[0]
    builder.held(pid)
    return held, pid, page.locator(f'#pending-list article.permission[data-id="{pid}"]')


def test_permission_denied_with_a_message_in_the_browser(page: Page, builder: Builder, daemon: DaemonProcess,
                                                          home: Path) -> None:
    held, pid, card = held_permission(page, builder, home, "rm -rf build")
    expect(card.locator(".tool")).to_have_text("Bash")
    expect(card.locator(".tv-summary")).to_have_text("clean the build")
    expect(card.locator("pre.tv-command")).to_have_text("rm -rf build")
    shown = json.loads(card.locator("details.raw-input pre.input").text_content() or "")
    assert shown == {"command": "rm -rf build", "description": "clean the build"}  # the exact input, one click away
    card.locator("textarea.deny-message").fill("not now, use ls")
    shot(page, "pending-permission")
    card.locator("button.deny").click()
    expect(page.locator("#toast")).to_have_text("Denied Bash — see History")
    doc = finish(held)
    assert doc["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "not now, use ls"}
    done = page.locator(f'#history-list article[data-id="{pid}"]')
    expect(done.locator("dd.answer")).to_have_text("not now, use ls")
    expect(done).to_have_attribute("data-surface", "web")
    # a denied permission reads "denied", in the "bad" colour, not "answered" in green
    badge = done.locator(".badge")
    expect(badge).to_have_text("denied")
    expect(badge).to_have_class(re.compile(r"\boutcome-denied\b"))
    expect(badge).to_have_css("color", "rgb(180, 35, 24)")
    page.locator("#toast a").click()  # "see History"
    expect(page.locator("#view-history")).to_be_visible()
    shot(page, "history-denied")


def test_an_answer_refused_because_another_came_first_stays_in_sight(page: Page, builder: Builder,
                                                                       daemon: DaemonProcess, home: Path) -> None:
    """Allow pressed on the page while the CLI's deny is on its way: the page's answer is
    refused (409) and the card moves to History; the refusal is a warning toast, not a note on a
    card that is gone."""
    held, pid, card = held_permission(page, builder, home, "rm -rf build")
    expect(card).to_have_count(1)

    def deny_first(route: Any) -> None:  # the CLI's answer lands between the click and the page's
        r = hookd_cli(home, "answer", pid, "--option", "deny", "--text", "no, from the CLI")
        assert r.returncode == 0, r.stderr
        route.continue_()

    page.route(f"**/v1/interactions/{pid}/answer", deny_first)
    card.locator("button.allow").click()
    toast = page.locator("#toast")
    expect(toast).to_have_class(re.compile(r"\bwarn\b"))
    expect(toast).to_contain_text("Not sent: ")
    expect(page.locator(f'#history-list article[data-id="{pid}"] .badge')).to_have_text("denied")
    assert finish(held)["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "no, from the CLI"}
    shot(page, "answer-refused")


def test_a_prompt_no_hook_holds_any_more_says_the_desk_answers_it(page: Page, daemon: DaemonProcess, home: Path,
                                                                    worktree: Path) -> None:
    """Spawned with --hold 5: the daemon lets the held PermissionRequest hook go 1.5 s before its
    5 s deadline, unanswered (event hold_ended). The card, live, says only the desk answers it
    now, and its Allow and Deny are off; what the human typed stays."""
    b = Builder(home, worktree, hold=5)
    assert b.hook(payload("001-SessionStart.json")) == ""
    held = b.start_hook(bash_permission("ls -la"))
    pid = wait_until(lambda: [q["id"] for q in questions(home, "pending") if q["kind"] == "permission"], 60,
                     what="a pending permission prompt")[0]
    card = page.locator(f'#pending-list article.permission[data-id="{pid}"]')
    expect(card.locator("button.allow")).to_be_enabled()
    card.locator("textarea.deny-message").fill("use ls -l")
    assert held.wait(30) == 0  # let go: the prompt stays open at the desk
    expect(card).to_have_class(re.compile(r"\bdesk-only\b"))
    expect(card.locator(".held-note")).to_have_text("No hook is holding this prompt any more: answer it at the desk.")
    expect(card.locator("button.allow")).to_be_disabled()
    expect(card.locator("button.deny")).to_be_disabled()
    expect(card.locator("textarea.deny-message")).to_have_value("use ls -l")
    expect(card.locator("button.dismiss")).to_be_enabled()  # (a stale one is still dismissed from here)
    assert [e["data"]["id"] for e in events(home) if e["kind"] == "hold_ended"] == [pid]
    shot(page, "pending-desk-only")


ELICIT = REPO / "fixtures" / "claude-code" / "2.1.332" / "print-mcp-elicitation-cancelled" / "hooks"


def test_an_elicitation_card_is_a_small_form_sent_through_the_held_hook(page: Page, builder: Builder,
                                                                        daemon: DaemonProcess, home: Path) -> None:
    """The recorded Elicitation (an MCP server asks for a name and a party size): a card with
    the server, its message and one input per field; a party over the schema's maximum is
    refused with the daemon's words; Accept with a fitting one sends exactly that content."""
    assert builder.hook(json.loads((ELICIT / "001-SessionStart.json").read_bytes())) == ""
    held = builder.start_hook(json.loads((ELICIT / "004-Elicitation.json").read_bytes()))
    eid = wait_until(lambda: [q["id"] for q in questions(home, "pending") if q["kind"] == "elicitation"], 60,
                     what="a pending elicitation")[0]
    builder.held(eid)
    card = page.locator(f'#pending-list article.elicitation[data-id="{eid}"]')
    expect(card.locator(".kind")).to_have_text("elicitation")
    expect(card.locator(".tool")).to_have_text("booker")
    expect(card.locator(".elicit-message")).to_have_text("Who is the table for?")
    expect(card.locator("label.field .olabel")).to_have_text(["Name *", "Party *"])
    card.locator('input[name="name"]').fill("Ada")
    card.locator('input[name="party"]').fill("20")
    card.locator("button.accept").click()
    expect(card.locator(".note")).to_have_text(
        "the content does not fit the requested schema: party: 20 is greater than the maximum of 12")
    card.locator('input[name="party"]').fill("3")
    shot(page, "pending-elicitation")
    card.locator("button.accept").click()
    expect(page.locator("#toast")).to_have_text("accept: booker — see History")
    assert finish(held) == {"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                                                   "content": {"name": "Ada", "party": 3}}}
    done = page.locator(f'#history-list article[data-id="{eid}"]')
    expect(done.locator("dd.answer")).to_have_text(["accept", "Ada", "3"])
    expect(done).to_have_attribute("data-surface", "web")
    page.locator("#toast a").click()
    shot(page, "history-elicitation")


def primary_buttons(card: Any) -> list[str]:
    """The card's buttons drawn as the default action (the accent's fill), by text."""
    accent = card.evaluate("e => getComputedStyle(document.documentElement).getPropertyValue('--accent').trim()")
    fills = card.locator("button").evaluate_all(
        "bs => bs.map((b) => [b.textContent, getComputedStyle(b).backgroundColor])")
    probe = card.evaluate(f"e => {{ const d = document.createElement('div'); d.style.color = '{accent}';"
                          " document.body.append(d); const c = getComputedStyle(d).color; d.remove(); return c; }")
    return [text for text, fill in fills if fill == probe]


def test_a_destructive_command_card_offers_no_default(page: Page, builder: Builder, daemon: DaemonProcess,
                                                      home: Path) -> None:
    """Issue 20 item 5: `rm -f README.md` reads as a command with its description, marked
    "looks destructive", and neither Allow nor Deny is drawn as the default; an ordinary
    command keeps Allow as the primary button."""
    assert builder.hook(payload("001-SessionStart.json")) == ""
    p = bash_permission("rm -f README.md")
    p["tool_input"]["description"] = "Remove the README"
    held = builder.start_hook(p)
    pid = wait_until(lambda: [q["id"] for q in questions(home, "pending") if q["kind"] == "permission"], 60,
                     what="a pending permission prompt")[0]
    builder.held(pid)
    card = page.locator(f'#pending-list article.permission[data-id="{pid}"]')
    expect(card).to_have_class(re.compile(r"\bdestructive\b"))
    expect(card.locator(".ask")).to_have_text("b1 wants to run Bash looks destructive")
    expect(card.locator(".destructive-badge")).to_have_text("looks destructive")
    expect(card.locator(".destructive-badge")).to_have_css("color", "rgb(180, 35, 24)")
    expect(card.locator(".tv-summary")).to_have_text("Remove the README")
    expect(card.locator(".tool-view pre.tv-command code")).to_have_text("rm -f README.md")
    expect(card.locator("details.raw-input")).not_to_have_attribute("open", "")
    assert card.locator("button.primary").count() == 0 and primary_buttons(card) == []
    allow, deny = card.locator("button.allow"), card.locator("button.deny")
    assert allow.evaluate("b => getComputedStyle(b).backgroundColor") == deny.evaluate(
        "b => getComputedStyle(b).backgroundColor")
    assert allow.evaluate("b => getComputedStyle(b).color") == deny.evaluate("b => getComputedStyle(b).color")
    assert page.evaluate("document.activeElement === document.body")  # nothing focused: Enter does nothing
    shot(page, "pending-permission-destructive")
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: the card fits, nothing scrolls sideways
    no_horizontal_overflow(page)
    shot(page, "narrow-permission-destructive")
    page.set_viewport_size({"width": 1200, "height": 820})
    deny.click()
    assert finish(held)["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    done = page.locator(f'#history-list article[data-id="{pid}"]')
    expect(done.locator(".ask")).to_have_text("Bash Remove the README looks destructive")
    page.locator('#tabs button[data-view="history"]').click()
    done.locator("details.tool-view-more summary").click()
    expect(done.locator("pre.tv-command")).to_have_text("rm -f README.md")
    shot(page, "history-permission-destructive")
    page.locator('#tabs button[data-view="pending"]').click()
    # an ordinary command: Allow is the default again
    held = builder.start_hook(bash_permission("ls -la"))
    card = page.locator("#pending-list article.permission")
    expect(card).to_have_count(1)
    expect(card).not_to_have_class(re.compile(r"\bdestructive\b"))
    expect(card.locator(".destructive-badge")).to_have_count(0)
    assert primary_buttons(card) == ["Allow"]
    builder.held(card.get_attribute("data-id") or "?")
    card.locator("button.allow").click()
    assert finish(held)["hookSpecificOutput"]["decision"]["behavior"] == "allow"


def test_an_edit_card_is_a_coloured_diff_and_a_fetch_shows_its_url_as_text(
        page: Page, builder: Builder, daemon: DaemonProcess, home: Path) -> None:
    """An Edit prompt reads as a diff of the file (removed lines red, added green); a WebFetch
    prompt as its URL and prompt: an http(s) URL a link, a javascript: one plain text."""
    assert builder.hook(payload("001-SessionStart.json")) == ""
    edit = bash_permission("unused")
    edit.update(tool_name="Edit", tool_input={"file_path": "/home/dev/proj/README.md",
                                              "old_string": "# proj\nold intro\nend", "new_string": "# proj\nnew intro\nmore\nend"})
    held = builder.start_hook(edit)
    card = page.locator("#pending-list article.permission")
    expect(card).to_have_count(1)
    expect(card.locator(".tv-summary")).to_have_text("Edit /home/dev/proj/README.md")
    lines = card.locator("pre.tv-diff .dl")
    expect(lines).to_have_text(["--- /home/dev/proj/README.md", "+++ /home/dev/proj/README.md", " # proj",
                                "-old intro", "+new intro", "+more", " end"])
    assert [c.split()[-1] for c in lines.evaluate_all("ls => ls.map((l) => l.className)")] == [
        "file", "file", "ctx", "del", "add", "add", "ctx"]
    expect(card.locator("pre.tv-diff .del")).to_have_css("color", "rgb(180, 35, 24)")
    expect(card.locator("pre.tv-diff .add").first).to_have_css("color", "rgb(19, 115, 51)")
    assert primary_buttons(card) == ["Allow"]
    builder.held(card.get_attribute("data-id") or "?")
    shot(page, "pending-permission-edit")
    card.locator("button.allow").click()
    assert finish(held)["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    for url in ("javascript:alert(document.cookie)", "https://example.org/docs?q=<b>hooks</b>"):
        fetch = bash_permission("unused")
        fetch.update(tool_name="WebFetch", tool_input={"url": url, "prompt": "What changed?"})
        held = builder.start_hook(fetch)
        card = page.locator("#pending-list article.permission")
        expect(card).to_have_count(1)
        expect(card.locator(".tv-url")).to_have_text(url)
        expect(card.locator(".tv-summary")).to_have_count(0)  # the URL once, not twice
        expect(card.locator(".tv-prompt")).to_have_text("What changed?")
        if url.startswith("javascript:"):
            assert card.locator(".tv-url a").count() == 0  # never a link to a script
        else:
            link = card.locator(".tv-url a")
            assert link.get_attribute("href") == "https://example.org/docs?q=%3Cb%3Ehooks%3C/b%3E"
            assert link.get_attribute("rel") == "noopener noreferrer nofollow"
            shot(page, "pending-permission-fetch")
        builder.held(card.get_attribute("data-id") or "?")
        card.locator("button.deny").click()
        assert finish(held)["hookSpecificOutput"]["decision"]["behavior"] == "deny"
        expect(page.locator("#pending-list article.permission")).to_have_count(0)


def test_an_answer_or_message_over_the_limit_is_refused_and_the_page_says_so(
        page: Page, builder: Builder, daemon: DaemonProcess, home: Path) -> None:
    """Issue 18 item 3: the API refuses an answer (here a deny message) or a message over its
    limit with one JSON error; the page shows that error on the card, which stays answerable,
    and nothing reaches the held hook."""
    from hookd.core.limits import MAX_ANSWER_CHARS

    builder.hook(payload("001-SessionStart.json"))
    held = builder.start_hook(bash_permission("rm -rf build"))
    pid = wait_until(lambda: [q["id"] for q in questions(home, "pending") if q["kind"] == "permission"], 60,
                     what="a pending permission prompt")[0]
    builder.held(pid)
    card = page.locator(f'#pending-list article.permission[data-id="{pid}"]')
    card.locator("textarea.deny-message").fill("x" * (MAX_ANSWER_CHARS + 1))
    card.locator("button.deny").click()
    expect(card.locator(".note.error")).to_contain_text(f"the limit is {MAX_ANSWER_CHARS}")
    shot(page, "answer-over-the-limit")
    builder.held(pid)  # nothing was handed to the hook
    assert about(events(home), "interaction_answered", pid) == []
    card.locator("textarea.deny-message").fill("not now")
    card.locator("button.deny").click()
    assert finish(held)["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "not now"}

    page.locator('#tabs button[data-view="lanes"]').click()
    page.locator('#lanes tr.lane[data-builder="b1"] button.message-btn').click()
    compose = page.locator('#lanes tr.compose[data-builder="b1"]')
    compose.locator("textarea").fill("y" * 8001)

    def rerender_first(route: Any) -> None:
        # the lanes re-render while the send is on its way (a lane change arriving then, as the
        # deny above makes one): the row is replaced, and the answer must still show on it
        page.evaluate("renderLanes()")
        route.continue_()

    page.route("**/v1/builders/b1/messages", rerender_first)
    compose.locator("button.send").click()
    expect(compose.locator(".note.error")).to_contain_text("the limit is 8000")
    page.unroute("**/v1/builders/b1/messages")
    page.evaluate("renderLanes()")  # and it stays across later re-renders
    expect(compose.locator(".note.error")).to_contain_text("the limit is 8000")
    assert json.loads(hookd_cli(home, "inbox", "--json").stdout) == []


def test_a_card_answered_from_the_cli_turns_into_history(page: Page, builder: Builder, daemon: DaemonProcess,
                                                         home: Path) -> None:
    builder.hook(payload("001-SessionStart.json"))
    builder.hook(payload("007-PreToolUse.json"))
    held = builder.start_hook(payload("008-PermissionRequest.json"))
    builder.held(ASK_ID)
    card = page.locator(f'#pending-list article[data-id="{ASK_ID}"]')
    card.locator("label.option", has_text="Red").click()  # the human here is still choosing
    r = hookd_cli(home, "answer", ASK_ID, "--option", "Blue", "--actor", "ana")
    assert r.returncode == 0, r.stderr
    assert finish(held)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {Q: "Blue"}
    expect(card).to_have_count(0)  # at once, without a reload
    done = page.locator(f'#history-list article[data-id="{ASK_ID}"]')
    expect(done).to_have_attribute("data-surface", "cli")
    expect(done.locator(".by")).to_have_text("from the CLI by ana")
    expect(done.locator(".badge")).to_have_text("answered")
    expect(done.locator("dd.answer")).to_have_text("Blue")
    assert done.locator("button, input, textarea").count() == 0  # cannot be submitted
    expect(page.locator("#count-pending")).to_have_text("0")
    evs = events(home)
    assert len(about(evs, "interaction_answered", ASK_ID)) == 1 and about(evs, "answer_refused", ASK_ID) == []
    # sign out: nothing stale stays on screen, only what to do next
    hookd_cli(home, "ask", "b1", "Still there?")
    expect(page.locator("#pending-list article")).to_have_count(1)
    page.locator("#signout").click()
    expect(page.locator("#banner")).to_have_text("Signed out. Run `hookd open` in a terminal for a new sign-in link.")
    expect(page.locator("#footer")).to_be_hidden()
    expect(page.locator("#tabs")).to_be_hidden()
    expect(page.locator("main")).to_be_hidden()
    expect(page.locator("article")).to_have_count(0)
    assert page.evaluate("hookdPage.interactions.size + hookdPage.messages.length + hookdPage.lanes.length") == 0
    shot(page, "signed-out")
    assert page.reload().status == 401  # type: ignore[union-attr]  # the cookie is gone
    expect(page.locator("#signin-needed")).to_be_visible()


def test_a_message_sent_from_a_lane_is_delivered(page: Page, builder: Builder, home: Path, worktree: Path) -> None:
    builder.hook(payload("001-SessionStart.json"))
    page.locator('#tabs button[data-view="lanes"]').click()
    lane = page.locator('#lanes tr.lane[data-builder="b1"]')
    expect(lane).to_be_visible()
    expect(lane.locator("td").nth(1)).to_have_text("claude-code")
    expect(lane.locator("td.worktree")).to_have_text(str(worktree))
    expect(lane).to_have_attribute("data-state", "idle")
    lane.locator("button.message-btn").click()
    compose = page.locator('#lanes tr.compose[data-builder="b1"]')
    compose.locator("textarea").fill("also update the changelog")
    compose.locator("button.send").click()
    expect(compose.locator("li[data-state=queued]")).to_contain_text("also update the changelog")
    expect(lane.locator("td.queued-count")).to_have_text("1")
    shot(page, "lanes")
    out = builder.hook(payload("002-UserPromptSubmit.json"))  # the agent's next turn boundary
    assert "also update the changelog" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    page.locator('#tabs button[data-view="inbox"]').click()
    row = page.locator('#inbox tbody tr[data-builder="b1"]')
    expect(row).to_have_attribute("data-state", "delivered")
    expect(row.locator("td.text")).to_have_text("also update the changelog")
    expect(row).to_contain_text("UserPromptSubmit")
    [m] = json.loads(hookd_cli(home, "inbox", "--json").stdout)
    assert (m["state"], m["author"], m["text"]) == ("delivered", page.evaluate("hookdPage.user"), "also update the changelog")
    shot(page, "inbox")


def test_cancel_a_queued_message_the_words_on_a_card_and_an_unspawned_lane(
        page: Page, builder: Builder, home: Path) -> None:
    """Issue 20 items 4, 6, 7 on the page: a deny from the CLI reads "denied" "from the CLI by
    <user>" (no --actor: the OS user); a queued message has **Cancel** (taken back, never
    delivered; a delivered one has none); an unspawned builder's lane says so and its message
    box shows the refusal."""
    builder.hook(payload("001-SessionStart.json"))
    held = builder.start_hook(bash_permission("rm -f README.md"))
    pid = wait_until(lambda: [q["id"] for q in questions(home, "pending") if q["kind"] == "permission"], 60,
                     what="a pending permission prompt")[0]
    builder.held(pid)
    assert hookd_cli(home, "answer", pid, "--option", "deny", "--text", "keep the README").returncode == 0
    finish(held)
    done = page.locator(f'#history-list article[data-id="{pid}"]')
    expect(done.locator(".badge")).to_have_text("denied")
    user = page.evaluate("hookdPage.user")
    expect(done.locator(".by")).to_have_text(f"from the CLI by {user}")
    shot(page, "history-denied-from-the-cli")
    # item 6: take back a queued message
    assert hookd_cli(home, "send", "b1", "never mind the changelog").returncode == 0
    page.locator('#tabs button[data-view="inbox"]').click()
    row = page.locator('#inbox tbody tr[data-id="m-1"]')
    expect(row).to_have_attribute("data-state", "queued")
    shot(page, "inbox-queued-with-cancel")
    row.locator("button.cancel-msg").click()
    expect(row).to_have_attribute("data-state", "cancelled")
    expect(page.locator("#toast")).to_have_text("Cancelled m-1: it will not be delivered to b1.")
    expect(row.locator("button.cancel-msg")).to_have_count(0)
    expect(page.locator("#count-inbox")).to_have_text("0")
    [ev] = [e for e in events(home) if e["kind"] == "inbox_cancelled"]
    assert ev["data"] == {"id": "m-1", "actor": user, "surface": "web"}
    shot(page, "inbox-cancelled")
    assert builder.hook(payload("002-UserPromptSubmit.json")) == ""  # the next boundary: nothing
    assert hookd_cli(home, "send", "b1", "do update the changelog").returncode == 0
    assert "do update the changelog" in builder.hook(payload("002-UserPromptSubmit.json"))
    delivered = page.locator('#inbox tbody tr[data-id="m-2"]')
    expect(delivered).to_have_attribute("data-state", "delivered")
    expect(delivered.locator("button.cancel-msg")).to_have_count(0)
    # item 7: unspawned
    assert hookd_cli(home, "unspawn", "b1").returncode == 0
    page.locator('#tabs button[data-view="lanes"]').click()  # live: unspawn told the daemon (builder_unspawned)
    lane = page.locator('#lanes tr.lane[data-builder="b1"]')
    expect(lane).to_have_attribute("data-state", "unspawned")
    expect(lane.locator(".lane-state")).to_have_text("unspawned")
    lane.locator("button.message-btn").click()
    compose = page.locator('#lanes tr.compose[data-builder="b1"]')
    compose.locator("textarea").fill("are you there?")
    compose.locator("button.send").click()
    note = compose.locator(".note")
    expect(note).to_contain_text("b1 was unspawned at ")
    expect(note).to_contain_text("spawn it again, or send with --force to queue it anyway")
    expect(note).to_have_class(re.compile(r"\berror\b"))
    shot(page, "lanes-unspawned-send-refused")
    assert [m["id"] for m in json.loads(hookd_cli(home, "inbox", "--json").stdout)] == ["m-1", "m-2"]


def test_reconnects_after_a_daemon_restart_without_missed_or_doubled_cards(
        page: Page, builder: Builder, daemon: DaemonProcess, home: Path) -> None:
    port = daemon_port(home)
    first = page.evaluate("hookdPage.lastSeq")
    builder.hook(payload("001-SessionStart.json"))
    ask_a = json.loads(hookd_cli(home, "ask", "b1", "Ship it today?", "--json").stdout)["interaction"]["id"]
    expect(page.locator(f'#pending-list article[data-id="{ask_a}"]')).to_be_visible()
    daemon.stop()
    expect(page.locator("#conn")).not_to_have_attribute("data-state", "live")
    expect(page.locator("#offline")).to_contain_text("hookd is not reachable — showing what was known at")
    # while it is down the agent asks: the hook client spools it, the daemon ingests it at start
    assert builder.hook(payload("007-PreToolUse.json")) == ""
    daemon.start()
    assert daemon_port(home) == port
    ask_c = json.loads(hookd_cli(home, "ask", "b1", "Which branch?", "--option", "main", "--option", "next",
                                 "--json").stdout)["interaction"]["id"]
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(page.locator("#offline")).to_be_hidden()
    for iid in (ask_a, ASK_ID, ask_c):
        expect(page.locator(f'article[data-id="{iid}"]')).to_have_count(1)
    expect(page.locator("#pending-list article")).to_have_count(3)
    assert int(page.locator("body").get_attribute("data-connects") or 0) >= 2
    # every event after the page's first one, each once, in order: none missed across the restart
    c = daemon.client()
    try:
        def caught_up() -> bool:
            want = [e["seq"] for e in c.lines("/v1/events", after=first, limit=100000)]
            return page.evaluate("hookdPage.seen.slice()") == want
        wait_until(caught_up, 60, interval=0.1, what="the page to have seen every event once")
    finally:
        c.close()
    # the page still answers after the restart: the async question, free text
    card = page.locator(f'#pending-list article[data-id="{ask_a}"]')
    card.locator("input.other").fill("yes, after the review")
    shot(page, "pending-after-restart")
    card.locator("button.submit").click()
    done = page.locator(f'#history-list article[data-id="{ask_a}"]')
    expect(done.locator("dd.answer")).to_have_text("yes, after the review")
    [m] = json.loads(hookd_cli(home, "inbox", "--json").stdout)
    assert "yes, after the review" in m["text"] and m["state"] == "queued"  # the agent gets it at its next turn


def test_multi_select_and_other_from_a_replayed_scenario(page: Page, builder: Builder, daemon: DaemonProcess,
                                                         home: Path) -> None:
    """`hookd replay DIR --into b1` (docs/usage.md's walk-through) with two questions, one of them
    multi-select: checkboxes, descriptions, "Other" text on both; the held PermissionRequest
    returns exactly what was chosen, joined as Claude Code joins it."""
    from hookd.harness.base import encode_answer

    scenario = REPO / "fixtures" / "claude-code" / "synthetic" / "auq-multiselect-other-commas"
    proc = subprocess.Popen([*daemon.cli_args("replay", str(scenario), "--into", "b1")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        card = page.locator("#pending-list article.question")
        expect(card).to_have_count(1)
        colors, font = card.locator("fieldset.q").nth(0), card.locator("fieldset.q").nth(1)
        expect(colors.locator(".qheader")).to_have_text("Colors")
        assert colors.locator("input[type=checkbox]").count() == 3 and colors.locator("input[type=radio]").count() == 0
        assert font.locator("input[type=radio]").count() == 2
        expect(colors.locator("label.option", has_text="Red, dark")).to_contain_text("A dark red")
        colors.locator('input[value="Red, dark"]').check()
        colors.locator('input[value="Blue"]').check()
        colors.locator("input.other").fill("teal")
        font.locator('input[value="Serif"]').check()
        font.locator("input.other").fill("Mono, 14px, with ligatures")  # free text replaces the option
        expect(font.locator("input[type=radio]:checked")).to_have_count(0)
        iid = card.get_attribute("data-id")
        builder.held(iid or "?")
        shot(page, "pending-multi-select")
        card.locator("button.submit").click()
        # History shows each chosen option as a label of its own and the "Other" text apart
        done = page.locator(f'#history-list article[data-id="{iid}"]')
        colors_dd, font_dd = done.locator("dd.answer").nth(0), done.locator("dd.answer").nth(1)
        expect(colors_dd.locator(".sel-label")).to_have_text(["Red, dark", "Blue"])
        expect(colors_dd.locator(".sel-other")).to_have_text("Other teal")
        expect(font_dd.locator(".sel-label")).to_have_count(0)
        expect(font_dd.locator(".sel-other")).to_have_text("Other Mono, 14px, with ligatures")
        expect(page.locator("#toast")).to_have_text(
            "Answered Red, dark · Blue · teal; Mono, 14px, with ligatures — see History")
        page.locator("#toast a").click()
        shot(page, "history-multi-select")
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    want = {"Which colors should the theme use?": encode_answer(["Red, dark", "Blue"], "teal"),
            "Which font?": encode_answer([], "Mono, 14px, with ligatures")}
    line = next(x for x in out.splitlines() if x.startswith("003-PermissionRequest.json"))
    assert json.loads(line.split(", stdout ", 1)[1])["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == want
    [i] = [q for q in questions(home) if q["id"] == iid]
    assert (i["state"], i["surface"], i["answers"]) == ("answered", "web", want) and i["adopted_at"]
    sel = {s["question"]: (s["labels"], s["other"]) for s in i["selections"]}
    assert sel == {"Which colors should the theme use?": (["Red, dark", "Blue"], "teal"),
                   "Which font?": ([], "Mono, 14px, with ligatures")}


def test_while_the_daemon_is_down_the_page_says_so(page: Page, daemon: DaemonProcess, home: Path) -> None:
    """Stale views are marked as such: a banner with the time they were last known current, and
    no "Nothing is waiting on you" claimed while the page cannot know."""
    empty = page.locator("#pending-empty")
    expect(empty).to_have_text("Nothing is waiting on you.")
    expect(page.locator("#offline")).to_be_hidden()
    daemon.stop()
    banner = page.locator("#offline")
    expect(banner).to_be_visible()
    expect(banner).to_have_text(re.compile(
        r"^hookd is not reachable — showing what was known at \d\d:\d\d:\d\d; reconnecting…$"))
    expect(empty).to_have_text(re.compile(r"^Nothing was waiting on you at \d\d:\d\d:\d\d \(hookd is not reachable now\)\.$"))
    shot(page, "offline")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "offline-narrow")
    daemon.start()
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(banner).to_be_hidden()
    expect(empty).to_have_text("Nothing is waiting on you.")


def test_a_message_the_page_could_not_send_while_hookd_was_down_is_not_said_once_live(
        page: Page, builder: Builder, daemon: DaemonProcess) -> None:
    builder.hook(payload("001-SessionStart.json"))
    page.locator('#tabs button[data-view="lanes"]').click()
    lane = page.locator('#lanes tr.lane[data-builder="b1"]')
    expect(lane).to_be_visible()
    lane.locator("button.message-btn").click()
    compose = page.locator('#lanes tr.compose[data-builder="b1"]')
    daemon.stop()
    expect(page.locator("#offline")).to_be_visible()
    compose.locator("textarea").fill("are you there?")
    compose.locator("button.send").click()
    note = compose.locator(".note")
    expect(note).to_have_text("hookd is not reachable (is `hookd serve` running?)")
    daemon.start()
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(note).to_have_text("")
    expect(compose.locator("textarea")).to_have_value("are you there?")  # what was typed stays, to send again


def no_horizontal_overflow(page: Page) -> None:
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    tops = {round(b["y"]) for b in (t.bounding_box() for t in page.locator("#tabs button").all()) if b}
    assert len(tops) == 1, tops  # the tabs fit on one row
    right = page.evaluate("Math.max(...Array.from(document.querySelectorAll('#tabs button'), (b) => b.getBoundingClientRect().right))")
    assert right <= width


def test_narrow_screen_settings_file_lane_and_an_answer_queued_as_a_message(
        page: Page, daemon: DaemonProcess, home: Path, tmp_path: Path) -> None:
    """A builder spawned with --settings-file (no worktree) and --hold 0: its lane names the
    settings file, muted; its question, answered in the browser, cannot reach a hook, and the
    page says that it was queued as an inbox message instead. All at 390 px wide: nothing
    overflows the screen, the tabs fit on one row, and each lane and message is a card of
    labelled values (no table to scroll sideways), the settings file shown whole."""
    settings = tmp_path / "b2.json"
    assert hookd_run(home, "spawn", "b2", "--settings-file", str(settings), "--hold", "0",
                     "--no-mcp").returncode == 0
    for name in ("001-SessionStart.json", "007-PreToolUse.json", "008-PermissionRequest.json"):
        p = payload(name)
        r = run_hook(settings_command(settings, p["hook_event_name"]), json.dumps(p).encode(), tmp_path)
        assert r.returncode == 0, r
    page.set_viewport_size({"width": 390, "height": 844})
    card = page.locator(f'#pending-list article[data-id="{ASK_ID}"]')
    expect(card).to_be_visible()
    no_horizontal_overflow(page)
    card.locator("label.option", has_text="Red").click()
    shot(page, "narrow-pending")
    card.locator("button.submit").click()
    toast = page.locator("#toast")
    expect(toast).to_have_class(re.compile(r"\bwarn\b"))
    expect(toast).to_contain_text("no hook is holding")
    expect(toast).to_contain_text("your answer was queued as inbox message m-1 instead")
    shot(page, "narrow-answer-queued")
    [m] = json.loads(hookd_cli(home, "inbox", "--json").stdout)
    assert (m["id"], m["builder"], m["state"]) == ("m-1", "b2", "queued") and "Red" in m["text"]
    page.locator('#tabs button[data-view="lanes"]').click()
    cell = page.locator('#lanes tr.lane[data-builder="b2"] td.worktree')
    expect(cell.locator(".settings-file")).to_have_text(f"settings file: {settings}")
    # muted: its colour and the cell's, read together (a row being redrawn has no style: asked again)
    file_colour, cell_colour = page.wait_for_function("""() => {
        const c = document.querySelector('#lanes tr.lane[data-builder="b2"] td.worktree');
        const f = c && c.querySelector('.settings-file');
        const a = f && getComputedStyle(f).color, b = c && getComputedStyle(c).color;
        return a && b ? [a, b] : null; }""").json_value()
    assert file_colour != cell_colour
    no_horizontal_overflow(page)
    stacked(page, "lanes")
    row = page.locator('#lanes tr.lane[data-builder="b2"]')
    assert label_of(row.locator("td.builder")) == "none"  # the card's title
    assert label_of(row.locator("td:has(.lane-state)")) == '"lane: "'
    assert label_of(row.locator("td.pending-count")) == '"pending: "'
    assert cell.evaluate("e => e.scrollWidth <= e.clientWidth")  # the settings file is not cut
    shot(page, "narrow-lanes")
    row.locator("button.message-btn").click()  # the compose form opens under its card
    expect(page.locator('#lanes tr.compose[data-builder="b2"] textarea')).to_be_focused()
    no_horizontal_overflow(page)
    shot(page, "narrow-lanes-compose")
    page.locator('#tabs button[data-view="inbox"]').click()
    no_horizontal_overflow(page)
    stacked(page, "inbox")
    msg = page.locator('#inbox tr[data-id="m-1"]')
    assert label_of(msg.locator("td").nth(2)) == '"state: "'
    expect(msg.locator("td.text")).to_contain_text("Red")
    shot(page, "narrow-inbox")
    page.locator('#tabs button[data-view="history"]').click()
    no_horizontal_overflow(page)
    shot(page, "narrow-history")
    page.set_viewport_size({"width": 1200, "height": 820})  # wide again: a table with its head
    page.locator('#tabs button[data-view="lanes"]').click()
    expect(page.locator("#lanes thead")).to_be_visible()
    assert label_of(row.locator("td.pending-count")) == "none"


def stacked(page: Page, table: str) -> None:
    """``#table`` shows as cards: no head, each row one block as wide as its box, which does
    not scroll sideways."""
    expect(page.locator(f"#{table} thead")).to_be_hidden()
    wrap = page.locator(f"#view-{table} .table-wrap")
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth")
    widths = page.evaluate(f"Array.from(document.querySelectorAll('#{table} tbody tr'), (r) => r.getBoundingClientRect().width)")
    box = wrap.evaluate("e => e.clientWidth")
    assert widths and all(abs(w - box) <= 2 for w in widths), (widths, box)


def label_of(cell: Any) -> str:
    """The column name a cell shows before its value (CSS ::before content; "none" when none)."""
    return cell.evaluate("e => getComputedStyle(e, '::before').content")
