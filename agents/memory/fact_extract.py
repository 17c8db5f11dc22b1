"""Turn a sentence into (subject, relation, value) triples: by rule (no model) or by asking a brain.

The rules cover the common first-person and possessive statement shapes ("my dog's name is Rex",
"Alice's favourite colour is blue", "I live in Lyon", "I moved to Oslo", "I work as a nurse"). Anything
else is left to a brain extractor or to explicit triples in `MemoryItem.meta['facts']`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Protocol

from agents.memory.base import ask, require_complete

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Triple:
    subject: str
    relation: str
    value: str


_VAL = r"(?P<val>[^.;!?\n]+)"
_SUBJ = r"(?P<subj>[A-Z][\w-]*(?: [A-Z][\w-]*)?)"
_POSS = re.compile(_SUBJ + r"'s (?P<rel>[a-z][a-z' -]*?) (?:is|are) (?:now |currently |actually )?" + _VAL)
_MY = re.compile(r"\b[Mm]y (?P<rel>[a-z][a-z' -]*?) (?:is|are) (?:now |currently |actually )?" + _VAL)
_VERBS = [  # (pattern after the subject, relation it sets)
    (r"(?:live|lives|am living|is living) in", "lives in"),
    (r"(?:moved|have moved|has moved|relocated) to", "lives in"),
    (r"(?:work|works|am working|is working) as (?:an? )?", "works as"),
    (r"(?:started|have started|has started) (?:a new job |working )?as (?:an? )?", "works as"),
]
_CUT = re.compile(r",| and | but | because | since | so | which | who ")


def _clean_value(v: str) -> str:
    v = _CUT.split(v, maxsplit=1)[0]
    v = re.sub(
        r"\s+(?:now|these days|nowadays|anymore|recently|today|yesterday|(?:last|this) (?:week|month|year))$",
        "",
        v.strip(),
    )
    v = re.sub(r"^(?:a|an|the) ", "", v)
    return v.strip(" \"'")


def normalize_relation(rel: str) -> str:
    rel = rel.lower().strip().replace("favourite", "favorite").replace("colour", "color")
    rel = re.sub(r"^(?:new|current|latest) ", "", rel)
    return " ".join(rel.split())


class Extractor(Protocol):
    def extract(self, text: str, speaker: str | None = None) -> list[Triple]: ...


class RuleExtractor:
    def extract(self, text: str, speaker: str | None = None) -> list[Triple]:
        out: list[Triple] = []
        for m in _POSS.finditer(text):
            out.append(Triple(m.group("subj"), normalize_relation(m.group("rel")), _clean_value(m.group("val"))))
        if speaker:
            for m in _MY.finditer(text):
                out.append(Triple(speaker, normalize_relation(m.group("rel")), _clean_value(m.group("val"))))
            for pat, rel in _VERBS:
                for m in re.finditer(r"\bI (?:just |recently |now )?" + pat + r"\s*" + _VAL, text):
                    out.append(Triple(speaker, rel, _clean_value(m.group("val"))))
        for pat, rel in _VERBS:
            for m in re.finditer(_SUBJ + r" (?:just |recently |now )?" + pat + r"\s*" + _VAL, text):
                if m.group("subj") not in ("I", "My"):
                    out.append(Triple(m.group("subj"), rel, _clean_value(m.group("val"))))
        return [t for t in out if t.value and t.relation]


class BrainExtractor:
    """Asks a brain for 'subject | relation | value' lines; falls back to the rules when it gives none."""

    SYSTEM = (
        "Extract facts stated in the text as lines 'subject | relation | value'. Use the speaker's name for "
        "'I'/'my'. Output nothing else; output nothing if there is no fact."
    )

    def __init__(self, brain: Any, max_tokens: int = 96) -> None:
        self.brain = require_complete(brain)
        self.max_tokens = max_tokens

    def extract(self, text: str, speaker: str | None = None) -> list[Triple]:
        user = f"Speaker: {speaker or 'unknown'}\nText: {text}"
        triples = []
        for line in ask(self.brain, self.SYSTEM, user, max_tokens=self.max_tokens).splitlines():
            parts = [p.strip() for p in line.strip(" -*").split("|")]
            if len(parts) == 3 and all(parts):
                triples.append(Triple(parts[0], normalize_relation(parts[1]), parts[2]))
        return triples or RuleExtractor().extract(text, speaker)
