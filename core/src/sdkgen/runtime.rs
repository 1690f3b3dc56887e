//! The runtimes a generated package carries, compiled into the binary, and the package's own
//! files around the generated definitions: `package.json` for TypeScript (Node and `tsc` use
//! the package as it is: compiled JavaScript with declarations), `pyproject.toml` with an
//! in-tree build backend for Python (pip builds it with nothing fetched).

use std::fmt::Write;

use super::{File, Lang};

/// The TypeScript runtime (sdk-ts/src, compiled by `tsc -p sdk-ts` into sdk-ts/dist/src and
/// committed there; tests/sdk_ts.rs checks it is what the sources compile to), by file name.
const TYPESCRIPT: &[(&str, &str)] = &[
    ("decode.d.ts", include_str!("../../../sdk-ts/dist/src/decode.d.ts")),
    ("decode.js", include_str!("../../../sdk-ts/dist/src/decode.js")),
    ("errors.d.ts", include_str!("../../../sdk-ts/dist/src/errors.d.ts")),
    ("errors.js", include_str!("../../../sdk-ts/dist/src/errors.js")),
    ("index.d.ts", include_str!("../../../sdk-ts/dist/src/index.d.ts")),
    ("index.js", include_str!("../../../sdk-ts/dist/src/index.js")),
    ("wire.d.ts", include_str!("../../../sdk-ts/dist/src/wire.d.ts")),
    ("wire.js", include_str!("../../../sdk-ts/dist/src/wire.js")),
];

/// The Python runtime (sdk-py/stardust_sdk), by file name.
const PYTHON: &[(&str, &str)] = &[
    ("__init__.py", include_str!("../../../sdk-py/stardust_sdk/__init__.py")),
    ("_decode.py", include_str!("../../../sdk-py/stardust_sdk/_decode.py")),
    ("_errors.py", include_str!("../../../sdk-py/stardust_sdk/_errors.py")),
    ("_wire.py", include_str!("../../../sdk-py/stardust_sdk/_wire.py")),
];

/// The build backend of Python packages (sdk-py/stardust_build.py): standard library only.
const PYTHON_BACKEND: &str = include_str!("../../../sdk-py/stardust_build.py");

/// The version every generated package has: the generator's.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The Python runtime's public names (its `__all__`), in its order.
pub(super) fn python_exports() -> Vec<&'static str> {
    let init = PYTHON[0].1;
    let Some(start) = init.find("__all__ = [") else { return Vec::new() };
    let list = &init[start + "__all__ = [".len()..];
    let list = &list[..list.find(']').unwrap_or(0)];
    list.split('"').skip(1).step_by(2).collect()
}

/// The package name a folder named `folder` gives: an npm package name (lowercase letters,
/// digits, `-`, `.`, `_`, `~`, not starting with `.` or `_`) or a Python import name (an
/// identifier that is not a keyword). Anything else becomes `-` or `_`.
pub fn package_name(folder: &str, lang: Lang) -> String {
    match lang {
        Lang::TypeScript => {
            let name: String = folder
                .chars()
                .map(|c| c.to_ascii_lowercase())
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~') {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            let name = name.trim_start_matches(['.', '_']);
            if name.is_empty() { "stardust-types".to_owned() } else { name.to_owned() }
        }
        Lang::Python | Lang::Rust => {
            let mut name: String = folder
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
                .collect();
            if name.is_empty() {
                name = "stardust_types".to_owned();
            }
            if name.starts_with(|c: char| c.is_ascii_digit()) {
                name.insert(0, '_');
            }
            if super::python::is_keyword(&name) {
                name.push('_');
            }
            name
        }
    }
}

/// The package around `definitions` (the renderer's files): where each goes, the runtime and
/// the packaging files.
pub(super) fn package(definitions: Vec<File>, lang: Lang, name: &str) -> Vec<File> {
    let mut files = Vec::new();
    match lang {
        Lang::TypeScript => {
            files.push(text("package.json", typescript_manifest(name)));
            files.push(text("README.md", typescript_readme(name)));
            files.extend(definitions);
            files.extend(
                TYPESCRIPT.iter().map(|(file, body)| text(&format!("runtime/{file}"), *body)),
            );
        }
        Lang::Python => {
            files.push(text("pyproject.toml", python_manifest(name)));
            files.push(text("README.md", python_readme(name)));
            files.push(text("stardust_build.py", PYTHON_BACKEND));
            files.extend(
                definitions
                    .into_iter()
                    .map(|f| File { path: format!("{name}/{}", f.path), bytes: f.bytes }),
            );
            files.extend(
                PYTHON.iter().map(|(file, body)| text(&format!("{name}/_runtime/{file}"), *body)),
            );
        }
        Lang::Rust => files = definitions,
    }
    files
}

/// Files an earlier version of the generator wrote into the output folder that now mislead,
/// and that are still there as it wrote them (they start with its header): TypeScript's
/// `index.ts`, which `tsc` would read instead of `index.d.ts`. `existing` reads a path's
/// current bytes.
pub fn obsolete(lang: Lang, existing: impl Fn(&str) -> Option<Vec<u8>>) -> Vec<String> {
    let paths: &[&str] = match lang {
        Lang::TypeScript => &["index.ts"],
        Lang::Python | Lang::Rust => &[],
    };
    paths
        .iter()
        .filter(|path| {
            existing(path)
                .is_some_and(|bytes| bytes.starts_with(super::typescript::HEADER.as_bytes()))
        })
        .map(|path| (*path).to_owned())
        .collect()
}

fn text(path: &str, body: impl Into<String>) -> File {
    File { path: path.to_owned(), bytes: body.into().into_bytes() }
}

fn json_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

fn typescript_manifest(name: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        r#"{{
  "name": {name},
  "version": "{VERSION}",
  "description": "Typed access to a Stardust store, generated by `stardust sdk generate --lang typescript` from its schemas.",
  "type": "module",
  "main": "./index.js",
  "types": "./index.d.ts",
  "exports": {{
    ".": {{
      "types": "./index.d.ts",
      "default": "./index.js"
    }},
    "./runtime": {{
      "types": "./runtime/index.d.ts",
      "default": "./runtime/index.js"
    }},
    "./decode": {{
      "types": "./runtime/decode.d.ts",
      "default": "./runtime/decode.js"
    }},
    "./package.json": "./package.json"
  }},
  "engines": {{
    "node": ">=20"
  }},
  "sideEffects": false
}}
"#,
        name = json_string(name)
    );
    out
}

fn typescript_readme(name: &str) -> String {
    format!(
        "# {name}\n\n\
         Typed access to a Stardust store's entities, generated by `stardust sdk generate --lang\n\
         typescript` from the store's schemas. Do not edit: generate again after a schema changes\n\
         (`--check` says whether this folder is current).\n\n\
         It needs nothing else: the runtime is in `runtime/`, compiled, with its declarations.\n\n\
         ```sh\n\
         npm install ./DIR      # DIR: the folder this file is in\n\
         ```\n\n\
         ```ts\n\
         import {{ columns, connect }} from \"{name}\";\n\n\
         const client = await connect(\"path/to/store\");\n\
         const page = await client.query(\"find [?e] where [[?e type book]]\", [columns.book.id]);\n\
         ```\n\n\
         `tsc` needs `\"module\": \"NodeNext\"` (or `\"Node16\"`) and a `target` of ES2020 or later.\n\
         The program finds the core as `stardust lsp` does: `STARDUST_BIN`, else `stardust` on\n\
         PATH.\n"
    )
}

fn python_manifest(name: &str) -> String {
    format!(
        "# Generated by `stardust sdk generate --lang python` from the store's schemas.\n\
         # The build backend is stardust_build.py beside this file (standard library only), so\n\
         # `pip install ./DIR` needs nothing from an index (`--no-index` works).\n\
         [build-system]\n\
         requires = []\n\
         build-backend = \"stardust_build\"\n\
         backend-path = [\".\"]\n\n\
         [project]\n\
         name = \"{name}\"\n\
         version = \"{VERSION}\"\n\
         description = \"Typed access to a Stardust store, generated by `stardust sdk generate --lang python` from its schemas.\"\n\
         requires-python = \">=3.11\"\n\
         dependencies = []\n\n\
         [tool.stardust-build]\n\
         packages = [\"{name}\"]\n"
    )
}

fn python_readme(name: &str) -> String {
    format!(
        "# {name}\n\n\
         Typed access to a Stardust store's entities, generated by `stardust sdk generate --lang\n\
         python` from the store's schemas. Do not edit: generate again after a schema changes\n\
         (`--check` says whether this folder is current).\n\n\
         It needs nothing else: the runtime is the subpackage `{name}._runtime`, and the build\n\
         backend is `stardust_build.py`, so installing fetches nothing.\n\n\
         ```sh\n\
         pip install ./DIR      # DIR: the folder this file is in\n\
         ```\n\n\
         ```python\n\
         import {name} as store\n\n\
         client = store.connect_sync(\"path/to/store\")\n\
         ```\n\n\
         The program finds the core as `stardust lsp` does: `STARDUST_BIN`, else `stardust` on\n\
         PATH.\n"
    )
}
