//! A server's stderr reaches the core's log (`tracing`) line by line, with the server's name.
//! Its own test binary: it installs the process-wide subscriber that captures the log.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::Value;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_servers_stderr_is_logged_with_its_name() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::INFO)
        .init();
    let dir = tempfile::tempdir().unwrap();
    let server = common::server(dir.path(), &[]);
    server.request("fake/crash", Value::Null, None).unwrap_err();
    let log = || String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    // The exit is reported just after the output ends.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !log().contains("exit code 3") && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let log = log();
    let line = |needle: &str| {
        log.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in:\n{log}"))
    };
    for (needle, target) in [
        ("stardust_servers::stderr: fake-lsp: started with []", "stderr"),
        ("stardust_servers::stderr: fake-lsp: crashing as asked", "stderr"),
        ("language server exited: exit code 3", "process"),
    ] {
        assert!(line(needle).ends_with(" server=\"fake\""), "{target}: {log}");
    }
}
