//! Declaration names: PascalCase of the type name or the field path, escaped away from each
//! language's keywords and the names the generated module itself uses, and made unique in
//! the order names are taken (which is deterministic, so names are stable).

use std::collections::BTreeSet;

use super::Lang;

/// Names the generated modules define or import, and each language's keywords and built-in
/// types that a declaration must not shadow.
const TYPESCRIPT: &[&str] = &[
    "Array",
    "Boolean",
    "Client",
    "Column",
    "ConnectOptions",
    "Date",
    "Entity",
    "Error",
    "Function",
    "Id",
    "Map",
    "Number",
    "Object",
    "Page",
    "Partial",
    "Promise",
    "Record",
    "Ref",
    "Set",
    "Shape",
    "String",
    "Symbol",
    "Types",
    "Schema",
    "Decls",
];

const PYTHON: &[&str] = &[
    "Any",
    "Client",
    "Column",
    "ConnectOptions",
    "Dict",
    "Entity",
    "False",
    "List",
    "Literal",
    "NewType",
    "None",
    "NotRequired",
    "Optional",
    "Page",
    "Required",
    "Schema",
    "Store",
    "SyncClient",
    "SyncStore",
    "True",
    "TypedDict",
    "Types",
    "Union",
    "overload",
    "Decls",
];

const RUST: &[&str] = &[
    "BTreeMap",
    "Box",
    "Deserialize",
    "Err",
    "None",
    "Ok",
    "Option",
    "Result",
    "Self",
    "Serialize",
    "Some",
    "String",
    "TYPES",
    "Value",
    "Vec",
];

pub(super) struct Names {
    taken: BTreeSet<String>,
}

impl Names {
    pub fn new(lang: Lang) -> Names {
        let reserved = match lang {
            Lang::TypeScript => TYPESCRIPT,
            Lang::Python => PYTHON,
            Lang::Rust => RUST,
        };
        let mut taken: BTreeSet<String> = reserved.iter().map(|s| (*s).to_owned()).collect();
        // A Python package re-exports its runtime's public names.
        if lang == Lang::Python {
            taken.extend(super::runtime::python_exports().into_iter().map(str::to_owned));
        }
        Names { taken }
    }

    /// A fresh name for `words` (a type name, a field key, ...): PascalCase, a leading `T`
    /// when it would not start with a letter, `_` when reserved, then `2`, `3`, ... until
    /// unique.
    pub fn take(&mut self, words: &[&str]) -> String {
        let mut base: String = words.iter().map(|w| pascal(w)).collect();
        if !base.starts_with(|c: char| c.is_ascii_alphabetic()) {
            base.insert(0, 'T');
        }
        let mut name = base.clone();
        if self.taken.contains(&name) {
            name.push('_');
        }
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }
}

/// `sequel-of` -> `SequelOf`, `rights.holder` -> `RightsHolder`; anything but ASCII letters
/// and digits separates words and is dropped.
pub(super) fn pascal(text: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    out
}

/// Whether `key` may stand unquoted as a property name (TypeScript) or an identifier.
pub(super) fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}
