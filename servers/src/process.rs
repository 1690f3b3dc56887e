//! The core's side of one supervised server process: starting the supervisor (from one
//! long-lived thread, because PDEATHSIG fires when the *thread* that forked exits), reading its
//! reports and the server's stderr into `tracing`, stopping it, and reaping it.

use std::io::{self, BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::error::ServerError;
use crate::spec::{ServerSpec, SupervisorProgram, scrubbed_env};
use stardust_core::sync::{lock, wait_timeout};

/// What the supervisor has reported so far.
#[derive(Debug, Default)]
struct Reports {
    server_pid: Option<i32>,
    /// How the server's leader ended (`exit code 3`, `killed by SIGKILL`).
    exit: Option<String>,
    /// The supervisor's own failure (`cannot start the server: ...`).
    error: Option<String>,
    /// The last lines of the server's stderr, for the error of a failed start.
    tail: Vec<String>,
    /// The supervisor's stderr ended: it exited (or is exiting); never signal its pid again.
    ended: bool,
    /// The supervisor was waited for.
    reaped: bool,
}

/// One running supervisor (and, below it, the server).
#[derive(Debug)]
pub(crate) struct Process {
    name: String,
    supervisor_pid: i32,
    reports: Mutex<Reports>,
    changed: Condvar,
}

/// The server's stdio, for the LSP connection.
pub(crate) struct Pipes {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
}

type Job = (Command, Sender<io::Result<Child>>);

/// The one thread that spawns supervisors. It never exits, so the supervisors' PDEATHSIG
/// only fires when the core process itself dies.
fn spawner() -> &'static Mutex<Sender<Job>> {
    static SPAWNER: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("stardust-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("the spawner thread starts");
        Mutex::new(tx)
    })
}

/// Checks that `spec.command` can be executed at all, so a missing server is reported
/// without starting anything.
pub(crate) fn check_command(spec: &ServerSpec) -> Result<(), ServerError> {
    let missing = |reason: &str| ServerError::Missing {
        server: spec.name.clone(),
        command: spec.command.display().to_string(),
        reason: reason.into(),
    };
    if !spec.command.is_absolute() {
        return Err(missing("is not an absolute path"));
    }
    match std::fs::metadata(&spec.command) {
        Err(_) => Err(missing("does not exist")),
        Ok(m) if !m.is_file() => Err(missing("is not a file")),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err(missing("is not executable")),
        Ok(_) => Ok(()),
    }
}

impl Process {
    /// Starts the supervisor, which starts the server. Returns once the supervisor runs (the
    /// server may still fail to exec; that shows as its exit and EOF on stdout).
    pub(crate) fn start(
        spec: &ServerSpec,
        program: &SupervisorProgram,
    ) -> Result<(Arc<Process>, Pipes), ServerError> {
        check_command(spec)?;
        let failed =
            |reason: String| ServerError::StartFailed { server: spec.name.clone(), reason };
        if !spec.root.is_dir() {
            return Err(failed(format!("its root {} is not a folder", spec.root.display())));
        }
        let mut command = Command::new(&program.exe);
        command
            .args(&program.prefix)
            .arg("supervise")
            .arg("--parent")
            .arg(std::process::id().to_string())
            .arg("--cwd")
            .arg(&spec.root)
            .arg("--")
            .arg(&spec.command)
            .args(&spec.args)
            .env_clear()
            .envs(scrubbed_env(std::env::vars_os()))
            .current_dir(&spec.root)
            // Its own group: a terminal's ^C to the core's group does not reach it.
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (tx, rx) = mpsc::channel();
        lock(spawner())
            .send((command, tx))
            .map_err(|_| failed("the spawner thread is gone".into()))?;
        let mut child =
            rx.recv().map_err(|_| failed("the spawner thread is gone".into()))?.map_err(|e| {
                failed(format!("cannot run the supervisor {}: {e}", program.exe.display()))
            })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(failed("the supervisor has no pipes".into()));
        };
        let process = Arc::new(Process {
            name: spec.name.clone(),
            supervisor_pid: child.id() as i32,
            reports: Mutex::new(Reports::default()),
            changed: Condvar::new(),
        });
        let watched = process.clone();
        std::thread::Builder::new()
            .name(format!("lsp-{}-stderr", spec.name))
            .spawn(move || watched.read_reports(stderr, child))
            .map_err(|e| failed(format!("cannot start a thread: {e}")))?;
        Ok((process, Pipes { stdin, stdout }))
    }

    fn read_reports(&self, stderr: std::process::ChildStderr, mut child: Child) {
        let name = self.name.as_str();
        let mut lines = BufReader::new(stderr);
        let mut line = Vec::new();
        loop {
            line.clear();
            match lines.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            let (kind, rest) = text.split_at(text.len().min(2));
            let mut reports = self.lock();
            match kind {
                "s " => {
                    tracing::info!(target: "stardust_servers::stderr", server = name, "{rest}");
                    if reports.tail.len() == 5 {
                        reports.tail.remove(0);
                    }
                    reports.tail.push(rest.to_owned());
                }
                "p " => reports.server_pid = rest.parse().ok(),
                "x " => {
                    tracing::info!(server = name, "language server exited: {rest}");
                    reports.exit = Some(rest.to_owned());
                }
                "k " => tracing::info!(
                    server = name,
                    "killed what was left of its process tree ({rest})"
                ),
                "e " => {
                    tracing::warn!(server = name, "supervisor: {rest}");
                    reports.error = Some(rest.to_owned());
                }
                _ => tracing::warn!(server = name, "supervisor said: {text}"),
            }
            drop(reports);
            self.changed.notify_all();
        }
        self.lock().ended = true;
        self.changed.notify_all();
        let _ = child.wait();
        self.lock().reaped = true;
        self.changed.notify_all();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Reports> {
        lock(&self.reports)
    }

    pub(crate) fn supervisor_pid(&self) -> i32 {
        self.supervisor_pid
    }

    /// The server's pid (and process group), once the supervisor reported it; waits up to
    /// `wait` for the report.
    pub(crate) fn server_pid(&self, wait: Duration) -> Option<i32> {
        let until = Instant::now() + wait;
        let mut reports = self.lock();
        while reports.server_pid.is_none() && !reports.ended {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            reports = wait_timeout(&self.changed, reports, left).0;
        }
        reports.server_pid
    }

    /// Why the server is gone, as far as the supervisor said (exit status, its own error,
    /// the last stderr lines).
    pub(crate) fn epitaph(&self) -> String {
        let reports = self.lock();
        let mut parts = Vec::new();
        if let Some(e) = &reports.error {
            parts.push(e.clone());
        }
        if let Some(x) = &reports.exit {
            parts.push(format!("it exited ({x})"));
        }
        if let Some(last) = reports.tail.last() {
            parts.push(format!("its last words: {last}"));
        }
        parts.join("; ")
    }

    /// Whether the server's leader has exited.
    pub(crate) fn server_exited(&self) -> bool {
        let reports = self.lock();
        reports.exit.is_some() || reports.ended
    }

    /// Waits up to `wait` for the server's leader to exit.
    pub(crate) fn wait_server_exit(&self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        let mut reports = self.lock();
        while reports.exit.is_none() && !reports.ended {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            reports = wait_timeout(&self.changed, reports, left).0;
        }
        true
    }

    /// Asks the supervisor to end the whole tree (SIGTERM to its explicit pid, which is our
    /// unreaped child, so the pid cannot have been reused), without waiting.
    pub(crate) fn terminate(&self) {
        let reports = self.lock();
        if !reports.ended {
            let _ = kill(Pid::from_raw(self.supervisor_pid), Signal::SIGTERM);
        }
    }

    /// Ends the tree and waits up to `wait` for the supervisor to be reaped; true if it was.
    pub(crate) fn stop(&self, wait: Duration) -> bool {
        self.terminate();
        let until = Instant::now() + wait;
        let mut reports = self.lock();
        while !reports.reaped {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            reports = wait_timeout(&self.changed, reports, left).0;
        }
        true
    }
}
