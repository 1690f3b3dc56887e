//! End-to-end tests of the mount's derived files (SPEC §19): JSON projections of DUST
//! documents (`.stardust/json/<path>.json`) and entity files (`.stardust/entities/<id>.json`),
//! read and written by real programs (`cat`, `ls`, `python3`, `sed -i`, `rm`) through a real
//! `stardust mount` (root and /dev/fuse needed, as in CI).

mod util;

use std::fs;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use util::mount::Mounted;
use util::text;

impl Mounted {
    fn new(files: &[(&str, &str)]) -> Mounted {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        let dir = tmp.path().join("mnt");
        for (path, content) in files {
            let p = store.join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, content).unwrap();
        }
        Mounted::start(tmp, store, dir, &[], &[])
    }

    /// Run a shell script in the mount.
    fn sh(&self, script: &str) -> Output {
        Command::new("bash").arg("-c").arg(script).current_dir(&self.dir).output().unwrap()
    }

    /// Run `python3 -c code` in the mount; its standard output (it must succeed).
    fn python(&self, code: &str) -> String {
        let out =
            Command::new("python3").arg("-c").arg(code).current_dir(&self.dir).output().unwrap();
        assert!(out.status.success(), "{}\n{}", text(&out.stderr), self.log());
        text(&out.stdout)
    }

    /// `stardust log --format json` after the first transaction: (origin, [(path, change)]).
    fn saves(&self) -> Vec<(String, Vec<(String, String)>)> {
        self.transactions()
            .iter()
            .skip(1)
            .map(|txn| {
                let docs = txn["documents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| {
                        (d["path"].as_str().unwrap().into(), d["change"].as_str().unwrap().into())
                    })
                    .collect();
                (txn["origin"].as_str().unwrap().to_owned(), docs)
            })
            .collect()
    }
}

const CONFIG: &str = "[save]\nrefuse = [\"syntax\", \"schema\", \"duplicate-id\", \"invalid-id\", \"dangling-ref\"]\n";
const BOOK_SCHEMA: &str = r#"{"type": "object", "required": ["id", "type", "title"],
 "properties": {"title": {"type": "string"}, "year": {"type": "integer"}}}"#;
const PERSON_SCHEMA: &str = r#"{"type": "object"}"#;
const DUNE: &str = "\
; Dune, the first novel
id      book/dune
type    book
title   'Dune'   ; the title as printed
year    1965
author  @person/frank
tags    [classic sci-fi]
";
const SERIES: &str = "\
; the sequels, one a line
[
  {id book/messiah   type book  title 'Dune Messiah'      year 1969}  ; second
  {id book/children  type book  title 'Children of Dune'  year 1976}  ; third
  {id book/emperor   type book  title 'God Emperor'       year 1981}
]
";
const FRANK: &str = "id    person/frank\ntype  person\nname  'Frank Herbert'\n";

fn library() -> Mounted {
    Mounted::new(&[
        ("stardust.toml", CONFIG),
        ("schemas/book.schema.json", BOOK_SCHEMA),
        ("schemas/person.schema.json", PERSON_SCHEMA),
        ("books/dune.dust", DUNE),
        ("books/series.dust", SERIES),
        ("people/frank.dust", FRANK),
    ])
}

fn text_of(out: &Output) -> String {
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn changed(path: &str) -> (String, Vec<(String, String)>) {
    ("mount".to_owned(), vec![(path.to_owned(), "changed".to_owned())])
}

#[test]
fn projections_read_as_json_and_python_rewrites_keep_the_dust_comments() {
    let m = library();
    let out = m.sh("ls .stardust && ls .stardust/json && ls .stardust/json/books && \
         cat .stardust/json/books/dune.dust.json");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (listing, json) =
        text(&out.stdout).split_once('{').map(|(a, b)| (a.to_owned(), format!("{{{b}"))).unwrap();
    assert_eq!(
        listing,
        "at\nentities\njson\nrejected\nstore.json\ntransactions\nviews.json\nbooks\npeople\ndune.dust.json\nseries.dust.json\n"
    );
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"id": "book/dune", "type": "book", "title": "Dune", "year": 1965,
            "author": "@person/frank", "tags": ["classic", "sci-fi"]})
    );
    // `stat` shows the bytes `cat` reads.
    let size = fs::metadata(m.dir.join(".stardust/json/books/dune.dust.json")).unwrap().len();
    assert_eq!(size, json.len() as u64);

    m.python(
        "import json\n\
         p = '.stardust/json/books/dune.dust.json'\n\
         v = json.load(open(p))\n\
         v['year'] = 1966\n\
         v['pages'] = 412\n\
         with open(p, 'w') as f: json.dump(v, f)\n",
    );
    assert_eq!(
        m.on_disk("books/dune.dust"),
        DUNE.replace("1965", "1966")
            .replace("tags    [classic sci-fi]\n", "tags    [classic sci-fi]\npages   412\n")
    );
    // The projection shows the new value at once.
    let v: serde_json::Value = serde_json::from_slice(
        &fs::read(m.dir.join(".stardust/json/books/dune.dust.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(v["year"], 1966);

    // Temporary file then rename, as editors and libraries save: one save too.
    m.python(
        "import json, os, tempfile\n\
         p = '.stardust/json/people/frank.dust.json'\n\
         v = json.load(open(p))\n\
         v['name'] = 'Frank Patrick Herbert'\n\
         fd, tmp = tempfile.mkstemp(dir='.stardust/json/people')\n\
         os.write(fd, json.dumps(v).encode()); os.close(fd)\n\
         os.replace(tmp, p)\n",
    );
    assert_eq!(
        m.on_disk("people/frank.dust"),
        FRANK.replace("'Frank Herbert'", "'Frank Patrick Herbert'")
    );
    assert_eq!(
        fs::read_dir(m.store.join("people")).unwrap().count(),
        1,
        "no temporary file reached the store"
    );

    // Invalid JSON: the close fails as a refused direct save does, the bytes are kept.
    let out = m.python(
        "try:\n\
         \x20   with open('.stardust/json/books/dune.dust.json', 'w') as f: f.write('{\"id\": ')\n\
         except OSError as e: print('errno', e.errno)\n",
    );
    assert_eq!(out, "errno 5\n");
    assert_eq!(
        m.on_disk("books/dune.dust").matches("1966").count(),
        1,
        "the document kept its content"
    );
    let rejected = m.rejected();
    assert_eq!(rejected.len(), 1);
    assert!(
        rejected[0].0.ends_with("-.stardust%2Fjson%2Fbooks%2Fdune.dust.json"),
        "{}",
        rejected[0].0
    );
    assert_eq!(rejected[0].1, "{\"id\": ");
    let out = m.sh("ls .stardust/rejected");
    assert!(text(&out.stdout).contains(&rejected[0].0), "the mount shows the kept bytes");

    // A save by another path shows at once: content and size (the kernel's cached attributes
    // are invalidated by the commit).
    let projection = m.dir.join(".stardust/json/books/dune.dust.json");
    let before = fs::metadata(&projection).unwrap().len();
    let text = fs::read_to_string(m.dir.join("books/dune.dust")).unwrap();
    fs::write(m.dir.join("books/dune.dust"), text.replace("'Dune'", "'Dune, the novel'")).unwrap();
    // The commit invalidates the cached attributes at once, well before their 1 s TTL ends.
    let deadline = Instant::now() + Duration::from_millis(500);
    while fs::metadata(&projection).unwrap().len() == before {
        assert!(Instant::now() < deadline, "the projection's size is stale: {}", m.log());
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = m.sh("stat -c %s .stardust/json/books/dune.dust.json .stardust/entities/book/dune.json; cat .stardust/entities/book/dune.json");
    let out = text_of(&out);
    let (sizes, entity) = out.split_once('{').unwrap();
    let entity = format!("{{{entity}");
    let value: serde_json::Value = serde_json::from_str(&entity).unwrap();
    assert_eq!(value["title"], "Dune, the novel");
    let sizes: Vec<u64> = sizes.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(sizes, [before + 11, entity.len() as u64]);

    // Nothing but a derived file's name is writable in the derived folders.
    let out = m.sh("mkdir .stardust/json/x; touch .stardust/store.json");
    assert!(!out.status.success());
    assert_eq!(
        m.saves(),
        vec![changed("books/dune.dust"), changed("people/frank.dust"), changed("books/dune.dust")]
    );
}

#[test]
fn entity_files_sed_rm_and_conflicts() {
    let m = library();
    let out = m.sh("ls .stardust/entities .stardust/entities/book");
    assert_eq!(
        text(&out.stdout),
        ".stardust/entities:\nbook\nperson\n\n.stardust/entities/book:\nchildren.json\ndune.json\nemperor.json\nmessiah.json\n",
        "{}",
        text(&out.stderr)
    );
    let messiah: serde_json::Value = serde_json::from_slice(
        &fs::read(m.dir.join(".stardust/entities/book/messiah.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        messiah,
        serde_json::json!({"id": "book/messiah", "type": "book", "title": "Dune Messiah", "year": 1969})
    );

    // sed -i on an entity inside an array document changes only that item.
    let out = m.sh("sed -i 's/1969/1970/' .stardust/entities/book/messiah.json");
    assert!(out.status.success(), "{}\n{}", text(&out.stderr), m.log());
    assert_eq!(m.on_disk("books/series.dust"), SERIES.replace("1969", "1970"));

    // rm deletes the entity: refused when others reference it (dangling-ref is refused)...
    let out = m.sh("rm .stardust/entities/person/frank.json");
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("Operation not permitted"), "{}", text(&out.stderr));
    assert_eq!(m.on_disk("people/frank.dust"), FRANK);
    // ... and otherwise only its item goes.
    let out = m.sh("rm .stardust/entities/book/children.json && ls .stardust/entities/book");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "dune.json\nemperor.json\nmessiah.json\n");
    assert_eq!(
        m.on_disk("books/series.dust"),
        SERIES.replace("1969", "1970").replace(
            "  {id book/children  type book  title 'Children of Dune'  year 1976}  ; third\n",
            ""
        )
    );

    // Written while its document changed underneath since it was read: conflict, EIO, kept.
    let out = m.python(
        "p = '.stardust/entities/book/emperor.json'\n\
         f = open(p, 'r+')\n\
         old = f.read()\n\
         with open('books/series.dust') as d: text = d.read()\n\
         with open('books/series.dust', 'w') as d: d.write(text.replace('second', '2nd'))\n\
         f.seek(0); f.truncate(); f.write(old.replace('1981', '1982'))\n\
         try:\n\
         \x20   f.close()\n\
         except OSError as e: print('errno', e.errno)\n\
         with open(p) as f: print('1981' in f.read())\n",
    );
    assert_eq!(out, "errno 5\nTrue\n", "{}", m.log());
    assert!(m.on_disk("books/series.dust").contains("1981"));
    let rejected = m.rejected();
    assert_eq!(rejected.len(), 1);
    assert!(rejected[0].1.contains("1982"));
    let why = fs::read_to_string(
        m.store.join(".stardust/rejected").join(format!("{}.why", rejected[0].0)),
    )
    .unwrap();
    assert!(why.contains("[conflict]"), "{why}");

    // Read again, the same write commits.
    m.python(
        "p = '.stardust/entities/book/emperor.json'\n\
         old = open(p).read()\n\
         with open(p, 'w') as f: f.write(old.replace('1981', '1982'))\n",
    );
    assert!(m.on_disk("books/series.dust").contains("year 1982}"));
    // A write that changes the id is refused, bytes kept.
    let out = m.python(
        "try:\n\
         \x20   with open('.stardust/entities/book/dune.json', 'w') as f: f.write('{\"id\": \"book/x\", \"type\": \"book\"}')\n\
         except OSError as e: print('errno', e.errno)\n",
    );
    assert_eq!(out, "errno 5\n");
    assert_eq!(m.on_disk("books/dune.dust"), DUNE);

    let series = changed("books/series.dust");
    assert_eq!(m.saves(), vec![series.clone(), series.clone(), series.clone(), series]);
}
