//! Crash tests' children: the test binary runs one of its own tests again as a child process
//! (selected by an environment variable holding the store's path), reads the child's `ack`
//! lines while it commits, and kills it at a moment chosen by a seeded xorshift generator.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A small xorshift generator: enough randomness for kill timing, reproducible from its seed
/// (which every failure message should name).
pub struct Rng {
    seed: u64,
    state: u64,
}

impl Rng {
    /// Seeded from the clock, never zero (xorshift would stay at zero).
    pub fn from_clock() -> Rng {
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
        Rng { seed, state: seed }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state % n
    }
}

/// The store's path when this process is the child a crash test started with `env` set.
pub fn child_root(env: &str) -> Option<PathBuf> {
    std::env::var_os(env).map(PathBuf::from)
}

/// A running child and the reader of its standard output.
pub struct Child {
    process: std::process::Child,
    acks: JoinHandle<Vec<String>>,
    first_ack: Receiver<()>,
}

/// Run the test `test` of this binary again as a child, with `env` set to `root` and the
/// `extra` variables; its standard error is dropped (a killed child's panics are noise).
pub fn spawn(test: &str, env: &str, root: &Path, extra: &[(&str, &str)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(env, root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (name, value) in extra {
        command.env(name, value);
    }
    let mut process = command.spawn().unwrap();
    let stdout = process.stdout.take().unwrap();
    let (tell, first_ack) = mpsc::channel();
    let acks = std::thread::spawn(move || {
        let mut acks = Vec::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(ack) = line.strip_prefix("ack ") {
                acks.push(ack.to_owned());
                let _ = tell.send(());
            }
        }
        acks
    });
    Child { process, acks, first_ack }
}

impl Child {
    /// Wait until the child acknowledged its first commit, at most `timeout`.
    pub fn first_ack(&self, timeout: Duration) {
        let _ = self.first_ack.recv_timeout(timeout);
    }

    /// Kill the child with SIGKILL: how it ended and what it acknowledged (each `ack` line
    /// without its prefix).
    pub fn kill(mut self) -> (ExitStatus, Vec<String>) {
        let _ = self.process.kill();
        self.wait()
    }

    /// Wait for the child to end by itself.
    pub fn wait(mut self) -> (ExitStatus, Vec<String>) {
        let status = self.process.wait().unwrap();
        (status, self.acks.join().unwrap())
    }
}
