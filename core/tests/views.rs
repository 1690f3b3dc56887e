//! Views (SPEC §19): data-driven results of each fixture in `test-data/views/` (every view's
//! file as of seq 7, after the store's diagnostics), and a live store whose views follow
//! commits off the commit path.

mod common;

use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

use common::fixture::{analyse, check_fixtures, render};
use stardust_core::query::Query;
use stardust_core::store::{Change, ChangeKind, Origin};
use stardust_core::views::{self, Live};

/// `//# max_bindings N` in the preamble bounds each query's work.
fn render_views(fixture: &str) -> String {
    let preamble = stardust_core::fixture::parse(fixture).preamble;
    let max_bindings = preamble
        .lines()
        .find_map(|l| l.strip_prefix("//# max_bindings "))
        .map_or(stardust_core::query::MAX_BINDINGS, |n| n.trim().parse().unwrap());
    let analysis = analyse(fixture);
    let mut out = render(&analysis);
    for def in &analysis.views().list {
        let result = views::compute(&analysis, def, 7, max_bindings);
        let shown = result.path.as_deref().unwrap_or("(not shown)");
        writeln!(out, "== {} {} {} rows={}", result.id, result.format, shown, result.rows).unwrap();
        // What makes the view stale: the types and fields its query reads (`*`: any).
        if let Some(query) = def.query.as_ref().and_then(|q| Query::from_json(q).ok()) {
            let reads = query.reads();
            let list = |set: Option<std::collections::BTreeSet<String>>| {
                set.map_or("*".to_owned(), |s| s.into_iter().collect::<Vec<_>>().join(" "))
            };
            writeln!(out, "reads types: {} fields: {}", list(reads.types), list(reads.attrs))
                .unwrap();
        }
        let text = String::from_utf8_lossy(&result.bytes);
        if result.format == "dust" && result.error.is_none() {
            let parse = stardust_core::syntax::parse(&text, stardust_core::syntax::Lang::Dust);
            assert!(parse.is_clean(), "{} is not DUST: {text}", result.id);
        }
        out.push_str(&text.replace('\r', "\\r"));
    }
    out
}

#[test]
fn view_fixtures() {
    check_fixtures("views", render_views);
}

const BOOKS: &str = "[{id book/dune type book title Dune year 1965}\n {id book/emma type book title Emma year 1815}]\n";
const VIEW: &str = "id view/titles\ntype view\nquery {find [?t ?y] where [[?b type book] [?b title ?t] [?b year ?y]]}\nformat csv\npath views/titles.csv\n";

fn text(live: &Live, path: &str) -> (u64, String) {
    let state = live.state();
    let rendered = state.at_path(path).expect("the view is shown");
    (rendered.seq, String::from_utf8(rendered.bytes.to_vec()).unwrap())
}

#[test]
fn live_views_follow_commits_that_touch_what_they_read_and_only_those() {
    let dir = tempfile::tempdir().unwrap();
    common::write(dir.path(), "books.dust", BOOKS);
    common::write(dir.path(), "views.dust", VIEW);
    common::write(dir.path(), "people.dust", "id person/ann\ntype person\nname Ann\n");
    let store = Arc::new(common::open(dir.path()));
    let start = store.snapshot().seq;
    let live = Live::start(store.clone()).unwrap();
    let events = live.subscribe();
    let (seq, first) = text(&live, "views/titles.csv");
    assert_eq!(seq, start);
    assert_eq!(first, "t,y\r\nDune,1965\r\nEmma,1815\r\n");

    // A person is no book: the view keeps its result and its seq.
    let c = store
        .commit(
            Origin::Mount,
            vec![Change::put("people.dust", "id person/ann\ntype person\nname Anne\n")],
        )
        .unwrap();
    assert!(live.wait_for(c.seq, Duration::from_secs(10)));
    assert_eq!(text(&live, "views/titles.csv"), (seq, first.clone()));

    // A book's unread field: kept too.
    let c = store
        .commit(
            Origin::Mount,
            vec![Change::put("books.dust", BOOKS.replace("year 1965", "year 1965 note x"))],
        )
        .unwrap();
    assert!(live.wait_for(c.seq, Duration::from_secs(10)));
    assert_eq!(text(&live, "views/titles.csv").0, seq);

    // A title: recomputed as of that commit, and an event names the path.
    let c = store
        .commit(
            Origin::Mount,
            vec![Change::put("books.dust", BOOKS.replace("title Dune", "title 'Dune, 1'"))],
        )
        .unwrap();
    assert!(live.wait_for(c.seq, Duration::from_secs(10)));
    assert_eq!(
        text(&live, "views/titles.csv"),
        (c.seq, "t,y\r\n\"Dune, 1\",1965\r\nEmma,1815\r\n".to_owned())
    );
    let event = events.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(event.seq, c.seq);
    assert_eq!(event.paths, [("views/titles.csv".to_owned(), ChangeKind::Changed)]);
    assert_eq!(live.state().index_json()["views"][0]["_seq"], c.seq);

    // A broken query: the file holds the error, not the old rows.
    let c = store
        .commit(
            Origin::Mount,
            vec![Change::put("views.dust", VIEW.replace("find [?t ?y]", "find [?t ?nope]"))],
        )
        .unwrap();
    assert!(live.wait_for(c.seq, Duration::from_secs(10)));
    let (seq, broken) = text(&live, "views/titles.csv");
    assert_eq!(seq, c.seq);
    let error: serde_json::Value = serde_json::from_str(&broken).unwrap();
    assert_eq!(error["error"]["code"], "invalid-arguments");
    assert_eq!(error["_seq"], c.seq);
    assert!(error["error"]["message"].as_str().unwrap().contains("?nope"), "{broken}");

    // The view deleted: its path goes.
    let c = store.commit(Origin::Mount, vec![Change::delete("views.dust")]).unwrap();
    assert!(live.wait_for(c.seq, Duration::from_secs(10)));
    assert!(live.state().at_path("views/titles.csv").is_none());
}

/// A snapshot's views are carried from the one before (only the changed documents are read
/// for views): after every kind of change they are exactly those found by reading every
/// document.
#[test]
fn views_carried_across_changes_are_those_of_the_whole_store() {
    use stardust_core::analysis::{Analysis, StoreContext};
    let dir = tempfile::tempdir().unwrap();
    let ctx = Arc::new(StoreContext::load(dir.path()).unwrap());
    let view = |id: &str, path: &str| {
        format!("id view/{id}\ntype view\nquery {{find [?t] where [[?b title ?t]]}}\npath {path}\n")
    };
    let mut files: std::collections::BTreeMap<String, String> = [
        ("books.dust", BOOKS.to_owned()),
        ("a.dust", view("a", "views/a.json")),
        ("c.dust", view("c", "views/c.json")),
    ]
    .into_iter()
    .map(|(p, t)| (p.to_owned(), t))
    .collect();
    let whole = |files: &std::collections::BTreeMap<String, String>| {
        let docs = files.iter().map(|(p, t)| (p.clone(), t.clone().into_bytes())).collect();
        Analysis::new(ctx.clone(), docs)
    };
    let mut analysis = whole(&files);
    assert_eq!(analysis.views().list.len(), 2);
    let steps: Vec<Vec<(&str, Option<String>)>> = vec![
        vec![("a.dust", Some(view("a", "views/moved.json")))],
        vec![("c.dust", None)],
        vec![("d.dust", Some(view("d", "views/a.json"))), ("books.dust", Some(VIEW.to_owned()))],
        vec![("e.json", Some("{\"plain\": true}\n".to_owned()))],
        vec![("books.dust", Some(BOOKS.to_owned())), ("a.dust", Some(BOOKS.to_owned()))],
    ];
    for (i, step) in steps.into_iter().enumerate() {
        let changes = step
            .iter()
            .map(|(p, t)| (p.to_string(), t.as_ref().map(|t| t.clone().into_bytes())))
            .collect();
        for (p, t) in step {
            match t {
                Some(t) => files.insert(p.to_owned(), t),
                None => files.remove(p),
            };
        }
        analysis = analysis.with_changes(changes);
        assert_eq!(analysis.views().list, whole(&files).views().list, "step {i}");
    }
}
