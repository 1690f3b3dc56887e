import { handle, type Order } from "@acme/api";

const order: Order = { id: "ord_1001", customer: "@ada" };
console.log(handle(order));
