//! One mounted store for the mount's end-to-end tests: `stardust mount STORE DIR` started on
//! a store the test prepared, unmounted when dropped, even when the test fails.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::text;

pub struct Mounted {
    pub _tmp: tempfile::TempDir,
    pub store: PathBuf,
    pub dir: PathBuf,
    pub child: Option<Child>,
    /// The mount's log (stderr, at info).
    pub stderr: PathBuf,
}

impl Mounted {
    /// Mount `store` at `dir` (both inside `tmp`, `dir` created here) with `extra` arguments
    /// and `env` set, once the kernel shows the mount.
    pub fn start(
        tmp: tempfile::TempDir,
        store: PathBuf,
        dir: PathBuf,
        extra: &[&str],
        env: &[(&str, &Path)],
    ) -> Mounted {
        fs::create_dir_all(&dir).unwrap();
        let stderr = tmp.path().join("mount.log");
        let child = Command::new(env!("CARGO_BIN_EXE_stardust"))
            .arg("mount")
            .arg(&store)
            .arg(&dir)
            .args(extra)
            .envs(env.iter().map(|(k, v)| (k, v.as_os_str())))
            .env("RUST_LOG", "stardust=info,stardust_fuse=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("the stardust binary runs");
        let mut mounted = Mounted { _tmp: tmp, store, dir, child: Some(child), stderr };
        mounted.wait_mounted();
        mounted
    }

    pub fn wait_mounted(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !is_mounted(&self.dir) {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("the mount exited ({status}): {}", self.log());
            }
            assert!(Instant::now() < deadline, "not mounted after 20s: {}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    pub fn on_disk(&self, rel: &str) -> String {
        fs::read_to_string(self.store.join(rel)).unwrap()
    }

    /// `stardust log --format json` of the store, one object per transaction.
    pub fn transactions(&self) -> Vec<Value> {
        let out = super::stardust(&["log", self.store.to_str().unwrap(), "--format", "json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    /// The refused saves kept: (name, content, why), oldest first.
    pub fn rejected(&self) -> Vec<(String, String, String)> {
        let dir = self.store.join(".stardust/rejected");
        let Ok(entries) = fs::read_dir(&dir) else { return Vec::new() };
        let mut names: Vec<String> = entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| !n.ends_with(".why"))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let content = fs::read_to_string(dir.join(&n)).unwrap();
                let why = fs::read_to_string(dir.join(format!("{n}.why"))).unwrap();
                (n, content, why)
            })
            .collect()
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        if is_mounted(&self.dir) {
            let _ = Command::new("fusermount3").arg("-u").arg("-z").arg(&self.dir).status();
        }
    }
}

/// Whether the kernel shows a mount at `dir`.
pub fn is_mounted(dir: &Path) -> bool {
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let dir = dir.to_str().unwrap();
    mounts.lines().any(|line| line.split(' ').nth(1) == Some(dir))
}
