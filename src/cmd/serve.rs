//! `stardust serve STORE`: the one core of a store (SPEC §15), serving LSP, MCP and the command
//! line over a Unix socket (and MCP over streamable HTTP with `--mcp-http`) until SIGINT or
//! SIGTERM, or until it has been idle long enough.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal};
use stardust_core::service::Front;
use stardust_daemon::server::{Daemon, Handlers};

/// How often the core checks that its store is still where it was, and whether it is idle.
const WATCH_TICK: Duration = Duration::from_millis(200);

pub(crate) fn run(
    store: &Path,
    mount: Option<&Path>,
    idle_exit: Option<u64>,
    mcp_http: Option<SocketAddr>,
    share_previews: bool,
) -> anyhow::Result<ExitCode> {
    if let Some(addr) = mcp_http.filter(|a| !a.ip().is_loopback()) {
        return Err(stardust_core::Error::InvalidArguments(format!(
            "--mcp-http serves on loopback only; give 127.0.0.1:PORT or [::1]:PORT, not {addr}"
        ))
        .into());
    }
    // Block the stop signals before any thread starts: every thread inherits the mask, so they
    // wait for this thread's `sigwait` instead of killing the process mid-commit.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block()?;

    let daemon = Arc::new(Daemon::start(store, Some(super::code_host()?), share_previews)?);
    // The mount shares the core's store: its saves and every other path's commits are one
    // history, and each invalidates the other's caches.
    let mounted = match mount {
        Some(dir) => {
            let service = daemon.service();
            // Saves of code files through the mount are transactions, under `code-error`.
            service.install_code_saves();
            let on_end = || {
                let _ = nix::sys::signal::kill(nix::unistd::getpid(), Signal::SIGTERM);
            };
            let options = stardust_fuse::MountOptions::default();
            let mount = stardust_fuse::mount(service.store_arc(), dir, &options, on_end)?;
            service.set_mount(Some(mount.dir().display().to_string()));
            tracing::info!("mounted at {}", mount.dir().display());
            Some(mount)
        }
        None => None,
    };
    let handlers = Handlers {
        lsp: Arc::new(|service, hello, io, gone| {
            // The front's reader and writer threads may wait on the client's pipes, which
            // closing our copies would not end: dropping `stop` ends them.
            let stop = stardust_daemon::pass::Stop::new()?;
            let (input, output) = (stop.guard(io.input)?, stop.guard(io.output)?);
            // The SDK speaks LSP too; its session commits as `sdk:<client>`.
            let front = match hello.front {
                Front::Sdk => Front::Sdk,
                _ => Front::Lsp,
            };
            let served = stardust_lsp::run_attached(service, front, input, output, gone);
            drop(stop);
            served
        }),
        mcp: Arc::new(|service, hello, io, gone| {
            let options = stardust_mcp::Options { allow_mutation: hello.allow_mutation };
            stardust_mcp::run_attached(service, options, io.input, io.output, gone)
        }),
    };
    // MCP over HTTP shares the core's service: its sessions see every other front's commits.
    if let Some(addr) = mcp_http {
        let service = daemon.service();
        let (ready, bound) = std::sync::mpsc::channel();
        let failed = ready.clone();
        std::thread::spawn(move || {
            let on_ready = move |at: SocketAddr| {
                let _ = ready.send(Ok(at));
            };
            let options = stardust_mcp::Options::default();
            if let Err(err) = stardust_mcp::run_http(service, options, addr, on_ready) {
                let _ = failed.send(Err(err));
            }
        });
        match bound.recv() {
            Ok(Ok(at)) => tracing::info!("MCP over streamable HTTP at http://{at}/mcp"),
            Ok(Err(err)) => {
                daemon.shutdown();
                return Err(err.context(format!("cannot serve MCP over HTTP on {addr}")));
            }
            Err(_) => anyhow::bail!("the MCP HTTP server stopped before it listened"),
        }
    }
    let accepting = daemon.clone();
    std::thread::spawn(move || accepting.accept(&handlers));
    // A mounted core is in use as long as the mount is, one serving HTTP as long as agents may
    // connect: neither stops for idleness. Every core stops when its store's folder moves:
    // attachers at the new place would otherwise reach a core serving the old one.
    let idle = idle_exit.filter(|_| mounted.is_none() && mcp_http.is_none());
    let watched = daemon.clone();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(WATCH_TICK);
            if watched.moved() {
                tracing::warn!(
                    "the store's folder {} was moved or removed: stopping (attach again at its \
                     new place to start a core there)",
                    watched.root().display()
                );
            } else if let Some(seconds) = idle
                && watched.idle_for() >= Duration::from_secs(seconds)
            {
                tracing::info!("idle for {seconds}s with no client: stopping");
            } else {
                watched.keep_record();
                continue;
            }
            let _ = nix::sys::signal::kill(nix::unistd::getpid(), Signal::SIGTERM);
            return;
        }
    });
    let signal = signals.wait()?;
    tracing::info!("{signal}: stopping");
    daemon.shutdown();
    if let Some(mount) = mounted {
        mount.unmount()?;
    }
    Ok(ExitCode::SUCCESS)
}
