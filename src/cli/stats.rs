//! Latency percentiles for reports.

/// p50/p90/p99/p99.9/max of a list of microsecond timings.
pub fn percentiles(samples: &mut [f64]) -> serde_json::Value {
    if samples.is_empty() {
        return serde_json::json!({"p50": null, "p90": null, "p99": null, "p999": null, "max": null});
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| {
        let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
        (samples[i] * 100.0).round() / 100.0
    };
    serde_json::json!({
        "p50": at(0.5),
        "p90": at(0.9),
        "p99": at(0.99),
        "p999": at(0.999),
        "max": at(1.0),
    })
}
