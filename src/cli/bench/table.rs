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

/// The workload table: one line per row, figures empty where a row has none.
pub fn workloads(rows: &[Row]) -> String {
    let mut s = String::new();
    s.push_str(
        "| workload | tokens | compile ms (tables + automaton) | to 10th token ms | artifact KiB \
         | load ms | peak RSS MiB \
         | mask µs p50 | p90 | p99 | p99.9 | max | least of replays p99.9 / max \
         | commit µs p50 | p99.9 | stack reads mean / max | status |\n",
    );
    s.push_str("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n");
    for r in rows {
        let (m, c) = match (r.mask_us, r.commit_us) {
            (Some(m), Some(c)) => (m, c),
            _ => {
                let _ = writeln!(
                    s,
                    "| {} | | | | | | | | | | | | | | | | {} |",
                    r.name,
                    r.status.replace('|', "\\|")
                );
                continue;
            }
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} ({} + {}) | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} / {} | {} |",
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
    use super::super::workload::Row;
    use super::workloads;

    #[test]
    fn rows_without_figures_keep_the_column_count_and_escape_pipes() {
        let t = workloads(&[Row::empty("x", "error: a | b".into())]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        // Header, rule and row have the same number of cells.
        let cells = |l: &str| l.replace("\\|", "").matches('|').count();
        assert_eq!(cells(lines[0]), cells(lines[1]));
        assert_eq!(cells(lines[0]), cells(lines[2]));
        assert!(lines[2].contains("a \\| b"));
    }
}
