//! Backups (SPEC §10): an archive restores the store byte for byte, every kind of damage to
//! an archive is found, old archives rotate out, and bad targets and restore folders are
//! refused.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{open, write};
use stardust_core::backup::{
    self, BackupError, MANIFEST_PATH, MANIFEST_SUM_PATH, Phase, Progress, Written,
};
use stardust_core::store::{Change, Origin, Store};

/// A store beside a folder for its backups.
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    backups: PathBuf,
}

impl Fixture {
    /// A store with documents, other files of several modes, an empty folder, a link, a
    /// document that is not UTF-8, and the definition `backup/nightly`.
    fn new(keep: u64) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let backups = dir.path().join("backups");
        write(&root, "books/dune.dust", "id    book/dune\ntype  book\ntitle 'Dune'\n");
        write(&root, "people/frank.json", "{\"id\": \"person/frank\", \"type\": \"person\"}\n");
        write(&root, "README.md", "# Library\n");
        write(&root, ".gitignore", "target\n");
        write(&root, "deep/er/still/notes.txt", "deep\n");
        std::fs::write(root.join("cover.bin"), (0..=255u8).cycle().take(3000).collect::<Vec<_>>())
            .unwrap();
        write(&root, "tools/run.sh", "#!/bin/sh\necho hi\n");
        set_mode(&root.join("tools/run.sh"), 0o755);
        write(&root, "frozen.txt", "do not touch\n");
        set_mode(&root.join("frozen.txt"), 0o444);
        std::fs::create_dir_all(root.join("empty/inner")).unwrap();
        set_mode(&root.join("empty"), 0o700);
        std::os::unix::fs::symlink("books/dune.dust", root.join("dune-link")).unwrap();
        // Names past tar's 100 bytes, and names that are not ASCII.
        let long = format!("{}/{}.txt", "nested-folder".repeat(6), "a-long-name".repeat(10));
        write(&root, &long, "long\n");
        std::os::unix::fs::symlink(&long, root.join("long-link")).unwrap();
        write(&root, "café/naïve.txt", "ünïcödé\n");
        let mut latin1 = b"id book/latin\ntype book\ntitle '".to_vec();
        latin1.extend_from_slice(&[0xc9, 0x74, 0xe9]);
        latin1.extend_from_slice(b"'\n");
        std::fs::write(root.join("books/latin.dust"), latin1).unwrap();
        write(
            &root,
            "backups.dust",
            &format!(
                "id      backup/nightly\ntype    backup\ninclude ['**']\ntarget  '{}'\nkeep    {keep}\n",
                backups.display()
            ),
        );
        Fixture { _dir: dir, root, backups }
    }

    fn run(&self, store: &Store) -> Written {
        backup::run(store, "backup/nightly", &mut |_| {}).unwrap()
    }

    fn scratch(&self, name: &str) -> PathBuf {
        self.root.parent().unwrap().join(name)
    }
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[derive(Debug, PartialEq, Eq)]
enum Node {
    File { content: Vec<u8>, mode: u32, mtime: i64 },
    Dir { mode: u32 },
    Link(PathBuf),
}

/// Every file, folder and link under `root` (not `.stardust/`), with what a restore must
/// reproduce.
fn tree(root: &Path) -> BTreeMap<String, Node> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).min_depth(1) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(root).unwrap().to_str().unwrap().to_owned();
        if rel == ".stardust" || rel.starts_with(".stardust/") {
            continue;
        }
        let meta = entry.path().symlink_metadata().unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        let node = if meta.file_type().is_symlink() {
            Node::Link(std::fs::read_link(entry.path()).unwrap())
        } else if meta.is_dir() {
            Node::Dir { mode }
        } else {
            Node::File { content: std::fs::read(entry.path()).unwrap(), mode, mtime: meta.mtime() }
        };
        out.insert(rel, node);
    }
    out
}

#[test]
fn an_archive_restores_the_store_byte_for_byte() {
    let fx = Fixture::new(7);
    let store = open(&fx.root);
    let mut reports: Vec<(Phase, u64, u64)> = Vec::new();
    let written = backup::run(&store, "backup/nightly", &mut |p: &Progress<'_>| {
        reports.push((p.phase, p.done, p.total))
    })
    .unwrap();
    assert_eq!(written.seq, store.snapshot().seq);
    assert!(written.archive.starts_with(&fx.backups), "{written:?}");
    let name = written.archive.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("backup+nightly.00000000000000000001."), "{name}");
    assert!(reports.iter().all(|(phase, done, total)| *phase == Phase::Archiving && done <= total));
    assert_eq!(reports.last().map(|r| (r.1, r.2)), Some((reports[0].2, reports[0].2)));
    drop(store);

    let verified = backup::verify(&written.archive, &mut |_| {}).unwrap();
    assert_eq!(verified.manifest.seq, written.seq);
    assert_eq!(verified.manifest.definition, "backup/nightly");
    assert_eq!(verified.bytes, written.bytes);
    let paths: Vec<&str> = verified.manifest.entries.iter().map(|e| e.path.as_str()).collect();
    assert!(paths.contains(&"empty/inner"), "{paths:?}");
    assert!(!paths.iter().any(|p| p.starts_with(".stardust")), "{paths:?}");

    let restored = fx.scratch("restored");
    let done = backup::restore(&written.archive, &restored, false, &mut |_| {}).unwrap();
    assert_eq!(done.entries, verified.manifest.entries.len());
    assert_eq!(tree(&restored), tree(&fx.root));
    // The restored folder is a store: it opens, with the same documents.
    let again = open(&restored);
    assert_eq!(again.snapshot().analysis.document_count(), 4);
}

#[test]
fn documents_are_archived_as_of_the_snapshot() {
    let fx = Fixture::new(7);
    let store = open(&fx.root);
    let seq = store.snapshot().seq;
    // Behind the open store's back (it does not watch): not in its snapshot.
    write(&fx.root, "books/dune.dust", "id book/dune\ntype book\ntitle 'Changed'\n");
    write(&fx.root, "books/new.dust", "id book/new\ntype book\n");
    std::fs::remove_file(fx.root.join("people/frank.json")).unwrap();
    let written = fx.run(&store);
    assert_eq!(written.seq, seq);
    drop(store);
    let restored = fx.scratch("restored");
    backup::restore(&written.archive, &restored, false, &mut |_| {}).unwrap();
    assert_eq!(
        std::fs::read_to_string(restored.join("books/dune.dust")).unwrap(),
        "id    book/dune\ntype  book\ntitle 'Dune'\n"
    );
    assert!(!restored.join("books/new.dust").exists());
    assert_eq!(
        std::fs::read_to_string(restored.join("people/frank.json")).unwrap(),
        "{\"id\": \"person/frank\", \"type\": \"person\"}\n"
    );
}

#[test]
fn include_selects_files_and_the_folders_holding_them() {
    let fx = Fixture::new(7);
    write(
        &fx.root,
        "backups.dust",
        &format!(
            "id backup/nightly\ntype backup\ninclude ['books/*.dust' '*.md']\ntarget '{}'\n",
            fx.backups.display()
        ),
    );
    let store = open(&fx.root);
    let written = fx.run(&store);
    let verified = backup::verify(&written.archive, &mut |_| {}).unwrap();
    let paths: Vec<&str> = verified.manifest.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["README.md", "books", "books/dune.dust", "books/latin.dust"]);
}

/// The archive with its members (not the manifest) rewritten by `edit`, and the original
/// manifest members after them, so only the member list differs.
fn rewritten(archive: &Path, edit: impl Fn(&mut Vec<Member>)) -> Vec<u8> {
    let bytes = std::fs::read(archive).unwrap();
    let mut members = Vec::new();
    let mut tail = Vec::new();
    let mut tar = tar::Archive::new(bytes.as_slice());
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_str().unwrap().to_owned();
        let header = entry.header().clone();
        let link = entry.link_name().unwrap().map(|l| l.to_str().unwrap().to_owned());
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
        let member = Member { path: path.clone(), header, link, data };
        if path == MANIFEST_PATH || path == MANIFEST_SUM_PATH {
            tail.push(member);
        } else {
            members.push(member);
        }
    }
    edit(&mut members);
    let mut builder = tar::Builder::new(Vec::new());
    for m in members.iter().chain(&tail) {
        let mut header = m.header.clone();
        match &m.link {
            Some(link) => builder.append_link(&mut header, &m.path, link).unwrap(),
            None => builder.append_data(&mut header, &m.path, m.data.as_slice()).unwrap(),
        }
    }
    builder.into_inner().unwrap()
}

struct Member {
    path: String,
    header: tar::Header,
    link: Option<String>,
    data: Vec<u8>,
}

fn verify_bytes(dir: &Path, bytes: &[u8]) -> Result<(), String> {
    let path = dir.join("damaged.tar");
    std::fs::write(&path, bytes).unwrap();
    match backup::verify(&path, &mut |_| {}) {
        Ok(_) => Ok(()),
        Err(err) => {
            assert_eq!(err.code(), "invalid-arguments", "{err}");
            Err(err.to_string())
        }
    }
}

/// A flipped byte anywhere is found and named. Every 11th byte is flipped (11 is prime to the
/// 512-byte block, so the offsets visit every position of a block), and every byte of the
/// end of the archive.
#[test]
fn a_flipped_byte_anywhere_is_found() {
    let fx = Fixture::new(7);
    let store = open(&fx.root);
    let written = fx.run(&store);
    let bytes = std::fs::read(&written.archive).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&written.archive).unwrap();
    let flip = |offset: usize| {
        use std::os::unix::fs::FileExt;
        file.write_all_at(&[bytes[offset] ^ 0x20], offset as u64).unwrap();
        let result = backup::verify(&written.archive, &mut |_| {});
        file.write_all_at(&[bytes[offset]], offset as u64).unwrap();
        result.map(|_| ()).map_err(|err| {
            assert_eq!(err.code(), "invalid-arguments", "{err}");
            err.to_string()
        })
    };
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let offsets = (0..bytes.len()).step_by(11).chain(bytes.len() - 1536..bytes.len());
    for offset in offsets {
        match flip(offset) {
            Ok(()) => panic!("a flipped byte at {offset} of {} went unnoticed", bytes.len()),
            Err(reason) => {
                let reason = reason.split_once(": ").map_or(reason.clone(), |(_, r)| r.to_owned());
                *reasons.entry(reason).or_default() += 1;
            }
        }
    }
    // The damage is named precisely: a member's content, a header, padding, the manifest.
    let said = |prefix: &str| reasons.keys().any(|k| k.starts_with(prefix));
    assert!(
        said(
            "the content of 'cover.bin' does not match its SHA-256 in the manifest; the member is damaged"
        ),
        "{reasons:#?}"
    );
    assert!(
        said("its tar structure is damaged (archive header checksum mismatch)"),
        "{reasons:#?}"
    );
    assert!(
        said(
            "its bytes before the manifest do not match the manifest's SHA-256 of them; a tar header or padding is damaged"
        ),
        "{reasons:#?}"
    );
    assert!(
        said(
            "the manifest does not match its SHA-256 in .stardust/backup/manifest.json.sha256; one of them is damaged"
        ),
        "{reasons:#?}"
    );
    assert!(
        said("the manifest's tar header, its padding or the end-of-archive blocks are damaged"),
        "{reasons:#?}"
    );
}

#[test]
fn truncation_missing_and_extra_members_are_found() {
    let fx = Fixture::new(7);
    let store = open(&fx.root);
    let written = fx.run(&store);
    let bytes = std::fs::read(&written.archive).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();

    for len in (0..bytes.len()).step_by(97).chain([bytes.len() - 1, bytes.len() - 1024]) {
        let reason = verify_bytes(dir, &bytes[..len]).expect_err("a truncated archive is refused");
        assert!(
            reason.contains("truncated") || reason.contains("missing"),
            "cut at {len}: {reason}"
        );
    }
    let mut longer = bytes.clone();
    longer.extend_from_slice(b"junk");
    assert!(
        verify_bytes(dir, &longer)
            .unwrap_err()
            .ends_with("it has 4 extra bytes after the end of the archive")
    );

    let missing = rewritten(&written.archive, |members| members.retain(|m| m.path != "README.md"));
    assert!(
        verify_bytes(dir, &missing)
            .unwrap_err()
            .ends_with("the member 'README.md' that the manifest lists is missing"),
    );
    let extra = rewritten(&written.archive, |members| {
        let mut header = tar::Header::new_gnu();
        header.set_size(3);
        header.set_mode(0o644);
        let path = "smuggled.txt".to_owned();
        members.push(Member { path, header, link: None, data: b"bad".to_vec() });
    });
    assert!(verify_bytes(dir, &extra).unwrap_err().ends_with(
        "the member 'smuggled.txt' is not in the manifest; the archive has an extra member"
    ),);
    // Unchanged members in a rewritten archive still verify member by member; only the bytes
    // between them (here: the same) are compared as a whole.
    let same = rewritten(&written.archive, |_| {});
    assert_eq!(verify_bytes(dir, &same), Ok(()));
}

#[test]
fn a_damaged_archive_restores_nothing() {
    let fx = Fixture::new(7);
    let store = open(&fx.root);
    let written = fx.run(&store);
    let mut bytes = std::fs::read(&written.archive).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&written.archive, &bytes).unwrap();
    let restored = fx.scratch("restored");
    let err = backup::restore(&written.archive, &restored, false, &mut |_| {}).unwrap_err();
    assert!(matches!(err, BackupError::Corrupt { .. }), "{err}");
    let left: Vec<_> = std::fs::read_dir(&restored).map(|d| d.collect()).unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn only_the_newest_archives_are_kept() {
    let fx = Fixture::new(2);
    std::fs::create_dir_all(&fx.backups).unwrap();
    // Archives of another definition and other files are not this definition's to delete.
    let other = fx.backups.join("backup+weekly.00000000000000000001.20200101T000000.000Z.tar");
    std::fs::write(&other, "x").unwrap();
    std::fs::write(fx.backups.join("notes.txt"), "x").unwrap();
    // An old archive of this definition from a store whose seqs were higher.
    let old = fx.backups.join("backup+nightly.00000000000000000900.20200101T000000.000Z.tar");
    std::fs::write(&old, "x").unwrap();

    let store = open(&fx.root);
    let first = fx.run(&store);
    assert!(first.removed.is_empty(), "{first:?}");
    store
        .commit(Origin::Sdk("test".into()), vec![Change::put("a.dust", "id a/a\ntype a\n")])
        .unwrap();
    let second = fx.run(&store);
    assert_eq!(second.removed, [old]);
    assert_eq!(second.seq, first.seq + 1);
    let third = fx.run(&store);
    assert_eq!(third.removed, [first.archive]);
    let mut left: Vec<String> = std::fs::read_dir(&fx.backups)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    let mut expected: Vec<String> = [&second.archive, &third.archive, &other]
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    expected.push("notes.txt".into());
    expected.sort();
    assert_eq!(left, expected);
}

fn define(fx: &Fixture, target: &str) -> Store {
    write(
        &fx.root,
        "backups.dust",
        &format!("id backup/nightly\ntype backup\ntarget '{target}'\n"),
    );
    open(&fx.root)
}

#[test]
fn a_target_inside_the_store_is_refused() {
    let fx = Fixture::new(7);
    for target in ["backups", ".", "books/../archive", &fx.root.join("sub").display().to_string()] {
        let store = define(&fx, target);
        let err = backup::run(&store, "backup/nightly", &mut |_| {}).unwrap_err();
        assert!(matches!(err, BackupError::TargetInsideStore { .. }), "{target}: {err}");
        assert_eq!(err.code(), "refused");
        drop(store);
    }
    assert!(!fx.root.join("backups").exists(), "nothing is created");
}

#[test]
fn an_unwritable_target_is_a_clear_typed_error() {
    let fx = Fixture::new(7);
    let file = fx.scratch("a-file");
    std::fs::write(&file, "x").unwrap();
    let store = define(&fx, &file.join("sub").display().to_string());
    let err = backup::run(&store, "backup/nightly", &mut |_| {}).unwrap_err();
    assert!(matches!(err, BackupError::TargetUnwritable { .. }), "{err}");
    assert_eq!(err.code(), "invalid-arguments");
    assert!(
        err.to_string().starts_with(&format!(
            "cannot write to the backup target {}",
            file.join("sub").display()
        )),
        "{err}"
    );
}

#[test]
fn restore_refuses_a_non_empty_folder_unless_forced() {
    let fx = Fixture::new(7);
    let store = open(&fx.root);
    let written = fx.run(&store);
    let restored = fx.scratch("restored");
    write(&restored, "README.md", "mine\n");
    write(&restored, "unrelated.txt", "kept\n");
    let err = backup::restore(&written.archive, &restored, false, &mut |_| {}).unwrap_err();
    assert!(matches!(err, BackupError::NotEmpty { .. }), "{err}");
    assert_eq!(err.code(), "refused");
    assert_eq!(std::fs::read_to_string(restored.join("README.md")).unwrap(), "mine\n");

    backup::restore(&written.archive, &restored, true, &mut |_| {}).unwrap();
    assert_eq!(std::fs::read_to_string(restored.join("README.md")).unwrap(), "# Library\n");
    assert_eq!(std::fs::read_to_string(restored.join("unrelated.txt")).unwrap(), "kept\n");
    // Forced again over itself: links and read-only files are replaced too.
    backup::restore(&written.archive, &restored, true, &mut |_| {}).unwrap();
    let mut expected = tree(&fx.root);
    expected.insert("unrelated.txt".into(), tree(&restored).remove("unrelated.txt").unwrap());
    assert_eq!(tree(&restored), expected);
}

#[test]
fn restore_never_writes_through_a_link_in_the_folder() {
    let fx = Fixture::new(7);
    let store = open(&fx.root);
    let written = fx.run(&store);
    let outside = fx.scratch("outside");
    std::fs::create_dir(&outside).unwrap();
    let restored = fx.scratch("restored");
    std::fs::create_dir(&restored).unwrap();
    std::os::unix::fs::symlink(&outside, restored.join("books")).unwrap();
    // Forced, the link in the way of a folder is replaced by the folder.
    backup::restore(&written.archive, &restored, true, &mut |_| {}).unwrap();
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(std::fs::symlink_metadata(restored.join("books")).unwrap().is_dir());
}

#[test]
fn definitions_are_found_and_checked() {
    let fx = Fixture::new(7);
    let store = open(&fx.root);
    let err = backup::run(&store, "backup/nighty", &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "not-found");
    assert_eq!(
        err.to_string(),
        "no entity has the id 'backup/nighty'; did you mean 'backup/nightly'?"
    );
    let err = backup::run(&store, "book/dune", &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "invalid-arguments");
    assert!(err.to_string().contains("it is an entity of type 'book', not 'backup'"), "{err}");
    let err = backup::verify(&fx.scratch("none.tar"), &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "not-found");
}

#[test]
fn progress_is_reported_inside_a_large_file() {
    let fx = Fixture::new(7);
    std::fs::write(fx.root.join("big.bin"), vec![7u8; 9 << 20]).unwrap();
    let store = open(&fx.root);
    let mut big: Vec<u64> = Vec::new();
    let mut last = 0;
    backup::run(&store, "backup/nightly", &mut |p: &Progress<'_>| {
        assert!(p.done >= last && p.done <= p.total, "progress never goes back or past the end");
        last = p.done;
        if p.path == "big.bin" {
            big.push(p.done);
        }
    })
    .unwrap();
    // Once when the file starts, then after each 4 MiB of it.
    assert_eq!(big.len(), 3, "{big:?}");
    assert_eq!(big[2] - big[0], 8 << 20);
}

#[test]
fn a_file_that_cannot_be_archived_as_of_the_snapshot_fails_the_run_and_leaves_nothing() {
    let fx = Fixture::new(7);
    let store = open(&fx.root);
    // The snapshot holds this document's text only up to its first invalid byte, so its
    // content is read from disk, where it changed since.
    std::fs::write(fx.root.join("books/latin.dust"), b"id book/latin\ntitle '\xff'\n").unwrap();
    let err = backup::run(&store, "backup/nightly", &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "conflict");
    assert_eq!(
        err.to_string(),
        "books/latin.dust changed while it was being archived; run the backup again"
    );
    assert_eq!(std::fs::read_dir(&fx.backups).unwrap().count(), 0, "the partial archive is gone");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Whatever the bytes, verify answers with an error and never panics.
    #[test]
    fn verify_never_panics_on_garbage(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4096), tarlike in proptest::prelude::any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let mut data = Vec::new();
        if tarlike {
            // A valid header first, so the garbage lands in the member list.
            let mut builder = tar::Builder::new(Vec::new());
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64 / 2);
            header.set_mode(0o644);
            let half = &bytes[..bytes.len() / 2];
            builder.append_data(&mut header, "a.txt", half).unwrap();
            data = builder.into_inner().unwrap();
        }
        data.extend_from_slice(&bytes);
        let path = dir.path().join("x.tar");
        std::fs::write(&path, &data).unwrap();
        let result = backup::verify(&path, &mut |_| {});
        proptest::prop_assert!(result.is_err());
    }
}

#[test]
fn restore_goes_through_a_link_given_as_the_folder_but_not_into_a_file() {
    let fx = Fixture::new(7);
    let store = open(&fx.root);
    let written = fx.run(&store);
    let real = fx.scratch("real");
    std::fs::create_dir(&real).unwrap();
    let link = fx.scratch("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    backup::restore(&written.archive, &link, false, &mut |_| {}).unwrap();
    assert_eq!(std::fs::read_to_string(real.join("README.md")).unwrap(), "# Library\n");

    let file = fx.scratch("file");
    std::fs::write(&file, "x").unwrap();
    let err = backup::restore(&written.archive, &file, true, &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "invalid-arguments");
    assert_eq!(
        err.to_string(),
        format!("{} exists and is not a folder; give a folder to restore into", file.display())
    );
}
