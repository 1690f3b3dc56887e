//! Mutation figures (issue 5): preview and confirm of a patch touching 1,000 entities across
//! 100 documents of a 100,000-entity store.
//!
//! A plain bench binary: each round previews a patch that sets `title` or `name` on every
//! entity of 100 documents, then confirms it (durable commit included), alternating the value
//! so that every round changes all 1,000 entities.
//!
//! ```text
//! cargo run --release -p stardust-core --example gen_store -- DATA/s10k --docs 10000 --entities 100000
//! cargo bench -p stardust-core --bench mutation -- --store DATA/s10k [--rounds 10]
//! ```
//! The store is copied to a temporary folder first; the original is not changed.

mod util;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stardust_core::service::{Front, Service};
use stardust_core::store::{OpenOptions, Store};

fn main() {
    let mut store = None;
    let mut rounds = 10usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--store" => store = args.next().map(PathBuf::from),
            "--rounds" => rounds = args.next().and_then(|r| r.parse().ok()).unwrap_or(rounds),
            "--bench" => {}
            other => panic!("unknown argument {other}; see the module docs"),
        }
    }
    let source = store.expect("give --store DATA/s10k (see the module docs)");
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let root = tmp.path().join("store");
    util::copy_dir(&source, &root).expect("copy the store");

    let started = Instant::now();
    let store = Store::open(&root, OpenOptions { watch: false, ..OpenOptions::default() }).unwrap();
    let service = Service::new(store);
    let session = service.open_session(Front::Sdk, "bench");
    let snapshot = service.store().snapshot();
    println!(
        "store: {} documents, {} entities, opened in {:.0} ms",
        snapshot.analysis.document_count(),
        snapshot.analysis.entity_count(),
        started.elapsed().as_secs_f64() * 1e3
    );

    // Ten entities with a plain string title or name from each of 100 documents.
    let mut targets: Vec<(String, &'static str)> = Vec::new();
    let mut docs = 0;
    for doc in snapshot.analysis.documents() {
        if docs == 100 {
            break;
        }
        let found: Vec<(String, &'static str)> = (0..doc.entities.len())
            .filter_map(|i| {
                let (_, v) = doc.entity_node(i)?;
                let field = ["title", "name"]
                    .into_iter()
                    .find(|f| v.get(*f).is_some_and(Value::is_string))?;
                Some((doc.entities[i].id.clone()?, field))
            })
            .take(10)
            .collect();
        if found.len() == 10 {
            targets.extend(found);
            docs += 1;
        }
    }
    println!("patch: set on {} entities across {docs} documents", targets.len());

    let (mut previews, mut confirms) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let ops: Vec<Value> = targets
            .iter()
            .map(|(id, field)| json!({"set": {"id": id, *field: format!("Revision {round} of {id}")}}))
            .collect();
        let args = json!({"document": {"ops": ops}});
        let t = Instant::now();
        let preview = service.execute(&session, "stardust.patch.apply", args).unwrap();
        previews.push(t.elapsed());
        assert_eq!(preview["committable"], true, "{}", preview["reasons"]);
        assert_eq!(preview["entities"]["changed"].as_array().unwrap().len(), targets.len());
        let t = Instant::now();
        service
            .execute(
                &session,
                "stardust.preview.confirm",
                json!({"previewId": preview["previewId"]}),
            )
            .unwrap();
        confirms.push(t.elapsed());
    }
    breakdown(&service, &targets);
    report("preview", &mut previews);
    report("confirm", &mut confirms);
}

/// Where a preview's time goes: planning, re-analysis, the save authority's rule.
fn breakdown(service: &Service, targets: &[(String, &'static str)]) {
    use stardust_core::patch::{Op, Patch, plan};
    let snapshot = service.store().snapshot();
    let analysis = &snapshot.analysis;
    let patch = Patch {
        ops: targets
            .iter()
            .map(|(id, f)| Op::Set { id: id.clone(), fields: vec![(f.to_string(), json!("x"))] })
            .collect(),
    };
    let t = Instant::now();
    let planned = plan(analysis, &patch).unwrap();
    let t_plan = t.elapsed();
    let changes: Vec<(String, Option<Vec<u8>>)> = planned
        .documents
        .iter()
        .map(|d| (d.path.clone(), d.after.clone().map(String::into_bytes)))
        .collect();
    let paths: Vec<String> = changes.iter().map(|c| c.0.clone()).collect();
    let t = Instant::now();
    let after = analysis.with_changes(changes);
    let t_analyse = t.elapsed();
    let t = Instant::now();
    let affected = after.affected_by(analysis, &paths);
    let t_affected = t.elapsed();
    let t = Instant::now();
    let refuse = &analysis.config().refuse;
    let _ = stardust_core::analysis::new_problems(analysis, &after, &paths, refuse);
    let t_rule = t.elapsed();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "preview parts: plan {:.1} ms, re-analysis {:.1} ms, affected ({} documents) {:.1} ms, save rule {:.1} ms",
        ms(t_plan),
        ms(t_analyse),
        affected.len(),
        ms(t_affected),
        ms(t_rule)
    );
}

fn report(what: &str, samples: &mut [Duration]) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{what}: p50 {:.1} ms, max {:.1} ms over {} rounds",
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1]),
        samples.len()
    );
}
