//! The buffers without a transport: one test per behaviour (edit order, the cache and its
//! chaining, a commit's new seq, a close racing a publication, the read-only fallback, edits
//! on disk picked up).

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::store::{Change, Origin};

/// A JSON entity array, whose items an edit splices one at a time.
const NOTES: &str = r#"[{"id": "note/a", "type": "note", "title": "A"},
 {"id": "note/b", "type": "note", "title": "B"}]
"#;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A store of two documents.
fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "notes.json", NOTES);
    write(dir.path(), "other.json", r#"{"id": "other/x", "type": "other"}"#);
    dir
}

/// Without the watcher, so a test decides when the store changes.
fn options() -> OpenOptions {
    OpenOptions { watch: false, ..OpenOptions::default() }
}

fn open(root: &Path) -> Buffers<()> {
    match Buffers::<()>::open(&root.canonicalize().unwrap(), options()).unwrap() {
        Opened::Store(store) => Buffers::attached(Arc::new(store)),
        Opened::ReadOnly(_) => panic!("the store should open for writing"),
    }
}

/// Buffers over a store another owner holds.
fn read_only(root: &Path) -> Buffers<()> {
    match Buffers::<()>::open(root, options()).unwrap() {
        Opened::ReadOnly(buffers) => *buffers,
        Opened::Store(_) => panic!("the store should be busy"),
    }
}

/// Byte ranges as they are: the core's own position type.
fn bytes(_: &LineIndex, _: &str, range: &Range<u32>) -> Option<Range<u32>> {
    Some(range.clone())
}

fn splice(range: Range<u32>, text: &str) -> Edit<Range<u32>> {
    Edit::Splice { range, text: text.to_owned() }
}

fn text_of<M>(overlay: &Overlay<M>, path: &str) -> String {
    overlay.analysis.document(path).map(|d| d.text.to_string()).unwrap_or_default()
}

fn document_ptr<M>(overlay: &Overlay<M>, path: &str) -> *const crate::analysis::Document {
    Arc::as_ptr(overlay.analysis.document(path).unwrap())
}

#[test]
fn edits_apply_strictly_in_order() {
    let dir = store();
    let buffers = open(dir.path());
    assert!(buffers.open_buffer("a.json".to_owned(), "abc".to_owned(), 1, ()));
    // The second edit is resolved against the text the first one left.
    let edited = buffers.edit("a.json", 2, [splice(0..1, "XX"), splice(2..3, "Y")], bytes);
    assert_eq!(edited, Edited::Applied);
    let overlay = buffers.snapshot();
    let buffer = overlay.buffer("a.json").unwrap();
    assert_eq!((buffer.text(), buffer.version()), ("XXYc", 2));
    // A refused edit stops the rest: they were computed against a text we do not have.
    let edited = buffers.edit(
        "a.json",
        3,
        [splice(0..0, "1"), splice(9..10, "z"), splice(0..0, "2")],
        bytes,
    );
    assert_eq!(edited, Edited::Refused(1));
    let edited = buffers.edit("a.json", 4, [Edit::Replace("new\ntext".to_owned())], bytes);
    assert_eq!(edited, Edited::Applied);
    let edited = buffers.edit("a.json", 5, [splice(4..4, "é"), splice(5..5, "!")], bytes);
    assert_eq!(edited, Edited::Refused(1), "offset 5 is inside é");
    let overlay = buffers.snapshot();
    let buffer = overlay.buffer("a.json").unwrap();
    assert_eq!((buffer.text(), buffer.version()), ("new\nétext", 5));
    assert_eq!(*buffer.index(), LineIndex::new(buffer.text()), "the line index follows the text");
    assert_eq!(text_of(&overlay, "a.json"), "new\nétext", "the analysis has the buffer's text");
    assert_eq!(buffers.edit("b.json", 1, [splice(0..0, "x")], bytes), Edited::NotOpen);
    assert!(!buffers.open_buffer("notes.txt".to_owned(), String::new(), 1, ()), "not a document");
}

#[test]
fn the_cache_reuses_an_analysis_and_chains_from_the_previous_one() {
    let dir = store();
    let buffers = open(dir.path());
    let edited_notes = NOTES.replace("\"A\"", "\"A1\"");
    buffers.open_buffer("notes.json".to_owned(), edited_notes.clone(), 1, ());
    buffers.open_buffer("other.json".to_owned(), r#"{"id": "other/y"}"#.to_owned(), 1, ());
    let first = buffers.snapshot();
    let again = buffers.snapshot();
    assert_eq!(first.generation(), again.generation());
    assert!(
        std::ptr::eq(document_ptr(&first, "notes.json"), document_ptr(&again, "notes.json")),
        "the same (generation, seq) is analysed once"
    );
    let at = |i: usize| u32::try_from(edited_notes.find("A1").unwrap() + i).unwrap();
    buffers.edit("notes.json", 2, [splice(at(2)..at(2), "2")], bytes);
    let second = buffers.snapshot();
    assert!(second.generation() > first.generation());
    assert!(text_of(&second, "notes.json").contains("\"A12\""));
    // Chained: the buffer whose text did not change keeps the previous analysis' document,
    // where an analysis from the store would have parsed it again.
    assert!(std::ptr::eq(document_ptr(&first, "other.json"), document_ptr(&second, "other.json")));

    // Nothing else holds the previous analysis: the edited document is spliced in place.
    let before = document_ptr(&second, "notes.json") as usize;
    drop((first, again, second));
    buffers.edit("notes.json", 3, [splice(at(3)..at(3), "3")], bytes);
    let third = buffers.snapshot();
    assert!(text_of(&third, "notes.json").contains("\"A123\""));
    assert_eq!(document_ptr(&third, "notes.json") as usize, before, "edited in place");
    let fresh = Analysis::load(buffers.root()).unwrap().with_changes(vec![
        ("notes.json".to_owned(), Some(third.buffer("notes.json").unwrap().text().into())),
        ("other.json".to_owned(), Some(third.buffer("other.json").unwrap().text().into())),
    ]);
    assert_eq!(third.analysis.all_diagnostics(), fresh.all_diagnostics(), "as a fresh analysis");
}

#[test]
fn a_commit_after_the_analysis_gives_a_fresh_one() {
    let dir = store();
    let buffers = open(dir.path());
    buffers.open_buffer("notes.json".to_owned(), NOTES.replace("\"A\"", "\"A1\""), 1, ());
    let before = buffers.snapshot();
    assert!(text_of(&before, "other.json").contains("other/x"));
    let store = buffers.store().unwrap();
    store
        .commit(
            Origin::Lsp("test".to_owned()),
            vec![
                Change::put("other.json", r#"{"id": "other/z", "type": "other"}"#),
                Change::put("notes.json", "[]"),
            ],
        )
        .unwrap();
    // No new generation yet (the change feed has not told the front): the seq alone says the
    // cached analysis is stale.
    let after = buffers.snapshot();
    assert_eq!(after.generation(), before.generation());
    assert!(text_of(&after, "other.json").contains("other/z"), "the commit is seen");
    assert!(text_of(&after, "notes.json").contains("\"A1\""), "the buffer still overlays it");
    assert!(text_of(&before, "other.json").contains("other/x"), "an overlay never changes");
}

#[test]
fn a_buffer_closed_while_its_analysis_runs_gets_nothing_published() {
    let dir = store();
    let buffers = open(dir.path());
    buffers.open_buffer("notes.json".to_owned(), NOTES.to_owned(), 1, ());
    buffers.open_buffer("other.json".to_owned(), "{".to_owned(), 1, ());
    // The analysis is taken (a publication is under way), then the buffer closes before it
    // is sent.
    let running = buffers.snapshot();
    let mut sent = Vec::new();
    assert!(buffers.close("other.json", |b| sent.push(format!("cleared {}", b.path()))));
    assert!(!buffers.close("other.json", |_| panic!("closed twice")));
    assert!(buffers.publish(&running, |b| sent.push(b.path().to_owned())));
    assert_eq!(sent, ["cleared other.json", "notes.json"]);

    // Closed and opened again: the old analysis is not the new buffer's.
    buffers.open_buffer("other.json".to_owned(), "{}".to_owned(), 1, ());
    let old = buffers.snapshot();
    buffers.close("other.json", |_| {});
    buffers.open_buffer("other.json".to_owned(), "[]".to_owned(), 1, ());
    let mut sent = Vec::new();
    assert!(buffers.publish(&old, |b| sent.push(b.path().to_owned())));
    assert_eq!(sent, ["notes.json"]);

    // Publication is in generation order: an older overlay after a newer one sends nothing.
    let newer = buffers.snapshot();
    assert!(buffers.publish(&newer, |_| {}));
    assert!(!buffers.publish(&old, |_| panic!("a stale overlay is published")));
    assert!(!buffers.publish(&newer, |_| panic!("published twice")));
}

#[test]
fn a_busy_store_is_served_read_only() {
    let dir = store();
    let root = dir.path().canonicalize().unwrap();
    let owner = Store::open(&root, options()).unwrap();
    let buffers = read_only(&root);
    assert_eq!(buffers.read_only().map(StoreError::code), Some(crate::Code::Busy));
    assert!(buffers.store().is_none());
    assert_eq!(buffers.root(), root);
    let overlay = buffers.snapshot();
    assert_eq!(text_of(&overlay, "notes.json"), NOTES, "the documents as read from disk");
    buffers.open_buffer("notes.json".to_owned(), "[]".to_owned(), 1, ());
    assert_eq!(text_of(&buffers.snapshot(), "notes.json"), "[]", "buffers overlay them");
    drop(owner);
    // A store that opens is not read-only; there its watcher takes in edits on disk.
    let buffers = open(&root);
    assert!(buffers.read_only().is_none());
    assert!(!buffers.mark_stale(["notes.json".to_owned()]));
}

#[test]
fn read_only_picks_up_edits_on_disk() {
    let dir = store();
    let root = dir.path().canonicalize().unwrap();
    let _owner = Store::open(&root, options()).unwrap();
    let buffers = read_only(&root);
    buffers.open_buffer("notes.json".to_owned(), "[]".to_owned(), 1, ());
    let before = buffers.snapshot();
    write(&root, "other.json", r#"{"id": "other/new"}"#);
    assert!(text_of(&buffers.snapshot(), "other.json").contains("other/x"), "not yet read");
    assert!(!buffers.mark_stale(["readme.txt".to_owned()]), "not a document");
    assert!(buffers.mark_stale(["other.json".to_owned()]));
    assert!(!buffers.mark_stale(["other.json".to_owned()]), "already marked");
    let after = buffers.snapshot();
    assert!(after.generation() > before.generation());
    assert!(text_of(&after, "other.json").contains("other/new"));
    assert_eq!(text_of(&after, "notes.json"), "[]", "the buffer still overlays its file");
    // A closed buffer's file is read again: it may have been saved.
    write(&root, "notes.json", "[{}]");
    buffers.close("notes.json", |_| {});
    assert_eq!(text_of(&buffers.snapshot(), "notes.json"), "[{}]");
    std::fs::remove_file(root.join("other.json")).unwrap();
    buffers.mark_stale(["other.json".to_owned()]);
    assert!(buffers.snapshot().analysis.document("other.json").is_none(), "deleted on disk");
}

#[test]
fn no_publication_follows_a_close_when_they_race() {
    let dir = store();
    let root = dir.path().canonicalize().unwrap();
    let store = match Buffers::<()>::open(&root, options()).unwrap() {
        Opened::Store(store) => Arc::new(store),
        Opened::ReadOnly(_) => panic!("the store should open for writing"),
    };
    // Each open's number is its buffer's meta; a close records the number it closed.
    let buffers: Buffers<u32> = Buffers::attached(store);
    let events = std::sync::Mutex::new(Vec::new());
    buffers.open_buffer("notes.json".to_owned(), NOTES.to_owned(), 1, 0);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let overlay = buffers.snapshot();
                buffers.publish(&overlay, |b| events.lock().unwrap().push(("sent", *b.meta())));
            }
        });
        for n in 1..=300 {
            // Publications run meanwhile, some with an analysis taken before this close.
            std::thread::sleep(std::time::Duration::from_micros(200));
            buffers.close("notes.json", |b| events.lock().unwrap().push(("cleared", *b.meta())));
            buffers.open_buffer("notes.json".to_owned(), NOTES.to_owned(), 1, n);
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let events = events.into_inner().unwrap();
    let mut cleared = None;
    for (what, n) in events {
        match what {
            "cleared" => cleared = Some(n),
            _ => assert!(cleared.is_none_or(|c| n > c), "open {n} published after its clear"),
        }
    }
}

/// A whole-text change of one value takes the range edit's path: the line index is updated
/// around the edit, and the document is spliced in place from the previous generation's
/// analysis, with the diagnostics of a fresh analysis.
#[test]
fn a_whole_text_change_is_taken_as_its_range_edit() {
    let dir = store();
    let buffers = open(dir.path());
    buffers.open_buffer("notes.json".to_owned(), NOTES.to_owned(), 1, ());
    // The first change after the open: the store's snapshot shares the document, which is
    // copied and then spliced.
    let cold = NOTES.replace("\"A\"", "\"A1\"");
    let opened = buffers.snapshot();
    buffers.edit("notes.json", 2, [Edit::Replace(cold.clone())], bytes);
    let first = buffers.snapshot();
    assert_eq!(text_of(&first, "notes.json"), cold);
    assert_eq!(text_of(&opened, "notes.json"), NOTES, "the open's analysis is untouched");
    let before = document_ptr(&first, "notes.json") as usize;
    drop((opened, first));
    let changed = cold.replace("\"B\"", "2");
    let edited = buffers.edit("notes.json", 2, [Edit::Replace(changed.clone())], bytes);
    assert_eq!(edited, Edited::Applied);
    let overlay = buffers.snapshot();
    assert_eq!(document_ptr(&overlay, "notes.json") as usize, before, "edited in place");
    let buffer = overlay.buffer("notes.json").unwrap();
    assert_eq!((buffer.text(), buffer.version()), (changed.as_str(), 2));
    assert_eq!(*buffer.index(), LineIndex::new(buffer.text()), "the line index follows the text");
    let fresh = Analysis::load(buffers.root())
        .unwrap()
        .with_changes(vec![("notes.json".to_owned(), Some(changed.clone().into_bytes()))]);
    assert_eq!(overlay.analysis.all_diagnostics(), fresh.all_diagnostics(), "as a fresh analysis");
    assert!(!overlay.analysis.diagnostics_of("notes.json").is_empty(), "a number is no title");

    // The same text again changes nothing: the buffer keeps its text, shared with the overlay.
    buffers.edit("notes.json", 3, [Edit::Replace(changed)], bytes);
    let again = buffers.snapshot();
    assert!(std::ptr::eq(
        overlay.buffer("notes.json").unwrap().text(),
        again.buffer("notes.json").unwrap().text()
    ));
}

/// A burst of whole texts, each its own notification, keeps only the last: none is compared
/// with the text until an analysis asks, and then only the last, once. A range edit after a
/// whole text is resolved against that whole text.
#[test]
fn a_burst_of_whole_texts_is_coalesced_to_the_latest() {
    let dir = store();
    let buffers = open(dir.path());
    buffers.open_buffer("notes.json".to_owned(), NOTES.to_owned(), 1, ());
    let first = buffers.snapshot().generation();
    let text = |n: i32| NOTES.replace("\"B\"", &format!("\"B{n}\""));
    for n in 2..=101 {
        assert_eq!(buffers.edit("notes.json", n, [Edit::Replace(text(n))], bytes), Edited::Applied);
    }
    assert_eq!(buffers.lock().settled, 0, "nothing compared before an analysis");
    let last = buffers.generation();
    assert!(buffers.snapshot_latest(first).is_none(), "an older generation is not analysed");
    let overlay = buffers.snapshot_latest(last).expect("the latest generation is analysed");
    assert_eq!(buffers.lock().settled, 1, "one comparison for the burst");
    assert_eq!(text_of(&overlay, "notes.json"), text(101));
    assert_eq!(overlay.buffer("notes.json").unwrap().version(), 101);

    // Whole texts and range edits mixed in one change, in order.
    let at = u32::try_from(text(102).find("B102").unwrap()).unwrap() + 4;
    let edits = [Edit::Replace(text(7)), Edit::Replace(text(102)), splice(at..at, "!")];
    assert_eq!(buffers.edit("notes.json", 102, edits, bytes), Edited::Applied);
    assert_eq!(buffers.lock().settled, 2, "the range edit needed the last whole text");
    let overlay = buffers.snapshot();
    assert_eq!(text_of(&overlay, "notes.json"), text(102).replace("B102", "B102!"));
    let buffer = overlay.buffer("notes.json").unwrap();
    assert_eq!(*buffer.index(), LineIndex::new(buffer.text()), "the line index follows the text");

    // A buffer closed with a whole text pending is closed with that text.
    buffers.edit("notes.json", 103, [Edit::Replace(text(103))], bytes);
    assert!(buffers.close("notes.json", |b| assert_eq!(b.text(), text(103))));
}

/// An editor opening a saved file sends the text the store holds: the buffer takes the
/// document's line index instead of building one, and the open's analysis is the store's
/// snapshot itself (its documents shared, nothing parsed or validated again). Another text
/// gets its own index.
#[test]
fn opening_the_stored_text_reuses_its_analysis() {
    let dir = store();
    let buffers = open(dir.path());
    let stored = buffers.store().unwrap().snapshot().analysis.clone();
    assert!(buffers.open_buffer("notes.json".to_owned(), NOTES.to_owned(), 1, ()));
    assert_eq!(buffers.lock().reused, 1, "the stored text's index is taken");
    let overlay = buffers.snapshot();
    let buffer = overlay.buffer("notes.json").unwrap();
    assert_eq!(*buffer.index(), LineIndex::new(NOTES), "the line index is that of the text");
    assert!(std::ptr::eq(
        Arc::as_ptr(stored.document("notes.json").unwrap()),
        document_ptr(&overlay, "notes.json")
    ));

    let other = NOTES.replace("\"A\"", "\"A\"\r\n");
    assert!(buffers.open_buffer("notes.json".to_owned(), other.clone(), 2, ()));
    assert!(buffers.open_buffer("new.json".to_owned(), "[]".to_owned(), 1, ()));
    assert_eq!(buffers.lock().reused, 1, "a text the store does not hold is indexed");
    let overlay = buffers.snapshot();
    assert_eq!(*overlay.buffer("notes.json").unwrap().index(), LineIndex::new(&other));
    assert_eq!(text_of(&overlay, "notes.json"), other);
}

/// The first edit after an open of the stored text does not copy the document on its path:
/// the store's snapshot shares it, and the open's analysis had a copy made ahead, which the
/// edit splices. The store's snapshot and the open's analysis keep the text they had.
#[test]
fn the_first_edit_after_an_open_finds_the_document_copied_ahead() {
    let dir = store();
    let buffers = open(dir.path());
    let stored = buffers.store().unwrap().snapshot().analysis.clone();
    buffers.open_buffer("notes.json".to_owned(), NOTES.to_owned(), 1, ());
    let opened = buffers.snapshot();
    assert!(std::ptr::eq(
        Arc::as_ptr(stored.document("notes.json").unwrap()),
        document_ptr(&opened, "notes.json")
    ));
    let copies = crate::analysis::copies_on_this_thread();
    let at = u32::try_from(NOTES.find("\"A\"").unwrap()).unwrap() + 2;
    assert_eq!(buffers.edit("notes.json", 2, [splice(at..at, "1")], bytes), Edited::Applied);
    let first = buffers.snapshot();
    let edited = NOTES.replace("\"A\"", "\"A1\"");
    assert_eq!(text_of(&first, "notes.json"), edited);
    assert_eq!(crate::analysis::copies_on_this_thread(), copies, "no copy on the edit's path");
    assert_eq!(text_of(&opened, "notes.json"), NOTES, "the open's analysis is untouched");
    assert_eq!(&*stored.document("notes.json").unwrap().text, NOTES, "and the store's");
    let fresh = Analysis::load(buffers.root())
        .unwrap()
        .with_changes(vec![("notes.json".to_owned(), Some(edited.into_bytes()))]);
    assert_eq!(first.analysis.all_diagnostics(), fresh.all_diagnostics(), "as a fresh analysis");

    // A document an edit would not splice (no top-level array) is not copied ahead.
    let other = r#"{"id": "other/x", "type": "other"}"#;
    buffers.open_buffer("other.json".to_owned(), other.to_owned(), 1, ());
    let overlay = buffers.snapshot();
    assert!(std::ptr::eq(
        Arc::as_ptr(stored.document("other.json").unwrap()),
        document_ptr(&overlay, "other.json")
    ));
    assert!(lock(&buffers.lock().cache.as_ref().unwrap().2.owning).is_none());
    drop(overlay);
}

/// A buffer's text is never copied into the analysis: the document of a whole-text change
/// shares the buffer's text, whether the edit is spliced into the document or the document is
/// parsed whole, and it is analysed as the same text given as bytes.
#[test]
fn the_document_shares_the_buffers_text() {
    let dir = store();
    let buffers = open(dir.path());
    buffers.open_buffer("notes.json".to_owned(), NOTES.to_owned(), 1, ());
    buffers.open_buffer("other.json".to_owned(), "{}".to_owned(), 1, ());
    drop(buffers.snapshot());
    let spliced = NOTES.replace("\"B\"", "2");
    let whole = r#"{"id": "other/x", "type": "other", "é": "😀\"\\"}"#;
    buffers.edit("notes.json", 2, [Edit::Replace(spliced.clone())], bytes);
    buffers.edit("other.json", 2, [Edit::Replace(whole.to_owned())], bytes);
    let overlay = buffers.snapshot();
    for path in ["notes.json", "other.json"] {
        let doc = overlay.analysis.document(path).unwrap();
        let buffer = overlay.buffer(path).unwrap();
        assert!(std::ptr::eq(doc.text.as_str(), buffer.text()), "{path}: one text, not a copy");
    }
    let fresh = Analysis::load(buffers.root()).unwrap().with_changes(vec![
        ("notes.json".to_owned(), Some(spliced.into_bytes())),
        ("other.json".to_owned(), Some(whole.as_bytes().to_vec())),
    ]);
    assert_eq!(overlay.analysis.all_diagnostics(), fresh.all_diagnostics(), "as given as bytes");
    assert!(!overlay.analysis.diagnostics_of("notes.json").is_empty(), "a number is no title");
    for path in ["notes.json", "other.json"] {
        let (ours, theirs) = (overlay.analysis.document(path), fresh.document(path));
        let (ours, theirs) = (ours.unwrap(), theirs.unwrap());
        assert_eq!(
            (&ours.text, &ours.version, &ours.parse.value, &ours.entities, &ours.line_index),
            (
                &theirs.text,
                &theirs.version,
                &theirs.parse.value,
                &theirs.entities,
                &theirs.line_index
            )
        );
    }
}
