//! Team stores on a real PostgreSQL (SPEC §22): the server `scripts/pg-cluster` starts, named
//! by `STARDUST_TEST_DATABASE_URL` (the test command sets it). Each test makes a database of
//! its own and opens two stores ("machines": separate folders) on it.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use stardust_core::Code;
use stardust_core::store::{Change, Notice, OpenOptions, Origin, Store, StoreError, Version};

/// A fresh database on the test cluster, dropped at the end.
struct Db {
    name: String,
    url: String,
    admin: String,
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Db {
    fn new() -> Db {
        let admin = std::env::var("STARDUST_TEST_DATABASE_URL").expect(
            "STARDUST_TEST_DATABASE_URL names the test cluster; run the tests with scripts/test, \
             which starts one (scripts/pg-cluster)",
        );
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let name = format!("stardust_t{}_{n}", std::process::id());
        let url = stardust_pg::scratch::create(&admin, &name).unwrap();
        stardust_pg::migrate(&url).unwrap();
        Db { name, url, admin }
    }

    fn sql(&self, statement: &str) {
        Client::connect(&self.url, NoTls).unwrap().batch_execute(statement).unwrap();
    }

    fn admin(&self, statement: &str) {
        Client::connect(&self.admin, NoTls).unwrap().batch_execute(statement).unwrap();
    }

    fn head(&self) -> i64 {
        Client::connect(&self.url, NoTls)
            .unwrap()
            .query_one("SELECT seq FROM stardust_head", &[])
            .unwrap()
            .get(0)
    }

    fn seqs(&self) -> Vec<i64> {
        Client::connect(&self.url, NoTls)
            .unwrap()
            .query("SELECT seq FROM stardust_transactions ORDER BY seq", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    /// Make the database unreachable for the stores (as if its server stopped), or reachable.
    fn reachable(&self, yes: bool) {
        stardust_pg::scratch::set_reachable(&self.admin, &self.name, yes).unwrap();
    }

    fn open(&self, root: &Path) -> Store {
        let remote = stardust_pg::connect(&self.url).unwrap();
        Store::open(
            root,
            OpenOptions { watch: false, remote: Some(remote), ..OpenOptions::default() },
        )
        .unwrap()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = stardust_pg::scratch::drop(&self.admin, &self.name);
    }
}

fn person(id: &str, name: &str) -> String {
    format!("{{\"id\": \"{id}\", \"type\": \"person\", \"name\": \"{name}\"}}\n")
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(root: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(root.join(rel)).ok()
}

fn mcp() -> Origin {
    Origin::Mcp("test".into())
}

fn reaches(store: &Store, seq: u64, within: Duration) {
    let start = Instant::now();
    while store.snapshot().seq < seq {
        assert!(start.elapsed() < within, "still at seq {} after {within:?}", store.snapshot().seq);
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn two_machines(db: &Db) -> (tempfile::TempDir, Store, tempfile::TempDir, Store) {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    write(a.path(), "people/ann.json", &person("person/ann", "Ann"));
    let store_a = db.open(a.path());
    let store_b = db.open(b.path());
    (a, store_a, b, store_b)
}

#[test]
fn migrating_twice_does_it_once_and_a_newer_schema_is_refused() {
    let db = Db::new();
    let schema = stardust_pg::SCHEMA;
    assert_eq!(
        stardust_pg::migrate(&db.url).unwrap(),
        stardust_pg::Migrated { from: schema, to: schema }
    );
    db.sql("UPDATE stardust_meta SET value = '99' WHERE key = 'schema'");
    let err = stardust_pg::connect(&db.url).unwrap_err();
    assert_eq!(err.code(), Code::Unsupported);
    assert!(err.to_string().contains("schema 99, newer than this stardust"), "{err}");
    assert_eq!(stardust_pg::migrate(&db.url).unwrap_err().code(), Code::Unsupported);
    db.sql("DROP TABLE stardust_meta");
    let err = stardust_pg::connect(&db.url).unwrap_err();
    assert!(err.to_string().contains("run `stardust db migrate STORE`"), "{err}");
}

#[test]
fn a_database_of_the_first_schema_is_upgraded_and_then_commits() {
    let admin = std::env::var("STARDUST_TEST_DATABASE_URL").expect("the test cluster's URL");
    let name = format!("stardust_t{}_upgrade", std::process::id());
    let url = stardust_pg::scratch::create(&admin, &name).unwrap();
    assert_eq!(stardust_pg::migrate_to(&url, 1).unwrap(), stardust_pg::Migrated { from: 0, to: 1 });
    let err = stardust_pg::connect(&url).unwrap_err();
    assert!(err.to_string().contains("older than this stardust's"), "{err}");
    assert_eq!(
        stardust_pg::migrate(&url).unwrap(),
        stardust_pg::Migrated { from: 1, to: stardust_pg::SCHEMA }
    );
    let db = Db { name, url, admin };
    // Schema 2 dropped the contents' foreign key (a lookup and a row lock per content row).
    let mut client = Client::connect(&db.url, NoTls).unwrap();
    let keys: i64 = client
        .query_one("SELECT count(*) FROM pg_constraint WHERE contype = 'f'", &[])
        .unwrap()
        .get(0);
    assert_eq!(keys, 0);
    let (_a, store_a, _b, store_b) = two_machines(&db);
    let committed = store_a
        .commit(Origin::Mount, vec![Change::put("people/bo.json", person("person/bo", "Bo"))]);
    let seq = committed.unwrap().seq;
    reaches(&store_b, seq, Duration::from_secs(10));
    assert_eq!(db.seqs(), (1..=seq as i64).collect::<Vec<_>>());
}

#[test]
fn a_database_that_cannot_be_reached_is_unavailable() {
    let err = stardust_pg::connect("postgresql://nobody@/nothing?host=/nonexistent-socket-dir")
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err}");
}

#[test]
fn a_commit_on_one_machine_reaches_the_other() {
    let db = Db::new();
    let (_a, store_a, b, store_b) = two_machines(&db);
    assert_eq!(store_b.snapshot().seq, 1);
    assert_eq!(read(b.path(), "people/ann.json"), Some(person("person/ann", "Ann")));
    let feed = store_b.subscribe();
    store_a
        .commit(mcp(), vec![Change::create("people/bob.json", person("person/bob", "Bob"))])
        .unwrap();
    let Some(Notice::Changes { seq, documents, .. }) = feed.next_timeout(Duration::from_secs(5))
    else {
        panic!("no notice on B")
    };
    assert_eq!((seq, documents[0].path.as_str()), (2, "people/bob.json"));
    assert_eq!(read(b.path(), "people/bob.json"), Some(person("person/bob", "Bob")));
    assert_eq!(store_a.transactions(0, 10).unwrap(), store_b.transactions(0, 10).unwrap());
    assert_eq!(db.seqs(), [1, 2]);
}

#[test]
fn a_thousand_interleaved_commits_keep_one_history() {
    let db = Db::new();
    let (_a, store_a, _b, store_b) = two_machines(&db);
    let (store_a, store_b) = (Arc::new(store_a), Arc::new(store_b));
    let writers: Vec<_> = [("a", store_a.clone()), ("b", store_b.clone())]
        .into_iter()
        .map(|(name, store)| {
            std::thread::spawn(move || {
                for i in 0..500 {
                    let doc = person(&format!("note/{name}{i}"), "N");
                    // Both also rewrite one shared document: never expecting a version, so
                    // each write commits after catching up.
                    let shared = format!(
                        "{{\"id\": \"count/x\", \"type\": \"count\", \"by\": \"{name}{i}\"}}\n"
                    );
                    store
                        .commit(
                            mcp(),
                            vec![
                                Change::create(format!("notes/{name}{i}.json"), doc),
                                Change::put("count.json", shared),
                            ],
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());
    assert_eq!(db.seqs(), (1..=1001).collect::<Vec<i64>>());
    reaches(&store_a, 1001, Duration::from_secs(30));
    reaches(&store_b, 1001, Duration::from_secs(30));
    let log_a = store_a.transactions(0, 2000).unwrap();
    assert_eq!(log_a, store_b.transactions(0, 2000).unwrap());
    assert_eq!(log_a.iter().map(|t| t.seq).collect::<Vec<_>>(), (1..=1001).collect::<Vec<u64>>());
    let count = |s: &Store| s.snapshot().analysis.document("count.json").unwrap().text.to_string();
    assert_eq!(count(&store_a), count(&store_b));
}

#[test]
fn two_machines_changing_one_document_at_once_exactly_one_wins() {
    let db = Db::new();
    let (_a, store_a, _b, store_b) = two_machines(&db);
    let ann = Version::of(person("person/ann", "Ann").as_bytes());
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let (store_a, store_b) = (Arc::new(store_a), Arc::new(store_b));
    let racers: Vec<_> = [("A", store_a.clone()), ("B", store_b.clone())]
        .into_iter()
        .map(|(name, store)| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                store.commit(
                    mcp(),
                    vec![Change::put("people/ann.json", person("person/ann", name)).expecting(ann)],
                )
            })
        })
        .collect();
    let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    let won: Vec<_> = results.iter().filter(|r| r.is_ok()).collect();
    assert_eq!(won.len(), 1, "{results:?}");
    let lost = results.iter().find_map(|r| r.as_ref().err()).unwrap();
    assert_eq!(lost.code(), Code::Conflict, "{lost}");
    assert_eq!(db.seqs(), [1, 2]);
}

#[test]
fn the_database_going_away_mid_commit_writes_nothing_and_commits_resume() {
    let db = Db::new();
    let (a, store_a, _b, _store_b) = two_machines(&db);
    db.reachable(false);
    let err = store_a
        .commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "Down"))])
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err}");
    assert!(matches!(err, StoreError::Unavailable { .. }));
    assert_eq!(read(a.path(), "people/ann.json"), Some(person("person/ann", "Ann")));
    assert_eq!(store_a.snapshot().seq, 1);
    db.reachable(true);
    assert_eq!(db.head(), 1, "nothing was half-applied");
    let committed = store_a
        .commit(mcp(), vec![Change::put("people/ann.json", person("person/ann", "Up"))])
        .unwrap();
    assert_eq!(committed.seq, 2);
    assert_eq!(db.seqs(), [1, 2]);
}

#[test]
fn a_lost_notify_is_made_good_by_the_next_wake_up_or_poll() {
    let db = Db::new();
    let (_a, store_a, b, store_b) = two_machines(&db);
    // B's listening connection dies, so it hears nothing of A's commit.
    db.admin(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{}' AND query LIKE 'LISTEN%'",
        db.name
    ));
    store_a
        .commit(mcp(), vec![Change::create("people/bob.json", person("person/bob", "Bob"))])
        .unwrap();
    reaches(&store_b, 2, Duration::from_secs(5));
    assert_eq!(read(b.path(), "people/bob.json"), Some(person("person/bob", "Bob")));
}

#[test]
fn a_database_behind_this_copy_refuses_to_open() {
    let db = Db::new();
    let a = tempfile::tempdir().unwrap();
    write(a.path(), "people/ann.json", &person("person/ann", "Ann"));
    let store = db.open(a.path());
    store
        .commit(mcp(), vec![Change::create("people/bob.json", person("person/bob", "Bob"))])
        .unwrap();
    drop(store);
    // The database is replaced by an empty one.
    db.sql("DROP TABLE stardust_meta, stardust_head, stardust_contents, stardust_transactions, stardust_documents; DROP FUNCTION stardust_commit");
    stardust_pg::migrate(&db.url).unwrap();
    let remote = stardust_pg::connect(&db.url).unwrap();
    let err = Store::open(
        a.path(),
        OpenOptions { watch: false, remote: Some(remote), ..OpenOptions::default() },
    )
    .unwrap_err();
    assert_eq!(err.code(), Code::Conflict);
    assert!(err.to_string().contains("at seq 0, behind this machine's copy at seq 2"), "{err}");
}
