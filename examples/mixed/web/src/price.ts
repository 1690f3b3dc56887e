/** Prices in cents, and the tax added to them (the same rule as py/shop/pricing.py). */

export const VAT_PERCENT = 20;

/** The price with `percent` tax added, rounded to the nearest cent. */
export function withTax(priceCents: number, percent: number = VAT_PERCENT): number {
  return Math.floor((priceCents * (100 + percent) + 50) / 100);
}

/** A price for people: 3900 -> "39.00". */
export function formatPrice(priceCents: number): string {
  const cents = String(priceCents % 100).padStart(2, "0");
  return `${Math.floor(priceCents / 100)}.${cents}`;
}
