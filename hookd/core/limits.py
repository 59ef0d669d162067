"""What a human or an agent may send through hookd: the sizes of questions, answers, names and
messages, checked before anything is stored (docs/decisions.md "Answer and message limits")."""

from __future__ import annotations

from hookd.harness.base import injection_size
from hookd.models import BadRequest

#: Longest question an agent asks (characters); at most MAX_OPTIONS option labels, each at
#: most MAX_OPTION_CHARS characters.
MAX_QUESTION_CHARS = 4000
MAX_OPTIONS = 12
MAX_OPTION_CHARS = 200

#: Longest human text in one answer: the free text of all its questions together, or a deny
#: message (:func:`hookd.harness.base.injection_size`: JSON-escaped UTF-8 bytes, as messages
#: are measured). It reaches the model in a tool result, or, kept as an inbox message (an
#: answer that came late or had no hook to go through), in one injection: with the question
#: lines and the late-answer framing it stays under :data:`hookd.harness.base.INJECTION_CAP`
#: (~9k characters; Claude Code 2.1.332 collapses longer hook context to a preview).
#: docs/decisions.md "Answer and message limits".
MAX_ANSWER_CHARS = 6000

#: Longest name of who answers or writes (``actor``, ``author``): framed into what the model
#: reads (``[human msg m-3 from <author> ...]``).
MAX_NAME_CHARS = 200

#: Largest message accepted (:func:`hookd.harness.base.injection_size`: JSON-escaped UTF-8
#: bytes, ~characters for plain text): one message must fit one injection.
MAX_MESSAGE_CHARS = 8000


def check_name(what: str, name: str | None) -> None:
    """Refuse (BadRequest) an ``actor`` / ``author`` longer than MAX_NAME_CHARS characters."""
    if name is not None and len(name) > MAX_NAME_CHARS:
        raise BadRequest(f"{what} is {len(name)} characters; the limit is {MAX_NAME_CHARS}")


def check_answer_size(texts: list[str | None], what: str = "the answer's text") -> None:
    """Refuse (BadRequest, saying the size and the limit) human text over MAX_ANSWER_CHARS
    (JSON-escaped UTF-8 bytes, all of ``texts`` together)."""
    size = sum(injection_size(t) - 2 for t in texts if t)
    if size > MAX_ANSWER_CHARS:
        raise BadRequest(f"{what} is {size} bytes as sent (JSON-escaped UTF-8); the limit is {MAX_ANSWER_CHARS}"
                         " (it must reach the agent whole, in one injection): shorten it")
