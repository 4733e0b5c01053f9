//! The machine's own timing noise, for reading a replay's tail: a fixed computation,
//! calibrated to last about as long as a median token, timed as many times as tokens
//! were. Its p99.9 and max are what interrupts, preemption and the hypervisor add to
//! *any* work of that length on this machine, so a token time below them cannot be told
//! from noise. `maskbench --noise` and `bench --noise` report it. Depends on nothing else
//! in the crate.

use std::hint::black_box;
use std::time::Instant;

/// Most passes of the workload (a median token of milliseconds is not calibrated further).
const MAX_ROUNDS: u32 = 1 << 14;
/// Most samples.
const MAX_SAMPLES: usize = 2_000_000;
/// Samples stop at about this many seconds of workload (slow engines' tokens).
const MAX_SECONDS: f64 = 60.0;

/// The machine's noise at `p50_us`: the workload calibrated to that length, timed as many
/// times as `n` calls were (capped so that a huge run does not double its length, and at
/// about a minute whatever the engine's speed). Returns its passes and the times, µs.
pub fn probe(p50_us: f64, n: usize) -> (u32, Vec<f64>) {
    let w = Workload::calibrated(p50_us, MAX_ROUNDS);
    let budget = (MAX_SECONDS * 1e6 / p50_us.max(0.01)) as usize;
    (w.rounds(), w.sample(n.min(MAX_SAMPLES).min(budget)))
}

/// Words in each of the workload's two buffers (8 KiB each: about a mask's class and token
/// words, in cache).
const WORDS: usize = 1024;

/// A fixed computation: `rounds` passes of word-wise and/or over two 8 KiB buffers, the
/// operations a mask walk does, with no allocation and no branch on the data.
#[derive(Debug, Clone)]
pub struct Workload {
    rounds: u32,
    a: Vec<u64>,
    b: Vec<u64>,
}

impl Workload {
    /// A workload of `rounds` passes (at least 1).
    pub fn new(rounds: u32) -> Self {
        // Any fixed, non-trivial pattern: the values only keep the work from folding away.
        let a = (0..WORDS as u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let b = (0..WORDS as u64).map(|i| !i.rotate_left(17)).collect();
        Self {
            rounds: rounds.max(1),
            a,
            b,
        }
    }

    /// Passes per run.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Runs the computation once; returns its checksum (the same on every run).
    #[inline(never)]
    pub fn run(&self) -> u64 {
        let mut acc = 0u64;
        for r in 0..self.rounds as u64 {
            let a = black_box(&self.a);
            let b = black_box(&self.b);
            let mut x = r;
            for (&p, &q) in a.iter().zip(b) {
                x ^= (p & q) | (p.rotate_left(1) & !q);
            }
            acc = acc.wrapping_add(x);
        }
        acc
    }

    /// Times `n` runs, in µs each.
    pub fn sample(&self, n: usize) -> Vec<f64> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let t0 = Instant::now();
            black_box(self.run());
            out.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        out
    }

    /// The workload with the fewest passes whose median run takes at least `target_us`
    /// (passes doubled then bisected, each measured as the median of 1,001 runs, after
    /// 20 ms of warm-up), and at most `max_rounds` passes.
    pub fn calibrated(target_us: f64, max_rounds: u32) -> Self {
        let median = |w: &Workload| {
            let mut s = w.sample(1001);
            s.sort_by(f64::total_cmp);
            s[500]
        };
        // A few milliseconds of the work first: the first runs after the replay were seen
        // to take almost twice as long as the same runs a moment later.
        let warm = Instant::now();
        let one = Workload::new(1);
        while warm.elapsed().as_millis() < 20 {
            black_box(one.run());
        }
        let mut hi = 1u32;
        while hi < max_rounds && median(&Workload::new(hi)) < target_us {
            hi = (hi * 2).min(max_rounds);
        }
        let mut lo = hi / 2;
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if median(&Workload::new(mid)) < target_us {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Workload::new(hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checksum is the same on every run and depends on the passes: the work is not
    /// folded away or cached between runs.
    #[test]
    fn runs_compute_the_same_fixed_checksum() {
        let w = Workload::new(3);
        let c = w.run();
        assert_eq!(c, w.run());
        // An independent computation of the same checksum.
        let mut expect = 0u64;
        for r in 0..3u64 {
            let mut x = r;
            for i in 0..WORDS as u64 {
                let p = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let q = !i.rotate_left(17);
                x ^= (p & q) | (p.rotate_left(1) & !q);
            }
            expect = expect.wrapping_add(x);
        }
        assert_eq!(c, expect);
        assert_ne!(c, Workload::new(4).run());
    }

    #[test]
    fn sampling_times_every_run() {
        let s = Workload::new(1).sample(50);
        assert_eq!(s.len(), 50);
        assert!(s.iter().all(|&t| t.is_finite() && t >= 0.0));
    }

    /// Calibration stays within its bounds (no assertion on time: machines here are noisy).
    #[test]
    fn calibration_is_bounded() {
        assert_eq!(Workload::calibrated(1e9, 8).rounds(), 8);
        assert_eq!(Workload::calibrated(0.0, 8).rounds(), 1);
        assert_eq!(Workload::new(0).rounds(), 1);
    }
}
