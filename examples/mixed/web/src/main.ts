import { formatPrice, withTax } from "./price";

/** A product as the shop's page shows it. */
export interface Product {
  id: string;
  name: string;
  priceCents: number;
}

/** The product's name and its price with tax. */
export function label(product: Product): string {
  return `${product.name}: ${formatPrice(withTax(product.priceCents))}`;
}

const lamp: Product = { id: "product/desk-lamp", name: "Desk lamp", priceCents: 3900 };
console.log(label(lamp));
