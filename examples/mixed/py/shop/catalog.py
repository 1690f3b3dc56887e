"""Products read from the store's JSON documents (DUST ones need `stardust convert`)."""

import json
from dataclasses import dataclass
from pathlib import Path

from shop.pricing import format_price, with_tax


@dataclass(frozen=True)
class Product:
    id: str
    name: str
    price_cents: int

    def label(self) -> str:
        """The product's name and its price with tax."""
        return f"{self.name}: {format_price(with_tax(self.price_cents))}"


def load_products(folder: Path) -> list[Product]:
    """Every product of the JSON documents in `folder`."""
    products = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        products.append(Product(data["id"], data["name"], data["price_cents"]))
    return products
