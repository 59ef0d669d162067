"""Answer from your phone against the real Claude Code 2.1.332 TUI (tmux), offline (issue 24).

A builder spawned by ``hookd spawn`` runs in the TUI in manual permission mode; its Bash call
opens a permission dialog whose PermissionRequest hook the daemon holds; the daemon's
Telegram channel (the loopback fake of the Bot API, tests/fake_telegram.py) posts it with its
buttons; a "human on the phone" presses Allow, or replies to the post with a reason (a deny
with that message). Asserted on what reached the model next (the fake model API's request
log: the tool's output, or the denial as an error tool result), on the held hook released,
on hookd's record and on the post edited to the outcome.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..fake_telegram import TOKEN, FakeTelegram
from .drivers import wait_until
from .test_answers_e2e import (
    DIALOG,
    PERM_CMD,
    hook_procs,
    interaction,
    manual_tui,
    pending_permission,
    permission_argv,
    wait_held,
)
from .test_answers_e2e import held as held_now
from .test_claude_code_scenarios import (  # noqa: F401  (rig: fixture)
    Rig,
    about,
    bash_turn,
    rig,
    text_turn,
    tool_result_block,
)

pytestmark = pytest.mark.e2e

ALLOWED = 7


@pytest.fixture
def fake():
    f = FakeTelegram()
    yield f
    if f.up:
        f.stop()


def telegram_config(r: Rig, fake: FakeTelegram) -> None:
    """The daemon's config (written before it starts): post at once on the fake's chat."""
    (Path(r.hookd.home) / "config.toml").write_text(f"""
[notify]
question_after_s = 0
retry_initial_s = 0.05
retry_max_s = 0.3
[[notify.channel]]
type = "telegram"
name = "phone"
token = "{TOKEN}"
chat_id = "{fake.chat_id}"
allow = [{ALLOWED}]
base_url = "{fake.base_url}"
""")


def post_of(fake: FakeTelegram, needle: str) -> int:
    def found() -> int | None:
        return next((m["message_id"] for m in fake.sent_to_chat() if needle in m["text"]), None)
    return wait_until(found, 30, 0.05, f"a Telegram post with {needle!r}")


def buttons_for(r: Rig, fake: FakeTelegram, iid: str, mid: int) -> dict[str, str]:
    """The post's buttons (label -> callback data) once they answer the prompt's revision."""
    def fresh() -> dict[str, str] | None:
        rev = interaction(r, iid)["revision"]
        got = dict(fake.buttons(mid))
        return got if got and all(d.split(":")[2] == str(rev) for d in got.values()) else None
    return wait_until(fresh, 30, 0.05, "the post's buttons at the prompt's revision")


def held_on_the_phone(r: Rig, fake: FakeTelegram, tui: Any) -> tuple[dict[str, Any], int]:
    tui.wait_ready(timeout=20)
    tui.submit("Run the probe")
    tui.wait_for_screen(DIALOG, timeout=30)
    p = pending_permission(r)
    wait_held(r, p["id"])
    mid = post_of(fake, PERM_CMD)
    assert fake.messages[mid]["text"].startswith(f"{r.builder} asks permission to run Bash: ")
    assert PERM_CMD in fake.messages[mid]["text"]
    assert len(r.api.main_requests()) == 1  # the model waits for the tool result
    return p, mid


# =========================================== a press of Allow runs the command
ALLOW_BASH = "toolu_01TGALLOWBASH000000000001"


def test_a_press_of_allow_on_telegram_runs_the_command_and_the_model_gets_its_output(rig, tmux_bin, fake):  # noqa: F811
    r = rig({"turns": [bash_turn(ALLOW_BASH, PERM_CMD), text_turn("AFTER-TG-ALLOW")]},
            builder="b-tgallow", form="worktree", daemon=False)
    telegram_config(r, fake)
    r.hookd.start()
    with manual_tui(r, tmux_bin) as tui:
        p, mid = held_on_the_phone(r, fake, tui)
        buttons = buttons_for(r, fake, p["id"], mid)
        assert list(buttons) == ["Allow", "Deny"]
        fake.press(ALLOWED, mid, buttons["Allow"])
        tui.wait_for_screen(lambda s: DIALOG not in s, timeout=10)
        tui.wait_for_screen("AFTER-TG-ALLOW", timeout=30)
        r.wait_events(lambda ev: about(ev, "answer_adopted", p["id"]), "answer_adopted")

    main = r.api.main_requests()
    assert len(main) == 2
    block = tool_result_block(main[1], ALLOW_BASH)
    assert block is not None and block["content"] == "hello-from-bash" and block.get("is_error") is False
    assert (r.project / "perm-probe").exists()
    i = interaction(r, p["id"])
    assert (i["state"], i["decision"], i["surface"], i["actor"]) == ("answered", "allow", "telegram", f"telegram:{ALLOWED}")
    assert i["delivered_via"] == "PermissionRequest"
    assert held_now(r) == [] and hook_procs(permission_argv(r)) == []
    wait_until(lambda: fake.messages[mid]["text"].endswith(f"— answered: allow (by telegram:{ALLOWED}, telegram)"),
               30, 0.05, "the post edited to the outcome")
    assert fake.buttons(mid) == [] and "Answered." in fake.replies()


# ===================================== a reply with a reason denies, the model reads it
DENY_BASH = "toolu_01TGDENYBASH0000000000001"
DENY_MSG = "not from here, use ls instead"


def test_a_reply_on_telegram_denies_with_its_text_and_the_model_reads_it(rig, tmux_bin, fake):  # noqa: F811
    r = rig({"turns": [bash_turn(DENY_BASH, PERM_CMD), text_turn("AFTER-TG-DENY")]},
            builder="b-tgdeny", form="worktree", daemon=False)
    telegram_config(r, fake)
    r.hookd.start()
    with manual_tui(r, tmux_bin) as tui:
        p, mid = held_on_the_phone(r, fake, tui)
        buttons_for(r, fake, p["id"], mid)
        fake.reply(ALLOWED, mid, DENY_MSG)
        tui.wait_for_screen(lambda s: DIALOG not in s, timeout=10)
        tui.wait_for_screen("AFTER-TG-DENY", timeout=30)
        assert f"Reason: {DENY_MSG}" in tui.capture()
        r.wait_hook("Stop")

    main = r.api.main_requests()
    assert len(main) == 2
    block = tool_result_block(main[1], DENY_BASH)
    assert block is not None and block["content"] == DENY_MSG and block["is_error"] is True
    assert not (r.project / "perm-probe").exists()
    i = interaction(r, p["id"])
    assert (i["state"], i["decision"], i["message"], i["surface"]) == ("answered", "deny", DENY_MSG, "telegram")
    assert held_now(r) == [] and hook_procs(permission_argv(r)) == []
    wait_until(lambda: fake.messages[mid]["text"].endswith(
        f"— answered: deny: {DENY_MSG} (by telegram:{ALLOWED}, telegram)"), 30, 0.05, "the post edited to the outcome")
    assert json.loads(r.hookd.cli("inbox", "--json")) == []
