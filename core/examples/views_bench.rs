//! Views' cost on commits (issue 20): the same commits with and without the views' thread
//! (`views::Live`) running, in alternating blocks of one run, and the time from a commit's
//! start until a 1,000-row view's result is of that commit's seq.
//!
//! ```text
//! views_bench STORE [--views 20] [--blocks 10] [--block 10] [--settle MS] [--steady]
//! ```
//!
//! `--settle MS` waits that long after each commit (and after its views, when they run), in
//! both modes, so the next commit does not share the processor with the views' thread.
//! Without the thread, each commit is also followed by a pause as long as the last wait for
//! the views took, so the commits of both modes come after the same idle time (a commit
//! after a longer idle time is slower on a loaded machine: colder caches).
//!
//! `--steady` instead commits every `--settle` ms in both modes without waiting for the views:
//! the views' thread recomputes while the next commits run (the case where it competes with
//! them for the processor), and a second thread records when the 1,000-row view reaches each
//! commit's seq (a batch may cover several commits).
//!
//! STORE is a store from `gen_store` (it is changed: `views.dust` and `bench/` are written).
//! Every commit creates one book, which every view reads, so every commit makes the thread
//! recompute views: the worst case for views. The views are in the store in both modes; what
//! differs is only whether their thread runs.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stardust_core::store::{Change, OpenOptions, Origin, Store};
use stardust_core::views::Live;

// The allocator of the `stardust` binary, so the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples.get(i).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(root) = args.first().map(PathBuf::from) else {
        eprintln!("usage: views_bench STORE [--views 20] [--blocks 10] [--block 10] [--settle MS]");
        return ExitCode::from(2);
    };
    let (views, blocks, block) =
        (arg(&args, "--views", 20), arg(&args, "--blocks", 10), arg(&args, "--block", 10));
    let settle = Duration::from_millis(arg(&args, "--settle", 0) as u64);
    let steady = args.iter().any(|a| a == "--steady");
    // One view of 1,000 rows (the latency figure), the others a year's books each.
    let mut text = String::from(
        "[{id view/v0 type view format json path views/v0.json\n  query {find [?b ?t] where [[?b type book] [?b title ?t]] limit 1000}}\n",
    );
    for i in 1..views {
        text.push_str(&format!(
            " {{id view/v{i} type view format csv path views/v{i}.csv\n  query {{find [?t ?y] where [[?b type book] [?b title ?t] [?b year ?y]] filter ['?y = {}']}}}}\n",
            1900 + i
        ));
    }
    text.push_str("]\n");
    std::fs::write(root.join("views.dust"), text).expect("views.dust is written");
    let store = Arc::new(
        Store::open(&root, OpenOptions { watch: false, ..OpenOptions::default() })
            .expect("the store opens"),
    );
    let (mut without, mut with, mut updated) = (Vec::new(), Vec::new(), Vec::new());
    let mut n = 0;
    let mut pause = Duration::from_millis(300);
    for b in 0..blocks * 2 {
        let live = (b % 2 == 1).then(|| Arc::new(Live::start(store.clone()).expect("views start")));
        // In steady mode: commits' (seq, start) to a thread that waits for each in turn.
        let (tx, waiter) = match (&live, steady) {
            (Some(live), true) => {
                let (tx, rx) = std::sync::mpsc::channel::<(u64, Instant)>();
                let live = live.clone();
                let waiter = std::thread::spawn(move || {
                    rx.into_iter()
                        .map(|(seq, started)| {
                            assert!(live.wait_for(seq, Duration::from_secs(60)));
                            started.elapsed()
                        })
                        .collect::<Vec<_>>()
                });
                (Some(tx), Some(waiter))
            }
            _ => (None, None),
        };
        for _ in 0..block {
            n += 1;
            let doc = format!(
                "id book/bench-{n}\ntype book\ntitle 'Bench {n}'\nyear 1950\nstatus draft\ngenres [fantasy]\npages 100\nisbn '9780000000000'\nprice {{amount 1.0 currency EUR}}\n"
            );
            let started = Instant::now();
            let committed = store
                .commit(Origin::Mount, vec![Change::create(format!("bench/b{n}.dust"), doc)])
                .expect("the commit is accepted");
            let took = started.elapsed();
            match &live {
                None if steady => without.push(took),
                Some(_) if steady => {
                    with.push(took);
                    tx.as_ref().expect("a waiter").send((committed.seq, started)).unwrap();
                }
                None => {
                    without.push(took);
                    std::thread::sleep(pause);
                }
                Some(live) => {
                    with.push(took);
                    assert!(live.wait_for(committed.seq, Duration::from_secs(60)));
                    updated.push(started.elapsed());
                    pause = started.elapsed().saturating_sub(took);
                }
            }
            std::thread::sleep(settle);
        }
        drop(tx);
        if let Some(waiter) = waiter {
            updated.extend(waiter.join().expect("the waiter ends"));
        }
    }
    let how = if steady { "steady" } else { "waiting for the views" };
    println!("views: {views}, commits per mode: {}, {how}", without.len());
    let (w50, w95) = (percentile(&mut without, 0.5), percentile(&mut without, 0.95));
    let (v50, v95) = (percentile(&mut with, 0.5), percentile(&mut with, 0.95));
    println!("commit without the views' thread: p50 {} p95 {}", ms(w50), ms(w95));
    println!(
        "commit with the views' thread:    p50 {} p95 {}  (p50 ratio {:.2}x)",
        ms(v50),
        ms(v95),
        v50.as_secs_f64() / w50.as_secs_f64()
    );
    println!(
        "commit start -> 1,000-row view of that seq: p50 {} p95 {}",
        ms(percentile(&mut updated, 0.5)),
        ms(percentile(&mut updated, 0.95))
    );
    ExitCode::SUCCESS
}
