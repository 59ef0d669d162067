"""The operator page over the hub in a real browser (Chromium, as tests/test_web_browser.py):
``hookd --hub OPERATOR_URL hub serve`` run as the CLI runs it, a real PostgreSQL (tests/pg.py)
and two hosts in process (tests/test_hub_commands.py's ``Host``). The same page's code shows
both hosts' prompts named ``HOST/ID`` and each host's freshness, and its Allow button releases
the held hook on the right host; the card then moves to History, live. Screenshot:
tests/artifacts/web/hub-pending.png."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from playwright.sync_api import Browser, expect

from .hubrig import cluster_fixture, fresh_hub
from .pg import PgCluster
from .test_answers_inproc import finish
from .test_hub_commands import Host
from .test_web_browser import shot

pytestmark = [pytest.mark.inproc, pytest.mark.xdist_group("browser")]  # (one worker: one Chromium at a time)

cluster = pytest.fixture(scope="module")(cluster_fixture)


@pytest.fixture
def two(cluster: PgCluster, tmp_path: Path) -> Iterator[tuple[str, Host, Host]]:
    """(an operator's URL, host A, host B), made before the browser (Playwright's sync API runs
    an event loop in the test's thread: the hub rig's asyncio.run would be refused there)."""
    hub = fresh_hub(cluster)
    op = hub.operator()
    a, b = Host(hub, tmp_path, "ha"), Host(hub, tmp_path, "hb")
    try:
        yield op, a.start(), b.start()
    finally:
        a.stop()
        b.stop()


@contextlib.contextmanager
def hub_page(op: str, home: Path) -> Iterator[re.Match[str]]:
    """``hookd --hub OP hub serve --no-browser`` as the CLI runs it, until the block ends; its
    sign-in link (group 1: the page's origin)."""
    server = subprocess.Popen([sys.executable, "-m", "hookd", "--home", str(home), "--hub", op, "hub", "serve",
                               "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "CI": "true"})
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+)/signin#code=\S+", line)
        assert m, (line, server.stderr.read() if server.poll() is not None and server.stderr else "")
        yield m
    finally:
        server.terminate()
        server.wait(10)


def test_the_page_over_the_hub_answers_a_host_in_the_browser(two: tuple[str, Host, Host], tmp_path: Path,
                                                             browser: Browser) -> None:
    op, a, b = two
    held_a, p_a = a.held_permission("make deploy")
    held_b, p_b = b.held_permission("make deploy")
    with hub_page(op, tmp_path / "op") as m:
        ctx = browser.new_context(viewport={"width": 1200, "height": 820})
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(m.group(0))
        expect(page).to_have_url(f"{m.group(1)}/")
        expect(page.locator("#conn")).to_have_attribute("data-state", "live")
        hosts = page.locator("#hosts .host")
        expect(hosts).to_have_count(2, timeout=60_000)
        expect(hosts.nth(0)).to_contain_text(re.compile(rf"^{a.id} seen \d+ s ago$"))
        expect(hosts.nth(1)).to_contain_text(re.compile(rf"^{b.id} seen \d+ s ago$"))
        card_a = page.locator(f'#pending-list article[data-id="{a.id}/{p_a["id"]}"]')
        card_b = page.locator(f'#pending-list article[data-id="{b.id}/{p_b["id"]}"]')
        expect(card_a).to_have_count(1, timeout=60_000)
        expect(card_b).to_have_count(1, timeout=60_000)
        expect(card_a.locator("p.ask")).to_contain_text(f"{a.id}/b1 wants to run Bash")
        shot(page, "hub-pending")
        card_a.locator("button.allow").click()
        status, body = finish(held_a, timeout=30)
        assert status == 200 and json.loads(body)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
        assert not held_b.done()
        # the host's resolution, shipped, moves the card to History (the stream, not a reload)
        done = page.locator(f'#history-list article[data-id="{a.id}/{p_a["id"]}"]')
        expect(done.locator(".badge")).to_have_text("allowed", timeout=60_000)
        expect(card_b).to_have_count(1)
        card_b.locator("textarea.deny-message").fill("not from here")
        card_b.locator("button.deny").click()
        status, body = finish(held_b, timeout=30)
        assert json.loads(body)["hookSpecificOutput"]["decision"] == {"behavior": "deny", "message": "not from here"}
        page.locator('#tabs button[data-view="lanes"]').click()
        expect(page.locator(f'#lanes tr.lane[data-builder="{b.id}/b1"]')).to_have_count(1)
        ctx.close()
        assert errors == []


def test_the_page_over_the_hub_keeps_what_was_waiting_while_the_hub_is_down(
        cluster: PgCluster, two: tuple[str, Host, Host], tmp_path: Path, browser: Browser) -> None:
    """The hub down (PostgreSQL stopped) while a prompt waits: the page keeps its card, marked
    stale with when it was known, and never says nothing was waiting (a fresh user's trial saw
    "Waiting on you 0" and "Nothing was waiting on you at ..."); the hub back, it is live with
    the card again."""
    op, a, _ = two
    held_a, p_a = a.held_permission("make deploy")
    with hub_page(op, tmp_path / "op") as m:
        ctx = browser.new_context(viewport={"width": 1200, "height": 820})
        page = ctx.new_page()
        page.goto(m.group(0))
        card = page.locator(f'#pending-list article[data-id="{a.id}/{p_a["id"]}"]')
        expect(card).to_have_count(1, timeout=60_000)
        expect(page.locator("#count-pending")).to_have_text("1")
        connects = int(page.locator("body").get_attribute("data-connects") or "0")
        cluster.stop("fast")
        try:
            # the stream ends, the page connects again and its read of the hub fails (503): the
            # state "error" is set only by that failed read, after the stream's hello
            expect(page.locator("#conn")).to_have_attribute("data-state", "error", timeout=60_000)
            expect(page.locator("#offline")).to_contain_text("the hub is not reachable — showing what was known at")
            expect(card).to_have_count(1)
            # (on the page over the hub, dismissing is not offered: a host does it; and a short
            # input shown in the generic view once)
            expect(card.locator("details.dismiss-row")).to_be_hidden()
            expect(card.locator("p.tv-summary")).to_have_count(0)
            expect(page.locator("#count-pending")).to_have_text("1")
            expect(page.locator("#pending-empty")).to_be_hidden()
            shot(page, "hub-down")
        finally:
            cluster.start()
        expect(page.locator("#conn")).to_have_attribute("data-state", "live", timeout=60_000)
        assert int(page.locator("body").get_attribute("data-connects") or "0") > connects
        expect(card).to_have_count(1)
        ctx.close()
    held_a.cancel()
