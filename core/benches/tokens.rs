//! Semantic tokens of one large document: what a `semanticTokens/full` request costs the core
//! (the walk of the parse tree, placing in UTF-16 columns, the relative encoding), a delta
//! after a one-value edit, and a range request over one screen. Run by hand:
//! `nice cargo bench -p stardust-core --bench tokens -- STORE DOCUMENT [ROUNDS]`.

// The allocator the `stardust` binary ships with, so that the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use stardust_core::analysis::Analysis;
use stardust_core::ide;
use stardust_core::text::{Encoding, Span};

fn main() {
    // As the `stardust` binary does (src/main.rs): mimalloc's arenas without huge pages.
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_thp_disable(true);
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let (Some(store), Some(doc)) = (args.first(), args.get(1)) else {
        eprintln!("usage: tokens STORE DOCUMENT [ROUNDS]");
        return;
    };
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(30);
    let analysis = Analysis::load(Path::new(store)).expect("load the store");
    let text = analysis.document(doc).expect("the document is in the store").text.clone();
    // An edited copy: one digit of a value near the middle changed, for the delta.
    let middle =
        text[text.len() / 2..].find(|c: char| c.is_ascii_digit()).unwrap() + text.len() / 2;
    let mut edited = text.to_string();
    edited.replace_range(middle..middle + 1, if &text[middle..=middle] == "7" { "8" } else { "7" });
    let after = analysis.with_changes(vec![(doc.clone(), Some(edited.into_bytes()))]);
    let screen = Span::new(text.len() as u32 / 2, text.len() as u32 / 2 + 4000);

    let mut phases: Vec<(&str, Vec<Duration>)> = Vec::new();
    let mut time = |name: &'static str, d: Duration| match phases.iter_mut().find(|p| p.0 == name) {
        Some(p) => p.1.push(d),
        None => phases.push((name, vec![d])),
    };
    let mut count = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        let tokens = ide::semantic_tokens(&analysis, doc, None, Encoding::Utf16, false);
        let old = ide::encode(&tokens);
        time("full (utf-16)", t.elapsed());
        count = tokens.len();
        let t = Instant::now();
        let new = ide::encode(&ide::semantic_tokens(&after, doc, None, Encoding::Utf16, false));
        let edits = ide::delta(&old, &new);
        time("full + delta", t.elapsed());
        black_box(edits);
        let t = Instant::now();
        black_box(ide::semantic_tokens(&analysis, doc, Some(screen), Encoding::Utf16, false));
        time("range (4 KB)", t.elapsed());
    }
    // CPU time of full requests alone: on a loaded machine the wall times above include
    // waiting for a core; this is what the work itself costs.
    let before = cpu_ticks();
    for _ in 0..rounds {
        black_box(ide::encode(&ide::semantic_tokens(&analysis, doc, None, Encoding::Utf16, false)));
    }
    let cpu_ms = (cpu_ticks() - before) as f64 * 10.0 / rounds as f64;
    println!("{rounds} rounds, {} bytes, {count} tokens", text.len());
    println!("{:>16}: mean {cpu_ms:8.3} ms CPU", "full (utf-16)");
    for (name, mut ds) in phases {
        ds.sort();
        let p = |q: f64| ds[((ds.len() as f64 - 1.0) * q) as usize].as_secs_f64() * 1e3;
        println!("{name:>16}: p50 {:8.3} ms  p90 {:8.3} ms", p(0.5), p(0.9));
    }
}

/// User + system CPU time of this process, in clock ticks (10 ms on Linux), from /proc.
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses): utime is the 12th, stime 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    field(11) + field(12)
}
