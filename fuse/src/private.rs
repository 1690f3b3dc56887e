//! The virtual, read-only `.stardust/` folder of the mount: `transactions/<seq>.json` (one
//! file per transaction, 20-digit seq), `rejected/` (the refused saves the core kept) and
//! `store.json` (which store and which daemon socket the mount belongs to), and `at/<seq>/`:
//! every file as of that seq, read-only (SPEC §26). Its derived
//! folders `json/` and `entities/` are listed here and shown by `fs/projections.rs`.

use std::path::PathBuf;

use stardust_core::store::{PRIVATE_DIR, Store, TreeEntry, projections};

const TRANSACTIONS: &str = "transactions";
const REJECTED: &str = "rejected";
const STORE_JSON: &str = "store.json";
const AT: &str = "at";

/// What a path inside the virtual folder is.
#[derive(Debug)]
pub enum Entry {
    Dir,
    /// A file generated from the store.
    File(Vec<u8>),
    /// A file kept on disk by the core.
    OnDisk(PathBuf),
}

/// The virtual entry at `path` (store-relative, starting with `.stardust`).
pub fn resolve(store: &Store, mountpoint: &std::path::Path, path: &str) -> Option<Entry> {
    let rest = path.strip_prefix(PRIVATE_DIR)?;
    let rest = if rest.is_empty() { "" } else { rest.strip_prefix('/')? };
    match rest.split_once('/') {
        None => match rest {
            "" | TRANSACTIONS | REJECTED | AT => Some(Entry::Dir),
            STORE_JSON => Some(Entry::File(store_json(store, mountpoint))),
            _ => None,
        },
        Some((TRANSACTIONS, name)) => transaction(store, name).map(Entry::File),
        Some((AT, rest)) => at(store, rest),
        Some((REJECTED, name)) if !name.contains('/') && !name.starts_with('.') => {
            let file = store.rejected_dir().join(name);
            file.is_file().then_some(Entry::OnDisk(file))
        }
        Some(_) => None,
    }
}

/// The names in the virtual folder at `path`, each with whether it is a folder.
pub fn list(store: &Store, path: &str) -> Option<Vec<(String, bool)>> {
    let rest = path.strip_prefix(PRIVATE_DIR)?;
    match rest {
        "" => Some(vec![
            (projections::JSON_DIR.to_owned(), true),
            (projections::ENTITIES_DIR.to_owned(), true),
            (TRANSACTIONS.to_owned(), true),
            (REJECTED.to_owned(), true),
            (STORE_JSON.to_owned(), false),
            (AT.to_owned(), true),
        ]),
        "/at" => Some((1..=store.head_seq()).map(|seq| (seq.to_string(), true)).collect()),
        "/transactions" => {
            let head = store.snapshot().seq;
            Some((1..=head).map(|seq| (file_name(seq), false)).collect())
        }
        "/rejected" => {
            let mut names: Vec<(String, bool)> = std::fs::read_dir(store.rejected_dir())
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|name| !name.starts_with('.'))
                .map(|name| (name, false))
                .collect();
            names.sort();
            Some(names)
        }
        _ => {
            let rest = rest.strip_prefix("/at/")?;
            let (seq, dir) = rest.split_once('/').unwrap_or((rest, ""));
            store.folder_at(parse_seq(seq)?, dir)
        }
    }
}

/// A seq as `at/` names it: decimal digits, no sign or leading zeros.
fn parse_seq(name: &str) -> Option<u64> {
    let canonical = !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_digit())
        && (name == "0" || !name.starts_with('0'));
    canonical.then(|| name.parse().ok()).flatten()
}

/// `at/<seq>[/<path>]`: the folder of a seq, a file as of it, or a folder above files.
fn at(store: &Store, rest: &str) -> Option<Entry> {
    let (seq, path) = rest.split_once('/').unwrap_or((rest, ""));
    match store.tree_at(parse_seq(seq)?, path)? {
        TreeEntry::Folder => Some(Entry::Dir),
        TreeEntry::File(bytes) => Some(Entry::File(bytes)),
    }
}

/// The file name of transaction `seq`.
pub fn file_name(seq: u64) -> String {
    format!("{seq:020}.json")
}

fn transaction(store: &Store, name: &str) -> Option<Vec<u8>> {
    let digits = name.strip_suffix(".json")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seq: u64 = digits.parse().ok()?;
    let txn = store.transactions(seq.checked_sub(1)?, 1).ok()?.into_iter().next()?;
    if txn.seq != seq {
        return None;
    }
    let mut text = serde_json::to_vec_pretty(&txn.to_json()).ok()?;
    text.push(b'\n');
    Some(text)
}

fn store_json(store: &Store, mountpoint: &std::path::Path) -> Vec<u8> {
    let value = serde_json::json!({
        "store": store.root().display().to_string(),
        "mount": mountpoint.display().to_string(),
        "pid": std::process::id(),
        "socket": own_socket(store),
    });
    let mut text = serde_json::to_vec_pretty(&value).unwrap_or_default();
    text.push(b'\n');
    text
}

/// The socket of the core this mount runs in (`stardust serve --mount`): the one recorded in
/// `STORE/.stardust/run/daemon.json` by this very process. `null` when the mount owns the store
/// alone (`stardust mount`), or the record names another process (it is read at each look, so
/// it is never stale).
fn own_socket(store: &Store) -> serde_json::Value {
    let record = store.root().join(".stardust/run/daemon.json");
    let Ok(text) = std::fs::read(record) else { return serde_json::Value::Null };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&text) else {
        return serde_json::Value::Null;
    };
    match (value["pid"].as_u64(), &value["socket"]) {
        (Some(pid), socket @ serde_json::Value::String(_))
            if pid == u64::from(std::process::id()) =>
        {
            socket.clone()
        }
        _ => serde_json::Value::Null,
    }
}
