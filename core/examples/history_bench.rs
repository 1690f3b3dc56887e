//! History's figures (issue 37, SPEC §26), each on a fresh store in a temporary folder:
//!
//! ```text
//! history_bench [--transactions 100000] [--apart 10000] [--commits 2000] [--edits 10000]
//! ```
//!
//! 1. as-of reads: a store whose one document is edited `--transactions` times; the p50/p95
//!    of reading it as of its first seqs (1: the store as found, 2: the first commit) and of
//!    random seqs, the diff of two seqs `--apart` transactions apart, and the time to open
//!    the store again (the index is rebuilt from the log);
//! 2. commit latency with and without the history index, in alternating blocks of 100
//!    commits of one run (`set_indexing`), on a store of 200 documents;
//! 3. the log's size for a 10 KB document edited `--edits` times, against as many full
//!    copies.

use std::time::{Duration, Instant};

use stardust_core::store::{Change, OpenOptions, Origin, Store, set_indexing};

// The allocator of the `stardust` binary, so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn options() -> OpenOptions {
    OpenOptions { watch: false, ..OpenOptions::default() }
}

fn origin() -> Origin {
    Origin::Sdk("bench".into())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// p50 and p95 of `samples`, in ms.
fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| ms(samples[((samples.len() - 1) as f64 * q) as usize]);
    (at(0.5), at(0.95))
}

/// A small xorshift, so runs are repeatable without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn as_of(transactions: u64, apart: u64) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), "{\"n\": 0}\n").unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    let started = Instant::now();
    for n in 1..transactions {
        let text = format!("{{\"n\": {n}}}\n");
        store.commit(origin(), vec![Change::put("a.json", text)]).unwrap();
    }
    let head = store.snapshot().seq;
    println!("as-of: {head} transactions committed in {:.1} s", started.elapsed().as_secs_f64());
    let time = |seq: u64| {
        let t = Instant::now();
        let at = store.document_at("a.json", seq).unwrap();
        assert_eq!(at.bytes, format!("{{\"n\": {}}}\n", seq - 1).into_bytes());
        t.elapsed()
    };
    for seq in [1, 2] {
        let (p50, p95) = percentiles((0..200).map(|_| time(seq)).collect());
        println!("as-of read at seq {seq}: p50 {p50:.3} ms, p95 {p95:.3} ms (200 reads)");
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (p50, p95) = percentiles((0..1000).map(|_| time(1 + rng.below(head))).collect());
    println!("as-of read at random seqs: p50 {p50:.3} ms, p95 {p95:.3} ms (1,000 reads)");
    let from = head / 2 - apart / 2;
    let diff = |_| {
        let t = Instant::now();
        let changes = store.diff(from, from + apart - 1, None).unwrap();
        assert_eq!(changes.len(), 1);
        t.elapsed()
    };
    let (p50, p95) = percentiles((0..50).map(diff).collect());
    println!(
        "diff of seqs {}..{} ({apart} transactions): p50 {p50:.3} ms, p95 {p95:.3} ms (50 runs)",
        from,
        from + apart - 1
    );
    drop(store);
    let t = Instant::now();
    let store = Store::open(dir.path(), options()).unwrap();
    println!("open again (the index rebuilt from the log): {:.0} ms", ms(t.elapsed()));
    drop(store);
}

fn commit_latency(commits: u64) {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..200 {
        let text = format!("{{\"id\": \"item/{i}\", \"type\": \"item\", \"n\": 0}}\n");
        std::fs::write(dir.path().join(format!("item-{i}.json")), text).unwrap();
    }
    let store = Store::open(dir.path(), options()).unwrap();
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for block in 0..commits / 100 {
        let indexing = block % 2 == 0;
        set_indexing(indexing);
        for c in 0..100 {
            let i = (block * 100 + c) % 200;
            let text =
                format!("{{\"id\": \"item/{i}\", \"type\": \"item\", \"n\": {}}}\n", block + 1);
            let t = Instant::now();
            store.commit(origin(), vec![Change::put(format!("item-{i}.json"), text)]).unwrap();
            if indexing { &mut with } else { &mut without }.push(t.elapsed());
        }
    }
    set_indexing(true);
    let ((w50, w95), (o50, o95)) = (percentiles(with), percentiles(without));
    println!(
        "commit with the index: p50 {w50:.3} ms, p95 {w95:.3} ms; without: p50 {o50:.3} ms, \
         p95 {o95:.3} ms; ratio p50 {:.3}x, p95 {:.3}x ({commits} commits, blocks of 100)",
        w50 / o50,
        w95 / o95
    );
}

fn log_size(edits: u64) {
    let dir = tempfile::tempdir().unwrap();
    let line =
        |i: u64, n: u64| format!("  {{\"id\": \"row/{i}\", \"type\": \"row\", \"n\": {n}}},\n");
    let doc = |edit: u64| {
        let mut text = String::from("[\n");
        let mut i = 0;
        while text.len() < 10_000 {
            text.push_str(&line(i, if i == edit % 150 { edit } else { 0 }));
            i += 1;
        }
        text.push_str("  {\"id\": \"row/last\", \"type\": \"row\"}\n]\n");
        text
    };
    let size = doc(0).len() as u64;
    std::fs::write(dir.path().join("doc.json"), doc(0)).unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    for edit in 1..=edits {
        store.commit(origin(), vec![Change::put("doc.json", doc(edit))]).unwrap();
    }
    drop(store);
    let log = dir.path().join(".stardust/log/transactions.log");
    let records = stardust_core::store::verify_log(dir.path()).unwrap().valid_len;
    let full = size * edits;
    println!(
        "log of a {size}-byte document edited {edits} times: {records} bytes of records ({} on \
         disk with the writer's reserve) = {:.1}% of {edits} full copies ({full} bytes)",
        std::fs::metadata(log).unwrap().len(),
        records as f64 * 100.0 / full as f64
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    println!(
        "load before: {}",
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    as_of(arg(&args, "--transactions", 100_000), arg(&args, "--apart", 10_000));
    commit_latency(arg(&args, "--commits", 2_000));
    log_size(arg(&args, "--edits", 10_000));
    println!("load after: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
}
