"""The synthetic shop's vocabulary: taxonomy, product types, attributes, option schemas.

Kept as plain data so the generator can turn it into integer code tables once and then build
products as rows of small integers (see `synth.py`). Shaped after WebShop's five top-level
categories (beauty, electronics, fashion, food, furniture); attribute phrases are the short
lower-case kind WebShop's `instruction_attributes` use ("long lasting", "gluten free").
"""

from __future__ import annotations

from dataclasses import dataclass, field

SEP = " › "  # WebShop's breadcrumb separator


@dataclass(frozen=True)
class Leaf:
    """One leaf of the taxonomy: a breadcrumb, the search query the products came from, their types."""

    category: str  # WebShop's `category` (top level: beauty, electronics, ...)
    path: tuple[str, ...]  # breadcrumb, joined by SEP into `product_category`
    query: str  # WebShop's `query` field (the search that found the product)
    nouns: tuple[str, ...]  # product types; the last word is the head noun
    options: tuple[str, ...]  # option names (keys of OPTION_VALUES)
    attributes: tuple[str, ...]  # leaf-specific attribute phrases
    price: tuple[float, float]  # typical (low, high) price in dollars
    materials: tuple[str, ...] = field(default=())


# Option value pools. Values never collide with page buttons or with each other across names.
OPTION_VALUES: dict[str, tuple[str, ...]] = {
    "color": (
        "black", "white", "navy blue", "red", "grey", "beige", "pink", "green", "brown", "purple",
        "sky blue", "olive green", "burgundy", "ivory", "charcoal", "gold", "silver", "rose gold",
        "teal", "mustard yellow", "coral", "khaki", "light pink", "dark brown", "natural wood",
    ),
    "size": (
        "x-small", "small", "medium", "large", "x-large", "xx-large", "3x-large",
    ),
    "shoe size": tuple(f"{s} us" for s in ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12")),
    "fit type": ("regular fit", "slim fit", "relaxed fit", "big & tall"),
    "pack size": ("pack of 1", "pack of 2", "pack of 3", "pack of 4", "pack of 6", "pack of 12", "pack of 24"),
    "capacity": ("8 ounce", "12 ounce", "16 ounce", "24 ounce", "32 ounce", "1 gallon"),
    "scent": ("lavender", "unscented", "vanilla", "coconut", "eucalyptus mint", "rose", "citrus", "sandalwood"),
    "flavor": (
        "chocolate", "vanilla bean", "strawberry", "sea salt", "honey roasted", "original", "spicy chili",
        "peanut butter", "cinnamon", "lemon", "barbecue", "matcha green tea",
    ),
    "storage capacity": ("32gb", "64gb", "128gb", "256gb", "512gb", "1tb", "2tb"),
    "style": (
        "modern", "classic", "farmhouse", "mid-century", "industrial", "minimalist", "bohemian", "contemporary",
    ),
    "length": ("12 inch", "16 inch", "18 inch", "20 inch", "22 inch", "24 inch", "26 inch"),
    "item dimensions": ("24 x 36 inch", "30 x 40 inch", "48 x 72 inch", "5 x 7 feet", "8 x 10 feet"),
    "connectivity": ("bluetooth", "usb-c wired", "2.4ghz wireless", "lightning wired"),
    "shade": ("fair", "light", "light medium", "medium tan", "deep", "espresso"),
    "weight": ("1 pound", "2 pounds", "5 pounds", "10 pounds", "25 pounds"),
}

CATEGORY_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "beauty": ("long lasting", "cruelty free", "paraben free", "dermatologist tested", "travel size", "natural ingredients",
               "easy to use", "high quality", "sensitive skin", "non toxic", "vegan"),
    "electronics": ("high resolution", "fast charging", "easy to install", "noise cancelling", "long battery life",
                    "plug and play", "water resistant", "high speed", "hands free", "wireless charging", "4k ultra hd"),
    "fashion": ("machine wash", "hand wash only", "quick drying", "moisture wicking", "non slip", "daily wear",
                "button closure", "elastic waistband", "slim fit", "stretch fabric", "soft material", "breathable"),
    "food": ("gluten free", "non gmo", "sugar free", "low carb", "keto friendly", "individually wrapped", "ready to eat",
             "kosher certified", "high protein", "organic", "shelf stable", "plant based"),
    "furniture": ("easy assembly", "easy to clean", "space saving", "solid wood", "heavy duty", "storage space",
                  "living room", "non slip", "water resistant", "assembly required", "mid century"),
}

_B, _E, _F, _D, _U = "Beauty & Personal Care", "Electronics", "Clothing, Shoes & Jewelry", "Grocery & Gourmet Food", "Home & Kitchen"

LEAVES: tuple[Leaf, ...] = (
    # beauty
    Leaf("beauty", (_B, "Hair Care", "Hair Extensions, Wigs & Accessories", "Hair Extensions"), "hair extensions",
         ("clip in hair extension", "tape in hair extension", "ponytail extension"), ("color", "length"),
         ("natural looking", "human hair", "heat resistant", "double weft"), (15, 120), ("human hair", "synthetic fiber")),
    Leaf("beauty", (_B, "Hair Care", "Wigs"), "wigs", ("lace front wig", "bob wig", "curly wig"), ("color", "length"),
         ("natural looking", "heat resistant", "pre plucked", "glueless"), (20, 180), ("human hair", "synthetic fiber")),
    Leaf("beauty", (_B, "Skin Care", "Face", "Moisturizers"), "face moisturizer", ("face moisturizer", "night cream", "day cream"),
         ("capacity", "scent"), ("fine lines", "dry skin", "hyaluronic acid", "oil free"), (8, 70)),
    Leaf("beauty", (_B, "Skin Care", "Body", "Body Lotions"), "body lotion", ("body lotion", "body butter", "hand cream"),
         ("capacity", "scent"), ("dry skin", "shea butter", "non greasy", "fast absorbing"), (5, 35)),
    Leaf("beauty", (_B, "Makeup", "Face", "Foundation"), "foundation makeup", ("liquid foundation", "powder foundation", "bb cream"),
         ("shade",), ("full coverage", "matte finish", "oil free", "spf protection"), (6, 55)),
    Leaf("beauty", (_B, "Personal Care", "Deodorants & Antiperspirants"), "natural deodorant", ("deodorant stick", "deodorant spray"),
         ("scent", "pack size"), ("aluminum free", "baking soda free", "all day protection"), (4, 25)),
    Leaf("beauty", (_B, "Personal Care", "Shaving & Hair Removal", "Men's", "Electric Shavers"), "electric shaver",
         ("electric shaver", "beard trimmer", "hair clipper"), ("color",), ("rechargeable battery", "cordless", "wet dry", "stainless steel"),
         (20, 150)),
    Leaf("beauty", (_B, "Oral Care", "Toothbrushes & Accessories"), "electric toothbrush", ("electric toothbrush", "toothbrush head"),
         ("color", "pack size"), ("soft bristles", "rechargeable battery", "built in timer"), (8, 90)),
    # electronics
    Leaf("electronics", (_E, "Headphones, Earbuds & Accessories", "Headphones", "Earbud Headphones"), "wireless earbuds",
         ("wireless earbuds", "sport earbuds", "in ear headphones"), ("color", "connectivity"),
         ("bluetooth 5 0", "charging case", "stereo sound", "sweat proof"), (15, 200)),
    Leaf("electronics", (_E, "Headphones, Earbuds & Accessories", "Headphones", "Over-Ear Headphones"), "over ear headphones",
         ("over ear headphones", "gaming headset", "studio headphones"), ("color", "connectivity"),
         ("deep bass", "memory foam", "built in microphone", "foldable design"), (20, 300)),
    Leaf("electronics", (_E, "Computers & Accessories", "Data Storage", "External Solid State Drives"), "portable ssd",
         ("portable ssd", "external hard drive", "usb flash drive"), ("storage capacity", "color"),
         ("usb 3 2", "shock resistant", "compact size", "data transfer"), (20, 250)),
    Leaf("electronics", (_E, "Computers & Accessories", "Computer Accessories & Peripherals", "Keyboards, Mice & Accessories"), "wireless mouse",
         ("wireless mouse", "mechanical keyboard", "keyboard mouse combo"), ("color", "connectivity"),
         ("ergonomic design", "silent click", "rgb backlit", "long lasting battery"), (10, 130)),
    Leaf("electronics", (_E, "Cell Phones & Accessories", "Cases, Holsters & Sleeves", "Basic Cases"), "phone case",
         ("phone case", "wallet case", "clear case"), ("color",), ("shockproof", "slim design", "raised edges", "wireless charging compatible"),
         (6, 40)),
    Leaf("electronics", (_E, "Cell Phones & Accessories", "Chargers & Power Adapters"), "usb c charger",
         ("usb c charger", "wall charger", "car charger", "power bank"), ("color", "pack size"),
         ("fast charging", "dual port", "overheat protection", "compact size"), (8, 60)),
    Leaf("electronics", (_E, "Television & Video", "Streaming Media Players"), "streaming media player",
         ("streaming stick", "streaming media player", "tv box"), ("storage capacity",), ("4k hdr", "voice remote", "dolby vision"),
         (25, 180)),
    Leaf("electronics", (_E, "Camera & Photo", "Tripods & Monopods"), "camera tripod", ("camera tripod", "phone tripod", "selfie stick"),
         ("color",), ("lightweight aluminum", "remote shutter", "adjustable height", "360 degree rotation"), (12, 90)),
    Leaf("electronics", (_E, "Home Audio", "Speakers", "Bluetooth Speakers"), "bluetooth speaker",
         ("bluetooth speaker", "portable speaker", "soundbar"), ("color",), ("waterproof ipx7", "deep bass", "stereo pairing", "outdoor use"),
         (18, 250)),
    # fashion
    Leaf("fashion", (_F, "Men", "Clothing", "Shirts", "T-Shirts"), "mens t shirts", ("men's t-shirt", "crew neck tee", "v neck tee"),
         ("color", "size", "fit type"), ("short sleeve", "cotton blend", "tagless collar"), (8, 35), ("cotton", "polyester", "jersey")),
    Leaf("fashion", (_F, "Women", "Clothing", "Dresses"), "womens dresses", ("maxi dress", "midi dress", "wrap dress", "sundress"),
         ("color", "size"), ("floral print", "v neck", "high waist", "long sleeve"), (18, 80), ("chiffon", "rayon", "cotton", "linen")),
    Leaf("fashion", (_F, "Women", "Clothing", "Active", "Leggings"), "yoga pants for women", ("yoga leggings", "workout leggings", "yoga pants"),
         ("color", "size"), ("tummy control", "high waist", "squat proof", "side pockets"), (12, 45), ("nylon", "spandex", "polyester")),
    Leaf("fashion", (_F, "Men", "Shoes", "Athletic", "Running"), "mens running shoes", ("running shoe", "walking shoe", "trail running shoe"),
         ("color", "shoe size"), ("rubber sole", "lace up", "memory foam insole", "arch support"), (30, 160), ("mesh", "knit", "leather")),
    Leaf("fashion", (_F, "Women", "Shoes", "Sandals"), "womens sandals", ("flat sandal", "slide sandal", "wedge sandal"),
         ("color", "shoe size"), ("open toe", "ankle strap", "rubber sole", "arch support"), (15, 90), ("leather", "suede", "faux leather")),
    Leaf("fashion", (_F, "Men", "Clothing", "Jackets & Coats"), "mens winter jacket", ("puffer jacket", "parka", "fleece jacket", "rain jacket"),
         ("color", "size"), ("zipper closure", "hooded", "windproof", "warm lining"), (35, 220), ("down", "fleece", "nylon")),
    Leaf("fashion", (_F, "Women", "Jewelry", "Necklaces"), "womens necklace", ("pendant necklace", "chain necklace", "choker necklace"),
         ("color", "length"), ("hypoallergenic", "gift box", "adjustable chain"), (9, 120), ("sterling silver", "stainless steel", "gold plated")),
    Leaf("fashion", (_F, "Men", "Accessories", "Wallets"), "mens wallet", ("bifold wallet", "card holder", "money clip wallet"),
         ("color",), ("rfid blocking", "slim design", "gift box"), (10, 70), ("genuine leather", "carbon fiber", "canvas")),
    # food
    Leaf("food", (_D, "Snack Foods", "Chips & Crisps"), "healthy snacks chips", ("potato chips", "veggie chips", "tortilla chips"),
         ("flavor", "pack size"), ("baked not fried", "family size", "lunch box"), (3, 30)),
    Leaf("food", (_D, "Snack Foods", "Bars", "Protein Bars"), "protein bars", ("protein bar", "granola bar", "energy bar"),
         ("flavor", "pack size"), ("20g protein", "low sugar", "on the go", "whole grain"), (8, 45)),
    Leaf("food", (_D, "Beverages", "Coffee, Tea & Cocoa", "Coffee", "Ground Coffee"), "ground coffee", ("ground coffee", "whole bean coffee", "coffee pods"),
         ("flavor", "weight"), ("medium roast", "dark roast", "fair trade", "single origin"), (7, 45)),
    Leaf("food", (_D, "Beverages", "Coffee, Tea & Cocoa", "Tea", "Green Tea"), "green tea bags", ("green tea bags", "loose leaf tea", "herbal tea"),
         ("flavor", "pack size"), ("caffeine free", "antioxidant rich", "hot or iced"), (4, 30)),
    Leaf("food", (_D, "Pantry Staples", "Nut Butters"), "almond butter", ("almond butter", "peanut butter", "cashew butter"),
         ("capacity", "pack size"), ("no added sugar", "dry roasted", "creamy texture"), (5, 30)),
    Leaf("food", (_D, "Candy & Chocolate", "Chocolate"), "dark chocolate", ("dark chocolate bar", "chocolate truffles", "chocolate covered almonds"),
         ("flavor", "pack size"), ("gift basket", "fair trade", "rich taste", "valentine day"), (5, 50)),
    Leaf("food", (_D, "Pantry Staples", "Herbs, Spices & Seasonings"), "seasoning blend", ("seasoning blend", "spice rub", "sea salt grinder"),
         ("flavor", "capacity"), ("no msg", "salt free", "resealable bag"), (4, 25)),
    Leaf("food", (_D, "Pantry Staples", "Jerky & Dried Meats"), "beef jerky", ("beef jerky", "turkey jerky", "meat sticks"),
         ("flavor", "weight"), ("grass fed", "hickory smoked", "no preservatives"), (7, 55)),
    # furniture
    Leaf("furniture", (_U, "Furniture", "Living Room Furniture", "Sofas & Couches"), "sofa couch", ("sectional sofa", "loveseat", "sofa bed", "futon"),
         ("color", "style"), ("high density foam", "removable cushions", "reclining"), (180, 1100), ("velvet", "linen fabric", "faux leather")),
    Leaf("furniture", (_U, "Furniture", "Living Room Furniture", "Tables", "Coffee Tables"), "coffee table", ("coffee table", "side table", "nesting table"),
         ("color", "style"), ("lift top", "tempered glass", "open shelf"), (40, 400), ("walnut wood", "metal frame", "engineered wood")),
    Leaf("furniture", (_U, "Furniture", "Home Office Furniture", "Home Office Chairs", "Desk Chairs"), "office chair",
         ("office chair", "gaming chair", "ergonomic desk chair"), ("color",), ("lumbar support", "adjustable armrests", "swivel wheels", "high back"),
         (60, 450), ("mesh", "pu leather", "fabric")),
    Leaf("furniture", (_U, "Furniture", "Bedroom Furniture", "Nightstands"), "nightstand", ("nightstand", "bedside table", "end table with drawer"),
         ("color", "style"), ("charging station", "two drawers", "easy assembly"), (35, 260), ("rubberwood", "engineered wood", "bamboo")),
    Leaf("furniture", (_U, "Home Décor Products", "Area Rugs, Runners & Pads", "Area Rugs"), "area rug", ("area rug", "runner rug", "shag rug"),
         ("color", "item dimensions"), ("machine washable", "non shedding", "low pile", "pet friendly"), (30, 380), ("polypropylene", "jute", "wool")),
    Leaf("furniture", (_U, "Bedding", "Sheets & Pillowcases", "Sheet & Pillowcase Sets"), "bed sheets", ("bed sheet set", "fitted sheet", "pillowcase set"),
         ("color", "size"), ("deep pocket", "wrinkle free", "cooling", "fade resistant"), (20, 140), ("microfiber", "egyptian cotton", "bamboo viscose")),
    Leaf("furniture", (_U, "Furniture", "Entryway Furniture", "Shoe Racks"), "shoe rack", ("shoe rack", "shoe storage cabinet", "shoe bench"),
         ("color",), ("stackable", "multi tier", "entryway storage"), (18, 150), ("bamboo", "metal frame", "engineered wood")),
    Leaf("furniture", (_U, "Kitchen & Dining", "Storage & Organization", "Food Storage"), "food storage containers",
         ("food storage container", "glass meal prep container", "canister set"), ("pack size", "color"),
         ("bpa free", "airtight lid", "microwave safe", "dishwasher safe"), (12, 60), ("glass", "plastic", "stainless steel")),
)

ADJECTIVES: tuple[str, ...] = (
    "premium", "lightweight", "portable", "durable", "compact", "deluxe", "professional", "classic", "modern", "soft",
    "upgraded", "essential", "everyday", "ultra", "advanced", "elegant", "rugged", "versatile", "luxury", "original",
)

BRAND_HEADS: tuple[str, ...] = (
    "Vel", "Aur", "Kin", "Mor", "Zen", "Lum", "Nor", "Bri", "Cal", "Dax", "Eco", "Fio", "Gal", "Hal", "Iso", "Jov",
    "Kor", "Lax", "Myr", "Nex", "Oro", "Pax", "Quin", "Rho", "Sol", "Tav", "Ulo", "Vax", "Wyn", "Xen", "Yor", "Zel",
)
BRAND_TAILS: tuple[str, ...] = (
    "ora", "ix", "ena", "ova", "ari", "etto", "ique", "ana", "exa", "ino", "oria", "aro", "elle", "ton", "ly", "go",
    "vix", "mond", "stone", "field", "wood", "crest", "haven", "line", "works", "loft", "peak", "port",
)

# Sentence templates for descriptions and bullets. Placeholders: {noun} {brand} {attr} {material} {adj} {leaf}.
DESCRIPTION_TEMPLATES: tuple[str, ...] = (
    "The {brand} {noun} is designed for people who want {attr} without compromise.",
    "Made with {material}, this {adj} {noun} is built to last through daily use.",
    "Our {noun} combines {attr} and {attr2} in one {adj} package.",
    "Whether at home or on the go, the {noun} from {brand} keeps things simple.",
    "Every {noun} is inspected by hand before it leaves our facility.",
    "Thoughtfully designed and {attr}, it makes a great gift for family and friends.",
    "Customers choose {brand} for {attr2} and honest prices.",
)
BULLET_TEMPLATES: tuple[str, ...] = (
    "{ATTR}: {attr_sentence}",
    "PREMIUM MATERIAL: crafted from {material} for a {adj} feel that lasts",
    "WHAT YOU GET: 1 x {noun}, user guide, and our friendly 12-month customer service",
    "WIDE USE: a {adj} {noun} that fits any {leaf} routine",
)
ATTR_SENTENCES: tuple[str, ...] = (
    "our {noun} is {attr} so you can rely on it every day",
    "{attr} design tested by our quality team",
    "enjoy {attr} from the first use",
)
REVIEW_TEMPLATES: tuple[str, ...] = (
    ("Exactly as described", "The {noun} arrived quickly and works great. {attr_cap} as promised."),
    ("Good value", "Nice {noun} for the price. I would buy again."),
    ("Not bad", "Does the job, but the {option} could be better."),
    ("Love it", "My second {noun} from {brand}. {attr_cap} and it looks great."),
    ("Disappointed", "Stopped working after a month. Returned it."),
)
