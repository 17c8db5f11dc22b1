"""Optional LLM rephrasing of the simulated user's messages.

The truth stays rule-based: the simulator decides what the user says (state, vagueness,
mistakes, rollbacks) and the LLM only rewords it. Any object with
`complete(messages) -> obj with .text` works (the project's brains), as does a plain callable
`(text) -> str`; `envs` never imports `agents`. If the model fails or returns something empty
or far too long, the rule-based text is used and a warning is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

SYSTEM = (
    "You rewrite messages from a non-expert person talking to a maintenance assistant. "
    "Keep every fact and every sign of uncertainty exactly as given; do not add facts, do not answer "
    "questions, do not mention that you are rewriting. Reply with the rewritten message only."
)


class Rephraser:
    def __init__(self, target: Any) -> None:
        if not (hasattr(target, "complete") or callable(target)):
            raise TypeError("rephraser needs an object with complete(messages) -> .text, or a callable (text) -> str")
        self.target = target

    def __call__(self, text: str, context: str = "") -> str:
        try:
            if hasattr(self.target, "complete"):
                user = (f"Context (do not repeat): {context}\n\n" if context else "") + f"Message to rewrite:\n{text}"
                out = self.target.complete([{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}])
                new = getattr(out, "text", out)
            else:
                new = self.target(text)
        except Exception as exc:  # a flaky model must not break the episode
            log.warning("rephraser failed (%s); using the rule-based text", exc)
            return text
        new = str(new or "").strip()
        if not new or len(new) > 4 * len(text) + 200:
            log.warning("rephraser output rejected (empty or too long); using the rule-based text")
            return text
        return new


def as_rephraser(target: Any | None) -> Callable[[str, str], str] | None:
    if target is None or isinstance(target, Rephraser):
        return target
    return Rephraser(target)
