//! `stardust __supervise`: the `stardust` executable is its own language servers' supervisor
//! (stardust-servers), trampoline included. Driven by hand with `/bin/cat` as the "server".

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

#[test]
fn stardust_supervises_a_server_through_its_hidden_argument() {
    let dir = tempfile::tempdir().unwrap();
    let mut supervisor = Command::new(env!("CARGO_BIN_EXE_stardust"))
        .args(["__supervise", "supervise", "--parent", &std::process::id().to_string(), "--cwd"])
        .arg(dir.path())
        .args(["--", "/bin/cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reports = BufReader::new(supervisor.stderr.take().unwrap());
    let mut line = String::new();
    reports.read_line(&mut line).unwrap();
    let pid: i32 = line.trim().strip_prefix("p ").expect("the server's pid first").parse().unwrap();
    // The trampoline exec'd cat in a process group of its own, in the given folder.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let stat = loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        if stat.contains("(cat)") || std::time::Instant::now() > until {
            break stat;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(stat.contains("(cat)"), "{stat}");
    let pgrp = stat[stat.rfind(')').unwrap() + 2..].split(' ').nth(2).unwrap().to_owned();
    assert_eq!(pgrp, pid.to_string());
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(),
        dir.path().canonicalize().unwrap()
    );
    // Straight through: what goes in comes out.
    let mut stdin = supervisor.stdin.take().unwrap();
    stdin.write_all(b"hello\n").unwrap();
    let mut out = [0u8; 6];
    supervisor.stdout.take().unwrap().read_exact(&mut out).unwrap();
    assert_eq!(&out, b"hello\n");
    // EOF on its input ends cat; the supervisor reports it and exits.
    drop(stdin);
    let mut rest = String::new();
    reports.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "x exit code 0\n");
    assert!(supervisor.wait().unwrap().success());
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}
