//! A one-value edit in a large document: what `Analysis::with_changes` and the diagnostics of
//! the edited document cost, phase by phase. Run by hand:
//! `cargo bench -p stardust-core --bench edit -- STORE DOCUMENT [ROUNDS]`. To profile one
//! path alone, set `ONLY_SPLICE=1` (the in-place edit) or `ONLY_WITH_CHANGES=1` (the whole
//! re-analysis). "first edit" is the first edit after an editor's open, whose document the
//! store's snapshot shares (copied on the edit's path); "copy ahead" and "first after copy" are
//! what `ide::Buffers` does instead (the copy made after the open, then the edit).

// The allocator the `stardust` binary ships with, so that the figures are the product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use stardust_core::analysis::{Analysis, Document};
use stardust_core::syntax::{self, Lang};

fn main() {
    // As the `stardust` binary does (src/main.rs): mimalloc's arenas without huge pages.
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_thp_disable(true);
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let (Some(store), Some(doc)) = (args.first(), args.get(1)) else {
        eprintln!("usage: edit STORE DOCUMENT [ROUNDS]");
        return;
    };
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(30);
    let analysis = Analysis::load(Path::new(store)).expect("load the store");
    let text = std::fs::read_to_string(Path::new(store).join(doc)).expect("read the document");
    let needle = "\"year\": ";
    let at: Vec<usize> = text.match_indices(needle).map(|(i, _)| i + needle.len()).collect();
    assert!(!at.is_empty(), "the document has no \"year\" member to edit");

    let mut phases: Vec<(&str, Vec<Duration>)> = Vec::new();
    let mut time = |name: &'static str, d: Duration| match phases.iter_mut().find(|p| p.0 == name) {
        Some(p) => p.1.push(d),
        None => phases.push((name, vec![d])),
    };
    let whole_phases = std::env::var_os("ONLY_SPLICE").is_none();
    let splice_phases = std::env::var_os("ONLY_WITH_CHANGES").is_none();
    // The store's snapshot, which an editor's first edit finds shared with its own.
    let store = analysis.clone();
    let mut current = analysis;
    for round in 0..rounds {
        let pos = at[(round * 7919) % at.len()];
        let end = pos + text[pos..].find([',', '\n', '}']).unwrap();
        let edited = format!("{}\"x\"{}", &text[..pos], &text[end..]);

        if whole_phases {
            let t = Instant::now();
            black_box(syntax::parse(&edited, Lang::Json));
            time("syntax::parse", t.elapsed());
            let t = Instant::now();
            let d = Document::new(doc.clone(), Lang::Json, edited.clone().into_bytes());
            time("Document::new", t.elapsed());
            let t = Instant::now();
            black_box(d.parse.clone());
            time("Parse::clone", t.elapsed());
            let t = Instant::now();
            let whole =
                current.with_changes(vec![(doc.clone(), Some(edited.clone().into_bytes()))]);
            time("with_changes", t.elapsed());
            drop(whole);
        }
        if !splice_phases {
            continue;
        }
        // The first edit after an open: the document is shared with the store's snapshot, and
        // copied on the edit's path.
        let t = Instant::now();
        let first =
            store.clone().into_with_changes(vec![(doc.clone(), Some(edited.clone().into_bytes()))]);
        time("first edit", t.elapsed());
        drop(first);
        // What the buffers do instead (`ide::Buffers`): the copy made after the open, off the
        // edit's path, then the first edit on it.
        let t = Instant::now();
        let owning = store.clone().owning(std::slice::from_ref(doc));
        time("copy ahead", t.elapsed());
        let t = Instant::now();
        let first =
            owning.into_with_changes(vec![(doc.clone(), Some(edited.clone().into_bytes()))]);
        time("first after copy", t.elapsed());
        drop(first);
        let t = Instant::now();
        black_box((**store.document(doc).unwrap()).clone());
        time("Document::clone", t.elapsed());
        let d = store.document(doc).unwrap();
        let t = Instant::now();
        black_box(d.parse.value.clone());
        time("Value::clone", t.elapsed());
        let t = Instant::now();
        black_box(d.parse.root.clone());
        time("Node::clone", t.elapsed());
        // The splice needs the only copy of the snapshot, as an editor's chain of edits has.
        let t = Instant::now();
        current = current.into_with_changes(vec![(doc.clone(), Some(edited.into_bytes()))]);
        time("into_with_changes", t.elapsed());
        let t = Instant::now();
        black_box(current.diagnostics_of(doc));
        time("diagnostics_of", t.elapsed());
        // Put the text back for the next round, in place as well.
        current = current.into_with_changes(vec![(doc.clone(), Some(text.clone().into_bytes()))]);
    }
    println!("{} rounds, {} bytes", rounds, text.len());
    for (name, mut ds) in phases {
        ds.sort();
        let p = |q: f64| ds[((ds.len() as f64 - 1.0) * q) as usize].as_secs_f64() * 1e3;
        println!("{name:>16}: p50 {:8.3} ms  p90 {:8.3} ms", p(0.5), p(0.9));
    }
}
