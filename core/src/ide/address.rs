//! How clients that count in lines and characters, or name data by entity id, address a
//! place in the store: store paths from what a client gives, 1-based positions, entity ids
//! with JSON Pointers, and the entity a location is in (`crate::answers` writes locations).

use std::path::{Component, Path, PathBuf};

use crate::analysis::{Analysis, Document};
use crate::error::Error;
use crate::text::{Encoding, Position, Span};

/// The store-relative, `/`-separated path of `given`: relative to the store root, or absolute
/// inside it. A path that leaves the store (`..`, a symbolic link pointing out, another
/// folder) is `outside-store`. `root` must be canonical.
pub fn store_path(root: &Path, given: &str) -> Result<String, Error> {
    let outside = || Error::OutsideStore { path: PathBuf::from(given), store: root.to_owned() };
    if given.is_empty() || given.contains('\0') {
        return Err(Error::InvalidArguments(
            "`path` is empty; give a document path relative to the store root".to_owned(),
        ));
    }
    let joined = root.join(given);
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                if !normal.pop() {
                    return Err(outside());
                }
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    // A path that exists is judged by where it really is, so a link cannot lead out.
    let real = match std::fs::canonicalize(&normal) {
        Ok(real) => real,
        Err(_) => normal,
    };
    let rel = real.strip_prefix(root).map_err(|_| outside())?;
    let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    if parts.is_empty() || parts.len() != rel.iter().count() {
        return Err(outside());
    }
    Ok(parts.join("/"))
}

/// The byte offset of a 1-based `line` and `column` (counted in characters) in `doc`.
pub fn position_offset(doc: &Document, line: u64, column: u64) -> Result<u32, Error> {
    let invalid = || {
        let lines = doc.line_index.line_count();
        Error::InvalidArguments(format!(
            "line {line} column {column} is not a position in {} ({lines} lines); lines and \
             columns are 1-based, columns counted in characters",
            doc.path
        ))
    };
    let line = u32::try_from(line.checked_sub(1).ok_or_else(invalid)?).map_err(|_| invalid())?;
    let column =
        u32::try_from(column.checked_sub(1).ok_or_else(invalid)?).map_err(|_| invalid())?;
    doc.line_index.offset(&doc.text, Position { line, column }, Encoding::Utf32).ok_or_else(invalid)
}

/// The document and span of the value at JSON Pointer `pointer` inside entity `id`; the empty
/// pointer designates the entity's `id` value.
pub fn entity_place(analysis: &Analysis, id: &str, pointer: &str) -> Result<(String, Span), Error> {
    let loc = analysis.entity(id).first().ok_or_else(|| {
        Error::NotFound(match analysis.closest_ids(id, 1).first() {
            Some(near) => format!("no entity has the id '{id}'; did you mean '{near}'?"),
            None => format!("no entity has the id '{id}'; check the id"),
        })
    })?;
    if let [_, _, ..] = analysis.entity(id) {
        let paths: Vec<&str> = analysis.entity(id).iter().map(|l| &*l.path).collect();
        return Err(Error::AmbiguousPosition(format!(
            "{} entities have the id '{id}' (in {}); give `path` and `position` instead, or \
             fix the duplicate id",
            paths.len(),
            paths.join(", ")
        )));
    }
    let missing = || Error::NotFound(format!("no entity has the id '{id}'; check the id"));
    let doc = analysis.document(&loc.path).ok_or_else(missing)?;
    let entity = doc.entities.get(loc.index).ok_or_else(missing)?;
    if pointer.is_empty() {
        return Ok((doc.path.clone(), entity.id_span));
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(Error::InvalidArguments(format!(
            "`pointer` '{pointer}' is not a JSON Pointer; write it like /author or /tags/0"
        )));
    };
    let tokens: Vec<String> =
        rest.split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect();
    let (node, value) = doc.entity_node(loc.index).ok_or_else(missing)?;
    let (found, _, _) = node.at_pointer(value, &tokens).ok_or_else(|| {
        let fields: Vec<&str> =
            value.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
        Error::NotFound(format!(
            "entity '{id}' has no value at {pointer}; its fields are {}",
            fields.join(", ")
        ))
    })?;
    Ok((doc.path.clone(), found.span))
}

/// The id of the entity whose object covers `offset`.
pub fn entity_at(doc: &Document, offset: u32) -> Option<&str> {
    doc.entities
        .iter()
        .filter(|e| e.span.contains_inclusive(offset))
        .min_by_key(|e| e.span.len())
        .and_then(|e| e.id.as_deref())
}
