//! Backup figures (issue 5): `backup::run` of a ~100 MB store against `tar -cf` of the same
//! files in the same run, plus one verify and one restore.
//!
//! A plain bench binary (no criterion): each round times `tar` and a backup back to back, in
//! alternating order, and prints one row. It works on a store made by the `gen_store` example:
//!
//! ```text
//! cargo run --release -p stardust-core --example gen_store -- DATA/b100 --docs 10000 --entities 100000
//! cargo bench -p stardust-core --bench backup -- --store DATA/b100 --out DATA/out [--rounds 5] [--blobs 20]
//! ```
//!
//! The bench adds to the store a backup definition (`bench-backup.dust`) and `--blobs` files
//! of 1 MiB of random bytes under `assets/` (files that are not documents, read from disk),
//! unless they are there already. Archives go to `OUT/stardust`, tar's to `OUT/tar`; both
//! are deleted between rounds, outside the timings.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use stardust_core::backup;
use stardust_core::store::{OpenOptions, Store};

struct Args {
    store: PathBuf,
    out: PathBuf,
    rounds: usize,
    blobs: usize,
}

fn parse_args() -> Result<Args, String> {
    let (mut store, mut out, mut rounds, mut blobs) = (None, None, 5, 20);
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        let number = |text: String| text.parse::<usize>().map_err(|e| format!("{text}: {e}"));
        match arg.as_str() {
            "--store" => store = Some(PathBuf::from(value("--store")?)),
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--rounds" => rounds = number(value("--rounds")?)?,
            "--blobs" => blobs = number(value("--blobs")?)?,
            // `cargo bench` passes --bench.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        store: store.ok_or("give --store DIR (a store made by gen_store)")?,
        out: out.ok_or("give --out DIR (outside the store)")?,
        rounds,
        blobs,
    })
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let (stardust_out, tar_out) = (args.out.join("stardust"), args.out.join("tar"));
    std::fs::create_dir_all(&stardust_out).unwrap();
    std::fs::create_dir_all(&tar_out).unwrap();
    let stardust_out = std::fs::canonicalize(&stardust_out).unwrap();
    prepare(&args, &stardust_out);
    let (files, bytes) = size_of(&args.store);
    println!("store: {files} files, {:.1} MB (without .stardust/)", bytes as f64 / 1e6);

    let started = Instant::now();
    let store = Store::open(&args.store, OpenOptions { watch: false, ..OpenOptions::default() })
        .expect("the store opens");
    println!("open (analysis of every document): {} ms", started.elapsed().as_millis());

    println!(
        "\n| round | tar -cf | tar -cf + fsync | backup::run (fsync'd) | ratio to tar | ratio to tar + fsync |"
    );
    println!("|---|---|---|---|---|---|");
    let mut ratios = Vec::new();
    let mut archive = PathBuf::new();
    for round in 0..args.rounds {
        clear(&stardust_out);
        clear(&tar_out);
        let tar_file = tar_out.join("store.tar");
        let tar = || {
            let started = Instant::now();
            let status = Command::new("tar")
                .arg("-cf")
                .arg(&tar_file)
                .arg("--exclude=./.stardust")
                .arg("-C")
                .arg(&args.store)
                .arg(".")
                .status()
                .expect("tar runs");
            assert!(status.success());
            let plain = started.elapsed();
            std::fs::File::open(&tar_file).unwrap().sync_all().unwrap();
            (plain, started.elapsed())
        };
        let ours = |archive: &mut PathBuf| {
            let started = Instant::now();
            let written =
                backup::run(&store, "backup/bench", &mut |_| {}).expect("the backup runs");
            *archive = written.archive;
            started.elapsed()
        };
        let ((tar_plain, tar_synced), run) = if round % 2 == 0 {
            let t = tar();
            (t, ours(&mut archive))
        } else {
            let r = ours(&mut archive);
            (tar(), r)
        };
        let ratio = run.as_secs_f64() / tar_plain.as_secs_f64();
        let ratio_synced = run.as_secs_f64() / tar_synced.as_secs_f64();
        ratios.push((ratio, ratio_synced));
        println!(
            "| {round} | {} | {} | {} | {ratio:.2} | {ratio_synced:.2} |",
            ms(tar_plain),
            ms(tar_synced),
            ms(run)
        );
    }
    ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((median, _)) = ratios.get(ratios.len() / 2) {
        println!("\nmedian ratio backup::run / tar -cf: {median:.2}");
    }
    let archive_size = std::fs::metadata(&archive).unwrap().len();
    let tar_size = std::fs::metadata(tar_out.join("store.tar")).unwrap().len();
    println!("archive {:.1} MB, tar {:.1} MB", archive_size as f64 / 1e6, tar_size as f64 / 1e6);

    let started = Instant::now();
    backup::verify(&archive, &mut |_| {}).expect("the archive verifies");
    println!("verify: {}", ms(started.elapsed()));
    let restored = args.out.join("restored");
    let _ = std::fs::remove_dir_all(&restored);
    let started = Instant::now();
    backup::restore(&archive, &restored, false, &mut |_| {}).expect("the archive restores");
    println!("restore (verify included): {}", ms(started.elapsed()));
    let _ = std::fs::remove_dir_all(&restored);
}

/// Add the backup definition and the blobs to the store if they are not there.
fn prepare(args: &Args, target: &Path) {
    let definition = args.store.join("bench-backup.dust");
    if !definition.exists() {
        let text = format!(
            "id     backup/bench\ntype   backup\ntarget '{}'\nkeep   1000\n",
            target.display()
        );
        std::fs::write(&definition, text).unwrap();
    }
    let assets = args.store.join("assets");
    std::fs::create_dir_all(&assets).unwrap();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..args.blobs {
        let path = assets.join(format!("blob-{i:03}.bin"));
        if path.exists() {
            continue;
        }
        let mut bytes = Vec::with_capacity(1 << 20);
        while bytes.len() < 1 << 20 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            bytes.extend_from_slice(&seed.to_le_bytes());
        }
        std::fs::write(path, bytes).unwrap();
    }
}

fn size_of(root: &Path) -> (usize, u64) {
    let mut files = 0;
    let mut bytes = 0;
    for entry in
        walkdir::WalkDir::new(root).into_iter().filter_entry(|e| e.file_name() != ".stardust")
    {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            files += 1;
            bytes += entry.metadata().unwrap().len();
        }
    }
    (files, bytes)
}

fn clear(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}
