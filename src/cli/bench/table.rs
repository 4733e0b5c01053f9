//! Rendering benchmark rows as markdown tables.

use std::fmt::Write;

use super::batch::BatchRow;
use super::workload::Row;

fn us(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The workload table: one line per row, figures empty where a row has none; with a
/// machine noise column when some row has a noise probe.
pub fn workloads(rows: &[Row]) -> String {
    let noise = rows.iter().any(|r| r.noise_us.is_some());
    let mut s = String::new();
    s.push_str(
        "| workload | tokens | compile ms (tables + automaton) | to 10th token ms | artifact KiB \
         | load ms | peak RSS MiB \
         | mask µs p50 | p90 | p99 | p99.9 | max | least of replays p99.9 / max ",
    );
    if noise {
        s.push_str("| machine noise at mask p50, µs p99.9 / max ");
    }
    s.push_str("| commit µs p50 | p99.9 | stack reads mean / max | status |\n");
    s.push_str("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    if noise {
        s.push_str("--:|");
    }
    s.push_str("--:|--:|--:|---|\n");
    for r in rows {
        let (m, c) = match (r.mask_us, r.commit_us) {
            (Some(m), Some(c)) => (m, c),
            _ => {
                let _ = writeln!(
                    s,
                    "| {} | | | | | | | | | | | | |{} | | | {} |",
                    r.name,
                    if noise { " |" } else { "" },
                    r.status.replace('|', "\\|")
                );
                continue;
            }
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} ({} + {}) | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} |{} {} | {} | {:.1} / {} | {} |",
            r.name,
            r.tokens,
            ms(r.tables_ms + r.automaton_ms),
            ms(r.tables_ms),
            ms(r.automaton_ms),
            ms(r.t10_ms),
            r.artifact_bytes as f64 / 1024.0,
            ms(r.load_ms),
            r.peak_rss_mib.map(|x| format!("{x:.0}")).unwrap_or_default(),
            us(m.p50),
            us(m.p90),
            us(m.p99),
            us(m.p999),
            us(m.max),
            r.mask_least_us
                .map(|l| format!("{} / {}", us(l.p999), us(l.max)))
                .unwrap_or_default(),
            match (noise, r.noise_us) {
                (false, _) => String::new(),
                (true, Some(n)) => format!(" {} / {} |", us(n.p999), us(n.max)),
                (true, None) => " |".into(),
            },
            us(c.p50),
            us(c.p999),
            r.reads_mean,
            r.reads_max,
            r.status.replace('|', "\\|"),
        );
    }
    s
}

/// The batch table.
pub fn batches(rows: &[BatchRow]) -> String {
    let mut s = String::new();
    s.push_str(
        "| workload | matchers | threads | fill_masks µs p50 | p99 | max | µs per sequence (p50) \
         | one by one, µs per sequence (p50) | one reused row, µs per sequence (p50) |\n",
    );
    s.push_str("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} |",
            r.workload,
            r.batch,
            r.threads,
            us(r.total_us.p50),
            us(r.total_us.p99),
            us(r.total_us.max),
            r.per_sequence_p50_us,
            r.one_by_one_p50_us,
            r.single_row_p50_us
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::super::stats::Dist;
    use super::super::workload::Row;
    use super::workloads;

    /// Header, rule and every row have the same number of cells, with the noise column
    /// or without it, and a status's pipes are escaped.
    #[test]
    fn rows_keep_the_column_count_and_escape_pipes() {
        let cells = |l: &str| l.replace("\\|", "").matches('|').count();
        let mut full = Row::empty("y", "ok".into());
        full.mask_us = Dist::of(&mut [1.0, 2.0, 3.0]);
        full.commit_us = Dist::of(&mut [0.5, 0.7]);
        for noise in [false, true] {
            full.noise_us = noise.then(|| Dist::of(&mut [4.0, 40.0]).unwrap());
            let t = workloads(&[Row::empty("x", "error: a | b".into()), full.clone()]);
            let lines: Vec<&str> = t.lines().collect();
            assert_eq!(lines.len(), 4);
            assert_eq!(lines[0].contains("machine noise"), noise);
            for l in &lines[1..] {
                assert_eq!(cells(lines[0]), cells(l), "{l}");
            }
            assert!(lines[2].contains("a \\| b"));
            assert_eq!(lines[3].contains("| 40.0 / 40.0 |"), noise, "{}", lines[3]);
        }
    }
}
