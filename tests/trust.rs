//! End-to-end tests of `stardust trust [--revoke] STORE` (SPEC §17): the real binary, with
//! HOME and XDG_CONFIG_HOME in a temporary folder, so the user's real configuration is never
//! read or written.

mod util;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use util::text;

const SERVERS: &str = r#"
[servers.pyright]
command = "pyright-langserver"
args = ["--stdio"]
languages = { py = "python" }

[servers.clangd]
command = "/usr/bin/clangd"
languages = { c = "c", h = "c" }
"#;

/// A temporary home (with or without XDG_CONFIG_HOME) and a store in it.
struct Home {
    dir: tempfile::TempDir,
    xdg: bool,
}

impl Home {
    fn new(xdg: bool) -> Home {
        let home = Home { dir: tempfile::tempdir().unwrap(), xdg };
        std::fs::create_dir_all(home.store()).unwrap();
        home
    }

    fn store(&self) -> PathBuf {
        self.dir.path().join("work/proj")
    }

    fn config_dir(&self) -> PathBuf {
        if self.xdg {
            self.dir.path().join("xdg/stardust")
        } else {
            self.dir.path().join("home/.config/stardust")
        }
    }

    fn trusted(&self) -> PathBuf {
        self.config_dir().join("trusted.toml")
    }

    fn write_config(&self, text: &str) {
        std::fs::write(self.store().join("stardust.toml"), text).unwrap();
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_stardust"));
        cmd.args(args)
            .current_dir(self.dir.path())
            .env_remove("RUST_LOG")
            .env("HOME", self.dir.path().join("home"));
        if self.xdg {
            cmd.env("XDG_CONFIG_HOME", self.dir.path().join("xdg"));
        } else {
            cmd.env_remove("XDG_CONFIG_HOME");
        }
        cmd.output().expect("the stardust binary runs")
    }

    /// The hashes recorded for the store, by server name.
    fn recorded(&self) -> Vec<(String, String)> {
        let text = std::fs::read_to_string(self.trusted()).unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        let key = self.store().canonicalize().unwrap().to_str().unwrap().to_owned();
        let Some(servers) = table["stores"].get(&key) else { return Vec::new() };
        let servers = servers.as_table().unwrap();
        servers.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())).collect()
    }
}

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", text(&out.stderr));
    text(&out.stdout)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn trust_records_each_table_and_a_changed_table_needs_trusting_again() {
    let home = Home::new(true);
    home.write_config(SERVERS);
    let store = home.store().canonicalize().unwrap();
    let stdout = ok(&home.run(&["trust", "work/proj"]));
    assert_eq!(
        stdout,
        format!(
            "trusted 2 language servers of {} (recorded in {}):\n  clangd: /usr/bin/clangd\n  \
             pyright: pyright-langserver --stdio\n",
            store.display(),
            home.trusted().display()
        )
    );
    assert_eq!(mode(&home.trusted()), 0o600);
    assert_eq!(mode(&home.config_dir()), 0o700);
    let first = home.recorded();
    assert_eq!(first.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["clangd", "pyright"]);
    assert!(first.iter().all(|(_, h)| h.len() == 64), "{first:?}");

    // Comments and layout are not the table: trusting again records the same hashes.
    home.write_config(&format!("# servers for this project\n{}", SERVERS.replace(" = ", "=")));
    ok(&home.run(&["trust", "work/proj"]));
    assert_eq!(home.recorded(), first);

    // A changed value is another table: its hash changes, the other table's does not.
    home.write_config(&SERVERS.replace("[\"--stdio\"]", "[\"--stdio\", \"--verbose\"]"));
    ok(&home.run(&["trust", home.store().to_str().unwrap()]));
    let second = home.recorded();
    assert_eq!(second[0], first[0], "clangd's table is unchanged");
    assert_ne!(second[1].1, first[1].1, "pyright's table changed");

    let stdout = ok(&home.run(&["trust", "--revoke", "work/proj"]));
    assert_eq!(
        stdout,
        format!("revoked trust in 2 language servers of {}: clangd, pyright\n", store.display())
    );
    assert_eq!(home.recorded(), []);
    assert_eq!(mode(&home.trusted()), 0o600);
    let stdout = ok(&home.run(&["trust", "--revoke", "work/proj"]));
    assert_eq!(stdout, format!("{} was not trusted; nothing to revoke\n", store.display()));

    // A deleted store's trust can still be revoked, by the path it had.
    ok(&home.run(&["trust", "work/proj"]));
    std::fs::remove_dir_all(home.store()).unwrap();
    let stdout = ok(&home.run(&["trust", "--revoke", store.to_str().unwrap()]));
    assert!(stdout.starts_with("revoked trust in 2 language servers of "), "{stdout}");
}

#[test]
fn a_mount_of_a_store_is_trusted_as_the_store() {
    let home = Home::new(true);
    home.write_config(SERVERS);
    // What a mount shows in its private folder: the store it is a view of.
    let mount = home.dir.path().join("mnt");
    std::fs::create_dir_all(mount.join(".stardust")).unwrap();
    let record = serde_json::json!({ "store": home.store() });
    std::fs::write(mount.join(".stardust/store.json"), record.to_string()).unwrap();
    ok(&home.run(&["trust", "mnt"]));
    assert_eq!(home.recorded().len(), 2, "recorded under the store's own path");
    let stdout = ok(&home.run(&["trust", "--revoke", "mnt"]));
    assert!(stdout.starts_with("revoked trust in 2 language servers of "), "{stdout}");
}

#[test]
fn without_xdg_config_home_trust_lives_under_home() {
    let home = Home::new(false);
    home.write_config(SERVERS);
    ok(&home.run(&["trust", "work/proj"]));
    assert_eq!(home.recorded().len(), 2);
    assert!(home.trusted().starts_with(home.dir.path().join("home/.config/stardust")));
}

#[test]
fn a_users_table_of_the_same_name_is_the_one_used() {
    let home = Home::new(true);
    home.write_config(SERVERS);
    std::fs::create_dir_all(home.config_dir()).unwrap();
    std::fs::write(
        home.config_dir().join("servers.toml"),
        "[servers.clangd]\ncommand = \"clangd\"\nlanguages = { c = \"c\" }\n",
    )
    .unwrap();
    let stdout = ok(&home.run(&["trust", "work/proj"]));
    assert!(
        stdout.contains("  clangd: /usr/bin/clangd (not used: your servers.toml defines clangd)\n"),
        "{stdout}"
    );
}

#[test]
fn nothing_to_trust_and_refusals() {
    let home = Home::new(true);
    let stdout = ok(&home.run(&["trust", "work/proj"]));
    assert!(stdout.starts_with("nothing to trust: "), "{stdout}");

    // An invalid table is refused, in `trust` and in `check` alike, and nothing is recorded.
    home.write_config("[servers.pyright]\ncommand = \"\"\nlanguages = { py = \"python\" }\n");
    for args in [["trust", "work/proj"], ["check", "work/proj"]] {
        let out = home.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stdout));
        let stderr = text(&out.stderr);
        assert!(stderr.starts_with("error[config-invalid]: invalid configuration in "), "{stderr}");
        assert!(
            stderr.ends_with(
                "work/proj/stardust.toml: servers.pyright.command: is empty; give an absolute \
                 path or a name on PATH\n"
            ),
            "{args:?}: {stderr}"
        );
    }
    assert!(!home.trusted().exists());

    let out = home.run(&["trust", "work/missing"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("error[not-found]: cannot find the store "));

    // A trusted.toml that other users may write decides nothing.
    home.write_config(SERVERS);
    ok(&home.run(&["trust", "work/proj"]));
    std::fs::set_permissions(home.trusted(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = home.run(&["trust", "work/proj"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("chmod 600"), "{}", text(&out.stderr));
}

#[test]
fn the_mixed_example_checks_clean_and_its_servers_can_be_trusted() {
    let home = Home::new(true);
    util::copy_store(&util::repo().join("examples/mixed"), &home.store());
    let stdout = ok(&home.run(&["check", "work/proj"]));
    assert_eq!(stdout, "ok in 7 documents (4 entities): 0 errors, 0 warnings\n");
    let stdout = ok(&home.run(&["trust", "work/proj"]));
    let listed: Vec<&str> = stdout.lines().skip(1).collect();
    assert_eq!(
        listed,
        [
            "  clangd: clangd --log=error",
            "  pyright: pyright-langserver --stdio",
            "  typescript: typescript-language-server --stdio",
        ]
    );
}

/// The README's "Code files" configuration is valid as written, and is what trust lists.
#[test]
fn the_readmes_server_tables_are_valid() {
    let readme = std::fs::read_to_string(util::repo().join("README.md")).unwrap();
    let section = readme.split("\n## Code files\n").nth(1).expect("README has 'Code files'");
    let block = section.split("```toml\n").nth(1).unwrap().split("```").next().unwrap();
    let home = Home::new(true);
    home.write_config(block);
    let stdout = ok(&home.run(&["check", "work/proj"]));
    assert!(stdout.starts_with("ok in 0 documents"), "{stdout}");
    let stdout = ok(&home.run(&["trust", "work/proj"]));
    let listed: Vec<&str> = stdout.lines().skip(1).collect();
    assert_eq!(
        listed,
        [
            "  clangd: clangd",
            "  pyright: pyright-langserver --stdio",
            "  typescript: typescript-language-server --stdio",
        ]
    );
}
