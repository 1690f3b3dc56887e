//! Bounded pages: every list an agent gets is a slice (`limit` default 100, at most 500,
//! `offset`) with `total` and `nextOffset`, and every page fits in 64 KiB. A page that would
//! not fit is shrunk, never cut silently: `nextOffset` then points at the first item left out
//! and `pageShrunk` says why.

use crate::error::Error;
use serde_json::{Map, Value, json};

use super::{CommandError, CommandResult, Service, Session, contract};

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

/// An answer that is not a page, made to fit in 64 KiB: when it is larger, its longest
/// top-level lists keep only the items that fit, and `omitted` counts, per list, the items
/// left out. Nothing is dropped without being counted there.
pub fn fit(value: Value) -> Value {
    let total = serde_json::to_vec(&value).map_or(0, |b| b.len());
    fit_measured(value, total)
}

/// [`fit`] of a value already measured at `total` bytes of JSON.
fn fit_measured(mut value: Value, total: usize) -> Value {
    let size = |v: &Value| serde_json::to_vec(v).map_or(0, |b| b.len());
    let Some(map) = value.as_object_mut() else { return value };
    if total <= MAX_PAGE_BYTES {
        return value;
    }
    let mut lists: Vec<(String, usize)> =
        map.iter().filter(|(_, v)| v.is_array()).map(|(k, v)| (k.clone(), size(v))).collect();
    lists.sort_by_key(|(_, size)| std::cmp::Reverse(*size));
    let mut over = total + 256 - MAX_PAGE_BYTES;
    let mut omitted = Map::new();
    for (key, _) in lists {
        if over == 0 {
            break;
        }
        let Some(Value::Array(items)) = map.get_mut(&key) else { continue };
        let mut dropped = 0;
        while over > 0 {
            let Some(item) = items.pop() else { break };
            over = over.saturating_sub(size(&item) + 1);
            dropped += 1;
        }
        omitted.insert(key, json!(dropped));
    }
    map.insert("omitted".into(), Value::Object(omitted));
    value
}

impl Service {
    /// Run command `name` for a session whose answers must each fit one page (an agent's):
    /// `limit` gets its default and bound, a page of `rows` over 64 KiB is asked again with
    /// fewer rows (`pageShrunk`), other lists are cut with counts (`fit`), and an answer still
    /// over 64 KiB (one huge value) is refused with its size rather than cut.
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
