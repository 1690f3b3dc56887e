//! The mount's read path end to end (SPEC §24 "Speed"): read-only opens answered with FUSE
//! passthrough (the kernel reads the file on disk directly, Linux ≥ 6.9, as root) and the
//! kernel's caches of names and attributes, against changes from every path: a commit through
//! another front (`stardust apply`), a save through the mount, an edit in the folder, a file
//! replaced while a reader keeps the old one open, large files, concurrent readers.

mod util;

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use util::{Serve, stardust, text, wait_until};

const DUNE: &str = "{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"Dune\"}\n";

/// A store of `files` served with `stardust serve --mount`: (tmp, store, mount, core).
fn served(files: &[(&str, &[u8])]) -> (tempfile::TempDir, PathBuf, PathBuf, Serve) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    for (path, content) in files {
        let p = store.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }
    let store = store.canonicalize().unwrap();
    let mnt = tmp.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let serve = Serve::mounted(&store, &mnt);
    wait_until("the store is mounted", || mnt.join(".stardust/store.json").is_file());
    (tmp, store, mnt, serve)
}

/// The store's transactions: (origin, [path]).
fn history(store: &Path) -> Vec<(String, Vec<String>)> {
    let out = stardust(&["log", store.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|line| {
            let txn: serde_json::Value = serde_json::from_str(line).unwrap();
            let paths = txn["documents"].as_array().unwrap().iter();
            let paths = paths.map(|d| d["path"].as_str().unwrap().to_owned()).collect();
            (txn["origin"].as_str().unwrap().to_owned(), paths)
        })
        .collect()
}

/// Commit `ops` through `stardust apply` (another front than the mount).
fn apply(tmp: &Path, store: &Path, ops: &str) {
    let patch = tmp.join("change.patch.dust");
    fs::write(&patch, format!("ops [{ops}]\n")).unwrap();
    let out = stardust(&["apply", store.to_str().unwrap(), patch.to_str().unwrap(), "--yes"]);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
}

/// Wait until `done` holds: the kernel's entries are dropped by a thread of the mount a moment
/// after a commit is logged. A cache that is not dropped stays for a minute, past this wait.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Bytes that differ along the whole file (a misplaced chunk shows).
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| ((i / 4093) as u8).wrapping_mul(31).wrapping_add(seed ^ (i as u8))).collect()
}

/// What `mmap` of the file shows (Python's), as programs like git read larger files.
fn mmapped(path: &Path) -> Vec<u8> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import mmap, sys\nwith open(sys.argv[1], 'rb') as f:\n    \
             m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)\n    \
             sys.stdout.buffer.write(m[:])",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    out.stdout
}

#[test]
fn passthrough_reads_show_the_committed_content_after_every_change() {
    let big = pattern(3 * 1024 * 1024 + 17, 7);
    let (tmp, store, mnt, _serve) = served(&[
        ("books/dune.json", DUNE.as_bytes()),
        ("notes.md", b"first line\nsecond line\n"),
        ("data/big.bin", &big),
    ]);
    let dune = mnt.join("books/dune.json");
    assert_eq!(fs::read_to_string(&dune).unwrap(), DUNE);
    assert_eq!(fs::read(mnt.join("data/big.bin")).unwrap(), big, "a large file, whole");
    assert_eq!(mmapped(&mnt.join("data/big.bin")), big, "and mapped");

    // The kernel reads the file on disk itself: an edit made in place in the folder shows at
    // once to a reader that has the file open, even where it read the same bytes before (a
    // read through the mount's page cache would show them again).
    let notes = File::open(mnt.join("notes.md")).unwrap();
    let mut before = [0u8; 5];
    notes.read_exact_at(&mut before, 0).unwrap();
    assert_eq!(&before, b"first");
    OpenOptions::new()
        .write(true)
        .open(store.join("notes.md"))
        .unwrap()
        .write_all(b"FIRST")
        .unwrap();
    let mut after = [0u8; 5];
    notes.read_exact_at(&mut after, 0).unwrap();
    assert_eq!(&after, b"FIRST", "read from the file on disk");
    drop(notes);

    // A commit through another front: a new open reads the new content, with its size.
    apply(tmp.path(), &store, "{set {id book/dune title 'Dune Messiah'}}");
    let messiah = || fs::read_to_string(store.join("books/dune.json")).unwrap();
    assert!(messiah().contains("Dune Messiah"), "{}", messiah());
    eventually("the mount shows the commit", || {
        fs::metadata(&dune).unwrap().len() == messiah().len() as u64
    });
    assert_eq!(fs::read_to_string(&dune).unwrap(), messiah());
    assert_eq!(mmapped(&dune), messiah().as_bytes());

    // A save through the mount, then a read.
    let saved = DUNE.replace("Dune", "Children of Dune");
    fs::write(&dune, &saved).unwrap();
    assert_eq!(fs::read_to_string(&dune).unwrap(), saved);
    assert_eq!(fs::metadata(&dune).unwrap().len(), saved.len() as u64);

    // An edit in the folder (a new file renamed over the document, as editors save), recorded
    // by the watcher: the mount shows it.
    let outside = DUNE.replace("Dune", "God Emperor of Dune");
    fs::write(store.join("books/.dune.json.new"), &outside).unwrap();
    fs::rename(store.join("books/.dune.json.new"), store.join("books/dune.json")).unwrap();
    eventually("the outside edit is recorded", || {
        history(&store).last().is_some_and(|(origin, _)| origin == "external")
    });
    eventually("the mount shows the outside edit", || {
        fs::read_to_string(&dune).unwrap() == outside
            && fs::metadata(&dune).unwrap().len() == outside.len() as u64
    });
    assert_eq!(mmapped(&dune), outside.as_bytes());
}

#[test]
fn a_reader_keeps_the_file_it_opened_and_later_opens_read_the_new_one() {
    let (tmp, store, mnt, _serve) = served(&[("books/dune.json", DUNE.as_bytes())]);
    let dune = mnt.join("books/dune.json");
    let mut reader = File::open(&dune).unwrap();
    let old_ino = reader.metadata().unwrap().ino();
    let mut seen = String::new();
    reader.read_to_string(&mut seen).unwrap();
    assert_eq!(seen, DUNE);

    // A commit replaces the document on disk while the reader keeps the old file open.
    apply(tmp.path(), &store, "{set {id book/dune title 'Dune Messiah, a longer title'}}");
    let new = fs::read_to_string(store.join("books/dune.json")).unwrap();
    assert!(new.contains("longer title"), "{new}");
    eventually("a new open reads the new content", || fs::read_to_string(&dune).unwrap() == new);
    // Whole, mapped as git maps files, and with its own size: the path names a new file now,
    // as after a rename over a file on any disk.
    assert_eq!(mmapped(&dune), new.as_bytes());
    assert_eq!(fs::metadata(&dune).unwrap().len(), new.len() as u64);
    assert_ne!(fs::metadata(&dune).unwrap().ino(), old_ino);
    // The reader still reads the file it opened.
    reader.seek(SeekFrom::Start(0)).unwrap();
    seen.clear();
    reader.read_to_string(&mut seen).unwrap();
    assert_eq!(seen, DUNE);
    assert_eq!(reader.metadata().unwrap().len(), DUNE.len() as u64);
    drop(reader);
    // With no reader left, the document keeps a number across commits again.
    let ino = fs::metadata(&dune).unwrap().ino();
    apply(tmp.path(), &store, "{set {id book/dune title 'Dune'}}");
    eventually("the mount shows the commit", || {
        fs::read_to_string(&dune).unwrap().contains("\"Dune\"")
    });
    assert_eq!(fs::metadata(&dune).unwrap().ino(), ino);
}

#[test]
fn writes_beside_a_passthrough_reader_go_through_the_mount() {
    let (_tmp, store, mnt, _serve) =
        served(&[("books/dune.json", DUNE.as_bytes()), ("notes.md", b"one\n")]);
    // Readers hold both files open (the kernel reads them directly) ...
    let dune = mnt.join("books/dune.json");
    let doc_reader = File::open(&dune).unwrap();
    let notes_reader = File::open(mnt.join("notes.md")).unwrap();

    // ... while a document is saved through the mount: a transaction of the mount, not a
    // write behind the save authority's back (nor EIO).
    let saved = DUNE.replace("Dune", "Heretics of Dune");
    fs::write(&dune, &saved).unwrap();
    assert_eq!(fs::read_to_string(store.join("books/dune.json")).unwrap(), saved);
    let last = history(&store).pop().unwrap();
    assert_eq!(last, ("mount".to_owned(), vec!["books/dune.json".to_owned()]));
    assert_eq!(fs::read_to_string(&dune).unwrap(), saved);
    // A refused save still fails (at fsync here) and changes nothing on disk.
    let mut bad = OpenOptions::new().write(true).truncate(true).open(&dune).unwrap();
    bad.write_all(b"{\"id\": \"book/dune\", \"type\": ").unwrap();
    let err = bad.sync_all().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(5), "{err}");
    drop(bad);
    assert_eq!(fs::read_to_string(store.join("books/dune.json")).unwrap(), saved);

    // A plain file appended to through the mount: the reader sees the bytes (same file).
    let mut appender = OpenOptions::new().append(true).open(mnt.join("notes.md")).unwrap();
    appender.write_all(b"two\n").unwrap();
    drop(appender);
    let mut all = String::new();
    (&notes_reader).read_to_string(&mut all).unwrap();
    assert_eq!(all, "one\ntwo\n");
    assert_eq!(fs::read_to_string(store.join("notes.md")).unwrap(), "one\ntwo\n");
    drop(doc_reader);
}

#[test]
fn concurrent_readers_of_large_and_small_files() {
    let big = pattern(8 * 1024 * 1024 + 5, 3);
    let (_tmp, _store, mnt, _serve) =
        served(&[("books/dune.json", DUNE.as_bytes()), ("data/big.bin", &big)]);
    std::thread::scope(|scope| {
        for t in 0..6 {
            let (mnt, big) = (&mnt, &big);
            scope.spawn(move || {
                for i in 0..10 {
                    assert_eq!(fs::read(mnt.join("data/big.bin")).unwrap(), *big, "{t}/{i}");
                    let doc = fs::read_to_string(mnt.join("books/dune.json")).unwrap();
                    assert_eq!(doc, DUNE, "{t}/{i}");
                    // Reads at scattered offsets of one handle.
                    let f = File::open(mnt.join("data/big.bin")).unwrap();
                    let mut buf = vec![0; 4096];
                    let at = (t * 1_000_003 + i * 77_777) % (big.len() - 4096);
                    f.read_exact_at(&mut buf, at as u64).unwrap();
                    assert_eq!(buf, big[at..at + 4096], "{t}/{i} at {at}");
                }
            });
        }
    });
}

#[test]
fn cached_names_and_attributes_follow_changes_from_every_path() {
    let (tmp, store, mnt, _serve) = served(&[
        ("books/dune.json", DUNE.as_bytes()),
        ("books/emma.json", b"{\"id\": \"book/emma\", \"type\": \"book\", \"title\": \"Emma\"}\n"),
        ("notes.md", b"one\n"),
    ]);
    let dune = mnt.join("books/dune.json");
    // The kernel now holds the names and attributes.
    let listed = |dir: &str| listed(&mnt.join(dir));
    assert_eq!(listed("books"), ["dune.json", "emma.json"]);
    let size = fs::metadata(&dune).unwrap().len();

    // A commit through another front changes the document's size.
    apply(tmp.path(), &store, "{set {id book/dune title 'Dune, much longer than before'}}");
    let on_disk = fs::metadata(store.join("books/dune.json")).unwrap().len();
    assert_ne!(on_disk, size);
    eventually("the size follows the commit", || fs::metadata(&dune).unwrap().len() == on_disk);

    // Documents deleted and created in the folder: the watcher records them, the names follow.
    fs::metadata(mnt.join("books/emma.json")).unwrap();
    fs::remove_file(store.join("books/emma.json")).unwrap();
    eventually("the deleted document's name goes", || !mnt.join("books/emma.json").exists());
    // A name that went can be created again through the mount.
    fs::write(mnt.join("books/emma.json"), "{\"id\": \"book/emma\", \"type\": \"book\"}\n")
        .unwrap();
    assert_eq!(history(&store).last().unwrap().0, "mount");
    fs::write(store.join("books/new.json"), "{\"id\": \"book/new\", \"type\": \"book\"}\n")
        .unwrap();
    eventually("the created document's name shows", || mnt.join("books/new.json").is_file());
    assert_eq!(listed("books"), ["dune.json", "emma.json", "new.json"]);

    // A plain file edited in the folder: the watcher tells the mount, which drops the kernel's
    // entries (see `plain_files_and_folders_changed_in_the_folder_show_at_once`).
    assert_eq!(fs::metadata(mnt.join("notes.md")).unwrap().len(), 4);
    fs::write(store.join("notes.md"), "one\ntwo\n").unwrap();
    eventually("the plain file's size follows", || {
        fs::metadata(mnt.join("notes.md")).unwrap().len() == 8
    });
    assert_eq!(fs::read_to_string(mnt.join("notes.md")).unwrap(), "one\ntwo\n");
    fs::remove_file(store.join("notes.md")).unwrap();
    eventually("the removed plain file goes", || !mnt.join("notes.md").exists());
    // And a file created through the mount where the cached name was.
    fs::write(mnt.join("notes.md"), "three\n").unwrap();
    assert_eq!(fs::read_to_string(store.join("notes.md")).unwrap(), "three\n");
}

/// Plain files and folders (ignored ones too) are cached by the kernel for a minute, so every
/// change made to them in the folder behind the mount must reach it through the store's
/// watcher: each shows well within that minute.
#[test]
fn plain_files_and_folders_changed_in_the_folder_show_at_once() {
    use std::os::unix::fs::PermissionsExt;
    let (_tmp, store, mnt, _serve) = served(&[
        ("notes.md", b"one\n"),
        ("src/main.py", b"print(1)\n"),
        (".gitignore", b"node_modules/\n"),
        ("node_modules/pkg/index.js", b"1\n"),
    ]);
    let promptly = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !done() {
            assert!(Instant::now() < deadline, "the mount did not show at once that {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let listed = |dir: &str| listed(&mnt.join(dir));
    let mode = |path: &str| fs::metadata(mnt.join(path)).unwrap().mode() & 0o7777;
    // The kernel now holds the names, attributes and listings.
    assert_eq!(listed(""), [".gitignore", "node_modules", "notes.md", "src"]);
    assert_eq!(listed("src"), ["main.py"]);
    assert_eq!(fs::metadata(mnt.join("notes.md")).unwrap().len(), 4);
    assert_eq!(fs::metadata(mnt.join("node_modules/pkg/index.js")).unwrap().len(), 2);
    let (file_mode, folder_mode) = (mode("notes.md"), mode("src"));

    // Written.
    fs::write(store.join("notes.md"), "one\ntwo\n").unwrap();
    promptly("a plain file grew", &|| fs::metadata(mnt.join("notes.md")).unwrap().len() == 8);
    assert_eq!(fs::read_to_string(mnt.join("notes.md")).unwrap(), "one\ntwo\n");
    fs::write(store.join("node_modules/pkg/index.js"), "22\n").unwrap();
    promptly("an ignored file grew", &|| {
        fs::metadata(mnt.join("node_modules/pkg/index.js")).unwrap().len() == 3
    });
    // Modes.
    assert_ne!(file_mode, 0o600);
    fs::set_permissions(store.join("notes.md"), fs::Permissions::from_mode(0o600)).unwrap();
    promptly("a file's mode changed", &|| mode("notes.md") == 0o600);
    assert_ne!(folder_mode, 0o700);
    fs::set_permissions(store.join("src"), fs::Permissions::from_mode(0o700)).unwrap();
    promptly("a folder's mode changed", &|| mode("src") == 0o700);
    // Created.
    fs::write(store.join("src/util.py"), "x = 1\n").unwrap();
    promptly("a file was created", &|| listed("src") == ["main.py", "util.py"]);
    assert_eq!(fs::read_to_string(mnt.join("src/util.py")).unwrap(), "x = 1\n");
    fs::create_dir(store.join("docs")).unwrap();
    promptly("a folder was created", &|| listed("").contains(&"docs".to_owned()));
    assert!(mnt.join("docs").is_dir());
    // Renamed: a file into another folder, and a folder.
    fs::rename(store.join("src/util.py"), store.join("docs/util.py")).unwrap();
    promptly("a file moved", &|| listed("src") == ["main.py"] && listed("docs") == ["util.py"]);
    assert!(!mnt.join("src/util.py").exists());
    assert_eq!(fs::read_to_string(mnt.join("docs/util.py")).unwrap(), "x = 1\n");
    fs::rename(store.join("src"), store.join("lib")).unwrap();
    promptly("a folder was renamed", &|| !mnt.join("src").exists() && mnt.join("lib").is_dir());
    assert_eq!(listed("lib"), ["main.py"]);
    assert_eq!(fs::read_to_string(mnt.join("lib/main.py")).unwrap(), "print(1)\n");
    // Deleted.
    fs::remove_file(store.join("notes.md")).unwrap();
    promptly("a file was deleted", &|| !mnt.join("notes.md").exists());
    fs::remove_dir_all(store.join("docs")).unwrap();
    promptly("a folder was deleted", &|| !mnt.join("docs").exists());
    assert_eq!(listed(""), [".gitignore", "lib", "node_modules"]);
    // A name that went can be made again through the mount.
    fs::write(mnt.join("notes.md"), "three\n").unwrap();
    assert_eq!(fs::read_to_string(store.join("notes.md")).unwrap(), "three\n");
    fs::create_dir(mnt.join("docs")).unwrap();
    assert!(store.join("docs").is_dir());
}

/// The names in folder `dir`, sorted.
fn listed(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}
