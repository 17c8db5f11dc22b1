"""Rule-based noun tagger for product titles, so the type reward needs no model download.

WebShop tags titles with spaCy (`en_core_web_lg`) and keeps tokens tagged NOUN/PROPN. Product
titles are short noun phrases, where nearly every content word that is not a modifier is a
noun or a brand (PROPN), so we invert the question: a token counts as a noun unless it is
a stop word, a number or model code, a known adjective/colour/modifier (lexicons below), an
adverb (-ly), or carries an adjective/participle suffix (-ous, -ful, -ive, -able, -ible,
-less, -ish, -ed) and is not in the noun lexicon. Measured against hand labels in the tests;
it differs from spaCy on ambiguous words (e.g. "running" in "running shoe"), which moves
`title_score` only when such a word is in the goal's title.
"""

from __future__ import annotations

import re
from functools import lru_cache


STOP = frozenset("""
a an the and or of for with without in on at to by from into onto over under up down out as is are be it its
this that these those your our my his her their you we they i me per each every all any both either not no nor
so than too very can will just only also plus & one two three four five six seven eight nine ten dozen
""".split())

ADJECTIVES = frozenset("""
new best great good perfect ideal high low long short big small large little mini tiny huge extra super ultra
soft hard heavy light lightweight thin thick slim wide narrow deep shallow tall full half double single triple
easy quick fast slow hot cold warm cool dry wet clean fresh natural organic pure real genuine true original
classic modern vintage retro rustic elegant cute pretty beautiful simple basic premium deluxe luxury professional
pro portable compact durable sturdy strong safe stable flexible adjustable foldable waterproof washable reusable
rechargeable wireless cordless electric digital smart automatic manual universal multi multipurpose
non free proof resistant friendly compatible adjustable removable stackable breathable comfortable
daily everyday essential advanced upgraded improved rugged versatile solid open closed front back side top bottom
left right inner outer upper lower main extra-large x xx xxx plain fancy casual formal
dark bright clear matte glossy shiny silky smooth rough sweet salty spicy sour savory creamy crunchy crispy
raw whole ground roasted smoked baked fried dried frozen instant gluten sugar low-carb keto vegan kosher
men's women's womens mens men women kids girls boys unisex adult baby
black white red blue green yellow orange purple pink brown grey gray beige ivory navy teal coral khaki gold silver
burgundy charcoal olive mustard maroon lavender violet turquoise cyan magenta tan cream
""".split())

NOUN_LEXICON = frozenset(set("""
bamboo canvas carbon chiffon cotton fabric fleece fiber frame glass jersey jute knit leather linen mesh metal
microfiber nylon plastic polyester polypropylene rayon rubberwood spandex steel suede velvet viscose walnut wood wool
bed shed seed need speed feed reed weed tweed head thread bread sled steed
bag bags bottle box case cover set kit pack piece pieces pair pairs shirt dress shoe shoes boot boots hat cap
table chair sofa couch desk lamp rug mat pillow sheet blanket towel curtain shelf rack stand holder organizer
phone cable charger adapter speaker headphones earbuds mouse keyboard monitor camera tripod drive card battery
cream lotion serum oil shampoo conditioner soap brush comb wig hair makeup lipstick foundation deodorant
coffee tea chocolate snack snacks bar bars chips candy jerky butter sauce spice spices seasoning salt sugar
jewelry necklace bracelet ring earrings watch wallet belt jacket coat pants leggings jeans socks sandals
""".split())
)

_ADJ_SUFFIX = re.compile(r"(ous|ful|ive|able|ible|less|ish|ed)$")
_TOKEN = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=65_536)
def nouns(title: str) -> tuple[str, ...]:
    """Lower-case noun tokens of a title, in order, duplicates kept (callers take a set)."""
    out = []
    for tok in _TOKEN.findall(title.lower().replace("'s", "")):
        if tok in NOUN_LEXICON:
            out.append(tok)
            continue
        if (tok in STOP or tok in ADJECTIVES or len(tok) < 2 or not tok.isalpha() or tok.endswith("ly")
                or _ADJ_SUFFIX.search(tok)):
            continue
        out.append(tok)
    return tuple(out)
