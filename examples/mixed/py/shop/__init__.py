"""The shop's catalogue: products of the store, priced with tax."""

from shop.catalog import Product, load_products
from shop.pricing import with_tax

__all__ = ["Product", "load_products", "with_tax"]
