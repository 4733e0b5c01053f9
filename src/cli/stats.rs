//! Latency distributions for reports.

use serde::{Deserialize, Serialize};

/// Mean and p50/p90/p99/p99.9/max of a list of timings (nearest-rank percentiles).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Dist {
    #[serde(default)]
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Dist {
    /// The distribution of `samples` (sorted in place); `None` when empty.
    pub fn of(samples: &mut [f64]) -> Option<Dist> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| {
            let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
            samples[i]
        };
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        Some(Dist {
            mean,
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            p999: at(0.999),
            max: at(1.0),
        })
    }
}

/// Mean and p50/p90/p99/p99.9/max of a list of microsecond timings, rounded to 0.01, as
/// JSON (all null when empty).
pub fn percentiles(samples: &mut [f64]) -> serde_json::Value {
    let r = |x: f64| (x * 100.0).round() / 100.0;
    match Dist::of(samples) {
        None => {
            serde_json::json!({"mean": null, "p50": null, "p90": null, "p99": null, "p999": null, "max": null})
        }
        Some(d) => serde_json::json!({
            "mean": r(d.mean),
            "p50": r(d.p50),
            "p90": r(d.p90),
            "p99": r(d.p99),
            "p999": r(d.p999),
            "max": r(d.max),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::Dist;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=1000).rev().map(f64::from).collect();
        let d = Dist::of(&mut v).expect("non-empty");
        assert_eq!(
            (d.p50, d.p90, d.p99, d.p999, d.max),
            (500.0, 900.0, 990.0, 999.0, 1000.0)
        );
        assert_eq!(d.mean, 500.5);
        assert!(Dist::of(&mut []).is_none());
    }
}
