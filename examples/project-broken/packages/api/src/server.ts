import { createServer } from "node:http";

export interface Order {
  id: string;
  customer: string;
}

export function handle(order: Order): string {
  return `order ${order.id} for ${order.customer}`;
}

export function start(port = 8080) {
  return createServer((_req, res) => res.end(handle({ id: "ord_1001", customer: "@ada" }))).listen(port);
}
