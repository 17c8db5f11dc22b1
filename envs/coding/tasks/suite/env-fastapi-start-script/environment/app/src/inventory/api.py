from fastapi import FastAPI, HTTPException

from inventory.store import Store


def create_app() -> FastAPI:
    """Application factory: the module has no module-level `app`."""
    app = FastAPI(title="inventory")
    store = Store.with_demo_data()

    @app.get("/health")
    def health():
        return {"status": "ok"}

    @app.get("/items")
    def list_items(low_stock: bool = False):
        items = store.all()
        if low_stock:
            items = [i for i in items if i["quantity"] < 5]
        return items

    @app.get("/items/{sku}")
    def get_item(sku: str):
        item = store.get(sku)
        if item is None:
            raise HTTPException(status_code=404, detail="item not found")
        return item

    return app
