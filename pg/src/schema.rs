//! The team store's tables and their migrations (`stardust db migrate`): each schema version
//! is one step of SQL, run in one transaction under an advisory lock, so two members
//! migrating at once do it once. A database of a newer schema than this binary is refused.

use postgres::Client;
use stardust_core::store::{StoreError, StoreResult};

use crate::{Failure, Postgres};

/// The schema this binary reads and writes.
pub const SCHEMA: i32 = 2;

/// What a migration did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migrated {
    /// The schema version found (0: no team store yet).
    pub from: i32,
    pub to: i32,
}

/// Step `n` takes a database from schema `n - 1` to `n`.
const STEPS: &[&str] = &[
    r#"
CREATE TABLE stardust_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE stardust_head (id int PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL);
INSERT INTO stardust_head VALUES (1, 0);
-- The history: one row per transaction (its record as `stardust log --format json` shows it,
-- with per-document before/after versions and entity changes), and the new content of each
-- document it created or changed, in the record's order.
CREATE TABLE stardust_transactions (
    seq bigint PRIMARY KEY,
    time text NOT NULL,
    origin text NOT NULL,
    record jsonb NOT NULL
);
CREATE TABLE stardust_contents (
    seq bigint NOT NULL REFERENCES stardust_transactions (seq),
    ord int NOT NULL,
    path text NOT NULL,
    content bytea NOT NULL,
    PRIMARY KEY (seq, ord)
);
-- The documents (and code files) as of the head.
CREATE TABLE stardust_documents (
    path text PRIMARY KEY,
    content bytea NOT NULL,
    version text NOT NULL,
    seq bigint NOT NULL
);
-- One commit: moves the head from p_seq - 1 to p_seq and writes everything (answering true),
-- or, when another core moved it first, writes nothing (answering false and the head).
CREATE FUNCTION stardust_commit(
    p_seq bigint, p_record jsonb, p_paths text[], p_contents bytea[], p_versions text[],
    p_deleted text[], OUT committed boolean, OUT head bigint
) LANGUAGE plpgsql AS $$
BEGIN
    -- Shared: commits run side by side, unless a core that lost the race holds the lock
    -- exclusively to catch up and try again (Remote::reserve).
    PERFORM pg_advisory_xact_lock_shared(7401196323);
    UPDATE stardust_head SET seq = p_seq WHERE id = 1 AND seq = p_seq - 1;
    IF NOT FOUND THEN
        committed := false;
        SELECT h.seq INTO head FROM stardust_head h WHERE h.id = 1;
        RETURN;
    END IF;
    INSERT INTO stardust_transactions (seq, time, origin, record)
        VALUES (p_seq, p_record->>'time', p_record->>'origin', p_record);
    INSERT INTO stardust_contents (seq, ord, path, content)
        SELECT p_seq, u.o - 1, u.p, u.c
          FROM unnest(p_paths, p_contents) WITH ORDINALITY AS u(p, c, o);
    INSERT INTO stardust_documents (path, content, version, seq)
        SELECT u.p, u.c, u.v, p_seq FROM unnest(p_paths, p_contents, p_versions) AS u(p, c, v)
        ON CONFLICT (path) DO UPDATE
            SET content = EXCLUDED.content, version = EXCLUDED.version, seq = EXCLUDED.seq;
    DELETE FROM stardust_documents WHERE path = ANY (p_deleted);
    PERFORM pg_notify('stardust', p_seq::text);
    committed := true;
    head := p_seq;
END
$$;
"#,
    r#"
-- Schema 2: a lighter commit.
-- The contents' foreign key cost every commit a lookup and a row lock of its transaction
-- per content row; stardust_commit writes both and is their only writer.
ALTER TABLE stardust_contents DROP CONSTRAINT IF EXISTS stardust_contents_seq_fkey;
DROP FUNCTION stardust_commit(bigint, jsonb, text[], bytea[], text[], text[]);
CREATE FUNCTION stardust_commit(
    p_seq bigint, p_record jsonb, p_paths text[], p_contents bytea[], p_versions text[],
    p_deleted text[], OUT committed boolean, OUT head bigint
) LANGUAGE plpgsql AS $$
BEGIN
    -- Shared: commits run side by side, unless a core that lost the race holds the lock
    -- exclusively to catch up and try again (Remote::reserve).
    PERFORM pg_advisory_xact_lock_shared(7401196323);
    UPDATE stardust_head SET seq = p_seq WHERE id = 1 AND seq = p_seq - 1;
    IF NOT FOUND THEN
        committed := false;
        SELECT h.seq INTO head FROM stardust_head h WHERE h.id = 1;
        RETURN;
    END IF;
    INSERT INTO stardust_transactions (seq, time, origin, record)
        VALUES (p_seq, p_record->>'time', p_record->>'origin', p_record);
    -- One document is the common commit: plain statements, no unnest.
    IF cardinality(p_paths) = 1 THEN
        INSERT INTO stardust_contents (seq, ord, path, content)
            VALUES (p_seq, 0, p_paths[1], p_contents[1]);
        INSERT INTO stardust_documents (path, content, version, seq)
            VALUES (p_paths[1], p_contents[1], p_versions[1], p_seq)
            ON CONFLICT (path) DO UPDATE
                SET content = EXCLUDED.content, version = EXCLUDED.version, seq = EXCLUDED.seq;
    ELSIF cardinality(p_paths) > 1 THEN
        INSERT INTO stardust_contents (seq, ord, path, content)
            SELECT p_seq, u.o - 1, u.p, u.c
              FROM unnest(p_paths, p_contents) WITH ORDINALITY AS u(p, c, o);
        INSERT INTO stardust_documents (path, content, version, seq)
            SELECT u.p, u.c, u.v, p_seq
              FROM unnest(p_paths, p_contents, p_versions) AS u(p, c, v)
            ON CONFLICT (path) DO UPDATE
                SET content = EXCLUDED.content, version = EXCLUDED.version, seq = EXCLUDED.seq;
    END IF;
    IF cardinality(p_deleted) > 0 THEN
        DELETE FROM stardust_documents WHERE path = ANY (p_deleted);
    END IF;
    PERFORM pg_notify('stardust', p_seq::text);
    committed := true;
    head := p_seq;
END
$$;
"#,
];

/// Create or upgrade the team store's tables in the database at `url`.
pub fn migrate(url: &str) -> StoreResult<Migrated> {
    migrate_to(url, SCHEMA)
}

/// [`migrate`] up to schema `target` (at most [`SCHEMA`]): what an older binary's migration
/// left, for the tests of upgrades.
pub fn migrate_to(url: &str, target: i32) -> StoreResult<Migrated> {
    assert_eq!(STEPS.len(), SCHEMA as usize, "one step per schema version");
    assert!((1..=SCHEMA).contains(&target), "schema {target} is not one this binary has");
    let db = Postgres::new(url)?;
    db.with(|session| {
        let mut tx = session.client.transaction()?;
        // Two members migrating at once: the second waits, then finds nothing to do.
        tx.execute("SELECT pg_advisory_xact_lock(7401196322)", &[])?;
        let from = version(&mut tx)?;
        if from > SCHEMA {
            return Err(Failure::Store(newer(from, &db.shown)));
        }
        let to = from.max(target);
        for step in &STEPS[from as usize..to as usize] {
            tx.batch_execute(step)?;
        }
        tx.execute(
            "INSERT INTO stardust_meta (key, value) VALUES ('schema', $1) \
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[&to.to_string()],
        )?;
        tx.commit()?;
        Ok(Migrated { from, to })
    })
}

/// Refuse a database that holds no team store, or one of another schema.
pub(crate) fn check(client: &mut Client, shown: &str) -> Result<(), Failure> {
    let mut tx = client.transaction()?;
    let found = version(&mut tx)?;
    tx.commit()?;
    match found {
        SCHEMA => Ok(()),
        0 => {
            Err(Failure::Store(StoreError::Core(stardust_core::Error::InvalidArguments(format!(
                "the database {shown} holds no team store yet; run `stardust db migrate STORE` \
                 once, then open the store again"
            )))))
        }
        n if n > SCHEMA => Err(Failure::Store(newer(n, shown))),
        n => {
            Err(Failure::Store(StoreError::Core(stardust_core::Error::InvalidArguments(format!(
                "the database {shown} holds a team store of schema {n}, older than this \
                 stardust's ({SCHEMA}); run `stardust db migrate STORE` to upgrade it"
            )))))
        }
    }
}

/// The schema version of the database (0 when it has no team store tables).
fn version(tx: &mut postgres::Transaction<'_>) -> Result<i32, Failure> {
    let exists: bool = tx.query_one("SELECT to_regclass('stardust_meta') IS NOT NULL", &[])?.get(0);
    if !exists {
        return Ok(0);
    }
    let row = tx.query_opt("SELECT value FROM stardust_meta WHERE key = 'schema'", &[])?;
    Ok(row.and_then(|r| r.get::<_, String>(0).parse().ok()).unwrap_or(0))
}

fn newer(found: i32, shown: &str) -> StoreError {
    StoreError::Core(stardust_core::Error::Unsupported(format!(
        "the database {shown} holds a team store of schema {found}, newer than this stardust \
         understands ({SCHEMA}); upgrade stardust"
    )))
}
