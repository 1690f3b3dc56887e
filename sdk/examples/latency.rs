//! `latency STORE [N]`: the commit-to-event latency at a subscriber (docs/BENCHMARKS.md). Makes
//! N commits one after the other (each sets one field of one entity through a patch) and
//! times, for each, the moment a subscriber on its own thread receives the entity event
//! against the moment the confirm was sent and the moment it was answered. Run it in release
//! against a core that is already running (`stardust serve STORE`).

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use stardust_sdk::{Client, ConnectOptions, Event};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(store) = args.first() else {
        eprintln!("usage: latency STORE [N]");
        std::process::exit(2);
    };
    let n: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(500);
    if let Err(err) = run(store, n) {
        eprintln!("error[{}]: {err}", err.code());
        std::process::exit(1);
    }
}

fn run(store: &str, n: usize) -> stardust_sdk::Result<()> {
    let options = ConnectOptions { autostart: false, ..Default::default() };
    let client = Client::connect_with(store, "latency", options)?;
    let id = client
        .patch(
            json!({"ops": [{"create": {"id": "?x", "type": "probe", "name": "latency probe"}}]}),
        )?
        .confirm()?
        .resolved
        .remove("?x")
        .unwrap_or_default();
    let events = client.subscribe_entities()?;
    let (tx, rx) = mpsc::channel::<(u64, Instant)>();
    std::thread::spawn(move || {
        for event in events {
            let Ok(Event::Changed { seq, .. }) = event else { return };
            if tx.send((seq, Instant::now())).is_err() {
                return;
            }
        }
    });
    let (mut from_send, mut from_answer) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let preview = client.patch(json!({"ops": [{"set": {"id": id, "n": i}}]}))?;
        let sent = Instant::now();
        let committed = preview.confirm()?;
        let answered = Instant::now();
        let (seq, at) = rx.recv_timeout(Duration::from_secs(10)).map_err(|_| {
            stardust_sdk::Error::Protocol("no event within 10 s of a commit".to_owned())
        })?;
        assert_eq!(seq, committed.seq, "one event per commit, in order");
        from_send.push(at.duration_since(sent));
        // The event may arrive before the confirm's answer: count that as zero.
        from_answer.push(at.saturating_duration_since(answered));
    }
    common::report("confirm sent -> event", &mut from_send);
    common::report("confirm answered -> event", &mut from_answer);
    Ok(())
}
