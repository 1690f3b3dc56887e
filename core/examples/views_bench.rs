//! Views' cost on commits (issue 20): the same commits with and without the views' thread
//! (`views::Live`) running, in alternating blocks of one run, and the time from a commit's
//! start until a 1,000-row view's result is of that commit's seq.
//!
//! ```text
//! views_bench STORE [--views 20] [--blocks 10] [--block 10] [--settle MS]
//! ```
//!
//! `--settle MS` waits that long after each commit (and after its views, when they run), in
//! both modes, so the next commit does not share the processor with the views' thread.
//! Without the thread, each commit is also followed by a pause as long as the last wait for
//! the views took, so the commits of both modes come after the same idle time (a commit
//! after a longer idle time is slower on a loaded machine: colder caches).
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
        let live = (b % 2 == 1).then(|| Live::start(store.clone()).expect("views start"));
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
    }
    println!("views: {views}, commits per mode: {}", without.len());
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
