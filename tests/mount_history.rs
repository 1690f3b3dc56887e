//! The mount's `.stardust/at/<seq>/<path>` (SPEC §26): every file as of a seq, read-only,
//! through a real mount (root and /dev/fuse needed, as in CI).

mod util;

use std::fs;
use std::os::unix::fs::MetadataExt;

use util::mount::Mounted;

const V1: &str = "{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"Dune\"}\n";
const V2: &str = "{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"Dune!\"}\n";

fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

#[test]
fn every_file_as_of_every_seq_is_shown_read_only() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    fs::create_dir_all(store.join("books")).unwrap();
    fs::write(store.join("books/dune.json"), V1).unwrap();
    let dir = tmp.path().join("mnt");
    let m = Mounted::start(tmp, store, dir, &[], &[]);
    // Seq 2 changes the document, seq 3 adds another.
    fs::write(m.path("books/dune.json"), V2).unwrap();
    fs::write(m.path("books/emma.json"), V1.replace("dune", "emma")).unwrap();

    assert!(listing(&m.path(".stardust")).contains(&"at".to_owned()));
    assert_eq!(listing(&m.path(".stardust/at")), ["1", "2", "3"]);
    assert_eq!(fs::read_to_string(m.path(".stardust/at/1/books/dune.json")).unwrap(), V1);
    assert_eq!(fs::read_to_string(m.path(".stardust/at/2/books/dune.json")).unwrap(), V2);
    assert_eq!(listing(&m.path(".stardust/at/1")), ["books"]);
    assert_eq!(listing(&m.path(".stardust/at/2/books")), ["dune.json"]);
    assert_eq!(listing(&m.path(".stardust/at/3/books")), ["dune.json", "emma.json"]);
    let meta = fs::metadata(m.path(".stardust/at/1/books/dune.json")).unwrap();
    assert_eq!((meta.len(), meta.mode() & 0o777), (V1.len() as u64, 0o444));

    // What did not exist then, a seq past the head, or a name that is no seq: not there.
    for missing in ["at/2/books/emma.json", "at/4", "at/0", "at/01", "at/x/books"] {
        assert!(fs::metadata(m.path(&format!(".stardust/{missing}"))).is_err(), "{missing}");
    }
    // Read-only: no write, no new file, no delete.
    assert!(fs::write(m.path(".stardust/at/1/books/dune.json"), V2).is_err());
    assert!(fs::write(m.path(".stardust/at/1/books/new.json"), V2).is_err());
    assert!(fs::remove_file(m.path(".stardust/at/1/books/dune.json")).is_err());
    assert_eq!(fs::read_to_string(m.path(".stardust/at/1/books/dune.json")).unwrap(), V1);
    assert_eq!(fs::read_to_string(m.path("books/dune.json")).unwrap(), V2);
}
