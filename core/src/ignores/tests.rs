//! The ignore rules against git's own verdicts, on small trees written here.

use std::fs;
use std::path::Path;

use expect_test::{Expect, expect};
use globset::GlobSet;

use super::*;

/// Write `files` (path, content) under `root`.
fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
}

/// Each of `paths` (a trailing `/` names a folder) with its verdict under the rules of the
/// store at `root`, then the warnings.
fn verdicts(root: &Path, paths: &[&str], expect: Expect) {
    let rules = ProjectIgnores::load(root, &GlobSet::empty());
    let mut out = String::new();
    for path in paths {
        let (rel, dir) = match path.strip_suffix('/') {
            Some(rel) => (rel, true),
            None => (*path, false),
        };
        let verdict = if rules.is_ignored(rel, dir) { "ignored" } else { "kept" };
        out.push_str(&format!("{path}: {verdict}\n"));
    }
    for warning in &rules.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    expect.assert_eq(&out);
}

#[test]
fn nested_rules_as_git_applies_them() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir(root.join(".git")).unwrap();
    write(
        root,
        &[
            (".gitignore", "# dependencies\nnode_modules/\n*.log\n!keep.log\n/build\ndist\n"),
            (".git/info/exclude", "secret.json\n"),
            ("sub/.gitignore", "local.json\n!important.log\n/only-here.json\n"),
            ("sub/deeper/.gitignore", "!local.json\n"),
            // Never read: git does not look inside an ignored folder.
            ("build/.gitignore", "!x.json\n"),
            ("node_modules/pkg/package.json", "{}"),
        ],
    );
    verdicts(
        root,
        &[
            "node_modules/",
            "node_modules/pkg/package.json",
            "a/node_modules/x.json",
            "node_modules",
            "x.log",
            "keep.log",
            "sub/x.log",
            "sub/important.log",
            "build/x.json",
            "sub/build/x.json",
            "dist/a.json",
            "sub/dist",
            "secret.json",
            "sub/secret.json",
            "local.json",
            "sub/local.json",
            "sub/a/local.json",
            "sub/deeper/local.json",
            "only-here.json",
            "sub/only-here.json",
            "sub/a/only-here.json",
            "data/ok.json",
        ],
        expect![[r#"
            node_modules/: ignored
            node_modules/pkg/package.json: ignored
            a/node_modules/x.json: ignored
            node_modules: kept
            x.log: ignored
            keep.log: kept
            sub/x.log: ignored
            sub/important.log: kept
            build/x.json: ignored
            sub/build/x.json: kept
            dist/a.json: ignored
            sub/dist: ignored
            secret.json: ignored
            sub/secret.json: ignored
            local.json: kept
            sub/local.json: ignored
            sub/a/local.json: ignored
            sub/deeper/local.json: kept
            only-here.json: kept
            sub/only-here.json: ignored
            sub/a/only-here.json: kept
            data/ok.json: kept
        "#]],
    );
}

/// `.ignore` is asked before `.gitignore` in the same folder (ripgrep's order).
#[test]
fn dot_ignore_comes_before_gitignore() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), &[(".gitignore", "*.json\n"), (".ignore", "!wanted.json\n")]);
    verdicts(
        tmp.path(),
        &["a.json", "wanted.json", "x/wanted.json"],
        expect![[r#"
            a.json: ignored
            wanted.json: kept
            x/wanted.json: kept
        "#]],
    );
}

/// A store in a sub-folder of a repository: the repository's rule files above it apply, with
/// their patterns relative to their own folder, and so does its `info/exclude`.
#[test]
fn rules_above_the_store_up_to_the_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    fs::create_dir_all(repo.join(".git/info")).unwrap();
    write(
        repo,
        &[
            (".gitignore", "/data/generated/\n*.tmp.json\n/top.json\n"),
            ("data/.gitignore", "local/\n"),
            (".git/info/exclude", "/data/mine.json\n"),
            ("data/generated/a.json", "{}"),
        ],
    );
    verdicts(
        &repo.join("data"),
        &["generated/a.json", "x.tmp.json", "top.json", "local/a.json", "mine.json", "a.json"],
        expect![[r#"
            generated/a.json: ignored
            x.tmp.json: ignored
            top.json: kept
            local/a.json: ignored
            mine.json: ignored
            a.json: kept
        "#]],
    );
}

/// Outside any repository, the store's own rule files still apply, and no folder above it
/// has a say.
#[test]
fn a_store_in_no_repository_keeps_its_own_rules() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), &[(".gitignore", "*.json\n"), ("store/.gitignore", "out/\n")]);
    verdicts(
        &tmp.path().join("store"),
        &["a.json", "out/b.json"],
        expect![[r#"
            a.json: kept
            out/b.json: ignored
        "#]],
    );
}

/// Ten thousand patterns are read once into one matcher; a rule file over the size bound is
/// not read, with a warning naming it.
#[test]
fn large_rule_files_are_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let many: String = (0..10_000).map(|i| format!("generated-{i}/\n*.out{i}\n")).collect();
    let huge = "x\n".repeat((MAX_RULE_FILE as usize) / 2 + 1);
    write(tmp.path(), &[(".gitignore", &many), ("big/.gitignore", &huge)]);
    verdicts(
        tmp.path(),
        &["generated-9999/a.json", "a.out42", "a.json", "big/x"],
        expect![[r#"
            generated-9999/a.json: ignored
            a.out42: ignored
            a.json: kept
            big/x: kept
            warning: big/.gitignore is 4194306 bytes, over the 4 MiB read for ignore rules: its patterns are not applied; shorten it
        "#]],
    );
}

/// A folder `[store] ignore` prunes is not read for rule files, and neither are the private
/// folders.
#[test]
fn pruned_and_private_folders_are_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        &[
            ("vendor/.gitignore", "*.json\n"),
            (".stardust/.gitignore", "*\n"),
            ("a/.gitignore", "*.json\n"),
        ],
    );
    let pruned =
        globset::GlobSetBuilder::new().add(globset::Glob::new("vendor").unwrap()).build().unwrap();
    let rules = ProjectIgnores::load(tmp.path(), &pruned);
    assert!(!rules.is_ignored("vendor/a.json", false));
    assert!(!rules.is_ignored(".stardust/x", false));
    assert!(rules.is_ignored("a/x.json", false));
}
