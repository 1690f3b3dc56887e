//! Finding a store's documents on disk (SPEC §2).
//!
//! A document is a `.json`, `.jsonc` or `.dust` file outside `.stardust/` and `.git/` that
//! neither the `[store] ignore` globs nor the project's ignore rules (`ignores`) exclude;
//! [`lang_of`] is its notation (SPEC §23). Symbolic links are never followed, so a link cannot
//! pull files from outside the store into it (or count a document twice).

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::syntax::Lang;

pub use crate::ignores::{PRIVATE_DIR, PRIVATE_DIRS};

/// The notation of the document at store-relative `rel` (`/`-separated), or `None` when its
/// extension is not a document's: `.dust` is DUST, `.jsonc` JSON with comments, and `.json`
/// JSON with comments when `[store] jsonc` matches it (SPEC §23), else JSON. Every reader of
/// a store's documents (the analysis, formatting, conversion, edits) takes the notation from
/// here.
pub fn lang_of(config: &Config, rel: &str) -> Option<Lang> {
    match Lang::from_path(rel)? {
        Lang::Json if config.jsonc_set.is_match(rel) => Some(Lang::Jsonc),
        lang => Some(lang),
    }
}

/// Whether a store-relative path (`/`-separated) names a document.
pub fn is_document_path(config: &Config, rel: &str) -> bool {
    Lang::from_path(rel).is_some()
        && !rel.split('/').next().is_some_and(|first| PRIVATE_DIRS.contains(&first))
        && !config.is_ignored(rel, false)
}

/// Whether a store-relative path names a code file (SPEC §18): a file of the store outside
/// `.stardust/` and `.git/` that is not a document. Commits may write code files as bytes, which
/// the log records like documents; Stardust never parses them.
pub fn is_code_path(config: &Config, rel: &str) -> bool {
    !rel.split('/').next().is_some_and(|first| PRIVATE_DIRS.contains(&first))
        && !is_document_path(config, rel)
}

/// Every document of the store at `root`, as (store-relative path, absolute path), sorted.
pub fn documents(root: &Path, config: &Config) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    walk(root, config, usize::MAX, |rel, path| {
        if is_document_path(config, &rel) {
            out.push((rel, path));
        }
        true
    })?;
    Ok(out)
}

/// What `find` makes of the first file of the store at `root` it takes (in path order, the
/// walk of [`documents`]; `ignore`d files are not offered), looking at no more than `budget`
/// entries (`None` past them, or when no file is taken).
pub fn find_file<T>(
    root: &Path,
    config: &Config,
    budget: usize,
    mut find: impl FnMut(&str) -> Option<T>,
) -> Option<T> {
    let mut found = None;
    let _ = walk(root, config, budget, |rel, _| {
        if !config.is_ignored(&rel, false) {
            found = find(&rel);
        }
        found.is_none()
    });
    found
}

/// Every file of the store at `root`, sorted by path, given to `file` (store-relative and
/// absolute) until it answers false: private folders, `ignore`d folders and symbolic links
/// are skipped; at most `budget` entries are looked at.
fn walk(
    root: &Path,
    config: &Config,
    budget: usize,
    mut file: impl FnMut(String, PathBuf) -> bool,
) -> Result<()> {
    let walker = walkdir::WalkDir::new(root).follow_links(false).sort_by_file_name();
    let mut it = walker.into_iter();
    let mut seen = 0usize;
    while let Some(entry) = it.next() {
        seen += 1;
        if seen > budget {
            return Ok(());
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) if err.depth() == 0 => {
                return Err(Error::io(
                    format!("cannot read the store {}", root.display()),
                    err.into(),
                ));
            }
            Err(err) => {
                tracing::warn!("skipping an unreadable part of the store: {err}");
                continue;
            }
        };
        let Some(rel) = relative(root, entry.path()) else { continue };
        if entry.file_type().is_dir() {
            let private = entry.depth() == 1 && PRIVATE_DIRS.contains(&rel.as_str());
            if private || (entry.depth() > 0 && config.is_ignored(&rel, true)) {
                it.skip_current_dir();
            }
            continue;
        }
        if entry.file_type().is_file() && !file(rel, entry.into_path()) {
            return Ok(());
        }
    }
    Ok(())
}

/// The `/`-separated path of `path` relative to `root`, if it is valid UTF-8.
pub fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_documents_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            ("books/dune.dust", "id book/dune"),
            ("people/frank.json", "{}"),
            ("README.md", "# hi"),
            (".stardust/log/x.json", "{}"),
            (".git/config.json", "{}"),
            ("node_modules/pkg/package.json", "{}"),
            ("deep/a/b/c.json", "[]"),
        ] {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc", root.join("outside")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("books/dune.dust"), root.join("link.dust")).unwrap();
        let config =
            Config::parse("[store]\nignore = [\"node_modules/**\"]", Path::new("x")).unwrap();
        let found: Vec<String> =
            documents(root, &config).unwrap().into_iter().map(|(rel, _)| rel).collect();
        assert_eq!(found, ["books/dune.dust", "deep/a/b/c.json", "people/frank.json"]);
    }

    /// The notation of a document (SPEC §23): by extension, and `[store] jsonc` for `.json`.
    #[test]
    fn the_notation_of_a_document() {
        let default = Config::default();
        for (path, lang) in [
            ("a.dust", Some(Lang::Dust)),
            ("a.json", Some(Lang::Json)),
            ("notes/a.jsonc", Some(Lang::Jsonc)),
            ("tsconfig.json", Some(Lang::Jsonc)),
            ("web/tsconfig.app.json", Some(Lang::Jsonc)),
            (".vscode/settings.json", Some(Lang::Jsonc)),
            ("package.json", Some(Lang::Json)),
            ("README.md", None),
            ("tsconfig.json5", None),
        ] {
            assert_eq!(lang_of(&default, path), lang, "{path}");
            assert_eq!(is_document_path(&default, path), lang.is_some(), "{path}");
        }
        let config = Config::parse("[store]\njsonc = [\"conf/*.json\"]", Path::new("x")).unwrap();
        assert_eq!(lang_of(&config, "conf/app.json"), Some(Lang::Jsonc));
        assert_eq!(lang_of(&config, "tsconfig.json"), Some(Lang::Json));
        assert_eq!(lang_of(&config, "conf/app.dust"), Some(Lang::Dust), "only .json files");
    }
}

/// The store a command started in `cwd` works on (SPEC §15): `--store` = `flag`, else the
/// nearest folder at or above `cwd` holding `stardust.toml` or `.stardust/`. `None`: no store
/// is known (an LSP client's root may still name one). A mount of a store (found either way)
/// stands for the store its `.stardust/store.json` names.
pub fn find_store(flag: Option<&Path>, cwd: &Path) -> Option<PathBuf> {
    let found = match flag {
        Some(flag) => flag.to_owned(),
        None => cwd.ancestors().find(|dir| marks_store(dir))?.to_owned(),
    };
    Some(mount_store(&found).unwrap_or(found))
}

/// Whether `dir` is a store's root folder (or a mount of one): it holds `stardust.toml` or
/// `.stardust/`.
fn marks_store(dir: &Path) -> bool {
    dir.join(crate::config::CONFIG_FILE).is_file() || dir.join(PRIVATE_DIR).is_dir()
}

/// The notation of files named on a command line (`stardust fmt`, `stardust convert`): each
/// is its store's [`lang_of`] its path in that store, the store being the nearest folder at or
/// above the file that marks one (as [`find_store`] finds it); a file in no store is read with
/// the default configuration. Each store's configuration is read once.
#[derive(Default)]
pub struct FileLangs {
    /// The configuration of each store root met, `None` for "no store" (the default).
    configs: std::collections::HashMap<Option<PathBuf>, Config>,
}

impl FileLangs {
    /// The notation of the file at `path`, `None` when its extension is not a document's. An
    /// invalid `stardust.toml` of its store is an error: a typo must not change how the file
    /// is read.
    pub fn lang_of(&mut self, path: &Path) -> Result<Option<Lang>> {
        let Some(lang) = path.to_str().and_then(Lang::from_path) else { return Ok(None) };
        if lang != Lang::Json {
            return Ok(Some(lang));
        }
        let absolute = std::path::absolute(path)
            .map_err(|err| Error::io(format!("cannot resolve {}", path.display()), err))?;
        let store = absolute.ancestors().skip(1).find(|dir| marks_store(dir)).map(Path::to_owned);
        let rel = match &store {
            Some(root) => relative(root, &absolute),
            None => absolute.to_str().map(|p| p.trim_start_matches('/').to_owned()),
        };
        let config = match self.configs.entry(store) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                let config = match entry.key() {
                    Some(root) => Config::load(root)?,
                    None => Config::default(),
                };
                entry.insert(config)
            }
        };
        Ok(rel.and_then(|rel| lang_of(config, &rel)))
    }
}

#[cfg(test)]
mod find_tests {
    use std::path::{Path, PathBuf};

    use super::find_store;

    #[test]
    fn the_store_is_the_flag_else_the_nearest_marked_ancestor() {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = tmp.path();
        let deep = tmp.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(find_store(None, &deep), None);
        std::fs::write(tmp.join("a/stardust.toml"), "").unwrap();
        assert_eq!(find_store(None, &deep), Some(tmp.join("a")));
        std::fs::create_dir_all(tmp.join("a/b/.stardust")).unwrap();
        assert_eq!(find_store(None, &deep), Some(tmp.join("a/b")));
        assert_eq!(find_store(Some(Path::new("/x")), &deep), Some(PathBuf::from("/x")));
    }

    /// A file named on a command line is read as its store says, or by default outside one.
    #[test]
    fn the_notation_of_a_file_is_its_stores() {
        use super::FileLangs;
        use crate::syntax::Lang;
        let tmp = tempfile::tempdir().unwrap();
        let (store, loose) = (tmp.path().join("store"), tmp.path().join("loose"));
        std::fs::create_dir_all(store.join("conf")).unwrap();
        std::fs::create_dir_all(&loose).unwrap();
        std::fs::write(store.join("stardust.toml"), "[store]\njsonc = [\"conf/*.json\"]\n")
            .unwrap();
        let mut langs = FileLangs::default();
        let mut lang = |path: PathBuf| langs.lang_of(&path).unwrap();
        assert_eq!(lang(store.join("conf/app.json")), Some(Lang::Jsonc));
        assert_eq!(lang(store.join("tsconfig.json")), Some(Lang::Json), "the store's list");
        assert_eq!(lang(loose.join("tsconfig.json")), Some(Lang::Jsonc), "the default list");
        assert_eq!(lang(loose.join(".vscode/settings.json")), Some(Lang::Jsonc));
        assert_eq!(lang(loose.join("data.json")), Some(Lang::Json));
        assert_eq!(lang(loose.join("a.jsonc")), Some(Lang::Jsonc));
        assert_eq!(lang(loose.join("a.txt")), None);
        std::fs::write(loose.join("stardust.toml"), "[store]\njsonc = 1\n").unwrap();
        let err = FileLangs::default().lang_of(&loose.join("x.json")).unwrap_err();
        assert_eq!(err.code(), "config-invalid");
    }
}

/// Threads reading files at once: reads wait on the disk, not the CPU, and a cold read of
/// thousands of small files goes as fast as the disk's queue is kept full.
const READERS: usize = 16;

/// `read` applied to every item on up to [`READERS`] threads, results in the items' order.
pub fn read_many<T: Sync, R: Send>(items: &[T], read: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() <= 1 {
        return items.iter().map(&read).collect();
    }
    let chunk = items.len().div_ceil(READERS);
    let read = &read;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(read).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    })
}

#[cfg(test)]
mod read_tests {
    use super::read_many;

    #[test]
    fn results_keep_the_order_of_the_items() {
        for n in [0, 1, 2, 15, 16, 17, 1000] {
            let items: Vec<usize> = (0..n).collect();
            let doubled = read_many(&items, |i| i * 2);
            assert_eq!(doubled, items.iter().map(|i| i * 2).collect::<Vec<_>>(), "{n} items");
        }
    }
}

/// The store a mount at `dir` shows, from its virtual `.stardust/store.json` (canonical), or
/// `None` when `dir` is not a mount.
pub fn mount_store(dir: &Path) -> Option<PathBuf> {
    let file = dir.join(PRIVATE_DIR).join("store.json");
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    PathBuf::from(record.get("store")?.as_str()?).canonicalize().ok()
}
