// Typed access to examples/library from TypeScript. ./library is a generated package:
//   stardust sdk generate examples/library --lang typescript --out examples/sdk-ts/library
// Install it (`npm install ./library`: it carries its runtime, nothing is fetched), compile
// with tsc (module NodeNext), run with node.
import { columns, connect, tempRef } from "library";

const client = await connect(process.env["STORE"] ?? "examples/library");
const dune = await client.get("book/dune"); // Entity<Book>: `year` is a number
console.log(`${dune.value.title} (${dune.value.year}) by ${dune.value.author}`);

const page = await client.query("find [?b ?t] where [[?b type book] [?b title ?t]] limit 5", [columns.book.id, columns.book.title]);
for (const [id, title] of page.rows) console.log(id, title);

const preview = await client.create(
  { id: "?p", type: "person", name: "Martha Wells", roles: ["author"] },
  { id: "?b", type: "book", title: "All Systems Red", author: tempRef<"person">("?p"), year: 2017, status: "published" },
);
for (const doc of preview.documents) console.log(doc.diff);
const committed = await preview.confirm();
console.log(`seq ${committed.seq}: ${committed.resolved["?b"]}`);

for await (const event of client.subscribeEntities()) console.log(event); // until ^C
