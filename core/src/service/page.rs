//! Bounded pages: every list an agent gets is a slice (`limit` default 100, at most 500,
//! `offset`) with `total` and `nextOffset`, and every page fits in 64 KiB. A page that would
//! not fit is shrunk, never cut silently: `nextOffset` then points at the first item left out
//! and `pageShrunk` says why.

use crate::error::Error;
use serde_json::{Map, Value, json};

use super::{CommandError, CommandResult, Effect, Service, Session, contract};

pub const DEFAULT_LIMIT: u64 = 100;
pub const MAX_LIMIT: u64 = 500;
/// The most bytes of JSON one page may take.
pub const MAX_PAGE_BYTES: usize = 64 * 1024;

/// The `limit` and `offset` of a tool's arguments, with the defaults and bounds above.
pub fn window(args: &Map<String, Value>) -> Result<(u64, u64), Error> {
    let number = |key: &str, default: u64| match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v.as_u64().ok_or_else(|| {
            Error::InvalidArguments(format!("`{key}` must be a non-negative integer, not {v}"))
        }),
    };
    let limit = number("limit", DEFAULT_LIMIT)?;
    if limit > MAX_LIMIT {
        return Err(Error::InvalidArguments(format!(
            "`limit` is at most {MAX_LIMIT}; page through with `offset` and `nextOffset`"
        )));
    }
    Ok((limit, number("offset", 0)?))
}

/// The page of `items` that `args` asks for, as `{<key>: [...], total, nextOffset}`.
pub fn page(key: &str, items: Vec<Value>, args: &Map<String, Value>) -> Result<Value, Error> {
    let (limit, offset) = window(args)?;
    let total = items.len();
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(total);
    let end = start.saturating_add(usize::try_from(limit).unwrap_or(usize::MAX)).min(total);
    let mut slice: Vec<Value> = items.into_iter().skip(start).take(end - start).collect();
    let mut shrunk = false;
    // Item sizes are measured once; the page keeps the longest prefix that fits (at least
    // one item, so that paging always moves on).
    let sizes: Vec<usize> =
        slice.iter().map(|v| serde_json::to_vec(v).map_or(0, |b| b.len()) + 1).collect();
    let mut used = 128 + key.len();
    let mut keep = 0;
    for size in &sizes {
        if keep > 0 && used + size > MAX_PAGE_BYTES {
            shrunk = true;
            break;
        }
        used += size;
        keep += 1;
    }
    slice.truncate(keep);
    let next = start + slice.len();
    let mut out = Map::new();
    out.insert(key.to_owned(), Value::Array(slice));
    out.insert("total".into(), json!(total));
    out.insert("nextOffset".into(), if next < total { json!(next) } else { Value::Null });
    if shrunk {
        out.insert("pageShrunk".into(), json!(true));
    }
    Ok(Value::Object(out))
}

/// An answer that is not a page, made to fit in 64 KiB: when it is larger, its longest lists
/// (top-level, or one level down as `diagnostics.new`) keep only the items that fit, and
/// `omitted` counts, per list, the items left out. Nothing is dropped without being counted
/// there.
pub fn fit(value: Value) -> Value {
    let total = serde_json::to_vec(&value).map_or(0, |b| b.len());
    fit_measured(value, total)
}

/// [`fit`] of a value already measured at `total` bytes of JSON.
fn fit_measured(value: Value, total: usize) -> Value {
    fit_within(value, total, MAX_PAGE_BYTES)
}

/// [`fit`] into `cap` bytes of a value measured at `total`.
fn fit_within(mut value: Value, total: usize, cap: usize) -> Value {
    let Some(map) = value.as_object_mut() else { return value };
    if total <= cap {
        return value;
    }
    // Every list by its place (`key`, or `key.inner`) and size, longest first.
    let mut lists: Vec<(String, Option<String>, usize)> = Vec::new();
    for (key, v) in map.iter() {
        match v {
            Value::Array(_) => lists.push((key.clone(), None, size(v))),
            Value::Object(inner) => lists.extend(
                inner
                    .iter()
                    .filter(|(_, v)| v.is_array())
                    .map(|(k, v)| (key.clone(), Some(k.clone()), size(v))),
            ),
            _ => {}
        }
    }
    lists.sort_by_key(|(_, _, size)| std::cmp::Reverse(*size));
    let mut over = (total + 256).saturating_sub(cap);
    let mut omitted = match map.remove("omitted") {
        Some(Value::Object(counts)) => counts,
        _ => Map::new(),
    };
    for (key, inner, _) in lists {
        if over == 0 {
            break;
        }
        let list = match &inner {
            None => map.get_mut(&key),
            Some(inner) => map.get_mut(&key).and_then(|v| v.get_mut(inner)),
        };
        let Some(Value::Array(items)) = list else { continue };
        let mut dropped = 0;
        while over > 0 {
            let Some(item) = items.pop() else { break };
            over = over.saturating_sub(size(&item) + 1);
            dropped += 1;
        }
        let place = match inner {
            None => key,
            Some(inner) => format!("{key}.{inner}"),
        };
        omitted.insert(place, json!(dropped));
    }
    map.insert("omitted".into(), Value::Object(omitted));
    value
}

fn size(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(0, |b| b.len())
}

/// A preview (SPEC §7) as one page of an agent's answer: its `documents` from `offset` (at
/// most `limit` of them), as many as fit in 64 KiB beside the rest of the preview, with
/// `total` (how many documents the preview changes) and `nextOffset` (the first one left
/// out, `null` when none is; `preview_get` reads on from there), and `pageShrunk` when the
/// page was cut to fit rather than by `limit`. The preview itself keeps every document: a
/// confirm commits the whole of it, whatever page was shown.
///
/// The rest of the preview (entities, diagnostics, reasons) keeps at most half a page, its
/// lists cut as [`fit`] does (counted in `omitted`). A document whose diff alone does not fit
/// keeps the diff's beginning, with `diffTruncated: true` and the whole diff's `diffBytes`.
pub fn preview_page(mut preview: Value, offset: usize, limit: usize) -> Value {
    let Some(map) = preview.as_object_mut() else { return preview };
    let documents = match map.remove("documents") {
        Some(Value::Array(documents)) => documents,
        _ => Vec::new(),
    };
    for key in ["total", "nextOffset", "pageShrunk"] {
        map.remove(key);
    }
    let total = documents.len();
    let mut rest = Value::Object(std::mem::take(map));
    let rest_bytes = size(&rest);
    if rest_bytes > MAX_PAGE_BYTES / 2 {
        rest = fit_within(rest, rest_bytes, MAX_PAGE_BYTES / 2);
    }
    // What the page's other fields (`documents`, `total`, ...) and their keys take.
    const ENVELOPE: usize = 128;
    let budget = MAX_PAGE_BYTES - size(&rest) - ENVELOPE;
    let start = offset.min(total);
    let end = start.saturating_add(limit).min(total);
    let mut kept = Vec::new();
    let mut used = 0;
    let mut shrunk = false;
    for document in documents.into_iter().skip(start).take(end - start) {
        let bytes = size(&document) + 1;
        if used + bytes > budget {
            if kept.is_empty() {
                kept.push(cut_diff(document, budget));
            }
            shrunk = start + kept.len() < end;
            break;
        }
        used += bytes;
        kept.push(document);
    }
    let next = start + kept.len();
    let Value::Object(mut map) = rest else { unreachable!("the rest of an object is one") };
    map.insert("documents".into(), Value::Array(kept));
    map.insert("total".into(), json!(total));
    map.insert("nextOffset".into(), if next < total { json!(next) } else { Value::Null });
    if shrunk {
        map.insert("pageShrunk".into(), json!(true));
    }
    Value::Object(map)
}

/// A preview's document whose JSON is over `budget` bytes with its diff cut to fit (at a
/// line's end where there is one), marked as cut.
fn cut_diff(mut document: Value, budget: usize) -> Value {
    let Some(diff) = document.get("diff").and_then(Value::as_str).map(str::to_owned) else {
        return document;
    };
    let others = size(&document) - size(&json!(diff));
    // JSON escapes may double a byte: keep half of what is left, with room for the marks.
    let room = budget.saturating_sub(others + 64) / 2;
    let mut end = room.min(diff.len());
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let end = diff[..end].rfind('\n').map_or(end, |n| n + 1);
    document["diff"] = json!(&diff[..end]);
    document["diffTruncated"] = json!(true);
    document["diffBytes"] = json!(diff.len());
    document
}

impl Service {
    /// Run command `name` for a session whose answers must each fit one page (an agent's):
    /// `limit` gets its default and bound, a page of `rows` over 64 KiB is asked again with
    /// fewer rows (`pageShrunk`), a preview pages its documents (`preview_page`), other lists
    /// are cut with counts (`fit`), and an answer still over 64 KiB (one huge value) is
    /// refused with its size rather than cut.
    pub fn execute_paged(
        &self,
        session: &Session,
        name: &str,
        args: Map<String, Value>,
    ) -> CommandResult {
        self.execute_paged_json(session, name, args).map(|(value, _)| value)
    }

    /// [`Service::execute_paged`], with the answer's compact JSON text: measuring the page
    /// serializes it anyway, so a front that also shows the answer as text (MCP's inline
    /// copy) need not serialize it again.
    pub fn execute_paged_json(
        &self,
        session: &Session,
        name: &str,
        mut args: Map<String, Value>,
    ) -> Result<(Value, String), CommandError> {
        if contract(name).is_some_and(|c| c.arguments.pointer("/properties/limit").is_some()) {
            let (limit, _) = window(&args)?;
            args.insert("limit".into(), json!(limit));
        }
        let mut shrunk = false;
        // Each answer is measured once; only one over the cap is measured again after `fit`.
        let (value, json) = loop {
            let mut value = self.execute(session, name, Value::Object(args.clone()))?;
            let json = serde_json::to_string(&value).unwrap_or_default();
            let rows = value.get("rows").and_then(Value::as_array).map_or(0, Vec::len);
            if json.len() <= MAX_PAGE_BYTES || rows <= 1 {
                if shrunk {
                    value["pageShrunk"] = json!(true);
                    let json = serde_json::to_string(&value).unwrap_or_default();
                    break (value, json);
                }
                break (value, json);
            }
            // Rows are roughly alike: aim under the cap with a margin, and always shrink.
            let fit = rows * MAX_PAGE_BYTES * 9 / 10 / json.len();
            args.insert("limit".into(), json!(fit.clamp(1, rows - 1)));
            shrunk = true;
        };
        // A mutation's preview pages its documents, whatever its size: an agent always sees
        // how many there are and where the rest starts.
        if contract(name).is_some_and(|c| c.effect == Effect::Mutation) {
            let value = preview_page(value, 0, usize::MAX);
            let json = serde_json::to_string(&value).unwrap_or_default();
            return Ok((value, json));
        }
        if json.len() <= MAX_PAGE_BYTES {
            return Ok((value, json));
        }
        let value = fit_measured(value, json.len());
        let json = serde_json::to_string(&value).unwrap_or_default();
        if json.len() > MAX_PAGE_BYTES {
            return Err(CommandError::TooLarge { bytes: json.len() });
        }
        Ok((value, json))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn pages_have_defaults_bounds_and_next_offsets() {
        let items: Vec<Value> = (0..250).map(|i| json!(i)).collect();
        let first = page("items", items.clone(), &args(json!({}))).unwrap();
        assert_eq!(first["items"].as_array().unwrap().len(), 100);
        assert_eq!((first["total"].clone(), first["nextOffset"].clone()), (json!(250), json!(100)));
        let last =
            page("items", items.clone(), &args(json!({"offset": 200, "limit": 500}))).unwrap();
        assert_eq!(last["items"][0], 200);
        assert_eq!(last["nextOffset"], Value::Null);
        let past = page("items", items.clone(), &args(json!({"offset": 999}))).unwrap();
        assert_eq!(past["items"], json!([]));
        let err = page("items", items, &args(json!({"limit": 501}))).unwrap_err();
        assert_eq!(err.code(), "invalid-arguments");
    }

    #[test]
    fn an_answer_over_64_kib_keeps_what_fits_and_counts_the_rest() {
        let small = json!({"seq": 3, "documents": [{"path": "a"}]});
        assert_eq!(fit(small.clone()), small);
        let big: Vec<Value> = (0..200).map(|i| json!({"i": i, "text": "y".repeat(1000)})).collect();
        let cut = fit(json!({"seq": 3, "documents": big, "entities": [1, 2]}));
        assert!(serde_json::to_vec(&cut).unwrap().len() <= MAX_PAGE_BYTES);
        let kept = cut["documents"].as_array().unwrap().len();
        assert_eq!(cut["omitted"], json!({"documents": 200 - kept}));
        assert_eq!(cut["entities"], json!([1, 2]));
        assert_eq!(cut["documents"][kept - 1]["i"], json!(kept - 1), "the first items are kept");
    }

    #[test]
    fn a_page_over_64_kib_is_shrunk_and_says_so() {
        let big = "x".repeat(1000);
        let items: Vec<Value> = (0..500).map(|i| json!({"i": i, "text": big})).collect();
        let first = page("items", items.clone(), &args(json!({"limit": 500}))).unwrap();
        let bytes = serde_json::to_vec(&first).unwrap().len();
        assert!(bytes <= MAX_PAGE_BYTES, "{bytes}");
        let kept = first["items"].as_array().unwrap().len();
        assert!(kept > 50 && kept < 500, "{kept}");
        assert_eq!(first["nextOffset"], json!(kept));
        assert_eq!(first["pageShrunk"], true);
        // Following nextOffset visits every item exactly once.
        let mut seen = kept;
        let mut next = first["nextOffset"].clone();
        while let Some(offset) = next.as_u64() {
            let p = page("items", items.clone(), &args(json!({"limit": 500, "offset": offset})))
                .unwrap();
            assert_eq!(p["items"][0]["i"], json!(offset));
            seen += p["items"].as_array().unwrap().len();
            next = p["nextOffset"].clone();
        }
        assert_eq!(seen, 500);
    }
}
