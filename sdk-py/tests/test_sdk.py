"""The Python SDK against a real core on a copy of examples/library, typed by the package
``stardust sdk generate --lang python`` made for it (``library_types``, installed), which
re-exports its runtime."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

import library_types as lib
from conftest import apply, stop_core
from library_types import (ConnectOptions, DecodeError, EntityAt, Event, History, StardustError, Subscription,
                           check)
from library_types._runtime import connect


def test_get_and_query_are_typed(store: Path) -> None:
    client = lib.connect_sync(str(store))
    try:
        dune = client.get_book("book/dune")
        year: int = dune.value["year"]
        author: lib.PersonRef = dune.value["author"]
        assert (year, author, dune.path) == (1965, "@person/frank-herbert", "books/dune.dust")

        page = client.query(
            "find [?b ?t ?a] where [[?b type book] [?b title ?t] [?b author ?a]"
            " [?a name 'Frank Herbert']] order [[?t asc]] limit 2",
            (lib.BookColumns.id, lib.BookColumns.title, lib.BookColumns.author),
        )
        assert page.columns == ["?b", "?t", "?a"]
        book_id, title, who = page.rows[0]
        assert book_id.startswith("book/") and isinstance(title, str)
        assert who == "person/frank-herbert"

        # A column that does not fit is a typed error naming the cell.
        with pytest.raises(DecodeError) as err:
            client.query("find [?b ?t] where [[?b type book] [?b title ?t]] limit 1",
                         (lib.BookColumns.id, lib.BookColumns.year))
        assert err.value.code == "type-error" and err.value.path == "row 0 ?t"
    finally:
        client.close()


def test_a_temporary_name_resolves_to_the_id_on_disk(store: Path) -> None:
    async def run() -> None:
        client = await lib.connect(str(store))
        try:
            preview = await client.create(
                {"id": "?ann", "type": "person", "name": "Ann Py-Test", "roles": ["author"]},
                {"id": "?b", "type": "book", "title": "Ancillary Py", "author": "@?ann", "year": 2013,
                 "status": "published"},
            )
            assert preview.committable, preview.reasons
            assert len(preview.documents) == 2
            assert "+title" in "".join(d["diff"] for d in preview.documents)
            committed = await preview.confirm()
            assert committed.resolved == {"?ann": "person/ann-py-test", "?b": "book/ancillary-py"}
            book = await client.get_book("book/ancillary-py")
            assert book.value["author"] == "@person/ann-py-test"
        finally:
            await client.close()

    asyncio.run(run())


def test_a_refused_change_carries_the_spec_code(store: Path) -> None:
    client = lib.connect_sync(str(store))
    try:
        with pytest.raises(StardustError) as err:
            client.get_book("book/no-such-book")
        assert err.value.code == "not-found"
        preview = client.patch("ops [{create {id ?x type book title 'Nobody Wrote This'}}]")
        assert preview.committable is False
        assert preview.new_diagnostics
        with pytest.raises(StardustError) as err:
            preview.confirm()
        assert err.value.code == "refused"
        with pytest.raises(StardustError) as err:
            client.execute("stardust.entity.get", {})
        assert err.value.code == "invalid-arguments"
    finally:
        client.close()


def test_an_entity_as_of_a_seq_and_the_transactions_that_touched_it(store: Path) -> None:
    client = lib.connect_sync(str(store))
    try:
        first = client.patch("ops [{set {id book/dune pages 600}}]").confirm().seq
        second = client.patch("ops [{set {id book/dune pages 601}}]").confirm().seq
        assert second > first
        # The generated store's typed get, as of a seq and as of now.
        old: EntityAt[lib.Book] = client.get_book("book/dune", first)
        assert (old.value["pages"], old.seq, old.changed_at, old.path) == (600, first, first, "books/dune.dust")
        assert client.get_book("book/dune").value["pages"] == 601
        history: History = client.history(entity="book/dune")
        assert [t.seq for t in history.transactions[:2]] == [second, first]
        newest = history.transactions[0]
        assert newest.origin == "sdk:stardust-sdk-py"
        assert [(d["path"], d["change"], d["entities"]["changed"]) for d in newest.documents] == [
            ("books/dune.dust", "changed", ["book/dune"])]
        page = client.history(path="books/dune.dust", limit=1)
        assert ([t.seq for t in page.transactions], page.next_offset, page.total) == ([second], 1, history.total)
        # A seq past the head is `not-found`.
        with pytest.raises(StardustError) as err:
            client.get_book("book/dune", second + 1)
        assert err.value.code == "not-found"
    finally:
        client.close()

    async def run() -> None:
        # The async client, untyped: the same answers.
        client = await connect(str(store))
        try:
            old = await client.get("book/dune", first)
            assert old.value["pages"] == 600
            assert [t.seq for t in (await client.history(entity="book/dune", limit=2)).transactions] == [second, first]
            with pytest.raises(StardustError) as err:
                await client.get("book/dune", second + 1)
            assert err.value.code == "not-found"
        finally:
            await client.close()

    asyncio.run(run())


async def until(events: Subscription, seq: int) -> list[Event]:
    """Events until one reaches ``seq`` (seqs only go up), within 20 s each."""
    seen: list[Event] = []
    while not seen or seen[-1].seq < seq:
        event = await asyncio.wait_for(events.__anext__(), 20)
        if seen:
            assert event.seq > seen[-1].seq
        seen.append(event)
    assert seen[-1].seq == seq, seen
    return seen


def test_a_subscriber_receives_another_commit_and_resumes_after_a_restart(store: Path) -> None:
    async def run() -> None:
        client = await lib.connect(str(store))
        events = client.subscribe_entities()
        documents = client.subscribe_documents()
        try:
            await events.open()
            await documents.open()
            seq = apply(store, "ops [{set {id book/dune pages 413}}]\n")
            seen = await until(events, seq)
            assert seen[-1] == Event("changed", seq, [{"id": "book/dune", "change": "changed"}])
            docs = await until(documents, seq)
            # The document, then the files derived from it (SPEC §19), marked derived.
            assert [(c["path"], c["change"], c.get("derived", False)) for c in docs[-1].changes] == [
                ("books/dune.dust", "changed", False),
                (".stardust/entities/book/dune.json", "changed", True),
                (".stardust/json/books/dune.dust.json", "changed", True),
            ]
            await documents.close()
            # The core goes away; a commit lands meanwhile; the subscription reconnects
            # (starting a core) and catches up with stardust.changes.since.
            await client.close()
            stop_core(store)
            later = apply(store, "ops [{set {id book/dune pages 414}}]\n")
            resumed = await until(events, later)
            assert resumed[-1] == Event("changed", later, [{"id": "book/dune", "change": "changed"}])
        finally:
            await events.close()
            await documents.close()
            await client.close()

    asyncio.run(run())


def test_an_overflow_is_a_reread_and_a_core_that_never_returns_ends_with_a_typed_error(
    tmp_path: Path,
) -> None:
    # A store whose subscribers may fall only two entries behind.
    small = tmp_path / "small"
    (small / "people").mkdir(parents=True)
    (small / "stardust.toml").write_text("[notifications]\nmax_pending = 2\n")
    (small / "people/ann.dust").write_text("id    person/ann\ntype  person\nname  Ann\n")

    async def run() -> None:
        client = await connect(str(small), ConnectOptions(reconnect_timeout=1.0, connect_timeout=5.0))
        events = client.subscribe_entities()
        try:
            await events.open()
            # Three new entities in three new documents: six pending entries, past max_pending.
            preview = await client.patch(
                "ops [{create {id ?a type person name A}} {create {id ?b type person name B}}"
                " {create {id ?c type person name C}}]")
            committed = await preview.confirm()
            assert await until(events, committed.seq) == [Event("reread", committed.seq)]
            # The core stops and its store is gone: reconnecting fails for reconnect_timeout,
            # then the iterator raises the last attempt's error: the core's own answer when
            # `stardust lsp` serves the missing store itself, or `unavailable` without one.
            await client.close()
            stop_core(small)
            shutil.rmtree(small)
            with pytest.raises(StardustError) as err:
                await asyncio.wait_for(events.__anext__(), 20)
            assert err.value.code in ("not-found", "unavailable"), err.value
        finally:
            await events.close()
            await client.close()

    asyncio.run(run())


def test_a_value_that_does_not_fit_is_a_decode_error_naming_the_field() -> None:
    bad = {"id": "book/x", "type": "book", "title": "X", "author": "@book/dune", "year": 1,
           "status": "published"}
    book = {"kind": "named", "name": "Book"}
    with pytest.raises(DecodeError) as err:
        check(lib.DECLS, book, bad, "book/x")
    assert err.value.path == "book/x.author" and "reference to a person" in str(err.value)
    with pytest.raises(DecodeError) as err:
        check(lib.DECLS, book, {**bad, "author": "@person/a", "rights": {"holder": 3}}, "book/x")
    assert err.value.path == "book/x.rights.holder"
    with pytest.raises(DecodeError) as err:
        check(lib.DECLS, book, {**bad, "author": "@person/a", "year": "1965"}, "book/x")
    assert err.value.path == "book/x.year"
