//! Parse + diagnose an entity array against a draft 2020-12 schema, side by side with the floor:
//! `serde_json::from_slice` + `jsonschema` validation of the same data, which keeps no ranges
//! and recovers from nothing. Run with `cargo bench -p stardust-core --bench diagnose`.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use stardust_core::analysis::{Analysis, StoreContext};
use stardust_core::config::Config;

fn schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["id", "type", "title", "status"],
        "additionalProperties": false,
        "properties": {
            "id": {"type": "string"},
            "type": {"const": "book"},
            "title": {"type": "string", "minLength": 1, "maxLength": 200},
            "status": {"enum": ["draft", "published", "out-of-print"]},
            "year": {"type": "integer", "minimum": 1450, "maximum": 2100},
            "author": {"type": "string", "pattern": "^@", "x-stardust-ref": "book"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "price": {"type": "number", "minimum": 0},
            "rights": {
                "type": "object",
                "required": ["holder"],
                "additionalProperties": false,
                "properties": {"holder": {"type": "string"}, "since": {"type": "integer"}}
            }
        }
    })
}

/// An array of about `bytes` of pretty JSON entities, with a few deliberate violations.
fn entities(bytes: usize) -> Value {
    let mut items = Vec::new();
    let mut size = 0;
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let statuses = ["draft", "published", "out-of-print"];
    let words = ["classic", "sci-fi", "fantasy", "essay", "poetry", "history", "novel", "short"];
    let mut i = 0;
    while size < bytes {
        let r = next();
        let mut item = json!({
            "id": format!("book/b{i}"),
            "type": "book",
            "title": format!("The Book Number {i} of the Long Series"),
            "status": statuses[(r % 3) as usize],
            "year": 1900 + (r % 120),
            "author": format!("@book/b{}", r % (i + 1)),
            "tags": [words[(r % 8) as usize], words[((r >> 8) % 8) as usize].to_owned() + "-x"],
            "price": (r % 10_000) as f64 / 100.0,
            "rights": {"holder": format!("Holder {}", r % 97), "since": 1950 + (r % 70)}
        });
        if i % 5000 == 17 {
            item["status"] = json!("publised");
        }
        size += serde_json::to_string_pretty(&item).unwrap().len() + 4;
        items.push(item);
        i += 1;
    }
    Value::Array(items)
}

fn ctx() -> Arc<StoreContext> {
    Arc::new(StoreContext { root: PathBuf::from("/bench"), config: Config::default() })
}

fn bench(c: &mut Criterion) {
    let schema_text = serde_json::to_vec_pretty(&schema()).unwrap();
    for (label, bytes) in [("2MB", 2_000_000), ("40MB", 40_000_000)] {
        let data = entities(bytes);
        let json_text = serde_json::to_vec_pretty(&data).unwrap();
        let dust_text = stardust_core::format::value_to_dust(&data).unwrap().into_bytes();
        let mut group = c.benchmark_group(format!("diagnose-{label}"));
        group.sample_size(10).measurement_time(Duration::from_secs(if bytes > 10_000_000 {
            40
        } else {
            10
        }));
        group.throughput(Throughput::Bytes(json_text.len() as u64));

        group.bench_function("floor: serde_json + jsonschema", |b| {
            b.iter(|| {
                let value: Value = serde_json::from_slice(black_box(&json_text)).unwrap();
                let validator = jsonschema::options().build(&schema()).unwrap();
                let errors: usize = value
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| validator.iter_errors(e).count())
                    .sum();
                black_box(errors)
            })
        });
        for (name, text, path) in [
            ("stardust json", &json_text, "books.json"),
            ("stardust dust", &dust_text, "books.dust"),
        ] {
            group.bench_function(name, |b| {
                b.iter(|| {
                    let analysis = Analysis::new(
                        ctx(),
                        vec![
                            ("schemas/book.schema.json".to_owned(), schema_text.clone()),
                            (path.to_owned(), black_box(text).clone()),
                        ],
                    );
                    black_box(analysis.all_diagnostics().len())
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
