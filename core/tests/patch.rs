//! Data-driven tests of patch planning: each fixture in `test-data/patch/` is a small store
//! (`//- path` sections) plus a `//- PATCH` section; its snapshot shows the resolved names,
//! the entities touched, the exact new text of every document, and the store's diagnostics
//! after the change (or the error).

mod common;

use std::fmt::Write;

use common::fixture::{analyse, check_fixtures, render};
use stardust_core::patch::{self, Patch};

fn run(fixture: &str) -> String {
    let (store, patch_text) = fixture.split_once("//- PATCH\n").expect("a //- PATCH section");
    let analysis = analyse(store);
    let mut out = String::new();
    let plan = Patch::from_text(patch_text).and_then(|p| patch::plan(&analysis, &p));
    let plan = match plan {
        Ok(plan) => plan,
        Err(err) => return format!("error[{}]: {err}\n", err.code()),
    };
    for (name, id) in &plan.resolved {
        writeln!(out, "resolved {name} -> {id}").unwrap();
    }
    writeln!(out, "created {:?}", plan.created).unwrap();
    writeln!(out, "changed {:?}", plan.changed).unwrap();
    writeln!(out, "deleted {:?}", plan.deleted).unwrap();
    let mut changes = Vec::new();
    for doc in &plan.documents {
        match &doc.after {
            Some(text) => {
                let how = if doc.before.is_some() { "changed" } else { "created" };
                write!(out, "=== {} ({how})\n{text}", doc.path).unwrap();
                changes.push((doc.path.clone(), Some(text.clone().into_bytes())));
            }
            None => {
                writeln!(out, "=== {} (deleted)", doc.path).unwrap();
                changes.push((doc.path.clone(), None));
            }
        }
    }
    write!(out, "=== diagnostics after\n{}", render(&analysis.with_changes(changes))).unwrap();
    out
}

#[test]
fn patch_fixtures() {
    check_fixtures("patch", run);
}
