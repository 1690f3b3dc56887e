//! End-to-end tests of `stardust mount`: the real binary really mounts a store (root and
//! /dev/fuse needed, as in CI) and real programs save through it, each with its exact outcome.

mod util;

use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use util::mount::{Mounted, is_mounted};
use util::text;

const DUNE: &str = "{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"Dune\"}\n";
const EIO: i32 = 5;

/// A transaction's documents: (path, change).
type Docs = Vec<(String, String)>;

impl Mounted {
    fn new(files: &[(&str, &str)]) -> Mounted {
        Mounted::with_args(files, &[])
    }

    fn with_args(files: &[(&str, &str)], extra: &[&str]) -> Mounted {
        Mounted::at("mnt", files, extra)
    }

    /// Mount at the folder `name` beside the store (named `s`).
    fn at(name: &str, files: &[(&str, &str)], extra: &[&str]) -> Mounted {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join(if name == "mnt" { "store" } else { "s" });
        let dir = tmp.path().join(name);
        fs::create_dir_all(&store).unwrap();
        for (path, content) in files {
            let p = store.join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, content).unwrap();
        }
        Mounted::start(tmp, store, dir, extra, &[])
    }

    /// `stardust log --format json` of the store: (seq, origin, [(path, change)]).
    fn history(&self) -> Vec<(u64, String, Docs)> {
        self.transactions()
            .iter()
            .map(|txn| {
                let docs = txn["documents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| {
                        (
                            d["path"].as_str().unwrap().to_owned(),
                            d["change"].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect();
                (txn["seq"].as_u64().unwrap(), txn["origin"].as_str().unwrap().to_owned(), docs)
            })
            .collect()
    }

    /// The transactions after the first (the store's existing documents).
    fn saves(&self) -> Vec<(String, Docs)> {
        self.history().into_iter().skip(1).map(|(_, origin, docs)| (origin, docs)).collect()
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success());
    }

    /// Stop with SIGTERM and return the exit code.
    fn stop(&mut self) -> Option<i32> {
        self.signal("-TERM");
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the mount did not stop on SIGTERM: {}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Wait until `done` holds: the kernel sends `release` after `close` returns, so what is
/// decided at release shows a moment later.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn sh(script: &str) -> Output {
    Command::new("bash").arg("-c").arg(script).output().unwrap()
}

fn python(code: &str, cwd: &Path) -> Output {
    Command::new("python3").arg("-c").arg(code).current_dir(cwd).output().unwrap()
}

fn changed(path: &str) -> Vec<(String, String)> {
    vec![(path.to_owned(), "changed".to_owned())]
}

fn created(path: &str) -> Vec<(String, String)> {
    vec![(path.to_owned(), "created".to_owned())]
}

fn mount_save(docs: Vec<(String, String)>) -> (String, Vec<(String, String)>) {
    ("mount".to_owned(), docs)
}

/// Entries of a store folder (what reached the disk), sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

#[test]
fn reads_show_committed_files_with_their_attributes() {
    let m = Mounted::new(&[("books/dune.json", DUNE), ("README.md", "# library\n")]);
    assert_eq!(fs::read_to_string(m.path("books/dune.json")).unwrap(), DUNE);
    assert_eq!(fs::read_to_string(m.path("README.md")).unwrap(), "# library\n");
    for rel in ["books/dune.json", "README.md", "books"] {
        let shown = fs::metadata(m.path(rel)).unwrap();
        let real = fs::metadata(m.store.join(rel)).unwrap();
        assert_eq!(shown.len(), real.len(), "{rel}");
        assert_eq!(shown.mode(), real.mode(), "{rel}");
        assert_eq!(shown.mtime(), real.mtime(), "{rel}");
        assert_eq!((shown.uid(), shown.gid()), (real.uid(), real.gid()), "{rel}");
    }
    // `.stardust/` is left out of the root's listing but reachable by its name (SPEC §24).
    assert_eq!(listing(&m.dir), ["README.md", "books"]);
    assert!(m.path(".stardust/store.json").is_file());
    assert!(listing(&m.path(".stardust")).contains(&"transactions".to_owned()));

    // A document keeps its inode number across saves (which replace the file on disk).
    let ino = fs::metadata(m.path("books/dune.json")).unwrap().ino();
    let disk_ino = fs::metadata(m.store.join("books/dune.json")).unwrap().ino();
    fs::write(m.path("books/dune.json"), DUNE.replace("Dune", "Dune!")).unwrap();
    assert_ne!(fs::metadata(m.store.join("books/dune.json")).unwrap().ino(), disk_ino);
    assert_eq!(fs::metadata(m.path("books/dune.json")).unwrap().ino(), ino);

    // The virtual .stardust/: one file per transaction, store.json, rejected/.
    let names = listing(&m.path(".stardust/transactions"));
    assert_eq!(names, ["00000000000000000001.json", "00000000000000000002.json"]);
    let txn: serde_json::Value = serde_json::from_slice(
        &fs::read(m.path(".stardust/transactions/00000000000000000002.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(txn["origin"], "mount");
    assert_eq!(txn["documents"][0]["path"], "books/dune.json");
    assert_eq!(txn["documents"][0]["change"], "changed");
    let meta = fs::metadata(m.path(".stardust/transactions/00000000000000000002.json")).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o444);
    let store: serde_json::Value =
        serde_json::from_slice(&fs::read(m.path(".stardust/store.json")).unwrap()).unwrap();
    assert_eq!(store["store"], fs::canonicalize(&m.store).unwrap().to_str().unwrap());
    assert_eq!(store["mount"], fs::canonicalize(&m.dir).unwrap().to_str().unwrap());
    assert!(store["socket"].is_null());
    assert!(listing(&m.path(".stardust/rejected")).is_empty());
    assert!(fs::metadata(m.path(".stardust/transactions/00000000000000000003.json")).is_err());
}

#[test]
fn cp_and_tee_save_in_place_or_fail_with_eio() {
    let m = Mounted::new(&[("books/dune.json", DUNE)]);
    let src = m._tmp.path().join("messiah.json");
    fs::write(&src, "{\"id\": \"book/messiah\", \"type\": \"book\"}\n").unwrap();
    let out = sh(&format!("cp {} {}", src.display(), m.path("books/messiah.json").display()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(m.on_disk("books/messiah.json"), "{\"id\": \"book/messiah\", \"type\": \"book\"}\n");

    let out = sh(&format!(
        "echo '{{\"id\": \"book/dune\", \"type\": \"book\", \"year\": 1965}}' | tee {}",
        m.path("books/dune.json").display()
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        m.on_disk("books/dune.json"),
        "{\"id\": \"book/dune\", \"type\": \"book\", \"year\": 1965}\n"
    );

    // A refused save: cp reports the failed close, nothing changes, the bytes are kept.
    fs::write(&src, "{\"id\": \"book/dune\", \"type\": \"book\"}\n").unwrap();
    let out = sh(&format!("cp {} {}", src.display(), m.path("books/messiah.json").display()));
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("Input/output error"), "{}", text(&out.stderr));
    assert_eq!(m.on_disk("books/messiah.json"), "{\"id\": \"book/messiah\", \"type\": \"book\"}\n");
    assert_eq!(
        fs::read_to_string(m.path("books/messiah.json")).unwrap(),
        "{\"id\": \"book/messiah\", \"type\": \"book\"}\n"
    );
    let rejected = m.rejected();
    assert_eq!(rejected.len(), 1);
    let (name, content, why) = &rejected[0];
    assert!(name.ends_with("-books%2Fmessiah.json"), "{name}");
    assert_eq!(content, "{\"id\": \"book/dune\", \"type\": \"book\"}\n");
    assert!(why.contains("books/messiah.json:1:8: error[duplicate-id]"), "{why}");
    // The mount shows the kept file too.
    assert_eq!(
        fs::read_to_string(m.path(&format!(".stardust/rejected/{name}"))).unwrap(),
        *content
    );

    assert_eq!(
        m.saves(),
        [mount_save(created("books/messiah.json")), mount_save(changed("books/dune.json"))]
    );
}

#[test]
fn python_open_w_refused_flush_does_not_poison_the_handle() {
    let m = Mounted::new(&[("books/dune.json", DUNE)]);
    let code = r#"
import os
f = open('books/dune.json', 'w')
f.write('{"id": "book/dune", "type": "book", "title": ')
try:
    f.flush(); os.fsync(f.fileno())
    print('saved')
except OSError as e:
    print('errno', e.errno)
f.seek(0); f.truncate()
f.write('{"id": "book/dune", "type": "book", "title": "Dune", "year": 1965}\n')
f.close()
print('closed')
with open('books/new.json', 'w') as g:
    g.write('{"id": "book/new", "type": "book"}\n')
"#;
    let out = python(code, &m.dir);
    assert_eq!(text(&out.stdout), format!("errno {EIO}\nclosed\n"), "{}", text(&out.stderr));
    assert_eq!(
        m.on_disk("books/dune.json"),
        "{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"Dune\", \"year\": 1965}\n"
    );
    assert_eq!(m.on_disk("books/new.json"), "{\"id\": \"book/new\", \"type\": \"book\"}\n");
    let rejected = m.rejected();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].1, "{\"id\": \"book/dune\", \"type\": \"book\", \"title\": ");
    assert_eq!(
        m.saves(),
        [mount_save(changed("books/dune.json")), mount_save(created("books/new.json"))]
    );

    // A refused close fails `close()` itself.
    let out = python("f = open('books/new.json', 'w'); f.write('oops'); f.close()", &m.dir);
    assert!(text(&out.stderr).contains("OSError: [Errno 5]"), "{}", text(&out.stderr));
    assert_eq!(m.on_disk("books/new.json"), "{\"id\": \"book/new\", \"type\": \"book\"}\n");
    // `truncate(2)` by path is a save of its own, refused here at once.
    let out = python("import os; os.truncate('books/new.json', 3)", &m.dir);
    assert!(text(&out.stderr).contains("OSError: [Errno 5]"), "{}", text(&out.stderr));
    assert_eq!(m.on_disk("books/new.json"), "{\"id\": \"book/new\", \"type\": \"book\"}\n");
    assert_eq!(m.rejected().last().unwrap().1, "{\"i");
    assert_eq!(m.saves().len(), 2);
}

#[test]
fn temp_file_then_rename_sed_and_os_replace() {
    let m = Mounted::new(&[("books/dune.json", DUNE)]);
    let out = sh(&format!("sed -i 's/Dune/Dune Messiah/' {}", m.path("books/dune.json").display()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(m.on_disk("books/dune.json"), DUNE.replace("Dune", "Dune Messiah"));
    // sed's temporary file never reached the store.
    assert_eq!(listing(&m.store.join("books")), ["dune.json"]);

    let code = r#"
import os, tempfile
fd, tmp = tempfile.mkstemp(dir='books')
os.write(fd, b'{"id": "book/dune", "type": "book", "title": "Replaced"}\n'); os.close(fd)
os.replace(tmp, 'books/dune.json')
with open('books/dune.json.new', 'w') as f:
    f.write('{"id": "book/dune", "type": "book", "title": "Renamed"}\n')
os.replace('books/dune.json.new', 'books/dune.json')
with open('books/bad.json.new', 'w') as f:
    f.write('{"id": ')
try:
    os.replace('books/bad.json.new', 'books/dune.json')
except OSError as e:
    print('errno', e.errno)
"#;
    let out = python(code, &m.dir);
    assert_eq!(text(&out.stdout), "errno 22\n", "{}", text(&out.stderr));
    assert_eq!(
        m.on_disk("books/dune.json"),
        "{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"Renamed\"}\n"
    );
    // The refused rename left its source in place (a plain file) and kept the bytes.
    assert_eq!(listing(&m.store.join("books")), ["bad.json.new", "dune.json"]);
    assert_eq!(m.rejected().len(), 1);
    assert_eq!(m.rejected()[0].1, "{\"id\": ");
    assert_eq!(m.saves(), vec![mount_save(changed("books/dune.json")); 3]);
}

#[test]
fn bash_redirect_never_commits_the_truncated_state() {
    let m = Mounted::new(&[("books/dune.json", DUNE)]);
    let out = sh(&format!(
        "cat > {} <<'EOF'\n{{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"Redirected\"}}\nEOF",
        m.path("books/dune.json").display()
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = sh(&format!(
        "echo '{{\"id\": \"book/x\", \"type\": \"book\"}}' > {}",
        m.path("books/x.json").display()
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        m.on_disk("books/dune.json"),
        "{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"Redirected\"}\n"
    );
    assert_eq!(m.on_disk("books/x.json"), "{\"id\": \"book/x\", \"type\": \"book\"}\n");
    // Exactly one transaction each, and no empty document was ever offered.
    assert_eq!(
        m.saves(),
        [mount_save(changed("books/dune.json")), mount_save(created("books/x.json"))]
    );
    assert!(m.rejected().is_empty(), "{:?}", m.rejected());

    // `truncate` with no write after it is decided when the file is closed: an empty JSON
    // document is refused, and the document keeps its content.
    let out = sh(&format!("truncate -s 0 {}", m.path("books/x.json").display()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    eventually("the truncation is decided", || !m.rejected().is_empty());
    assert_eq!(m.on_disk("books/x.json"), "{\"id\": \"book/x\", \"type\": \"book\"}\n");
    let rejected = m.rejected();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].1, "");
    assert!(rejected[0].2.contains("error[syntax]"), "{}", rejected[0].2);
}

#[test]
fn vim_saves_through_swap_files_and_backups() {
    let m = Mounted::new(&[("books/dune.json", DUNE)]);
    for backupcopy in ["auto", "no", "yes"] {
        let title = format!("Dune {backupcopy}");
        let out = Command::new("vim")
            .args(["-u", "NONE", "-N", "-es"])
            .arg("-c")
            .arg(format!("set backupcopy={backupcopy} writebackup swapfile"))
            .arg("-c")
            .arg(format!("%s/\"title\": \"[^\"]*\"/\"title\": \"{title}\"/"))
            .arg("-c")
            .arg("wq")
            .arg(m.path("books/dune.json"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "vim {backupcopy}: {} {}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert_eq!(
            m.on_disk("books/dune.json"),
            format!("{{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"{title}\"}}\n")
        );
        assert_eq!(listing(&m.store.join("books")), ["dune.json"], "vim {backupcopy}");
    }
    // Each save is exactly one transaction: swap files, the `4913` probe and backups never
    // reach the store.
    assert_eq!(m.saves(), vec![mount_save(changed("books/dune.json")); 3]);

    // A refused save: vim reports the failed write, the document and the history keep.
    let before = m.saves().len();
    let out = Command::new("vim")
        .args(["-u", "NONE", "-N", "-es", "-c", "%s/}/,}/", "-c", "wq"])
        .arg(m.path("books/dune.json"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        m.on_disk("books/dune.json"),
        "{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"Dune yes\"}\n"
    );
    assert_eq!(m.saves().len(), before);
    assert_eq!(listing(&m.store.join("books")), ["dune.json"]);
    assert!(!m.rejected().is_empty());
}

#[test]
fn rename_original_then_write_is_one_save() {
    let m = Mounted::new(&[
        ("books/dune.json", DUNE),
        ("books/gone.json", "{\"id\": \"book/gone\", \"type\": \"book\"}\n"),
    ]);
    let (doc, backup) = (m.path("books/dune.json"), m.path("books/dune.json~"));
    // Vim with `backupcopy=no`: move the original aside, write the file anew, drop the backup.
    fs::rename(&doc, &backup).unwrap();
    assert!(!doc.exists(), "the moved document is hidden");
    assert_eq!(fs::read_to_string(&backup).unwrap(), DUNE);
    let mut file = fs::File::create(&doc).unwrap();
    file.write_all(b"{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"New\"}\n").unwrap();
    file.sync_all().unwrap();
    drop(file);
    fs::remove_file(&backup).unwrap();
    assert_eq!(
        m.on_disk("books/dune.json"),
        "{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"New\"}\n"
    );
    assert_eq!(m.saves(), [mount_save(changed("books/dune.json"))]);

    // Refused: the new save fails, the backup is moved back, and history never lost the
    // document.
    fs::rename(&doc, &backup).unwrap();
    let mut file = fs::File::create(&doc).unwrap();
    file.write_all(b"{\"id\": ").unwrap();
    assert_eq!(file.sync_all().unwrap_err().raw_os_error(), Some(EIO));
    drop(file);
    fs::rename(&backup, &doc).unwrap();
    assert_eq!(
        fs::read_to_string(&doc).unwrap(),
        "{\"id\": \"book/dune\", \"type\": \"book\", \"title\": \"New\"}\n"
    );
    assert_eq!(m.saves().len(), 1);

    // Moved aside and then deleted: the document is deleted.
    fs::rename(m.path("books/gone.json"), m.path("books/gone.json~")).unwrap();
    fs::remove_file(m.path("books/gone.json~")).unwrap();
    assert!(!m.store.join("books/gone.json").exists());
    assert_eq!(
        m.saves()[1],
        mount_save(vec![("books/gone.json".to_owned(), "deleted".to_owned())])
    );
    assert_eq!(listing(&m.store.join("books")), ["dune.json"]);
}

#[test]
fn create_delete_rename_and_folders_are_transactions() {
    let m = Mounted::new(&[
        ("books/dune.json", DUNE),
        ("people/frank.json", "{\"id\": \"person/frank\"}\n"),
        ("people/sub/ann.json", "{\"id\": \"person/ann\"}\n"),
        ("people/notes.txt", "notes"),
    ]);
    fs::write(m.path("books/a.json"), "{\"id\": \"book/a\", \"type\": \"book\"}\n").unwrap();
    fs::rename(m.path("books/a.json"), m.path("books/b.json")).unwrap();
    fs::remove_file(m.path("books/b.json")).unwrap();
    fs::create_dir(m.path("shelf")).unwrap();
    assert!(m.store.join("shelf").is_dir());
    fs::rename(m.path("people"), m.path("authors")).unwrap();
    fs::remove_dir(m.path("shelf")).unwrap();
    assert!(!m.store.join("shelf").exists());
    assert_eq!(m.on_disk("authors/frank.json"), "{\"id\": \"person/frank\"}\n");
    assert_eq!(m.on_disk("authors/sub/ann.json"), "{\"id\": \"person/ann\"}\n");
    assert_eq!(m.on_disk("authors/notes.txt"), "notes");
    assert_eq!(
        fs::read_to_string(m.path("authors/sub/ann.json")).unwrap(),
        "{\"id\": \"person/ann\"}\n"
    );
    assert!(!m.store.join("people").exists());
    assert!(!m.path("people").exists());
    let pair = |a: &str, ca: &str, b: &str, cb: &str| {
        vec![(a.to_owned(), ca.to_owned()), (b.to_owned(), cb.to_owned())]
    };
    assert_eq!(
        m.saves(),
        [
            mount_save(created("books/a.json")),
            mount_save(pair("books/a.json", "deleted", "books/b.json", "created")),
            mount_save(vec![("books/b.json".to_owned(), "deleted".to_owned())]),
            // The folder's documents move in one transaction.
            mount_save(
                [
                    ("authors/frank.json", "created"),
                    ("authors/sub/ann.json", "created"),
                    ("people/frank.json", "deleted"),
                    ("people/sub/ann.json", "deleted"),
                ]
                .map(|(p, c)| (p.to_owned(), c.to_owned()))
                .to_vec()
            ),
        ]
    );
    // A refused rename fails with EINVAL and changes nothing.
    // (A refused close is not reported by `fs::write`, which ignores close errors.)
    let _ = fs::write(m.path("books/c.json"), "{\"id\": \"book/dune\", \"type\": \"book\"}");
    assert!(!m.store.join("books/c.json").exists());
    eventually("the refused new document is gone", || !m.path("books/c.json").exists());
    fs::write(m.path("notes.txt"), "{\"id\": \"book/dune\", \"type\": \"book\"}").unwrap();
    let err = fs::rename(m.path("notes.txt"), m.path("books/c.json")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(22));
    assert!(m.store.join("notes.txt").exists());
    assert!(!m.store.join("books/c.json").exists());
}

#[test]
fn plain_and_scratch_files_and_bad_input() {
    let m = Mounted::with_args(&[("books/dune.json", DUNE)], &["--max-file-size", "4096"]);
    // Non-documents pass through, unvalidated and outside history.
    fs::write(m.path("notes.md"), "{ not json").unwrap();
    assert_eq!(m.on_disk("notes.md"), "{ not json");
    // Scratch files are held in memory while a handle has them open; one a tool leaves behind
    // lands on disk, as in the folder (SPEC §24), outside history.
    fs::write(m.path("books/.dune.json.swp"), "swap").unwrap();
    fs::write(m.path("books/4913"), "").unwrap();
    fs::write(m.path("books/dune.json~"), DUNE).unwrap();
    assert_eq!(fs::read_to_string(m.path("books/.dune.json.swp")).unwrap(), "swap");
    let all = [".dune.json.swp", "4913", "dune.json", "dune.json~"];
    assert_eq!(listing(&m.path("books")), all);
    eventually("the files left behind are on disk", || listing(&m.store.join("books")) == all);
    assert_eq!(m.on_disk("books/.dune.json.swp"), "swap");
    fs::remove_file(m.path("books/4913")).unwrap();
    // Refused (a duplicate id): the scratch file stays where it was.
    fs::rename(m.path("books/dune.json~"), m.path("books/copy.json")).unwrap_err();
    assert_eq!(listing(&m.store.join("books")), [".dune.json.swp", "dune.json", "dune.json~"]);

    // A new document closed without content is created empty, as in the folder (`touch`, an
    // empty file from `tar`): it is not the store's data, so its syntax error is a diagnostic.
    fs::File::create(m.path("books/empty.json")).unwrap();
    eventually("the empty new document is saved", || m.store.join("books/empty.json").is_file());
    assert_eq!(m.on_disk("books/empty.json"), "");

    // Beyond the size cap: EFBIG, nothing committed.
    let mut file = fs::OpenOptions::new().write(true).open(m.path("books/dune.json")).unwrap();
    let err = file.write_all(&vec![b' '; 8192]).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(27), "{err}");
    drop(file);
    assert_eq!(m.on_disk("books/dune.json"), DUNE);

    // The private folder is read-only.
    let err = fs::write(m.path(".stardust/store.json"), "x").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(30), "{err}");
    let err = fs::write(m.path(".stardust/new"), "x").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(30), "{err}");
    let err = fs::remove_file(m.path(".stardust/store.json")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(30), "{err}");

    // `..` never leaves the mount: the kernel resolves it inside.
    fs::write(m.path("books/../up.txt"), "up").unwrap();
    assert_eq!(m.on_disk("up.txt"), "up");
    assert_eq!(m.saves(), [mount_save(created("books/empty.json"))]);
}

/// A plain file opened with `O_TRUNC`, or created, is written into a spare and put in place at
/// its close (SPEC §24: never a half file); meanwhile its name shows the spare to every caller
/// through the mount, and the folder the old content.
#[test]
fn plain_files_are_written_whole_and_put_in_place_at_their_close() {
    let m = Mounted::new(&[
        ("notes.txt", "old content"),
        ("keep.txt", "old"),
        ("log.txt", "a"),
        ("h1.txt", "linked"),
    ]);
    let script = r#"
import os, sys
store = sys.argv[1]
def disk(name):
    try:
        return open(os.path.join(store, name)).read()
    except FileNotFoundError:
        return None
def check(what, got, want):
    assert got == want, f"{what}: {got!r}, expected {want!r}"

# O_TRUNC: the folder keeps the old content until the close; the name shows the spare.
fd = os.open("notes.txt", os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"new ")
check("folder while written", disk("notes.txt"), "old content")
check("size through the mount", os.stat("notes.txt").st_size, 4)
check("a second open reads", open("notes.txt").read(), "new ")
os.fchmod(fd, 0o600)
os.write(fd, b"text, longer")
os.ftruncate(fd, 8)
os.utime("notes.txt", (1000000000, 1000000000))
check("mode by handle", os.stat("notes.txt").st_mode & 0o777, 0o600)
os.close(fd)
check("folder after the close", disk("notes.txt"), "new text")
st = os.stat(os.path.join(store, "notes.txt"))
check("mode in the folder", (st.st_mode & 0o777, int(st.st_mtime)), (0o600, 1000000000))

# Created: absent from the folder until the close, listed and readable through the mount.
fd = os.open("made.txt", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
os.write(fd, b"made")
check("folder while created", disk("made.txt"), None)
check("listed", "made.txt" in os.listdir("."), True)
try:
    os.open("made.txt", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    raise AssertionError("O_EXCL on a file being written")
except FileExistsError:
    pass
os.close(fd)
check("created in the folder", disk("made.txt"), "made")

# A lock file is on disk while it is held (git's `index.lock`: the core and processes working
# in the folder see it).
fd = os.open("x.lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
check("lock file", os.path.exists(os.path.join(store, "x.lock")), True)
os.close(fd)
os.unlink("x.lock")

# A reader of the old file keeps reading it after the writer replaced it.
reader = open("keep.txt")
with open("keep.txt", "w") as w:
    w.write("new")
check("old reader", reader.read(), "old")
check("new reader", open("keep.txt").read(), "new")

# Unlinked while written: gone, as on any disk.
fd = os.open("gone.txt", os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"part")
os.unlink("gone.txt")
os.write(fd, b" more")
os.close(fd)
check("unlinked", (disk("gone.txt"), os.path.exists("gone.txt")), (None, False))

# Renamed while written (a tool's temporary name): the writes go on under the new name.
fd = os.open("a.partial", os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"part")
os.rename("a.partial", "a.txt")
os.write(fd, b" rest")
os.close(fd)
check("renamed", (disk("a.txt"), disk("a.partial")), ("part rest", None))

# A folder with a file being created in it is not empty.
os.mkdir("d")
fd = os.open("d/f.txt", os.O_CREAT | os.O_WRONLY, 0o644)
try:
    os.rmdir("d")
    raise AssertionError("rmdir of a folder with a file being written")
except OSError as e:
    check("rmdir", e.errno, 39)
os.close(fd)

# Appends and hard-linked files are written in place, as before.
fd = os.open("log.txt", os.O_WRONLY | os.O_APPEND)
os.write(fd, b"b")
check("append", disk("log.txt"), "ab")
os.close(fd)
os.link("h1.txt", "h2.txt")
with open("h1.txt", "w") as w:
    w.write("both")
check("hard link", (disk("h1.txt"), disk("h2.txt")), ("both", "both"))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&m.store)
        .current_dir(&m.dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    eventually("no spare is left", || {
        let left = fs::read_dir(m.store.join(".stardust/replaced")).unwrap().flatten();
        !left.into_iter().any(|e| e.file_name().to_string_lossy().starts_with("written-"))
    });
    assert!(m.saves().is_empty(), "{:?}", m.saves());
}

#[test]
fn a_plain_file_renamed_to_a_scratch_name_keeps_its_bytes() {
    let m = Mounted::new(&[("books/dune.json", DUNE), ("books/notes.txt", "notes")]);
    // A file on disk renamed to a temporary name is renamed on disk (`mv a a~` leaves `a~`).
    fs::rename(m.path("books/notes.txt"), m.path("books/notes.txt~")).unwrap();
    assert_eq!(fs::read_to_string(m.path("books/notes.txt~")).unwrap(), "notes");
    assert_eq!(listing(&m.path("books")), ["dune.json", "notes.txt~"]);
    assert_eq!(listing(&m.store.join("books")), ["dune.json", "notes.txt~"]);
    // Renamed back to a plain name, the file lands on disk again.
    fs::rename(m.path("books/notes.txt~"), m.path("books/notes.txt")).unwrap();
    assert_eq!(m.on_disk("books/notes.txt"), "notes");
    assert!(m.saves().is_empty(), "{:?}", m.saves());
}

#[test]
fn a_scratch_file_deleted_as_it_is_closed_leaves_nothing_on_disk() {
    // Vim closes its swap file and deletes it at once; the kernel sends the close's release
    // without waiting, so the release (which writes a closed scratch file to disk) and the
    // delete can meet. Whichever comes first, the file is gone, as in the folder.
    let m = Mounted::new(&[("books/dune.json", DUNE)]);
    let content = vec![b'x'; 256 * 1024];
    for i in 0..200 {
        let path = m.path(&format!("books/.n{i}.swp"));
        fs::write(&path, &content).unwrap();
        fs::remove_file(&path).unwrap();
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(listing(&m.store.join("books")), ["dune.json"]);
    assert_eq!(listing(&m.path("books")), ["dune.json"]);
}

#[test]
fn concurrent_writers_each_commit_whole_documents() {
    let m = Mounted::new(&[("books/dune.json", DUNE)]);
    let versions: Vec<String> = (0..6)
        .map(|i| {
            format!(
                "{{\"id\": \"book/dune\", \"type\": \"book\", \"writer\": {i}, \"pad\": \"{}\"}}\n",
                "x".repeat(3000)
            )
        })
        .collect();
    std::thread::scope(|s| {
        for version in &versions {
            let path = m.path("books/dune.json");
            s.spawn(move || {
                for _ in 0..5 {
                    fs::write(&path, version).unwrap();
                }
            });
        }
    });
    let last = m.on_disk("books/dune.json");
    assert!(versions.contains(&last), "a mix of writers: {last:.80}");
    let saves = m.saves();
    assert!(!saves.is_empty() && saves.len() <= 30, "{}", saves.len());
    // Every committed version is one writer's whole document.
    let out = util::stardust(&["log", m.store.to_str().unwrap(), "--format", "json"]);
    let wanted: Vec<String> = versions.iter().map(|v| sha256(v)).collect();
    for line in text(&out.stdout).lines().skip(1) {
        let txn: serde_json::Value = serde_json::from_str(line).unwrap();
        let after = txn["documents"][0]["after"].as_str().unwrap();
        assert!(wanted.iter().any(|w| w == after), "{after}");
    }
    assert!(m.rejected().is_empty());
}

fn sha256(text: &str) -> String {
    let out =
        Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().and_then(
            |mut c| {
                c.stdin.take().unwrap().write_all(text.as_bytes())?;
                c.wait_with_output()
            },
        );
    text_first_word(&out.unwrap().stdout)
}

fn text_first_word(bytes: &[u8]) -> String {
    text(bytes).split_whitespace().next().unwrap().to_owned()
}

#[test]
fn edits_behind_the_store_appear_at_once() {
    let m = Mounted::new(&[("books/dune.json", DUNE)]);
    // Let the kernel cache the document's attributes and pages.
    assert_eq!(fs::read_to_string(m.path("books/dune.json")).unwrap(), DUNE);
    let longer = DUNE.replace("Dune", "Dune, the first book of the saga");
    fs::write(m.store.join("books/dune.json"), &longer).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while m.history().len() < 2 {
        assert!(Instant::now() < deadline, "the edit was not taken in: {}", m.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fs::metadata(m.path("books/dune.json")).unwrap().len(), longer.len() as u64);
    assert_eq!(fs::read_to_string(m.path("books/dune.json")).unwrap(), longer);
    assert_eq!(m.history()[1].1, "external");
}

#[test]
fn sigterm_unmounts_and_exits_zero() {
    let mut m = Mounted::new(&[("books/dune.json", DUNE)]);
    assert_eq!(m.stop(), Some(0), "{}", m.log());
    assert!(!is_mounted(&m.dir));
    assert!(m.log().contains("unmounting"), "{}", m.log());

    // With a file still open, the folder is detached at once and the mount serves the open
    // file until it is closed, then exits 0.
    let mut m = Mounted::new(&[("books/dune.json", DUNE)]);
    let mut open = fs::File::open(m.path("books/dune.json")).unwrap();
    m.signal("-TERM");
    eventually("the folder is detached", || !is_mounted(&m.dir));
    let mut child = m.child.take().unwrap();
    assert!(child.try_wait().unwrap().is_none(), "exited with a file open: {}", m.log());
    let mut content = String::new();
    std::io::Read::read_to_string(&mut open, &mut content).unwrap();
    assert_eq!(content, DUNE);
    drop(open);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "still running after the last close: {}", m.log());
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{status:?}: {}", m.log());
}

#[test]
fn kill_9_leaves_whole_documents_and_fusermount_recovers() {
    let mut m = Mounted::new(&[("books/dune.json", DUNE)]);
    fs::write(m.path("books/dune.json"), DUNE.replace("Dune", "Saved")).unwrap();
    m.signal("-KILL");
    let mut child = m.child.take().unwrap();
    child.wait().unwrap();
    assert!(is_mounted(&m.dir), "still mounted (the kernel keeps a dead mount)");
    let status = Command::new("fusermount3").arg("-u").arg(&m.dir).status().unwrap();
    assert!(status.success());
    assert!(!is_mounted(&m.dir));
    assert_eq!(m.on_disk("books/dune.json"), DUNE.replace("Dune", "Saved"));
    // The store opens again and its history is whole.
    let out = util::stardust(&["log", m.store.to_str().unwrap(), "--verify"]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    let history = m.history();
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[1].1, "mount");
}

#[test]
fn pjdfstest_passes_in_a_plain_folder() {
    // The mount's name is longer than the store's (`s`), so paths of PATH_MAX bytes in the
    // mount are shorter than that in the store below it; and short, so that socket paths fit
    // in `sun_path`.
    let m = Mounted::at("pjd", &[], &[]);
    let dir = m.path("p");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let bin = std::env::var("PJDFSTEST").unwrap_or_else(|_| "pjdfstest".to_owned());
    let run = |names: &[&str]| {
        let mut command = Command::new(&bin);
        command.arg("-v").arg("-c").arg(util::repo().join("tests/pjdfstest.toml"));
        command.arg("-p").arg(&dir).current_dir(&dir);
        // A name filters by substring: a rerun may take a few neighbours along.
        command.args(names);
        command.output().unwrap_or_else(|e| {
            panic!(
                "cannot run {bin} ({e}): install it with `cargo install pjdfstest --locked` \
                 (needs libacl1-dev), as .ci/run does, or name it in $PJDFSTEST"
            )
        })
    };
    let failed_in = |stdout: &str| -> Vec<String> {
        let failed = stdout.lines().filter(|l| l.trim_end().ends_with("FAILED"));
        failed.filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect()
    };
    let out = run(&[]);
    let stdout = text(&out.stdout);
    let failed = failed_in(&stdout);
    // A case that fails once and then passes three times in a row on its own is timing, not
    // the mount: it is reported (with the first run's output) but does not fail the test. One
    // such case seen once in CI under heavy load: utimensat::follow_symlink.
    let mut still_failing = Vec::new();
    for name in &failed {
        let reruns: Vec<bool> =
            (0..3).map(|_| failed_in(&text(&run(&[name]).stdout)).is_empty()).collect();
        if reruns.iter().all(|passed| *passed) {
            eprintln!("pjdfstest: {name} failed once and passed 3 reruns (timing):\n{stdout}");
        } else {
            still_failing.push(name.clone());
        }
    }
    assert!(
        (out.status.success() || !failed.is_empty()) && still_failing.is_empty(),
        "unexpected failures: {still_failing:#?}\n{stdout}\n{}",
        m.log()
    );
    let summary = stdout.lines().find(|l| l.starts_with("Summary:")).unwrap_or_default();
    assert!(summary.starts_with(&format!("Summary: {} failed", failed.len())), "{summary}");
}

#[test]
fn mount_refuses_a_folder_inside_the_store_or_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    fs::create_dir_all(store.join("inside")).unwrap();
    let run = |dir: &Path| {
        Command::new(env!("CARGO_BIN_EXE_stardust"))
            .arg("mount")
            .arg(&store)
            .arg(dir)
            .env_remove("RUST_LOG")
            .output()
            .unwrap()
    };
    let out = run(&store.join("inside"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error[invalid-arguments]"), "{stderr}");
    assert!(stderr.contains("inside the store"), "{stderr}");
    let out = run(&tmp.path().join("missing"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("cannot mount at"), "{}", text(&out.stderr));
    assert!(!is_mounted(&store.join("inside")));
}
