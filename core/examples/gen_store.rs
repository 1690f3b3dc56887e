//! A deterministic generator of valid Stardust stores, for benchmarks and load tests.
//!
//! ```text
//! gen_store OUT_DIR --docs N --entities M [--format dust|json|mixed] [--seed S]
//! gen_store OUT_DIR --single-array BYTES [--notation json|dust] [--seed S]
//! ```
//!
//! The first form writes a store of N documents holding M entities in total (about half the
//! documents hold one entity, the others an array), four schemas, and a `stardust.toml`.
//! The second writes the same schemas and ONE document, an array of entities of about BYTES
//! bytes, for the parse benchmarks. Every reference points at an entity generated before it,
//! so all of them resolve; every entity is valid against its schema. The output depends only
//! on the arguments: the random numbers come from a seeded splitmix64. DUST is written by
//! `stardust_core::format::value_to_dust`, so it is canonical by construction.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde_json::{Map, Value, json};
use stardust_core::format;

const USAGE: &str = "usage:
  gen_store OUT_DIR --docs N --entities M [--format dust|json|mixed] [--seed S]
  gen_store OUT_DIR --single-array BYTES [--notation json|dust] [--seed S]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match Options::parse(&args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("error: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    match generate(&options) {
        Ok(summary) => {
            eprintln!("{summary} in {:.2?}", started.elapsed());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: cannot write the store at {}: {error}", options.out.display());
            ExitCode::FAILURE
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Dust,
    Json,
    Mixed,
}

#[derive(Debug)]
enum Mode {
    Store { docs: usize, entities: usize, format: Format },
    SingleArray { bytes: usize, format: Format },
}

#[derive(Debug)]
struct Options {
    out: PathBuf,
    mode: Mode,
    seed: u64,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut out = None;
        let (mut docs, mut entities, mut single_array) = (None, None, None);
        let (mut format, mut notation, mut seed) = (None, None, 1u64);
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value =
                |name: &str| args.next().cloned().ok_or_else(|| format!("{name} needs a value"));
            match arg.as_str() {
                "--docs" => docs = Some(number(&value("--docs")?, "--docs")?),
                "--entities" => entities = Some(number(&value("--entities")?, "--entities")?),
                "--single-array" => {
                    single_array = Some(number(&value("--single-array")?, "--single-array")?)
                }
                "--seed" => seed = number(&value("--seed")?, "--seed")? as u64,
                "--format" => format = Some(parse_format(&value("--format")?, true)?),
                "--notation" => notation = Some(parse_format(&value("--notation")?, false)?),
                "-h" | "--help" => return Err("help requested".into()),
                flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
                path if out.is_none() => out = Some(PathBuf::from(path)),
                extra => return Err(format!("unexpected argument {extra}")),
            }
        }
        let out = out.ok_or("OUT_DIR is missing")?;
        let mode = match (single_array, docs, entities) {
            (Some(bytes), None, None) => {
                if format.is_some() {
                    return Err("--single-array takes --notation, not --format".into());
                }
                Mode::SingleArray { bytes, format: notation.unwrap_or(Format::Json) }
            }
            (None, Some(docs), Some(entities)) => {
                if notation.is_some() {
                    return Err("--notation goes with --single-array; use --format".into());
                }
                if docs == 0 || entities < docs {
                    return Err(format!(
                        "--entities ({entities}) must be at least --docs ({docs}), and --docs at least 1: every document holds an entity"
                    ));
                }
                Mode::Store { docs, entities, format: format.unwrap_or(Format::Mixed) }
            }
            (Some(_), _, _) => {
                return Err("--single-array cannot be combined with --docs or --entities".into());
            }
            _ => return Err("give both --docs and --entities, or --single-array".into()),
        };
        Ok(Options { out, mode, seed })
    }
}

fn number(text: &str, name: &str) -> Result<usize, String> {
    text.replace('_', "")
        .parse()
        .map_err(|_| format!("{name} expects a whole number, found '{text}'"))
}

fn parse_format(text: &str, mixed_allowed: bool) -> Result<Format, String> {
    match text {
        "dust" => Ok(Format::Dust),
        "json" => Ok(Format::Json),
        "mixed" if mixed_allowed => Ok(Format::Mixed),
        _ if mixed_allowed => Err(format!("--format is dust, json or mixed, not '{text}'")),
        _ => Err(format!("--notation is dust or json, not '{text}'")),
    }
}

fn generate(options: &Options) -> io::Result<String> {
    // Files left by an earlier run would mix in entities with the same ids.
    if fs::read_dir(&options.out).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(io::Error::other("the folder is not empty; give a new or empty OUT_DIR"));
    }
    fs::create_dir_all(options.out.join("schemas"))?;
    for (name, schema) in schemas() {
        let text = serde_json::to_string_pretty(&schema).map_err(io::Error::other)? + "\n";
        fs::write(options.out.join("schemas").join(format!("{name}.schema.json")), text)?;
    }
    fs::write(options.out.join("stardust.toml"), CONFIG)?;
    let mut generator = Generator::new(options.seed);
    match options.mode {
        Mode::Store { docs, entities, format } => {
            let bytes = write_store(&options.out, &mut generator, docs, entities, format)?;
            Ok(format!(
                "wrote {docs} documents, {entities} entities, {bytes} bytes to {}",
                options.out.display()
            ))
        }
        Mode::SingleArray { bytes, format } => {
            let (path, count, written) =
                write_single_array(&options.out, &mut generator, bytes, format)?;
            Ok(format!("wrote {count} entities, {written} bytes to {}", path.display()))
        }
    }
}

const CONFIG: &str = r#"# Generated by gen_store: a synthetic store for benchmarks.

[store]
schemas = "schemas"

[types.person]
dir = "people"
format = "dust"

[types.publisher]
dir = "publishers"
format = "json"

[save]
refuse = ["syntax", "duplicate-key", "schema", "invalid-id", "duplicate-id", "dangling-ref", "ref-type"]
"#;

/// Writes the documents of a store and returns the number of bytes written.
///
/// Even documents hold one entity; odd ones share the rest as arrays, so an array document
/// may hold one entity too (still written as an array) when M is barely above N.
fn write_store(
    out: &Path,
    generator: &mut Generator,
    docs: usize,
    entities: usize,
    format: Format,
) -> io::Result<usize> {
    let array_docs = docs / 2;
    let single_docs = docs - array_docs;
    let in_arrays = entities - single_docs;
    let mut total = 0;
    let mut text = String::new();
    let mut created_dirs = std::collections::BTreeSet::new();
    for doc in 0..docs {
        let count = if doc % 2 == 0 {
            1
        } else {
            let k = doc / 2;
            in_arrays / array_docs + usize::from(k < in_arrays % array_docs)
        };
        let lang = match format {
            Format::Mixed if generator.rng.below(2) == 0 => Format::Json,
            Format::Mixed => Format::Dust,
            other => other,
        };
        let batch: Vec<Value> = (0..count).map(|_| generator.entity()).collect();
        text.clear();
        if doc % 2 == 0 {
            let entity = batch.into_iter().next().expect("a single document holds one entity");
            write_document(&entity, lang, &mut text);
        } else {
            write_document(&Value::Array(batch), lang, &mut text);
        }
        let dir = format!("data/{:04}", doc / 1000);
        if created_dirs.insert(dir.clone()) {
            fs::create_dir_all(out.join(&dir))?;
        }
        let ext = if lang == Format::Json { "json" } else { "dust" };
        fs::write(out.join(format!("{dir}/doc-{doc:06}.{ext}")), &text)?;
        total += text.len();
    }
    Ok(total)
}

/// Writes one array document of about `bytes` bytes; returns its path, entity count and size.
fn write_single_array(
    out: &Path,
    generator: &mut Generator,
    bytes: usize,
    format: Format,
) -> io::Result<(PathBuf, usize, usize)> {
    let mut text = String::with_capacity(bytes + 4096);
    let mut item = String::new();
    let mut count = 0;
    text.push_str("[\n");
    // Entities are added until the next one would pass the target, but always at least one.
    loop {
        let entity = generator.entity();
        item.clear();
        match format {
            Format::Json => {
                let pretty = serde_json::to_string_pretty(&entity).expect("values serialise");
                for (i, line) in pretty.lines().enumerate() {
                    if i > 0 {
                        item.push('\n');
                    }
                    item.push_str("  ");
                    item.push_str(line);
                }
            }
            _ => {
                // The array of one entity, less its brackets, is the entity as an item of
                // the whole array: the layout of an item does not depend on its neighbours.
                let one = to_dust(&Value::Array(vec![entity]));
                item.push_str(&one["[\n".len()..one.len() - "\n]\n".len()]);
            }
        }
        if count > 0 && text.len() + item.len() + 4 > bytes {
            break;
        }
        if count > 0 && format == Format::Json {
            text.push_str(",\n");
        } else if count > 0 {
            text.push('\n');
        }
        text.push_str(&item);
        count += 1;
    }
    text.push_str("\n]\n");
    let path = out.join(if format == Format::Json { "array.json" } else { "array.dust" });
    let mut file = io::BufWriter::new(fs::File::create(&path)?);
    file.write_all(text.as_bytes())?;
    file.flush()?;
    Ok((path, count, text.len()))
}

fn write_document(value: &Value, lang: Format, out: &mut String) {
    match lang {
        Format::Json => {
            out.push_str(&serde_json::to_string_pretty(value).expect("values serialise"));
            out.push('\n');
        }
        _ => out.push_str(&to_dust(value)),
    }
}

/// Canonical DUST, written by the core's formatter.
fn to_dust(value: &Value) -> String {
    format::value_to_dust(value).expect("generated documents are objects or arrays")
}

/// splitmix64: tiny, fast, and good enough to make varied data; fully determined by the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`); the modulo bias is irrelevant here.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn range(&mut self, low: i64, high: i64) -> i64 {
        low + self.below((high - low + 1) as usize) as i64
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const WORDS: &[&str] = &[
    "silent", "river", "empire", "glass", "storm", "winter", "machine", "garden", "ocean", "ember",
    "shadow", "crown", "desert", "signal", "orbit", "harbor", "iron", "memory", "star", "tide",
    "archive", "lantern", "forest", "engine", "mirror", "atlas", "comet", "dune", "spire", "veil",
    "citadel", "meridian", "quiet", "broken", "golden", "distant", "hollow", "last", "first",
    "burning", "frozen", "endless", "hidden", "northern", "red", "pale", "1984", "2001", "true",
    "null",
];
const GIVEN: &[&str] = &[
    "Ada", "Frank", "Ursula", "Octavia", "Isaac", "Zoë", "José", "Søren", "Łukasz", "Amara",
    "Kenji", "Ines", "Mei", "Tomás", "Yusuf", "Greta", "Nnedi", "Liu", "Priya", "Ola",
];
const FAMILY: &[&str] = &[
    "Herbert",
    "Le Guin",
    "Butler",
    "Asimov",
    "O'Brien",
    "Nakamura",
    "García",
    "Okafor",
    "Lindqvist",
    "Novak",
    "Moreau",
    "Khan",
    "Silva",
    "Weiß",
    "Doyle",
    "Achterberg",
];
const GENRES: &[&str] =
    &["science-fiction", "fantasy", "space-opera", "cyberpunk", "dystopia", "alternate-history"];
const STATUSES: &[&str] = &["draft", "published", "out-of-print"];
const TERRITORIES: &[&str] = &["world", "north-america", "commonwealth", "europe"];
const CURRENCIES: &[&str] = &["EUR", "USD", "GBP", "JPY"];
const COUNTRIES: &[&str] = &["US", "GB", "FR", "DE", "JP", "ES", "NG", "SE"];
const CITIES: &[&str] = &["Oslo", "Lagos", "São Paulo", "New York", "Kyoto", "Lyon"];
const ROLES: &[&str] = &["author", "editor", "critic", "translator"];
const VERDICTS: &[&str] = &["recommended", "mixed", "not-recommended"];

/// The types in the order entities are made: each cycle starts with the targets of the
/// references that follow, so every reference points at an entity that already exists.
const CYCLE: &[Kind] = &[
    Kind::Person,
    Kind::Publisher,
    Kind::Book,
    Kind::Book,
    Kind::Review,
    Kind::Person,
    Kind::Book,
    Kind::Review,
    Kind::Book,
    Kind::Book,
];

#[derive(Clone, Copy)]
enum Kind {
    Person,
    Publisher,
    Book,
    Review,
}

struct Generator {
    rng: Rng,
    made: usize,
    persons: Vec<String>,
    publishers: Vec<String>,
    books: Vec<String>,
    reviews: usize,
}

impl Generator {
    fn new(seed: u64) -> Generator {
        Generator {
            rng: Rng(seed),
            made: 0,
            persons: Vec::new(),
            publishers: Vec::new(),
            books: Vec::new(),
            reviews: 0,
        }
    }

    fn entity(&mut self) -> Value {
        let kind = CYCLE[self.made % CYCLE.len()];
        self.made += 1;
        match kind {
            Kind::Person => self.person(),
            Kind::Publisher => self.publisher(),
            Kind::Book => self.book(),
            Kind::Review => self.review(),
        }
    }

    fn words(&mut self, low: usize, high: usize, capitalise: bool) -> String {
        let n = low + self.rng.below(high - low + 1);
        let mut out = String::new();
        for i in 0..n {
            if i > 0 {
                out.push(' ');
            }
            let word = *self.rng.pick(WORDS);
            if capitalise || i == 0 {
                let mut chars = word.chars();
                if let Some(first) = chars.next() {
                    out.extend(first.to_uppercase());
                    out.push_str(chars.as_str());
                }
            } else {
                out.push_str(word);
            }
        }
        out
    }

    fn person(&mut self) -> Value {
        let n = self.persons.len();
        let given = *self.rng.pick(GIVEN);
        let family = *self.rng.pick(FAMILY);
        let id = format!("person/{}-{n}", slug(&format!("{given} {family}")));
        let mut roles = vec![Value::from("author")];
        if self.rng.chance(30) {
            roles.push(Value::from(*self.rng.pick(&ROLES[1..])));
        }
        let mut entity = object(json!({
            "id": id,
            "type": "person",
            "name": format!("{given} {family}"),
            "born": self.rng.range(1900, 2000),
            "roles": roles,
        }));
        if self.rng.chance(50) {
            let city = *self.rng.pick(CITIES);
            let country = *self.rng.pick(COUNTRIES);
            entity.insert("address".into(), json!({"city": city, "country": country}));
        }
        if self.rng.chance(40) {
            let bio = format!(
                "Writes about {} and {}; \"{}\" is a favourite line.\nLives in {}.",
                self.rng.pick(WORDS),
                self.rng.pick(WORDS),
                self.words(2, 4, false),
                self.rng.pick(CITIES)
            );
            entity.insert("bio".into(), Value::String(bio));
        }
        self.persons.push(id);
        Value::Object(entity)
    }

    fn publisher(&mut self) -> Value {
        let n = self.publishers.len();
        let name = format!("{} Press", self.words(1, 2, true));
        let id = format!("publisher/{}-{n}", slug(&name));
        let mut entity = object(json!({
            "id": id,
            "type": "publisher",
            "name": name,
            "founded": self.rng.range(1800, 2020),
            "country": *self.rng.pick(COUNTRIES),
        }));
        if self.rng.chance(30)
            && let Some(parent) = reference(&mut self.rng, &self.publishers)
        {
            entity.insert("imprint-of".into(), parent);
        }
        self.publishers.push(id);
        Value::Object(entity)
    }

    fn book(&mut self) -> Value {
        let n = self.books.len();
        let title = self.words(1, 5, true);
        let id = format!("book/{}-{n}", slug(&title));
        let year = self.rng.range(1900, 2025);
        let mut entity = object(json!({"id": id, "type": "book", "title": title}));
        if let Some(author) = reference(&mut self.rng, &self.persons) {
            entity.insert("author".into(), author);
        }
        if let Some(publisher) = reference(&mut self.rng, &self.publishers) {
            entity.insert("publisher".into(), publisher);
        }
        entity.insert("year".into(), year.into());
        entity.insert("status".into(), (*self.rng.pick(STATUSES)).into());
        let first = self.rng.below(GENRES.len());
        let mut genres = vec![Value::from(GENRES[first])];
        if self.rng.chance(50) {
            genres
                .push(GENRES[(first + 1 + self.rng.below(GENRES.len() - 1)) % GENRES.len()].into());
        }
        entity.insert("genres".into(), genres.into());
        entity.insert("pages".into(), self.rng.range(90, 1200).into());
        let isbn = format!("978{:010}", self.rng.next() % 10_000_000_000);
        entity.insert("isbn".into(), isbn.into());
        let cents = self.rng.range(299, 4999);
        let amount = cents as f64 / 100.0;
        let currency = *self.rng.pick(CURRENCIES);
        entity.insert("price".into(), json!({"amount": amount, "currency": currency}));
        if self.rng.chance(60) {
            let holder = format!("{} Estate", self.rng.pick(FAMILY));
            let territory = *self.rng.pick(TERRITORIES);
            entity.insert(
                "rights".into(),
                json!({"holder": holder, "since": year, "territory": territory}),
            );
        }
        let tags: Vec<Value> =
            (0..self.rng.below(5)).map(|_| Value::from(*self.rng.pick(WORDS))).collect();
        if !tags.is_empty() {
            entity.insert("tags".into(), tags.into());
        }
        if self.rng.chance(20)
            && let Some(earlier) = reference(&mut self.rng, &self.books)
        {
            entity.insert("sequel-of".into(), earlier);
        }
        if self.rng.chance(50) {
            let summary = self.words(8, 30, false) + ".";
            entity.insert("summary".into(), summary.into());
        }
        self.books.push(id);
        Value::Object(entity)
    }

    fn review(&mut self) -> Value {
        let id = format!("review/r-{}", self.reviews);
        self.reviews += 1;
        let mut entity = object(json!({"id": id, "type": "review"}));
        if let Some(book) = reference(&mut self.rng, &self.books) {
            entity.insert("book".into(), book);
        }
        if let Some(reviewer) = reference(&mut self.rng, &self.persons) {
            entity.insert("reviewer".into(), reviewer);
        }
        entity.insert("rating".into(), self.rng.range(1, 5).into());
        entity.insert("verdict".into(), (*self.rng.pick(VERDICTS)).into());
        let date = format!(
            "{}-{:02}-{:02}",
            self.rng.range(1990, 2025),
            self.rng.range(1, 12),
            self.rng.range(1, 28)
        );
        entity.insert("date".into(), date.into());
        let mut text = String::new();
        for _ in 0..1 + self.rng.below(4) {
            let sentence = self.words(6, 20, false);
            let _ = write!(text, "{sentence}. ");
        }
        entity.insert("text".into(), text.trim_end().into());
        entity.insert("spoilers".into(), self.rng.chance(10).into());
        Value::Object(entity)
    }
}

/// A reference to an existing entity of the list, if there is one.
fn reference(rng: &mut Rng, ids: &[String]) -> Option<Value> {
    (!ids.is_empty()).then(|| Value::String(format!("@{}", rng.pick(ids))))
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("json!({{...}}) is an object"),
    }
}

/// Lowercase ASCII letters and digits, runs of anything else as one `-`.
fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

fn schemas() -> Vec<(&'static str, Value)> {
    const DRAFT: &str = "https://json-schema.org/draft/2020-12/schema";
    let id = json!({"type": "string", "title": "Id", "description": "The entity's id."});
    let reference = |target: &str, title: &str, description: &str| {
        json!({"type": "string", "pattern": "^@", "x-stardust-ref": target,
               "title": title, "description": description})
    };
    let person = json!({
        "$schema": DRAFT,
        "title": "Person",
        "description": "A generated author or critic.",
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "type", "name", "roles"],
        "properties": {
            "id": id,
            "type": {"const": "person", "title": "Type", "description": "Always `person`."},
            "name": {"type": "string", "minLength": 1, "title": "Name", "description": "The person's name."},
            "born": {"type": "integer", "title": "Born", "description": "The year of birth."},
            "roles": {
                "type": "array", "minItems": 1, "uniqueItems": true,
                "items": {"enum": ROLES},
                "default": ["author"],
                "title": "Roles", "description": "What the person does."
            },
            "address": {
                "type": "object", "additionalProperties": false, "required": ["city"],
                "title": "Address", "description": "Where the person lives.",
                "properties": {
                    "city": {"type": "string", "title": "City", "description": "The city."},
                    "country": {"enum": COUNTRIES, "title": "Country", "description": "ISO 3166-1 alpha-2 code."}
                }
            },
            "bio": {"type": "string", "title": "Biography", "description": "A few sentences."}
        }
    });
    let publisher = json!({
        "$schema": DRAFT,
        "title": "Publisher",
        "description": "A generated publishing house.",
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "type", "name"],
        "properties": {
            "id": id,
            "type": {"const": "publisher", "title": "Type", "description": "Always `publisher`."},
            "name": {"type": "string", "title": "Name", "description": "The publisher's name."},
            "founded": {"type": "integer", "title": "Founded", "description": "The year it was founded."},
            "country": {"enum": COUNTRIES, "title": "Country", "description": "ISO 3166-1 alpha-2 code."},
            "imprint-of": reference("publisher", "Imprint of", "The parent publisher.")
        }
    });
    let book = json!({
        "$schema": DRAFT,
        "title": "Book",
        "description": "A generated book.",
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "type", "title", "year", "status"],
        "properties": {
            "id": id,
            "type": {"const": "book", "title": "Type", "description": "Always `book`."},
            "title": {"type": "string", "minLength": 1, "title": "Title", "description": "The title."},
            "author": reference("person", "Author", "Who wrote it."),
            "publisher": reference("publisher", "Publisher", "Who published it first."),
            "year": {"type": "integer", "minimum": 1450, "title": "Year", "description": "First publication."},
            "status": {"enum": STATUSES, "default": "published", "title": "Status", "description": "Whether it is in print."},
            "genres": {
                "type": "array", "uniqueItems": true, "items": {"enum": GENRES},
                "title": "Genres", "description": "Shelving genres."
            },
            "pages": {"type": "integer", "minimum": 1, "title": "Pages", "description": "Page count."},
            "isbn": {"type": "string", "pattern": "^97[89][0-9]{10}$", "title": "ISBN", "description": "ISBN-13, digits only."},
            "price": {
                "type": "object", "additionalProperties": false, "required": ["amount", "currency"],
                "title": "Price", "description": "The list price.",
                "properties": {
                    "amount": {"type": "number", "exclusiveMinimum": 0, "title": "Amount", "description": "In the currency's main unit."},
                    "currency": {"enum": CURRENCIES, "title": "Currency", "description": "ISO 4217 code."}
                }
            },
            "rights": {
                "type": "object", "additionalProperties": false, "required": ["holder"],
                "title": "Rights", "description": "Who holds the copyright.",
                "properties": {
                    "holder": {"type": "string", "title": "Holder", "description": "The rights holder."},
                    "since": {"type": "integer", "title": "Since", "description": "Since which year."},
                    "territory": {"enum": TERRITORIES, "default": "world", "title": "Territory", "description": "Where the rights apply."}
                }
            },
            "tags": {"type": "array", "items": {"type": "string"}, "title": "Tags", "description": "Keywords."},
            "sequel-of": reference("book", "Sequel of", "The book this one continues."),
            "summary": {"type": "string", "title": "Summary", "description": "A sentence or two."}
        }
    });
    let review = json!({
        "$schema": DRAFT,
        "title": "Review",
        "description": "A generated review.",
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "type", "rating", "verdict"],
        "properties": {
            "id": id,
            "type": {"const": "review", "title": "Type", "description": "Always `review`."},
            "book": reference("book", "Book", "The book reviewed."),
            "reviewer": reference("person", "Reviewer", "Who wrote the review."),
            "rating": {"type": "integer", "minimum": 1, "maximum": 5, "title": "Rating", "description": "Stars out of five."},
            "verdict": {"enum": VERDICTS, "title": "Verdict", "description": "The recommendation."},
            "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "title": "Date", "description": "YYYY-MM-DD."},
            "text": {"type": "string", "title": "Text", "description": "The review."},
            "spoilers": {"type": "boolean", "default": false, "title": "Spoilers", "description": "Whether it reveals the plot."}
        }
    });
    vec![("person", person), ("publisher", publisher), ("book", book), ("review", review)]
}
