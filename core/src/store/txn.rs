//! What a transaction is: its sequence number, time, origin and per-document changes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

/// A document version: the SHA-256 of its content, shown as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version([u8; 32]);

impl Version {
    pub fn of(content: &[u8]) -> Version {
        Version(Sha256::digest(content).into())
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Version({self})")
    }
}

impl FromStr for Version {
    type Err = String;

    fn from_str(s: &str) -> Result<Version, String> {
        let bytes = s.as_bytes();
        if bytes.len() != 64 {
            return Err(format!("a version is 64 hex digits, found {} characters", s.len()));
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks(2).enumerate() {
            let hex = std::str::from_utf8(pair).map_err(|_| "a version is hex digits")?;
            out[i] = u8::from_str_radix(hex, 16)
                .map_err(|_| format!("a version is hex digits, found '{hex}'"))?;
        }
        Ok(Version(out))
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Version, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Who made a change (SPEC §6).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Origin {
    Mount,
    Lsp(String),
    Mcp(String),
    Sdk(String),
    /// A change made behind Stardust's back, noticed on open or by the file watcher.
    External,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Mount => f.write_str("mount"),
            Origin::Lsp(name) => write!(f, "lsp:{name}"),
            Origin::Mcp(name) => write!(f, "mcp:{name}"),
            Origin::Sdk(name) => write!(f, "sdk:{name}"),
            Origin::External => f.write_str("external"),
        }
    }
}

impl FromStr for Origin {
    type Err = String;

    fn from_str(s: &str) -> Result<Origin, String> {
        match s.split_once(':') {
            None if s == "mount" => Ok(Origin::Mount),
            None if s == "external" => Ok(Origin::External),
            Some(("lsp", name)) => Ok(Origin::Lsp(name.to_owned())),
            Some(("mcp", name)) => Ok(Origin::Mcp(name.to_owned())),
            Some(("sdk", name)) => Ok(Origin::Sdk(name.to_owned())),
            _ => Err(format!(
                "unknown origin '{s}'; expected mount, external, lsp:NAME, mcp:NAME or sdk:NAME"
            )),
        }
    }
}

impl Serialize for Origin {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Origin {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Origin, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How a document or an entity changed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Created,
    Changed,
    Deleted,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Changed => "changed",
            ChangeKind::Deleted => "deleted",
        }
    }

    fn of(before: Option<Version>, after: Option<Version>) -> ChangeKind {
        match (before, after) {
            (None, _) => ChangeKind::Created,
            (_, None) => ChangeKind::Deleted,
            _ => ChangeKind::Changed,
        }
    }
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One document's part in a transaction. `before` is `None` when the document was created,
/// `after` is `None` when it was deleted; never both.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct DocumentChange {
    pub path: String,
    pub before: Option<Version>,
    pub after: Option<Version>,
    /// Entity ids that appeared in, changed in, and disappeared from this document.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<String>,
}

impl DocumentChange {
    pub fn kind(&self) -> ChangeKind {
        ChangeKind::of(self.before, self.after)
    }
}

/// A committed transaction as the log records it (document contents aside).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Transaction {
    pub seq: u64,
    /// UTC, RFC 3339.
    pub time: String,
    pub origin: Origin,
    /// Sorted by path; each path at most once.
    pub documents: Vec<DocumentChange>,
}

impl Transaction {
    /// The transaction as JSON, the one shape `stardust log --format json` prints and the
    /// mount shows at `.stardust/transactions/<seq>.json`.
    pub fn to_json(&self) -> serde_json::Value {
        let documents: Vec<serde_json::Value> = self
            .documents
            .iter()
            .map(|doc| {
                serde_json::json!({
                    "path": doc.path,
                    "change": doc.kind().as_str(),
                    "before": doc.before.map(|v| v.to_string()),
                    "after": doc.after.map(|v| v.to_string()),
                    "entities": {
                        "created": doc.created,
                        "changed": doc.changed,
                        "deleted": doc.deleted,
                    },
                })
            })
            .collect();
        serde_json::json!({
            "seq": self.seq,
            "time": self.time,
            "origin": self.origin.to_string(),
            "documents": documents,
        })
    }

    /// The entity-level changes of the whole transaction: an entity that left one document
    /// and appeared in another, or changed inside one, is `changed`. Sorted by id.
    pub fn entity_changes(&self) -> Vec<(String, ChangeKind)> {
        use std::collections::BTreeMap;
        let mut out: BTreeMap<&str, (bool, bool, bool)> = BTreeMap::new();
        for doc in &self.documents {
            for id in &doc.created {
                out.entry(id).or_default().0 = true;
            }
            for id in &doc.changed {
                out.entry(id).or_default().1 = true;
            }
            for id in &doc.deleted {
                out.entry(id).or_default().2 = true;
            }
        }
        out.into_iter()
            .map(|(id, (created, changed, deleted))| {
                let kind = match (created, changed, deleted) {
                    (true, false, false) => ChangeKind::Created,
                    (false, false, true) => ChangeKind::Deleted,
                    _ => ChangeKind::Changed,
                };
                (id.to_owned(), kind)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_round_trips_through_hex() {
        let v = Version::of(b"hello");
        let text = v.to_string();
        assert_eq!(text, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        assert_eq!(text.parse::<Version>(), Ok(v));
        assert!("abc".parse::<Version>().is_err());
        assert!("zz".repeat(32).parse::<Version>().is_err());
    }

    #[test]
    fn origin_round_trips() {
        for text in ["mount", "external", "lsp:vscode", "mcp:claude", "sdk:my app"] {
            assert_eq!(text.parse::<Origin>().unwrap().to_string(), text);
        }
        assert!("ftp:x".parse::<Origin>().is_err());
        assert!("lsp".parse::<Origin>().is_err());
    }

    #[test]
    fn moved_entity_is_changed() {
        let a = Version::of(b"a");
        let txn = Transaction {
            seq: 1,
            time: String::new(),
            origin: Origin::Mount,
            documents: vec![
                DocumentChange {
                    path: "a.json".into(),
                    before: Some(a),
                    after: None,
                    created: vec![],
                    changed: vec![],
                    deleted: vec!["x/moved".into(), "x/gone".into()],
                },
                DocumentChange {
                    path: "b.json".into(),
                    before: None,
                    after: Some(a),
                    created: vec!["x/moved".into(), "x/new".into()],
                    changed: vec![],
                    deleted: vec![],
                },
            ],
        };
        assert_eq!(
            txn.entity_changes(),
            vec![
                ("x/gone".to_owned(), ChangeKind::Deleted),
                ("x/moved".to_owned(), ChangeKind::Changed),
                ("x/new".to_owned(), ChangeKind::Created),
            ]
        );
        assert_eq!(txn.documents[0].kind(), ChangeKind::Deleted);
        assert_eq!(txn.documents[1].kind(), ChangeKind::Created);
    }
}
