"""Typed access to examples/library from Python. ``library_types`` is a generated package:
    stardust sdk generate examples/library --lang python --out examples/sdk-py/library_types
Install it (``pip install ./library_types``: it carries its runtime, nothing is fetched), then
run this file."""

import os

import library_types as lib

client = lib.connect_sync(os.environ.get("STORE", "examples/library"))
dune = client.get_book("book/dune")  # Entity[Book]: dune.value["year"] is an int
print(f"{dune.value['title']} ({dune.value['year']}) by {dune.value['author']}")

page = client.query("find [?b ?t] where [[?b type book] [?b title ?t]] limit 5",
                    (lib.BookColumns.id, lib.BookColumns.title))
for book_id, title in page.rows:
    print(book_id, title)

preview = client.create({"id": "?p", "type": "person", "name": "Martha Wells", "roles": ["author"]},
                        {"id": "?b", "type": "book", "title": "All Systems Red", "author": "@?p",
                         "year": 2017, "status": "published"})
for doc in preview.documents:
    print(doc["diff"])
committed = preview.confirm()
print(f"seq {committed.seq}: {committed.resolved['?b']}")

for event in client.subscribe_entities():  # until ^C
    print(event)
