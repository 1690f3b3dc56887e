//! Team store figures (SPEC §22), run by hand against a PostgreSQL server:
//!
//! ```sh
//! scripts/pg-cluster   # prints the URL of the private cluster
//! cargo run --release -p stardust-pg --example team_bench -- URL [--commits 300] [--docs 10000]
//! ```
//!
//! 1. One-document commit latency of a team store, against a bare `INSERT` of the same bytes
//!    committed on its own (`INSERT ...; COMMIT`) on the same server, alternating one of each;
//!    and a folder store's commit beside.
//! 2. Commit on machine A → the change notification at machine B (two stores on one
//!    database, in one process: the wake-up still goes through the server's NOTIFY).
//! 3. Opening a store of `--docs` documents: a folder store (its log exists), a machine's
//!    copy that is up to date, and a new machine's empty copy that takes the history from the
//!    database.

use std::path::Path;
use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, NoTls};
use stardust_core::store::remote::Remote;
use stardust_core::store::{Change, Notice, OpenOptions, Origin, Store};

fn main() {
    let mut args = std::env::args().skip(1);
    let admin = args.next().expect("usage: team_bench URL [--commits N] [--docs N]");
    let mut commits = 300;
    let mut docs = 10_000;
    while let Some(flag) = args.next() {
        let value: usize = args.next().and_then(|v| v.parse().ok()).expect("a number");
        match flag.as_str() {
            "--commits" => commits = value,
            "--docs" => docs = value,
            other => panic!("unknown flag {other}"),
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load before: {}", load.trim());
    commit_latency(&admin, commits);
    notification_latency(&admin, commits);
    open_latency(&admin, docs);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load after: {}", load.trim());
}

/// A fresh, migrated database on the server at `admin`; its URL.
fn database(admin: &str, name: &str) -> String {
    let url = stardust_pg::scratch::create(admin, name).unwrap();
    stardust_pg::migrate(&url).unwrap();
    url
}

fn team_store(root: &Path, url: &str) -> Store {
    let remote = stardust_pg::connect(url).unwrap();
    Store::open(root, OpenOptions { watch: false, remote: Some(remote), ..OpenOptions::default() })
        .unwrap()
}

fn person(i: usize, name: &str) -> String {
    format!("{{\"id\": \"person/p{i}\", \"type\": \"person\", \"name\": \"{name}\"}}\n")
}

fn stats(label: &str, samples: &mut [Duration]) -> Duration {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{label:<44} n={:<5} p50 {:>8.3} ms  p95 {:>8.3} ms  max {:>8.3} ms",
        samples.len(),
        ms(at(0.5)),
        ms(at(0.95)),
        ms(at(1.0))
    );
    at(0.5)
}

fn commit_latency(admin: &str, n: usize) {
    let url = database(admin, "stardust_bench_commit");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.json"), person(0, "start")).unwrap();
    let store = team_store(dir.path(), &url);
    let folder_dir = tempfile::tempdir().unwrap();
    std::fs::write(folder_dir.path().join("p.json"), person(0, "start")).unwrap();
    let folder =
        Store::open(folder_dir.path(), OpenOptions { watch: false, ..OpenOptions::default() })
            .unwrap();
    let mut bare = Client::connect(&url, NoTls).unwrap();
    bare.batch_execute("CREATE TABLE bench (id bigserial PRIMARY KEY, content bytea NOT NULL)")
        .unwrap();
    let insert = bare.prepare("INSERT INTO bench (content) VALUES ($1)").unwrap();
    let (mut team, mut plain, mut local) = (Vec::new(), Vec::new(), Vec::new());
    let mut db_part = Vec::new();
    // The database's part alone: the same call a commit makes, on a database of its own.
    let part_url = database(admin, "stardust_bench_part");
    let part = stardust_pg::connect(&part_url).unwrap();
    db_part_loop(part.as_ref(), n, 0, &mut db_part);
    // The same with one core listening, as a team store's follower does: PostgreSQL then
    // has a NOTIFY to deliver at each commit.
    let mut db_heard = Vec::new();
    {
        let mut listener = Client::connect(&part_url, NoTls).unwrap();
        listener.batch_execute("LISTEN stardust").unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        let hearing = std::thread::spawn(move || {
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                let mut notifications = listener.notifications();
                let _ = notifications.timeout_iter(Duration::from_millis(50)).next();
            }
        });
        db_part_loop(part.as_ref(), n, n + 10, &mut db_heard);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        hearing.join().unwrap();
    }
    // This core's own part: the same commits on a database that answers at once, and on one
    // that answers after 1 ms (the part of a commit that the round trip does not hide).
    let mut own = own_part(n, Duration::ZERO);
    let mut beside = own_part_beside(n);
    // A team store on a database of its own that no core listens to (its remote polls
    // instead of listening): the commit without a NOTIFY to deliver or a follower to wake.
    let deaf_url = database(admin, "stardust_bench_deaf");
    let mut unheard =
        commits_on(std::sync::Arc::new(Deaf(stardust_pg::connect(&deaf_url).unwrap())), n);
    for i in 0..n + 10 {
        let content = person(0, &format!("name {i}"));
        let start = Instant::now();
        store.commit(Origin::Mount, vec![Change::put("p.json", content.clone())]).unwrap();
        let t = start.elapsed();
        let start = Instant::now();
        // Autocommit: one implicit transaction, committed (and synced) by the server.
        bare.execute(&insert, &[&content.as_bytes()]).unwrap();
        let b = start.elapsed();
        let start = Instant::now();
        folder.commit(Origin::Mount, vec![Change::put("p.json", content)]).unwrap();
        let l = start.elapsed();
        if i >= 10 {
            team.push(t);
            plain.push(b);
            local.push(l);
        }
    }
    println!("-- one-document commit ({} bytes)", person(0, "name 100").len());
    let t = stats("team store commit (PostgreSQL)", &mut team);
    let b = stats("bare INSERT; COMMIT of the same bytes", &mut plain);
    stats("folder store commit (for reference)", &mut local);
    stats("the database's part (one stardust_commit)", &mut db_part);
    stats("the same, with a core listening", &mut db_heard);
    stats("this core's part (a database answering at once)", &mut own);
    stats("the same beside a 1 ms round trip, minus 1 ms", &mut beside);
    stats("a team commit that no core listens to", &mut unheard);
    println!("ratio team / bare at p50: {:.2}x", t.as_secs_f64() / b.as_secs_f64());
}

/// `n` commits (after 10 of warm-up) of a store whose database answers after `delay`.
fn own_part(n: usize, delay: Duration) -> Vec<Duration> {
    commits_on(std::sync::Arc::new(AtOnce { delay, ..AtOnce::default() }), n)
}

/// The latencies of `n` one-document commits (after 10 of warm-up) of a new store whose
/// database is `remote`.
fn commits_on(remote: std::sync::Arc<dyn Remote>, n: usize) -> Vec<Duration> {
    let mut latencies = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.json"), person(0, "start")).unwrap();
    let options = OpenOptions { watch: false, remote: Some(remote), ..OpenOptions::default() };
    let store = Store::open(dir.path(), options).unwrap();
    for i in 0..n + 10 {
        let content = person(0, &format!("name {i}"));
        let start = Instant::now();
        store.commit(Origin::Mount, vec![Change::put("p.json", content)]).unwrap();
        if i >= 10 {
            latencies.push(start.elapsed());
        }
    }
    latencies
}

/// [`own_part`] beside a 1 ms round trip, less the round trip as the same sleep measures it.
fn own_part_beside(n: usize) -> Vec<Duration> {
    let delay = Duration::from_millis(1);
    let mut slept: Vec<Duration> = (0..200)
        .map(|_| {
            let start = Instant::now();
            std::thread::sleep(delay);
            start.elapsed()
        })
        .collect();
    slept.sort();
    let sleep = slept[slept.len() / 2];
    own_part(n, delay).into_iter().map(|d| d.saturating_sub(sleep)).collect()
}

/// `n` (after 10 of warm-up) one-document `stardust_commit` calls through `part`, the first
/// at seq `from + 1`; their latencies into `out`.
fn db_part_loop(part: &dyn Remote, n: usize, from: usize, out: &mut Vec<Duration>) {
    for i in 0..n + 10 {
        let content = person(0, &format!("name {i}"));
        let txn = stardust_core::store::Transaction {
            seq: (from + i) as u64 + 1,
            time: "2026-12-02T00:00:00Z".to_owned(),
            origin: Origin::Mount,
            documents: vec![stardust_core::store::DocumentChange {
                path: "p.json".to_owned(),
                before: None,
                after: Some(stardust_core::store::Version::of(content.as_bytes())),
                created: Vec::new(),
                changed: vec!["person/p0".to_owned()],
                deleted: Vec::new(),
            }],
        };
        let start = Instant::now();
        part.append(&txn, &[content.as_bytes()]).unwrap();
        if i >= 10 {
            out.push(start.elapsed());
        }
    }
}

fn notification_latency(admin: &str, n: usize) {
    let url = database(admin, "stardust_bench_notify");
    let a_dir = tempfile::tempdir().unwrap();
    let b_dir = tempfile::tempdir().unwrap();
    std::fs::write(a_dir.path().join("p.json"), person(0, "start")).unwrap();
    let a = team_store(a_dir.path(), &url);
    let b = team_store(b_dir.path(), &url);
    let feed = b.subscribe();
    let (mut from_start, mut from_ack) = (Vec::new(), Vec::new());
    for i in 0..n + 10 {
        let start = Instant::now();
        let committed = a
            .commit(Origin::Mount, vec![Change::put("p.json", person(0, &format!("n{i}")))])
            .unwrap();
        let acked = Instant::now();
        loop {
            match feed.next_timeout(Duration::from_secs(10)) {
                Some(Notice::Changes { seq, .. }) if seq >= committed.seq => break,
                Some(_) => continue,
                None => panic!("no notice at B for seq {}", committed.seq),
            }
        }
        if i >= 10 {
            from_start.push(start.elapsed());
            from_ack.push(acked.elapsed());
        }
        // Commits a little apart, as people and agents make them.
        std::thread::sleep(Duration::from_millis(2));
    }
    println!("-- commit on A -> notification at B");
    stats("from A's commit call", &mut from_start);
    stats("from A's acknowledgement", &mut from_ack);
}

fn open_latency(admin: &str, docs: usize) {
    let url = database(admin, "stardust_bench_open");
    let folder = tempfile::tempdir().unwrap();
    for i in 0..docs {
        let dir = folder.path().join(format!("people/{}", i % 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("p{i}.json")), person(i, &format!("Person {i}"))).unwrap();
    }
    let options = || OpenOptions { watch: false, ..OpenOptions::default() };
    // The folder store's first open records its history; the figure is a reopen.
    drop(Store::open(folder.path(), options()).unwrap());
    let machine_a = tempfile::tempdir().unwrap();
    {
        let a = team_store(machine_a.path(), &url);
        a.import(folder.path()).unwrap();
    }
    let (mut from_folder, mut up_to_date, mut new_copy) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        let start = Instant::now();
        let store = Store::open(folder.path(), options()).unwrap();
        assert_eq!(store.snapshot().analysis.document_count(), docs);
        from_folder.push(start.elapsed());
        drop(store);

        let start = Instant::now();
        let store = team_store(machine_a.path(), &url);
        assert_eq!(store.snapshot().analysis.document_count(), docs);
        up_to_date.push(start.elapsed());
        drop(store);

        let fresh = tempfile::tempdir().unwrap();
        let start = Instant::now();
        let store = team_store(fresh.path(), &url);
        assert_eq!(store.snapshot().analysis.document_count(), docs);
        new_copy.push(start.elapsed());
        drop(store);
    }
    println!("-- open of a {docs}-document store");
    stats("folder store (reopen)", &mut from_folder);
    stats("team store, this machine's copy up to date", &mut up_to_date);
    stats("team store, a new machine (history from db)", &mut new_copy);
}

/// A team store's database that never wakes its core (it polls): no LISTEN connection.
#[derive(Debug)]
struct Deaf(std::sync::Arc<dyn Remote>);

impl Remote for Deaf {
    fn head(&self) -> stardust_core::store::StoreResult<u64> {
        self.0.head()
    }
    fn since(
        &self,
        seq: u64,
        limit: usize,
    ) -> stardust_core::store::StoreResult<Vec<stardust_core::store::remote::Shipped>> {
        self.0.since(seq, limit)
    }
    fn append(
        &self,
        transaction: &stardust_core::store::Transaction,
        contents: &[&[u8]],
    ) -> stardust_core::store::StoreResult<stardust_core::store::remote::Appended> {
        self.0.append(transaction, contents)
    }
    fn wait(&self, timeout: Duration) -> bool {
        std::thread::sleep(timeout);
        false
    }
}

/// A database that commits everything at once (or after `delay`), in memory: this core's
/// own part of a commit.
#[derive(Debug, Default)]
struct AtOnce {
    head: std::sync::Mutex<u64>,
    /// How long an append takes.
    delay: Duration,
}

impl Remote for AtOnce {
    fn head(&self) -> stardust_core::store::StoreResult<u64> {
        Ok(*self.head.lock().unwrap())
    }
    fn since(
        &self,
        _: u64,
        _: usize,
    ) -> stardust_core::store::StoreResult<Vec<stardust_core::store::remote::Shipped>> {
        Ok(Vec::new())
    }
    fn append(
        &self,
        transaction: &stardust_core::store::Transaction,
        _: &[&[u8]],
    ) -> stardust_core::store::StoreResult<stardust_core::store::remote::Appended> {
        std::thread::sleep(self.delay);
        *self.head.lock().unwrap() = transaction.seq;
        Ok(stardust_core::store::remote::Appended::Committed)
    }
    fn wait(&self, timeout: Duration) -> bool {
        std::thread::sleep(timeout);
        false
    }
}
