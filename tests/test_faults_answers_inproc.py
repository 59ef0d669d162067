"""Issue 18, answers that are really delivered, in process (tests/inproc.py; the daemon tests
are tests/test_faults_answers.py): a hook reply the client cannot take whole is never offered
(item 3); a remote allow carries what the tool needs (item 12: ExitPlanMode's
``updatedInput``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from hookd.core.outcomes import MAX_HOOK_REPLY

from .conftest import wait_until
from .inproc import InProc
from .test_answers import ASK_ID, AUQ_PERM, AUQ_PRE, bash_perm
from .test_answers_inproc import Rig, finish

pytestmark = pytest.mark.inproc


@pytest.fixture
def rig(inproc: InProc, worktree: Path) -> Rig:
    return Rig(inproc, worktree)


# ============================================================ item 3: limits at the API
def test_a_reply_the_hook_cannot_take_whole_is_never_offered(rig: Rig) -> None:
    """An AskUserQuestion whose own input is huge (1.2 MB of option descriptions): the reply
    (its input plus the answers) would be more than the compiled client reads (1 MiB), so it
    printed nothing while hookd recorded the answer delivered. The answer goes to the inbox
    instead, the menu stays with the desk."""
    pre = copy.deepcopy(AUQ_PRE)
    for o in pre["tool_input"]["questions"][0]["options"]:
        o["description"] = "d" * 600_000
    perm = copy.deepcopy(AUQ_PERM)
    perm["tool_input"] = pre["tool_input"]
    rig.hook(pre)
    held = rig.start_hook(perm)
    rig.held(ASK_ID)
    receipt = rig.answer_json(ASK_ID, options=["Red"])
    # (`hookd answer` prints "queued as inbox message m-1" and the warning)
    assert (receipt["delivery"], receipt["message_id"], receipt["interaction"]["state"]) == ("inbox", "m-1", "pending")
    assert f"over the {MAX_HOOK_REPLY} a hook takes" in receipt["warning"]
    i = rig.interaction(ASK_ID)
    assert (i["state"], i["delivered_at"]) == ("pending", None)
    rig.held(ASK_ID)  # still held: nothing was handed to it
    assert not held.done()
    assert [e for e in rig.events() if e["kind"] == "answer_delivered" and e["data"].get("id") == ASK_ID] == []


# ================================================= item 12: what each tool's allow needs
@pytest.mark.parametrize("tool_input", [{}, {"plan": "1. build\n2. ship"}])
def test_exit_plan_mode_allow_carries_its_input(rig: Rig, tool_input: dict[str, Any]) -> None:
    """2.1.332 leaves the "Exit plan mode?" dialog open on a bare allow; it acts on an allow
    with ``updatedInput``: the input exactly as the hook got it ({} in 2.1.332's payload when
    the model wrote no plan file). ExitPlanMode is a ``plan`` (tests/test_plans_inproc.py);
    ``allow``, how it was answered as a permission prompt, still approves it (``manual``: the
    default mode, which is what a bare allow with its input gave)."""
    perm = bash_perm("x")
    perm.update(tool_name="ExitPlanMode", tool_input=tool_input, permission_mode="plan")
    held = rig.start_hook(perm)
    p = wait_until(lambda: [q for q in rig.app.questions("pending") if q["kind"] == "plan"], 60, what="a plan")[0]
    rig.held(p["id"])
    rig.answer_json(p["id"], options=["allow"])
    status, out = finish(held)
    assert json.loads(out) == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
        "behavior": "allow", "updatedInput": tool_input,
        "updatedPermissions": [{"type": "setMode", "mode": "default", "destination": "session"}]}}}
