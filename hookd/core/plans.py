"""Plan approvals (interaction kind ``plan``): an agent asks a human to approve its plan
before it leaves planning (Claude Code's ExitPlanMode; the adapter's
:class:`hookd.harness.base.PlanAsked`).

A plan is a permission prompt of its own kind: it is held, answered remotely, adopted and
resolved as a permission prompt is (``permission_pending`` / ``permission_resolved`` with
``kind: "plan"``), and its answer is a choice of three:

- ``auto``: approve, the agent goes on in its most autonomous mode (decision ``allow``,
  ``answers`` ``{"mode": "auto"}``);
- ``manual``: approve, every edit asks again (decision ``allow``, ``{"mode": "manual"}``);
- ``deny`` with ``--text FEEDBACK``: send it back; the feedback is the tool result the model
  reads and the agent keeps planning.

Pure functions over an :class:`~hookd.models.Interaction`: no state, no store.
"""

from __future__ import annotations

from typing import Any

from hookd.harness.base import PLAN_MODES, RemoteAnswers
from hookd.models import AnswerRequest, BadRequest, Interaction

__all__ = ["PLAN_CHOICES", "PLAN_USAGE", "normalize_plan_answer", "plan_body", "plan_mode", "plan_text"]

#: The options of ``hookd answer ID --option ...`` for a plan, in the desk's order.
PLAN_CHOICES = (*PLAN_MODES, "deny")
PLAN_USAGE = ("a plan takes --option auto, --option manual (--option allow is manual too),"
              " or --option deny --text FEEDBACK")


def plan_text(i: Interaction) -> tuple[str | None, str | None]:
    """(the plan's markdown text, the file it was read from) of a ``plan`` interaction, as
    its prompt showed them (``input.plan``, ``input.planFilePath``); None where absent."""
    inp: Any = i.input if isinstance(i.input, dict) else {}
    plan, path = inp.get("plan"), inp.get("planFilePath")
    return (plan if isinstance(plan, str) else None, path if isinstance(path, str) else None)


def plan_mode(i: Interaction) -> str | None:
    """The mode a plan was approved in (``auto`` | ``manual``), None when it was not approved
    remotely (or was sent back)."""
    mode = (i.answers or {}).get("mode") if i.decision == "allow" else None
    return mode if mode in PLAN_MODES else None


def normalize_plan_answer(req: AnswerRequest) -> tuple[dict[str, str] | None, None, str, str | None]:
    """(answers, selections, decision, message) of an answer to a plan. One option of
    :data:`PLAN_CHOICES` (``allow``, as an option or a decision, means ``manual``; ``deny`` as
    a decision too);
    ``deny`` needs the feedback (``text`` or ``message``), an approval takes none. Raises
    BadRequest with the usage."""
    if req.answers is not None or len(req.options) > 1:
        raise BadRequest(PLAN_USAGE)
    by_decision = {"allow": "manual", "deny": "deny"}.get(req.decision) if req.decision is not None else None
    # ``allow`` as an option too: how a plan was answered while it was a permission prompt
    choice = {"allow": "manual"}.get(req.options[0], req.options[0]) if req.options else by_decision
    if choice not in PLAN_CHOICES or (req.decision is not None and by_decision is None):
        raise BadRequest(PLAN_USAGE)
    if req.options and req.decision is not None and (choice == "deny") != (req.decision == "deny"):
        raise BadRequest(PLAN_USAGE)
    message = req.message if req.message is not None else req.text
    if message is not None and not message.strip():
        message = None
    if choice == "deny":
        if message is None:
            raise BadRequest("sending a plan back needs the feedback for the agent: --option deny --text FEEDBACK")
        return None, None, "deny", message
    if message is not None:
        raise BadRequest("feedback goes with deny (the agent revises its plan); an approval takes none")
    return {"mode": choice}, None, "allow", None


def plan_body(i: Interaction, remote: RemoteAnswers) -> bytes:
    """The held plan hook's stdout for ``i``'s answer, rendered by its harness."""
    assert i.decision in ("allow", "deny")
    return remote.plan_reply(i.decision, plan_mode(i), i.input, i.message)
