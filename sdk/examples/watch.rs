//! `watch STORE`: print one JSON line per change to the store's entities and documents, with
//! its `seq`, until interrupted (SIGINT or SIGTERM, exit 0). Starts a core when none runs,
//! with `STARDUST_BIN`, else `stardust` on PATH, else the one cargo built beside this example.

use std::io::Write;
use std::sync::mpsc;

use serde_json::{Value, json};
use stardust_sdk::{Client, Event};

fn main() {
    let Some(store) = std::env::args_os().nth(1) else {
        eprintln!("usage: watch STORE");
        std::process::exit(2);
    };
    if let Err(err) = run(store.as_ref()) {
        eprintln!("error[{}]: {err}", err.code());
        std::process::exit(1);
    }
}

fn run(store: &std::path::Path) -> stardust_sdk::Result<()> {
    stop_on_signal();
    let client = Client::connect(store, "watch")?;
    let entities = client.subscribe_entities()?;
    let documents = client.subscribe_documents()?;
    // One thread per subscription; this one prints the lines in the order they arrive.
    let (tx, rx) = mpsc::channel::<stardust_sdk::Result<Value>>();
    let documents_tx = tx.clone();
    std::thread::spawn(move || {
        for event in entities {
            if tx.send(event.map(|e| line("entities", e))).is_err() {
                return;
            }
        }
    });
    std::thread::spawn(move || {
        for event in documents {
            if documents_tx.send(event.map(|e| line("documents", e))).is_err() {
                return;
            }
        }
    });
    let mut out = std::io::stdout().lock();
    for line in rx {
        let line = line?;
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            // Standard output closed (`watch STORE | head`): nothing left to do.
            return Ok(());
        }
    }
    Ok(())
}

/// Exit 0 on SIGINT or SIGTERM. The signals are blocked before any thread starts and taken
/// with `sigwait`, so this works even where the shell started the program with SIGINT ignored
/// (a background job of a script).
fn stop_on_signal() {
    use nix::sys::signal::{SigSet, Signal};
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    if signals.thread_block().is_err() {
        return;
    }
    std::thread::spawn(move || {
        if signals.wait().is_ok() {
            std::process::exit(0);
        }
    });
}

/// One event as a JSON line.
fn line<C: serde::Serialize>(kind: &str, event: Event<C>) -> Value {
    match event {
        Event::Changed { seq, changes } => json!({"seq": seq, kind: changes}),
        Event::Reread { seq } => json!({"seq": seq, "reread": kind}),
    }
}
