//! The supervisor process: one per language server, between the core and the server, so that
//! no process of the server's tree outlives the core (SPEC §17).
//!
//! ```text
//! core ── stdin/stdout ──────────────────────────────┐ (LSP, straight through)
//!  │  └─ stderr pipe (reports; its reader is the core) │
//!  └─ supervisor (own process group, child subreaper, PDEATHSIG=SIGTERM)
//!        └─ exec trampoline → server (own process group, PDEATHSIG=SIGKILL)
//!              └─ whatever the server starts, leaked or not
//! ```
//!
//! The supervisor hands its stdin and stdout to the server and keeps none of them, so the
//! core's LSP traffic goes straight to the server and the core sees EOF when the server
//! dies. Its stderr is the core's channel: the server's stderr relayed line by line (`s`),
//! the server's pid (`p`), its exit (`x`), what was killed (`k`), its own failures (`e`).
//!
//! It reaps the whole tree, then exits, on the first of: the server's leader exited (crash,
//! or after `exit`); SIGTERM/SIGINT/SIGHUP/SIGQUIT (the core stopping the server, or the
//! core's death through PDEATHSIG); the core gone (its stderr pipe has no reader: poll
//! reports POLLERR, or a write fails with EPIPE) — the last works even when the core was
//! SIGKILLed from a thread other than the one that spawned the supervisor.
//!
//! The tree is every process whose process group is the server's (and in our session), and
//! every descendant of the supervisor: as a child subreaper it inherits every orphan below
//! it, so a grandchild that double-forked and called `setsid` is still found by its parent
//! chain. Each is signalled by its explicit pid, read from /proc; never by a name or pattern.
//! First SIGTERM to all (250 ms to exit), then rounds of SIGSTOP (a stopped process can
//! neither fork nor reap, so pids stay put) and SIGKILL until nothing is left.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::prctl;
use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpid, getppid, getsid};

/// The hidden first argument that makes the `stardust` executable a supervisor.
pub const HIDDEN: &str = "__supervise";

/// How long the tree has to exit after SIGTERM before it is killed.
pub const TERM_GRACE: Duration = Duration::from_millis(250);

/// The longest relayed stderr line (a longer one is split).
const MAX_LINE: usize = 4096;

/// The supervisor's entry point. `prefix` is what put the executable in supervisor mode
/// (empty for `stardust-supervisor`, `["__supervise"]` for `stardust`), `args` the rest:
///
/// - `supervise --parent PID --cwd DIR -- COMMAND ARGS...`: supervise one server;
/// - `exec --parent PID -- COMMAND ARGS...`: the trampoline that arms PDEATHSIG and execs
///   the server (std cannot set it between fork and exec without `unsafe`).
///
/// Returns the exit code.
pub fn main(prefix: &[OsString], args: &[OsString]) -> i32 {
    match parse(args) {
        Some(Mode::Supervise { parent, cwd, command }) => supervise(prefix, parent, cwd, command),
        Some(Mode::Exec { parent, command }) => trampoline(parent, command),
        None => {
            eprintln!(
                "e usage: supervise --parent PID --cwd DIR -- COMMAND ARGS... | exec --parent PID -- COMMAND ARGS..."
            );
            2
        }
    }
}

enum Mode {
    Supervise { parent: i32, cwd: PathBuf, command: Vec<OsString> },
    Exec { parent: i32, command: Vec<OsString> },
}

fn parse(args: &[OsString]) -> Option<Mode> {
    let (mode, rest) = args.split_first()?;
    let split = rest.iter().position(|a| a == "--")?;
    let (options, command) = (&rest[..split], rest[split + 1..].to_vec());
    if command.is_empty() {
        return None;
    }
    let mut parent = None;
    let mut cwd = None;
    let mut it = options.iter();
    while let Some(option) = it.next() {
        let value = it.next()?;
        match option.to_str()? {
            "--parent" => parent = Some(value.to_str()?.parse().ok()?),
            "--cwd" => cwd = Some(PathBuf::from(value)),
            _ => return None,
        }
    }
    match mode.to_str()? {
        "supervise" => Some(Mode::Supervise { parent: parent?, cwd: cwd?, command }),
        "exec" => Some(Mode::Exec { parent: parent?, command }),
        _ => None,
    }
}

/// One line to the core. Returns false when the core is gone.
fn report(line: &str) -> bool {
    let mut line = line.replace('\n', " ");
    line.push('\n');
    io::stderr().write_all(line.as_bytes()).is_ok()
}

fn trampoline(parent: i32, command: Vec<OsString>) -> i32 {
    // The signal is tied to the thread that forked us: the supervisor's only thread.
    if prctl::set_pdeathsig(Signal::SIGKILL).is_err() || getppid().as_raw() != parent {
        return 1;
    }
    let err = Command::new(&command[0]).args(&command[1..]).exec();
    eprintln!("cannot execute {}: {err}", command[0].to_string_lossy());
    127
}

fn supervise(prefix: &[OsString], parent: i32, cwd: PathBuf, command: Vec<OsString>) -> i32 {
    // Armed first, then checked: if the core died before the prctl, our parent is already
    // someone else and nothing has been started yet.
    if prctl::set_pdeathsig(Signal::SIGTERM).is_err() || getppid().as_raw() != parent {
        return 0;
    }
    if let Err(e) = prctl::set_child_subreaper(true) {
        report(&format!("e cannot become a child subreaper: {e}"));
        return 1;
    }
    let mut signals = SigSet::empty();
    for s in [Signal::SIGCHLD, Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP, Signal::SIGQUIT] {
        signals.add(s);
    }
    // std resets the signal mask of the children it spawns, so the server starts unblocked.
    if let Err(e) = signals.thread_block() {
        report(&format!("e cannot block signals: {e}"));
        return 1;
    }
    let signal_fd =
        match SignalFd::with_flags(&signals, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC) {
            Ok(fd) => fd,
            Err(e) => {
                report(&format!("e cannot open a signalfd: {e}"));
                return 1;
            }
        };
    let me = getpid();
    let leader = match start_server(prefix, me, &cwd, &command) {
        Ok(started) => started,
        Err(e) => {
            report(&format!("e cannot start the server: {e}"));
            return 1;
        }
    };
    let (child, mut server_stderr) = leader;
    let pgid = child;
    report(&format!("p {child}"));

    let why = watch(&signal_fd, child, &mut server_stderr);
    let killed = reap_tree(me, pgid, child);
    if !killed.is_empty() {
        let pids: Vec<String> = killed.iter().map(|p| p.to_string()).collect();
        report(&format!("k {why}: {}", pids.join(" ")));
    }
    0
}

/// Starts the trampoline (which becomes the server) with our stdin and stdout and a new
/// stderr pipe, then lets go of stdin and stdout.
fn start_server(
    prefix: &[OsString],
    me: Pid,
    cwd: &PathBuf,
    command: &[OsString],
) -> io::Result<(i32, io::PipeReader)> {
    let exe = std::env::current_exe()?;
    let stdin = io::stdin().as_fd().try_clone_to_owned()?;
    let stdout = io::stdout().as_fd().try_clone_to_owned()?;
    let (stderr_read, stderr_write) = io::pipe()?;
    let mut trampoline = Command::new(exe);
    trampoline
        .args(prefix)
        .arg("exec")
        .arg("--parent")
        .arg(me.as_raw().to_string())
        .arg("--")
        .args(command)
        .current_dir(cwd)
        .process_group(0)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr_write));
    let child = trampoline.spawn()?;
    drop(trampoline);
    let null = fs::File::options().read(true).write(true).open("/dev/null")?;
    nix::unistd::dup2_stdin(&null)?;
    nix::unistd::dup2_stdout(&null)?;
    let pid = child.id() as i32;
    // The Child is not waited through std: the SIGCHLD loop reaps it with waitpid.
    drop(child);
    Ok((pid, stderr_read))
}

/// Waits for the first reason to end the tree, relaying the server's stderr meanwhile.
fn watch(signal_fd: &SignalFd, leader: i32, server_stderr: &mut io::PipeReader) -> String {
    let mut stderr_open = true;
    let mut partial: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let core = io::stderr();
        let mut fds = vec![
            PollFd::new(signal_fd.as_fd(), PollFlags::POLLIN),
            PollFd::new(core.as_fd(), PollFlags::empty()),
        ];
        if stderr_open {
            fds.push(PollFd::new(server_stderr.as_fd(), PollFlags::POLLIN));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(e) => return format!("poll failed: {e}"),
        }
        let ready = |i: usize| fds[i].revents().unwrap_or(PollFlags::empty());
        let (sig, core_gone, err_ready) =
            (ready(0), ready(1), if stderr_open { ready(2) } else { PollFlags::empty() });
        drop(fds);
        if core_gone.intersects(PollFlags::POLLERR | PollFlags::POLLHUP) {
            return "the core is gone".into();
        }
        if !err_ready.is_empty() {
            match server_stderr.read(&mut buf) {
                Ok(0) | Err(_) => {
                    stderr_open = false;
                    if !partial.is_empty() && !relay(&partial) {
                        return "the core is gone".into();
                    }
                    partial.clear();
                }
                Ok(n) => {
                    partial.extend_from_slice(&buf[..n]);
                    while let Some(i) = partial.iter().position(|&b| b == b'\n') {
                        let line: Vec<u8> = partial.drain(..=i).collect();
                        if !relay(&line[..line.len() - 1]) {
                            return "the core is gone".into();
                        }
                    }
                    while partial.len() > MAX_LINE {
                        let line: Vec<u8> = partial.drain(..MAX_LINE).collect();
                        if !relay(&line) {
                            return "the core is gone".into();
                        }
                    }
                }
            }
        }
        if sig.contains(PollFlags::POLLIN) {
            // Read every pending signal, and reap before acting on a stop, so the leader's
            // exit status is reported even when a SIGTERM came with its SIGCHLD.
            let mut stop = None;
            while let Ok(Some(info)) = signal_fd.read_signal() {
                let signal = Signal::try_from(info.ssi_signo as i32).ok();
                if signal != Some(Signal::SIGCHLD) {
                    stop = Some(format!("{} received", signal.map_or("a signal", |s| s.as_str())));
                }
            }
            if reap_children(leader) {
                return "the server exited".into();
            }
            if let Some(stop) = stop {
                return stop;
            }
        }
    }
}

fn relay(line: &[u8]) -> bool {
    let text = String::from_utf8_lossy(line);
    report(&format!("s {}", text.trim_end_matches('\r')))
}

/// Reaps every exited child (our own and the orphans we inherited); when the leader is among
/// them, reports how it ended (`x`) and returns true. Wherever the leader is reaped (here in
/// the watch loop, or while the tree is ended after a SIGTERM that overtook its SIGCHLD), its
/// status is reported exactly once.
fn reap_children(leader: i32) -> bool {
    let mut reaped_leader = false;
    loop {
        let status = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid.as_raw() == leader => {
                format!("exit code {code}")
            }
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid.as_raw() == leader => {
                format!("killed by {}", signal.as_str())
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return reaped_leader,
            Ok(_) => continue,
        };
        report(&format!("x {status}"));
        reaped_leader = true;
    }
}

/// One process as /proc/PID/stat shows it.
#[derive(Clone, Copy, Debug)]
struct Proc {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    session: i32,
    zombie: bool,
}

fn processes() -> Vec<Proc> {
    let Ok(dir) = fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|entry| {
        let entry = entry.ok()?;
        let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
        let stat = fs::read_to_string(entry.path().join("stat")).ok()?;
        // `pid (comm) state ppid pgrp session ...`; comm may hold spaces and parentheses.
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut fields = rest.split(' ');
        let state = fields.next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        let session = fields.next()?.parse().ok()?;
        Some(Proc { pid, ppid, pgrp, session, zombie: state == "Z" || state == "X" })
    })
    .collect()
}

/// The live members of the tree: the server's process group (in our session) and every
/// descendant of `me`, never `me` itself.
fn members(me: Pid, pgid: i32) -> BTreeSet<i32> {
    let me = me.as_raw();
    let session = getsid(None).map(|s| s.as_raw()).unwrap_or(-1);
    let all = processes();
    let parent: HashMap<i32, i32> = all.iter().map(|p| (p.pid, p.ppid)).collect();
    let descends = |mut pid: i32| {
        for _ in 0..4096 {
            match parent.get(&pid) {
                Some(&ppid) if ppid == me => return true,
                Some(&ppid) if ppid > 1 => pid = ppid,
                _ => return false,
            }
        }
        false
    };
    all.iter()
        .filter(|p| p.pid != me && !p.zombie)
        .filter(|p| (p.pgrp == pgid && p.session == session) || descends(p.pid))
        .map(|p| p.pid)
        .collect()
}

/// Ends every member of the tree (see the module's doc) and reaps what we inherited.
/// Returns the pids that had to be signalled.
fn reap_tree(me: Pid, pgid: i32, leader: i32) -> BTreeSet<i32> {
    let mut signalled = BTreeSet::new();
    let first = members(me, pgid);
    for &pid in &first {
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        signalled.insert(pid);
    }
    let until = Instant::now() + TERM_GRACE;
    while !first.is_empty() && Instant::now() < until {
        reap_children(leader);
        if members(me, pgid).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    for _ in 0..2000 {
        reap_children(leader);
        let mut frozen = members(me, pgid);
        if frozen.is_empty() {
            break;
        }
        // Freeze until a listing finds nothing new (a fork between listing and stopping).
        for _ in 0..8 {
            for &pid in &frozen {
                let _ = kill(Pid::from_raw(pid), Signal::SIGSTOP);
            }
            let again = members(me, pgid);
            if again.is_subset(&frozen) {
                break;
            }
            frozen.extend(again);
        }
        for &pid in &frozen {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            signalled.insert(pid);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    reap_children(leader);
    signalled
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments() {
        assert!(matches!(
            parse(&os(&["supervise", "--parent", "12", "--cwd", "/tmp", "--", "/bin/x", "--stdio"])),
            Some(Mode::Supervise { parent: 12, command, .. }) if command == os(&["/bin/x", "--stdio"])
        ));
        assert!(matches!(
            parse(&os(&["exec", "--parent", "3", "--", "/bin/x"])),
            Some(Mode::Exec { parent: 3, .. })
        ));
        assert!(parse(&os(&["supervise", "--parent", "12", "--", "/bin/x"])).is_none());
        assert!(parse(&os(&["exec", "--parent", "3", "--"])).is_none());
        assert!(parse(&os(&["other", "--parent", "3", "--", "/bin/x"])).is_none());
    }

    #[test]
    fn proc_lists_this_process_with_its_group() {
        let me = processes().into_iter().find(|p| p.pid == std::process::id() as i32).unwrap();
        assert_eq!(me.pgrp, nix::unistd::getpgrp().as_raw());
        assert_eq!(me.ppid, getppid().as_raw());
        assert!(!me.zombie);
    }
}
