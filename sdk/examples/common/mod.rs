//! What the SDK's bench examples share: printing latency percentiles.

use std::time::Duration;

/// Print `what` with the count, p50, p90, p99 and max of `samples` in milliseconds.
pub fn report(what: &str, samples: &mut [Duration]) {
    if samples.is_empty() {
        println!("{what}: no samples");
        return;
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "{what}: n={} p50={:.3}ms p90={:.3}ms p99={:.3}ms max={:.3}ms",
        samples.len(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        at(1.0).as_secs_f64() * 1e3,
    );
}
