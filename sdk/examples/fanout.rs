//! `fanout STORE [CLIENTS] [COMMITS]`: one core, many subscribers (docs/BENCHMARKS.md, issue
//! 9). Makes COMMITS commits back to back with no subscriber, then opens CLIENTS entity
//! subscriptions (a connection each, a thread each) and makes COMMITS more; reports the commit
//! throughput of both runs, whether every subscriber accounted for every commit (events
//! coalesce per SPEC §11 when commits come faster than a subscriber reads; a `Reread` would
//! mean changes were dropped), the commit-to-event latency at the subscribers and the core's
//! peak memory. Run it in release against a core that is already running (`stardust serve
//! STORE`).

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stardust_sdk::{Client, ConnectOptions, Event};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(store) = args.first() else {
        eprintln!("usage: fanout STORE [CLIENTS] [COMMITS]");
        std::process::exit(2);
    };
    let clients: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(100);
    let commits: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(1000);
    if let Err(err) = run(store, clients, commits) {
        eprintln!("error[{}]: {err}", err.code());
        std::process::exit(1);
    }
}

/// When each commit was sent and answered, by seq.
struct Commits {
    first_seq: u64,
    sent: Vec<Instant>,
    answered: Vec<Instant>,
    elapsed: Duration,
}

fn commit_all(client: &Client, id: &str, n: usize, round: usize) -> stardust_sdk::Result<Commits> {
    let (mut sent, mut answered) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut first_seq = 0;
    let started = Instant::now();
    for i in 0..n {
        let preview =
            client.patch(json!({"ops": [{"set": {"id": id, "n": i, "round": round}}]}))?;
        sent.push(Instant::now());
        let seq = preview.confirm()?.seq;
        answered.push(Instant::now());
        if i == 0 {
            first_seq = seq;
        } else if seq != first_seq + i as u64 {
            return Err(stardust_sdk::Error::Protocol(format!(
                "another writer committed seq {seq}"
            )));
        }
    }
    Ok(Commits { first_seq, sent, answered, elapsed: started.elapsed() })
}

fn run(store: &str, clients: usize, n: usize) -> stardust_sdk::Result<()> {
    let core = core_pid(store);
    let options = ConnectOptions { autostart: false, ..Default::default() };
    let client = Client::connect_with(store, "fanout-writer", options)?;
    let id = client
        .patch(json!({"ops": [{"create": {"id": "?x", "type": "probe", "name": "fanout probe"}}]}))?
        .confirm()?
        .resolved
        .remove("?x")
        .unwrap_or_default();
    println!("core before: {}", memory(core));

    let (core_cpu, own_cpu) = (cpu(core), cpu(Some(std::process::id().into())));
    let alone = commit_all(&client, &id, n, 0)?;
    println!(
        "{n} commits, no subscriber: {:.2} s, {:.0} commits/s; cpu: core {:.2} s, this process {:.2} s",
        alone.elapsed.as_secs_f64(),
        n as f64 / alone.elapsed.as_secs_f64(),
        cpu(core) - core_cpu,
        cpu(Some(std::process::id().into())) - own_cpu,
    );

    // Every subscriber sends (its index, seq, when) for each event; `Reread` as seq 0.
    let (tx, rx) = mpsc::channel::<(usize, u64, Instant)>();
    let opened = Instant::now();
    for index in 0..clients {
        let events = client.subscribe_entities()?;
        let tx = tx.clone();
        std::thread::spawn(move || {
            for event in events {
                let at = Instant::now();
                let seq = match event {
                    Ok(Event::Changed { seq, .. }) => seq,
                    Ok(Event::Reread { .. }) => 0,
                    Err(err) => {
                        eprintln!("subscriber {index}: {err}");
                        return;
                    }
                };
                if tx.send((index, seq, at)).is_err() {
                    return;
                }
            }
        });
    }
    drop(tx);
    println!("{clients} subscriptions opened in {:.2} s", opened.elapsed().as_secs_f64());
    println!("core with subscribers: {}", memory(core));

    let (core_cpu, own_cpu) = (cpu(core), cpu(Some(std::process::id().into())));
    let shared = commit_all(&client, &id, n, 1)?;
    println!(
        "{n} commits, {clients} subscribers: {:.2} s, {:.0} commits/s; cpu: core {:.2} s, this \
         process {:.2} s",
        shared.elapsed.as_secs_f64(),
        n as f64 / shared.elapsed.as_secs_f64(),
        cpu(core) - core_cpu,
        cpu(Some(std::process::id().into())) - own_cpu,
    );
    let last = shared.first_seq + n as u64 - 1;

    // Collect until every subscriber has seen the last commit (or 60 s pass).
    let mut events: Vec<Vec<(u64, Instant)>> = vec![Vec::new(); clients];
    let mut done = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while done < clients {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok((index, seq, at)) = rx.recv_timeout(left) else { break };
        events[index].push((seq, at));
        if seq == last {
            done += 1;
        }
    }
    let rereads = events.iter().flatten().filter(|(seq, _)| *seq == 0).count();
    let ordered = events.iter().all(|e| e.windows(2).all(|w| w[0].0 < w[1].0));
    println!(
        "subscribers that reached the last commit: {done} of {clients}; rereads: {rereads}; \
         seqs increasing at every subscriber: {ordered}"
    );
    let mut counts: Vec<usize> = events
        .iter()
        .map(|e| e.iter().filter(|(seq, _)| *seq >= shared.first_seq).count())
        .collect();
    counts.sort();
    println!(
        "events per subscriber for {n} commits (fewer = coalesced): min {} median {} max {}",
        counts[0],
        counts[counts.len() / 2],
        counts[counts.len() - 1]
    );
    let (mut from_send, mut from_answer) = (Vec::new(), Vec::new());
    for (seq, at) in events.iter().flatten() {
        let Some(i) = seq.checked_sub(shared.first_seq).map(|i| i as usize).filter(|i| *i < n)
        else {
            continue;
        };
        from_send.push(at.saturating_duration_since(shared.sent[i]));
        from_answer.push(at.saturating_duration_since(shared.answered[i]));
    }
    common::report("confirm sent -> event", &mut from_send);
    common::report("confirm answered -> event", &mut from_answer);
    println!("core after: {}", memory(core));
    Ok(())
}

/// The pid of the core serving `store`, from its record.
fn core_pid(store: &str) -> Option<u64> {
    let path = std::path::Path::new(store).join(".stardust/run/daemon.json");
    let record: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    record["pid"].as_u64()
}

/// CPU seconds (user and system) process `pid` has used so far.
fn cpu(pid: Option<u64>) -> f64 {
    let Some(stat) = pid.and_then(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
    else {
        return 0.0;
    };
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Linux reports them in USER_HZ, which is 100 on every architecture it runs on.
    (ticks(11) + ticks(12)) / 100.0
}

/// The core's resident and peak resident memory.
fn memory(pid: Option<u64>) -> String {
    let Some(status) = pid.and_then(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok())
    else {
        return "unknown (no core record)".to_owned();
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map_or("?".to_owned(), |v| v.trim().to_owned())
    };
    format!("rss {}, peak {}, threads {}", field("VmRSS:"), field("VmHWM:"), field("Threads:"))
}
