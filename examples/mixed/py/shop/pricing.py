"""Prices in cents, and the tax added to them."""

VAT_PERCENT = 20


def with_tax(price_cents: int, percent: int = VAT_PERCENT) -> int:
    """The price with `percent` tax added, rounded to the nearest cent."""
    return (price_cents * (100 + percent) + 50) // 100


def format_price(price_cents: int) -> str:
    """A price for people: 3900 -> '39.00'."""
    return f"{price_cents // 100}.{price_cents % 100:02d}"
