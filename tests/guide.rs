//! The user guide (docs/guide.md) runs as written: every `sh` block, in order, in one shell
//! in an empty folder, with the freshly built `stardust` on PATH; each `text` block after a
//! block is output that block must print (each of its lines, as a substring). A block marked
//! `sh exit=N` must end with status N; every other block with 0. The one `sh install` block
//! is what this test stands in for: it puts the built binary on PATH and the checkout at
//! `stardust-src`.

mod util;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One runnable block of the guide.
#[derive(Debug)]
struct Block {
    /// The line of the guide the block starts on (for messages).
    line: usize,
    code: String,
    exit: i32,
    /// Lines the block's output must contain.
    expect: Vec<String>,
}

/// The `sh` blocks of `guide` with their expected output.
fn blocks(guide: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut lines = guide.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let Some(info) = line.strip_prefix("```") else { continue };
        let mut words = info.split_whitespace();
        let lang = words.next().unwrap_or("");
        let mut body = String::new();
        for (_, l) in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        match lang {
            "sh" => {
                let mut exit = 0;
                let mut install = false;
                for word in words {
                    match word.strip_prefix("exit=") {
                        Some(code) => exit = code.parse().expect("exit=N takes a number"),
                        None if word == "install" => install = true,
                        None => panic!("guide line {}: unknown block attribute {word}", n + 1),
                    }
                }
                if !install {
                    blocks.push(Block { line: n + 1, code: body, exit, expect: Vec::new() });
                }
            }
            "text" => {
                let block = blocks.last_mut().expect("a text block follows an sh block");
                assert!(block.expect.is_empty(), "guide line {}: two text blocks", n + 1);
                block.expect = body
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(String::from)
                    .collect();
            }
            _ => {}
        }
    }
    blocks
}

#[test]
fn the_user_guide_runs_as_written() {
    let guide = std::fs::read_to_string(util::repo().join("docs/guide.md")).unwrap();
    let blocks = blocks(&guide);
    assert!(blocks.len() >= 15, "the guide lost its commands: {blocks:?}");

    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::os::unix::fs::symlink(util::repo(), work.join("stardust-src")).unwrap();

    // One shell runs every block, so `cd`, variables and background jobs carry over; a marker
    // line after each block gives its status and splits the output.
    let mut script = String::from("exec 2>&1\n");
    for (i, block) in blocks.iter().enumerate() {
        script.push_str(&format!("{{\n{}}}\necho \"@@guide-block {i} $?\"\n", block.code));
    }
    // Whatever the guide left running (it stops its own core) must not outlive the test.
    script.push_str("kill $(jobs -p) 2>/dev/null; fusermount3 -u -z ../mnt 2>/dev/null; true\n");

    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_stardust")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&work)
        .env("PATH", path)
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("RUST_LOG")
        .env_remove("STARDUST_BIN")
        // A core started by the editor's or the agent's front stops soon after its last client.
        .env("STARDUST_IDLE_EXIT", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("bash runs");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).unwrap();
        out
    });
    let deadline = Instant::now() + Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the guide's commands did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = reader.join().unwrap();

    let mut rest = out.as_str();
    for (i, block) in blocks.iter().enumerate() {
        let marker = format!("@@guide-block {i} ");
        let at = rest.find(&marker).unwrap_or_else(|| {
            panic!("guide line {}: the block did not finish; output:\n{rest}", block.line)
        });
        let printed = &rest[..at];
        let status_line = rest[at + marker.len()..].lines().next().unwrap();
        let status: i32 = status_line.trim().parse().unwrap();
        rest = &rest[at + marker.len() + status_line.len()..];
        assert_eq!(
            status, block.exit,
            "guide line {}: the block ended with {status}, not {}; it printed:\n{printed}",
            block.line, block.exit
        );
        for line in &block.expect {
            assert!(
                printed.contains(line.as_str()),
                "guide line {}: the output lacks {line:?}; it printed:\n{printed}",
                block.line
            );
        }
    }
}

/// The README opens with its two quick-start commands, and CI runs exactly the second one.
#[test]
fn the_readme_quick_start_is_what_ci_runs() {
    let readme = std::fs::read_to_string(util::repo().join("README.md")).unwrap();
    let quick = readme.split("## Quick start").nth(1).expect("README has a quick start");
    let block = quick.split("```sh\n").nth(1).and_then(|b| b.split("```").next()).unwrap();
    let commands: Vec<&str> = block
        .lines()
        .map(|l| l.split(" #").next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands, ["cargo run --release -- check examples/library", "scripts/test"]);
    let ci = std::fs::read_to_string(util::repo().join(".ci/run")).unwrap();
    let last = ci.lines().rev().find(|l| !l.trim().is_empty() && !l.starts_with('#')).unwrap();
    assert_eq!(last.trim(), commands[1], ".ci/run must end with the README's test command");
}
