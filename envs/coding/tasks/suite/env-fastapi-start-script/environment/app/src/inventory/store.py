class Store:
    def __init__(self):
        self._items = {}

    @classmethod
    def with_demo_data(cls):
        store = cls()
        for sku, name, qty in [("BLT-10", "bolt M10", 120), ("NUT-10", "nut M10", 3), ("WSH-10", "washer M10", 0)]:
            store._items[sku] = {"sku": sku, "name": name, "quantity": qty}
        return store

    def all(self):
        return sorted(self._items.values(), key=lambda i: i["sku"])

    def get(self, sku):
        return self._items.get(sku)
