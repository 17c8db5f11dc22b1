"""Model-free noun tagger for product titles, written to agree with WebShop's spaCy tagging.

WebShop's type reward keeps the tokens of a title that spaCy tags NOUN or PROPN. On product
titles, Title Case noun phrases, spaCy's tagger is very regular, and this module reproduces
that with a tokenizer and a few word-class rules instead of a statistical model: no model
download, and about a hundred times faster than spaCy (`bench/title_tagger_bench.py` measures
speed and agreement with spaCy side by side; bench/results/title_tagger.json).

Tokens, cut as spaCy's English tokenizer cuts them: whitespace-split words, with leading and
trailing punctuation and the possessive "'s" / "'" split off; a hyphen, slash or comma between
a letter or digit and a following letter splits a word ("T-Shirt" -> T, Shirt; "DVD/VCR";
"32-Inch"; but "WH-1000XM4" stays whole); a unit after a number is split off for the units
spaCy knows ("4K" -> 4, K; "12oz" -> 12, oz). Nouns are returned lower-cased.

Word classes, in order:
1. no letter, a number ("3.1", "3x5", "1/4", "4k"), an ordinal ("2nd"), a number word -> no;
2. closed-class words (articles, prepositions, conjunctions, pronouns, auxiliaries, degree
   words) in any case -> no (an all-caps "US" / "IT" is an acronym: yes);
3. letters and digits mixed (model codes: "921ORB", "HT830V", "2pcs") -> yes;
4. the word after "to" (an infinitive: "Easy to Clean") -> no; an adverb (adjective + "ly":
   "Lightly", "easily", "naturally"; not "Daily", "Family") -> no;
5. a past participle (-ed, five letters or more, not -eed; or irregular, "made"): capitalised
   inside the title -> yes ("Advanced Formula", "Usda Certified, ..."), but as the first or last
   word, before a numeral ("UL Listed 2 Prong") or in lower case -> no;
6. any other word with a capital letter ("Indoor", "Portable", "SAMSUNG", "iPhone") -> yes:
   spaCy tags capitalised title words PROPN, adjectives included;
7. a lower-case word -> yes, unless the adjective lexicon or an adjective suffix ("-ous",
   "-ful", "-ive", "-able", "-ible", "-less", "-ish") says otherwise ("stainless", "organic").

What rules cannot see is the model's context: spaCy sometimes tags a capitalised adjective ADJ
("..., Black" at the end, "Original Design") or a noun VERB (the first "Bar" of "Bar 3.1 Bar
2.1"); those words move `title_score` only when they are in the goal's title. WebShop's own
reward-test title pairs are in tests/webshop/test_reward.py (matched within 0.02).
"""

from __future__ import annotations

import re
from functools import lru_cache

# Articles, prepositions, conjunctions, pronouns, auxiliaries, particles and degree words.
CLOSED_CLASS = frozenset(
    """
a an the this that these those each every all any both either neither some such no nor not
and or but & + yet so than as if because while though although whether
of in on at to by for from with without within into onto upon over under about above below across after
before behind beside besides between beyond during except inside outside near per since through
throughout toward towards until up via vs versus amongst among around along against
i me my mine we us our ours you your yours he him his she her hers it its they them their theirs
who whom whose which what where when why how
is are was were be been being am do does did has have had will would can could shall should may might must
n't
very too also just only even still more most less least much many few fewer quite rather really
here there then now
""".split()
)

NUMBER_WORDS = frozenset(
    """
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand
million billion dozen
""".split()
)

# All-caps closed-class spellings that are acronyms in titles ("8 US", "IT Services").
ACRONYMS = frozenset({"US", "IT"})

# Irregular past participles (regular ones are caught by the -ed rule).
IRREGULAR_PARTICIPLES = frozenset(
    """
made sold grown woven worn known shown drawn torn sewn spun
""".split()
)

# Adjectives as they appear in lower case (a capitalised adjective in a title is PROPN to spaCy).
ADJECTIVES = frozenset(
    """
new best better great good perfect ideal high higher low lower long short big bigger small large little mini tiny
huge extra super ultra soft hard heavy light lightweight thin thick slim wide narrow deep shallow tall full half
double single triple easy quick fast slow hot cold warm cool dry wet clean fresh natural organic pure real
genuine true original classic modern vintage retro rustic elegant cute pretty beautiful simple basic premium
deluxe luxury professional portable compact durable sturdy strong safe stable flexible adjustable foldable
waterproof washable reusable rechargeable wireless cordless electric digital smart automatic manual universal
multipurpose non free resistant friendly compatible removable stackable breathable comfortable daily everyday
essential advanced rugged versatile solid open front back inner outer upper lower main plain fancy casual
formal dark bright clear matte glossy shiny silky smooth rough sweet salty spicy sour savory creamy crunchy
crispy raw whole instant unisex stainless latest healthy gentle sensitive eco
black white red blue green yellow orange purple pink brown grey gray beige ivory navy teal coral khaki gold
silver burgundy charcoal mustard maroon lavender violet turquoise cyan magenta tan
""".split()
)

# Words the suffix rules would mis-class as adjectives or participles.
NOUN_LEXICON = frozenset(
    """
bed shed seed need speed feed reed weed tweed sled steed daybed sofabed waterbed airbed flowerbed seabed
olive five hive drive archive
table cable bible vegetable
jelly belly family assembly supply butterfly dragonfly lily holly rally bully
""".split()
)

_ADJ_SUFFIX = re.compile(r"(ous|ful|ive|able|ible|less|ish)$")
_ADV_STEM_SUFFIX = re.compile(r"(ful|al|ous|ive|ent|ant|ic|ish|less|ed|ing|ar|ate|ile|ine|ial)$")

# Tokenizer pieces (after spaCy's English prefix / suffix / infix rules, for what titles contain).
_PREFIX = re.compile(r"^[(\[{\"'“‘«<*#$£€~|]+")
_SUFFIX = re.compile(r"(?:[)\]}\"'”’»>,;:!?%.…|*]|['’][sS])+$")
_INFIX = re.compile(r"(?<=[^\W_])[-/,–—](?=[^\W\d_])")
_UNITS = "km|cm|mm|dm|m|yd|in|ft|kg|mg|g|lb|oz|mph|MB|mb|KB|kb|GB|gb|TB|tb|T|G|M|K"
_UNIT_SPLIT = re.compile(rf"^(\d+(?:[.,]\d+)*(?:x\d+(?:[.,]\d+)*)*)({_UNITS})$")
_NUMBERLIKE = re.compile(r"^[\d.,/:]+(?:[xX][\d.,/]+)*$|^\d+(?:st|nd|rd|th|ST|ND|RD|TH)$|^\d+[a-z]$")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_HAS_DIGIT = re.compile(r"\d")
_HAS_UPPER = re.compile(r"[A-ZÀ-ÖØ-Þ]")


_BREAK = ","  # where punctuation stood between two words (kept only for the neighbour rules)
_ALNUM = re.compile(r"[^\W_]")


def _tokens(title: str) -> list[str]:
    out: list[str] = []
    for word in title.replace("’", "'").split():
        core = _SUFFIX.sub("", word)
        cut_after = len(core) < len(word)
        stripped = _PREFIX.sub("", core)
        if not _ALNUM.search(stripped):  # a dash, slash, ampersand, ... standing alone
            out.append(_BREAK)
            continue
        if len(stripped) < len(core):
            out.append(_BREAK)
        for piece in _INFIX.split(stripped):
            piece = _SUFFIX.sub("", _PREFIX.sub("", piece))
            if not piece:
                continue
            m = _UNIT_SPLIT.match(piece)
            if m:
                out.extend((m.group(1), m.group(2)))
            else:
                out.append(piece)
        if cut_after:
            out.append(_BREAK)
    return out


def tokens(title: str) -> list[str]:
    """The title's word tokens, cut the way spaCy's English tokenizer cuts them (case kept)."""
    return [t for t in _tokens(title) if t is not _BREAK]


def _participle(low: str) -> bool:
    if low in IRREGULAR_PARTICIPLES:
        return True
    return len(low) >= 5 and low.endswith("ed") and not low.endswith("eed") and low not in NOUN_LEXICON


def _adverb(low: str) -> bool:
    """Adjective + "ly" ("lightly", "easily", "naturally", "comfortably"); "daily", "family" are not."""
    if len(low) < 5 or not low.endswith("ly") or low in NOUN_LEXICON:
        return False
    stem = low[:-2]
    if low.endswith(("ably", "ibly")):
        return True
    if low.endswith("ily") and stem[:-1] + "y" in ADJECTIVES:
        return True
    if low[:-1] + "e" in ADJECTIVES:  # gentle -> gently, simple -> simply
        return True
    return stem in ADJECTIVES or (len(stem) >= 4 and _ADV_STEM_SUFFIX.search(stem) is not None)


def is_noun(tok: str, prev: str = "", nxt: str = "") -> bool:
    """Whether spaCy would tag title token `tok` NOUN or PROPN, given the words before and after it
    ("" at the title's start or end, "," where punctuation comes between); see the module docstring."""
    if not _HAS_LETTER.search(tok) or _NUMBERLIKE.match(tok):
        return False
    low = tok.lower()
    if low in CLOSED_CLASS:
        return tok in ACRONYMS
    if low in NUMBER_WORDS or low == "x":
        return False
    if _HAS_DIGIT.search(tok):
        return True
    if low in NOUN_LEXICON:
        return True
    if prev.lower() == "to" and not tok.isupper():  # infinitive: "Easy to Clean", "Ready To Eat"
        return False
    if _adverb(low):
        return False
    if _participle(low):
        # A capitalised participle inside a title is PROPN to spaCy like any other capitalised
        # modifier ("Advanced Formula", "Usda Certified, ..."); as the title's first or last word
        # ("Upgraded Wireless Earbuds", "... Pre Washed") or before a numeral ("UL Listed 2 Prong")
        # it reads as a verb, and a lower-case one always does.
        return bool(prev) and bool(nxt) and not nxt[0].isdigit() and _HAS_UPPER.match(tok) is not None
    if _HAS_UPPER.search(tok):
        return True
    return low not in ADJECTIVES and _ADJ_SUFFIX.search(low) is None


@lru_cache(maxsize=65_536)
def nouns(title: str) -> tuple[str, ...]:
    """Lower-case noun tokens of a title, in order, duplicates kept (WebShop counts them)."""
    toks = _tokens(title)
    n = len(toks)
    return tuple(
        t.lower()
        for i, t in enumerate(toks)
        if t is not _BREAK and is_noun(t, toks[i - 1] if i else "", toks[i + 1] if i + 1 < n else "")
    )
