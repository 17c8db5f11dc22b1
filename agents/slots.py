"""Concrete fillers for free-text action templates (`search[...]`), taken from the task text.

Small models cannot be trusted to *write* a query (Gemma 270M writes `search[SEP]`), but they
can rank a handful of candidate queries by likelihood. The candidates are spans of the task's
own words: all content words, and each clause's content words. Which words are not content is
English (`STOPWORDS`) plus what the env says of its own domain: `info["slot_stopwords"]`
(see `envs.contract`; WebShop lists shopping words such as "buy" and "price").

A template whose verb the env already lists concretely (`check[...]` beside `check[Power cord fault]`,
TextCraft's `get ...` beside `get 1 bone`) is not filled from the task: the env has said which arguments are worth trying, and task words
(`check[maintenance assistant]`) are short, likely-sounding and wrong.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from envs.contract import SLOT

STOPWORDS = frozenset(
    "a an the i im i'm am is are be been being me my we our you your it its this that these those to of in on at by "
    "for from with and or but so as if then than too very can could would should will shall may might must do does did "
    "have has had want wanted need needs needed like looking look find get please "
    "which what who whom whose lower less under below up no more "
    "around about between within also some any".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9\-'&]*")
_CLAUSE = re.compile(r"[,;.]|\band\b|\bwith\b|\bfor\b|\bthat\b", re.IGNORECASE)


def content_words(text: str, stopwords: Collection[str] = ()) -> list[str]:
    """The words of `text` worth putting in a slot, in order, once each: no stopwords (English and the
    env's `stopwords`), no numbers, no prices."""
    out: list[str] = []
    for w in _WORD.findall(text.lower()):
        if w in STOPWORDS or w in stopwords or w.replace(".", "").isdigit() or w.startswith("$"):
            continue
        if w not in out:
            out.append(w)
    return out


def task_spans(task: str, max_spans: int = 6, max_words: int = 10, stopwords: Collection[str] = ()) -> list[str]:
    """Candidate slot fillers, most complete first: all content words, then each clause's."""
    spans: list[str] = []
    whole = content_words(task, stopwords)[:max_words]
    if whole:
        spans.append(" ".join(whole))
    for clause in _CLAUSE.split(task):
        words = content_words(clause, stopwords)[:max_words]
        s = " ".join(words)
        if words and s not in spans:
            spans.append(s)
        if len(spans) >= max_spans:
            break
    return spans


def expand_templates(
    templates: list[str],
    task: str,
    max_spans: int = 6,
    stopwords: Collection[str] = (),
    listed: Collection[str] = (),
    task_slots: Collection[str] | None = None,
) -> list[str]:
    """`search[...]` -> `search[<span>]` for each span of the task; templates without a task stay as they are.

    `stopwords`: the env's own words to leave out of a slot (`info["slot_stopwords"]`), on top of `STOPWORDS`.
    `listed`: the env's concrete actions; a template whose text before the slot (`check[`, TextCraft's `get `) begins
    one of them is left out.
    `task_slots`: the templates whose slot takes words of the task (`info["task_slots"]`; None: all); the others are
    left out (TextCraft's `craft ...` takes a recipe, never task words).
    """
    spans = task_spans(task, max_spans, stopwords=frozenset(stopwords)) if task else []
    out: list[str] = []
    for t in templates:
        before, slot, after = t.partition(SLOT)
        if slot and before.strip() and any(a.startswith(before) for a in listed):
            continue
        if slot and task_slots is not None and t not in task_slots:
            continue
        if slot and spans:
            out.extend(before + s + after for s in spans)
        else:
            out.append(t)
    return out
