//! The transactional store's figures (issue 3): commit latency against a bare atomic write,
//! open time cold and warm at several sizes, and commit throughput with subscribers.
//!
//! A plain bench binary (no criterion): p50/p99 need the raw samples, and each phase prints
//! one table. It works on stores made by the `gen_store` example, copied afresh per phase:
//!
//! ```text
//! G="cargo run --release -p stardust-core --example gen_store --"
//! $G DATA/s1k --docs 1000 --entities 10000
//! $G DATA/s10k --docs 10000 --entities 100000
//! $G DATA/s100k --docs 100000 --entities 100000
//! cargo bench -p stardust-core --bench store -- --data DATA [--commits 1000]
//!     [--feed-commits 10000] [--subscribers 100] [--only open|commit|feed] [--sizes s1k,s10k] [--no-watch]
//! ```
//!
//! Cold opens drop the page cache first (`sync; echo 3 > /proc/sys/vm/drop_caches`), which
//! needs root; without it the table says the open was warm.

// The allocator the `stardust` binary ships with, so that the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod util;

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use stardust_core::analysis;
use stardust_core::store::{Change, Notice, OpenOptions, Origin, Prepared, Store, Version};

struct Args {
    data: PathBuf,
    commits: usize,
    feed_commits: usize,
    subscribers: usize,
    only: Option<String>,
    sizes: Vec<String>,
    feed_rounds: usize,
    /// Whether the open phase starts the watcher, as `OpenOptions::default()` does.
    open_watch: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        data: PathBuf::new(),
        commits: 1000,
        feed_commits: 10_000,
        subscribers: 100,
        only: None,
        feed_rounds: 2,
        open_watch: true,
        sizes: vec!["s1k".into(), "s10k".into(), "s100k".into()],
    };
    let mut data = None;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        let number = |text: String| text.parse::<usize>().map_err(|e| format!("{text}: {e}"));
        match arg.as_str() {
            "--data" => data = Some(PathBuf::from(value("--data")?)),
            "--commits" => args.commits = number(value("--commits")?)?,
            "--feed-commits" => args.feed_commits = number(value("--feed-commits")?)?,
            "--subscribers" => args.subscribers = number(value("--subscribers")?)?,
            "--feed-rounds" => args.feed_rounds = number(value("--feed-rounds")?)?,
            "--only" => args.only = Some(value("--only")?),
            "--no-watch" => args.open_watch = false,
            "--sizes" => args.sizes = value("--sizes")?.split(',').map(str::to_owned).collect(),
            // `cargo bench` passes `--bench` to every bench binary.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}")),
        }
    }
    args.data = data
        .or_else(|| std::env::var_os("STOREBENCH_DATA").map(PathBuf::from))
        .ok_or("give --data DIR (or STOREBENCH_DATA) holding s1k, s10k, s100k from gen_store")?;
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("error: {message}");
            std::process::exit(2);
        }
    };
    let wants = |phase: &str| args.only.as_deref().is_none_or(|only| only == phase);
    println!("store bench: {}", machine());
    if wants("open") {
        open_phase(&args);
    }
    if wants("commit") {
        commit_phase(&args);
    }
    if wants("feed") {
        feed_phase(&args);
    }
}

fn machine() -> String {
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    format!(
        "{cores} cores, load average {}",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    )
}

/// A fresh copy of the generated store `name`, without any `.stardust` folder.
fn fresh_copy(args: &Args, name: &str) -> PathBuf {
    let source = args.data.join(name);
    assert!(
        source.join("stardust.toml").is_file(),
        "{} is missing: generate it with gen_store (see the bench's module doc)",
        source.display()
    );
    let target = args.data.join(format!("work-{name}"));
    let _ = fs::remove_dir_all(&target);
    util::copy_dir(&source, &target).expect("copy the generated store");
    target
}

/// Move a used copy aside to `trash-*` instead of deleting it: on a filesystem mounted with
/// `discard`, deleting 100,000 files takes minutes. Remove `DATA/trash-*` afterwards.
fn discard(root: &Path) {
    let name = root.file_name().unwrap().to_string_lossy().replace("work-", "trash-");
    let trash = root.with_file_name(format!("{name}-{}", std::process::id()));
    let _ = fs::rename(root, trash);
}

/// Empty the page cache; `false` when that is not allowed here.
fn drop_caches() -> bool {
    let _ = std::process::Command::new("sync").status();
    fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

fn open(root: &Path, watch: bool) -> (Store, Duration) {
    let options = OpenOptions { watch, ..OpenOptions::default() };
    let started = Instant::now();
    let store = Store::open(root, options).expect("open the store");
    (store, started.elapsed())
}

fn log_size(root: &Path) -> u64 {
    fs::metadata(root.join(".stardust/log")).map_or(0, |_| {
        fs::read_dir(root.join(".stardust/log"))
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum()
    })
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn open_phase(args: &Args) {
    let watch = args.open_watch;
    let how = if watch { "watcher on, as `OpenOptions::default()`" } else { "watcher off" };
    println!("\n## open ({how})");
    println!(
        "| store | docs | entities | first open | log after | reopen cold | reopen warm | cache |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for name in &args.sizes {
        let root = fresh_copy(args, name);
        let cold = drop_caches();
        let (store, first) = open(&root, watch);
        let snapshot = store.snapshot();
        let (docs, entities) =
            (snapshot.analysis.document_count(), snapshot.analysis.entity_count());
        drop(snapshot);
        drop(store);
        let log = log_size(&root);
        drop_caches();
        let (store, reopen_cold) = open(&root, watch);
        drop(store);
        let (store, reopen_warm) = open(&root, watch);
        drop(store);
        println!(
            "| {name} | {docs} | {entities} | {} | {:.1} MB | {} | {} | {} |",
            ms(first),
            log as f64 / 1e6,
            ms(reopen_cold),
            ms(reopen_warm),
            if cold { "dropped" } else { "NOT dropped (warm)" }
        );
        discard(&root);
    }
}

/// A JSON document of the store holding a `"title": "` to edit, and its content.
fn editable_document(root: &Path) -> (String, Vec<u8>) {
    let mut dirs = vec![root.join("data")];
    while let Some(dir) = dirs.pop() {
        let mut entries: Vec<_> = fs::read_dir(&dir).unwrap().filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let bytes = fs::read(&path).unwrap();
                if find(&bytes, b"\"title\": \"").is_some() {
                    let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                    return (rel, bytes);
                }
            }
        }
    }
    panic!("no JSON document with a title in {}", root.display());
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `original` with revision `i` written into its first title: a one-entity change.
fn revision(original: &[u8], i: usize) -> Vec<u8> {
    let at = find(original, b"\"title\": \"").unwrap() + b"\"title\": \"".len();
    let mut out = original[..at].to_vec();
    write!(out, "rev {i} ").unwrap();
    out.extend_from_slice(&original[at..]);
    out
}

/// The floor a commit is compared with: write the bytes to a temporary file, sync it, rename it
/// over the target and sync the folder.
fn bare_write(dir: &Path, bytes: &[u8]) -> Duration {
    let temp = dir.join(".bench-bare.tmp");
    let target = dir.join("bench-bare.bin");
    let started = Instant::now();
    let mut file = fs::File::create(&temp).unwrap();
    file.write_all(bytes).unwrap();
    file.sync_data().unwrap();
    drop(file);
    fs::rename(&temp, &target).unwrap();
    fs::File::open(dir).unwrap().sync_all().unwrap();
    started.elapsed()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn commit_phase(args: &Args) {
    let root = fresh_copy(args, "s10k");
    let (store, _) = open(&root, false);
    let (path, original) = editable_document(&root);
    let dir = root.join(Path::new(&path).parent().unwrap());
    // Warm up both paths (and the page cache for the document's folder).
    for i in 0..10 {
        store
            .commit(Origin::Sdk("bench".into()), vec![Change::put(&path, revision(&original, i))])
            .unwrap();
        bare_write(&dir, &revision(&original, i));
    }
    let (mut commits, mut bare) = (Vec::new(), Vec::new());
    for i in 0..args.commits {
        let bytes = revision(&original, i + 10);
        // Alternate which goes first, so a burst of load hits both alike.
        if i % 2 == 1 {
            bare.push(bare_write(&dir, &bytes));
        }
        let change = Change::put(&path, bytes.clone());
        let started = Instant::now();
        let committed = store.commit(Origin::Sdk("bench".into()), vec![change]).unwrap();
        commits.push(started.elapsed());
        assert!(committed.transaction.is_some(), "every revision changes the document");
        if i % 2 == 0 {
            bare.push(bare_write(&dir, &bytes));
        }
    }
    // Then the same with each commit's analysis made beforehand (as a preview does), against
    // its own bare writes: what is left is the store's own part, mostly I/O.
    let (mut io_only, mut io_bare) = (Vec::new(), Vec::new());
    for i in 0..args.commits {
        let bytes = revision(&original, args.commits + 10 + i);
        if i % 2 == 1 {
            io_bare.push(bare_write(&dir, &bytes));
        }
        let snapshot = store.snapshot();
        let after = snapshot.analysis.with_changes(vec![(path.clone(), Some(bytes.clone()))]);
        let prepared = Prepared {
            seq: snapshot.seq,
            changes: vec![(path.clone(), Some(Version::of(&bytes)))],
            after,
        };
        let change = Change::put(&path, bytes.clone());
        let started = Instant::now();
        store.commit_prepared(Origin::Sdk("bench".into()), vec![change], Some(prepared)).unwrap();
        io_only.push(started.elapsed());
        drop(snapshot);
        if i % 2 == 0 {
            io_bare.push(bare_write(&dir, &bytes));
        }
    }
    // What a checkpoint of one commit costs (off the commit path: a background thread runs it).
    let mut checkpoints = Vec::new();
    for i in 0..args.commits.min(200) {
        let change = Change::put(&path, revision(&original, 2 * args.commits + 10 + i));
        store.commit(Origin::Sdk("bench".into()), vec![change]).unwrap();
        let started = Instant::now();
        store.checkpoint().unwrap();
        checkpoints.push(started.elapsed());
    }
    // The in-memory part of a commit alone: the new analysis and the save authority's check.
    let (mut parse, mut analyse, mut check, mut frees) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let snapshot = store.snapshot();
    let lang = stardust_core::scan::lang_of(snapshot.analysis.config(), &path).unwrap();
    for i in 0..args.commits.min(200) {
        let started = Instant::now();
        drop(analysis::Document::new(path.clone(), lang, revision(&original, i)));
        parse.push(started.elapsed());
        let started = Instant::now();
        let after =
            snapshot.analysis.with_changes(vec![(path.clone(), Some(revision(&original, i)))]);
        analyse.push(started.elapsed());
        let started = Instant::now();
        let refuse = &snapshot.analysis.config().refuse;
        let problems =
            analysis::new_problems(&snapshot.analysis, &after, std::slice::from_ref(&path), refuse);
        check.push(started.elapsed());
        assert!(problems.is_empty(), "{problems:?}");
        // What the commit's reaper thread frees: the parts of a snapshot that the next one
        // does not share.
        let started = Instant::now();
        drop(after);
        frees.push(started.elapsed());
    }
    commits.sort();
    io_only.sort();
    io_bare.sort();
    frees.sort();
    checkpoints.sort();
    bare.sort();
    analyse.sort();
    parse.sort();
    check.sort();
    println!(
        "\n## commit: {} one-document commits into {} docs / {} entities ({path}, {} bytes; watcher off)",
        args.commits,
        snapshot.analysis.document_count(),
        snapshot.analysis.entity_count(),
        original.len()
    );
    println!("| | p50 | p99 | max | mean |");
    println!("|---|---|---|---|---|");
    let rows = [
        ("commit", &commits),
        ("bare write+fsync+rename+dir fsync", &bare),
        ("commit, analysis prepared (commit_prepared; second loop)", &io_only),
        ("bare, second loop", &io_bare),
        ("checkpoint of one commit (background)", &checkpoints),
        ("of which: Analysis::with_changes", &analyse),
        ("of which: analysis::new_problems", &check),
        ("of which: Document::new (parse)", &parse),
        ("not in it: freeing a replaced snapshot (reaper thread)", &frees),
    ];
    for (name, samples) in rows {
        let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
        println!(
            "| {name} | {} | {} | {} | {} |",
            us(percentile(samples, 0.5)),
            us(percentile(samples, 0.99)),
            us(*samples.last().unwrap()),
            us(mean)
        );
    }
    let ratio = |p| percentile(&commits, p).as_secs_f64() / percentile(&bare, p).as_secs_f64();
    println!("| ratio commit / bare | {:.2}x | {:.2}x | | |", ratio(0.5), ratio(0.99));
    let ratio = |p| percentile(&io_only, p).as_secs_f64() / percentile(&io_bare, p).as_secs_f64();
    println!("| ratio prepared commit / bare | {:.2}x | {:.2}x | | |", ratio(0.5), ratio(0.99));
    println!("\n{}", machine());
    drop(snapshot);
    drop(store);
    discard(&root);
}

fn rss_kb(field: &str) -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok())
        .unwrap_or(0)
}

/// Commits per second over `n` commits, with `subscribers` subscribed (one never reads).
fn feed_run(
    store: &Store,
    path: &str,
    original: &[u8],
    start: usize,
    n: usize,
    subscribers: usize,
) -> String {
    // Reset the peak RSS to the current RSS, so the peak is this run's.
    let _ = fs::write("/proc/self/clear_refs", "5");
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let idle = (subscribers > 0).then(|| store.subscribe());
    let readers: Vec<_> = (1..subscribers)
        .map(|_| {
            let sub = store.subscribe();
            let (stop, received) = (stop.clone(), received.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(Notice::Changes { .. } | Notice::Overflow { .. }) =
                        sub.next_timeout(Duration::from_millis(50))
                    {
                        received.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let rss_before = rss_kb("VmRSS:");
    let started = Instant::now();
    for i in 0..n {
        let change = Change::put(path, revision(original, start + i));
        store.commit(Origin::Sdk("bench".into()), vec![change]).unwrap();
    }
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    readers.into_iter().for_each(|r| r.join().unwrap());
    let idle_state = match &idle {
        None => "-".to_owned(),
        Some(sub) => {
            let pending = sub.pending();
            let overflowed = matches!(sub.try_next(), Some(Notice::Overflow { .. }));
            format!("{pending} pending{}", if overflowed { ", overflow" } else { "" })
        }
    };
    format!(
        "| {subscribers} | {n} | {:.2} s | {:.0} | {} | {idle_state} | {} MB | {} MB |",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64(),
        received.load(Ordering::Relaxed),
        rss_before / 1024,
        rss_kb("VmHWM:") / 1024,
    )
}

fn feed_phase(args: &Args) {
    let root = fresh_copy(args, "s10k");
    let (store, _) = open(&root, false);
    let (path, original) = editable_document(&root);
    let n = args.feed_commits;
    println!(
        "\n## feed: {n} one-document commits into s10k, without and with {} subscribers (one never reads; watcher off)",
        args.subscribers
    );
    println!(
        "| subscribers | commits | time | commits/s | notices read | idle subscriber | RSS before | peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    // Without, with (and without again with `--feed-rounds 3`: the load on a shared machine drifts).
    println!("{}", feed_run(&store, &path, &original, 0, n, 0));
    println!("{}", feed_run(&store, &path, &original, n, n, args.subscribers));
    if args.feed_rounds > 2 {
        println!("{}", feed_run(&store, &path, &original, 2 * n, n, 0));
    }
    drop(store);
    discard(&root);
}
