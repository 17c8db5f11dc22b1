"""The reader for the recall suite: answers a question from the memory's context text alone.

It is deliberately model-free, so the benchmark measures the memory, not a language model: it reads every
statement in the context with the same rule extractor as `facts` memory (speaker lines "Name: text", and
fact lines "Name relation: value"), keeps those about the asked subject and relation, and answers with the
last one in context order (every memory renders its context oldest first).
"""

from __future__ import annotations

import re

from agents.memory.fact_extract import RuleExtractor, normalize_relation

_SPEAKER = re.compile(r"^(?:\[[^\]]*\]\s*)?(?P<who>[A-Z][\w-]*): (?P<text>.*)$")
_FACT = re.compile(r"^- (?P<subj>[A-Z][\w-]*(?: [A-Z][\w-]*)?) (?P<rel>[^:]+): (?P<val>[^(;]+?)\s*(?:\(|;|$)")
_EXTRACT = RuleExtractor()


def answer(context: str, subject: str, relation: str) -> str | None:
    rel = normalize_relation(relation)
    found: str | None = None
    for line in context.splitlines():
        line = line.strip()
        if m := _FACT.match(line):
            if m.group("subj").lower() == subject.lower() and normalize_relation(m.group("rel")) == rel:
                found = m.group("val").strip()
            continue
        m = _SPEAKER.match(line)
        speaker, text = (m.group("who"), m.group("text")) if m else (None, line)
        for t in _EXTRACT.extract(text, speaker):
            if t.subject.lower() == subject.lower() and t.relation == rel:
                found = t.value
    return found
