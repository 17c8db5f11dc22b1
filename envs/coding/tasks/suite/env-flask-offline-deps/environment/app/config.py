import os

from dotenv import load_dotenv

HERE = os.path.dirname(os.path.abspath(__file__))
load_dotenv(os.path.join(HERE, ".env"))

SHOP_NAME = os.environ.get("SHOP_NAME", "shop")
CURRENCY = os.environ.get("SHOP_CURRENCY", "USD")
VAT_RATE = float(os.environ.get("SHOP_VAT_RATE", "0"))
