//! The profile of a session's runs: a table of fusion groups sorted by time, and a Chrome trace export.
//!
//! [`ProfileReport`] is a snapshot of a session's [`Profiler`]: one [`ProfileRow`] per
//! fusion group that ran, and every timed execution as one complete (`"ph": "X"`) event of
//! the Chrome Trace Event Format, which Perfetto (ui.perfetto.dev) and `chrome://tracing`
//! open.

use super::context::{Profiler, TraceEvent};
use crate::error::Error;
use std::fmt;
use std::path::Path;
use std::time::Duration;

/// The accumulated time of one fusion group of one graph.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileRow {
    pub graph: &'static str,
    pub group: usize,
    /// The ops of the group and its output shape, as the macro described them.
    pub label: &'static str,
    pub calls: u64,
    pub total: Duration,
    pub mean: Duration,
    /// This group's part of the time of all groups, between 0 and 1.
    pub share: f64,
}

/// Per-group wall times of a session, sorted by total time (the largest first).
#[derive(Debug, Clone, Default)]
pub struct ProfileReport {
    rows: Vec<ProfileRow>,
    total: Duration,
    events: Vec<TraceEvent>,
}

impl ProfileReport {
    /// The report of everything `profiler` recorded.
    pub fn from_profiler(profiler: &Profiler) -> ProfileReport {
        let total_ns: u128 = profiler.groups.iter().map(|g| g.total_ns).sum();
        let mut rows: Vec<ProfileRow> = profiler
            .groups
            .iter()
            .map(|g| ProfileRow {
                graph: g.graph,
                group: g.group,
                label: g.label,
                calls: g.calls,
                total: nanos(g.total_ns),
                mean: nanos(g.total_ns.checked_div(u128::from(g.calls)).unwrap_or(0)),
                share: if total_ns == 0 {
                    0.0
                } else {
                    g.total_ns as f64 / total_ns as f64
                },
            })
            .collect();
        rows.sort_by(|a, b| {
            b.total
                .cmp(&a.total)
                .then_with(|| a.graph.cmp(b.graph))
                .then_with(|| a.group.cmp(&b.group))
        });
        ProfileReport {
            rows,
            total: nanos(total_ns),
            events: profiler.events.clone(),
        }
    }

    /// One row per fusion group that ran, the slowest first.
    pub fn rows(&self) -> &[ProfileRow] {
        &self.rows
    }

    /// The time of all groups together.
    pub fn total(&self) -> Duration {
        self.total
    }

    /// Whether nothing was recorded (profiling off, or nothing ran yet).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Every timed execution of a group, in the order they were recorded.
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// The trace as Chrome Trace Event Format JSON: one complete (`"X"`) event per timed
    /// execution, in microseconds from the first one. Executions that overlap (groups run
    /// concurrently) are put on separate rows (`tid`) so that every row nests properly.
    pub fn to_chrome_trace(&self) -> String {
        let lanes = assign_lanes(&self.events);
        let mut trace =
            Vec::with_capacity(self.events.len() + 1 + lanes.iter().max().map_or(0, |m| m + 1));
        trace.push(serde_json::json!({
            "name": "process_name", "ph": "M", "pid": 1, "tid": 0,
            "args": { "name": "grafo session" },
        }));
        let mut named = Vec::new();
        for &lane in &lanes {
            if !named.contains(&lane) {
                named.push(lane);
            }
        }
        named.sort_unstable();
        for lane in named {
            trace.push(serde_json::json!({
                "name": "thread_name", "ph": "M", "pid": 1, "tid": lane,
                "args": { "name": format!("groups {lane}") },
            }));
        }
        for (event, lane) in self.events.iter().zip(&lanes) {
            let label = self.label_of(event);
            trace.push(serde_json::json!({
                "name": format!("g{} {}", event.group, label),
                "cat": event.graph,
                "ph": "X",
                "ts": event.start_ns as f64 / 1000.0,
                "dur": event.duration_ns as f64 / 1000.0,
                "pid": 1,
                "tid": lane,
                "args": { "graph": event.graph, "group": event.group, "label": label },
            }));
        }
        serde_json::json!({ "traceEvents": trace, "displayTimeUnit": "ns" }).to_string()
    }

    /// Writes [`ProfileReport::to_chrome_trace`] to `path`.
    pub fn write_chrome_trace(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        std::fs::write(path, self.to_chrome_trace())
            .map_err(|e| Error::Io(format!("{}: {e}", path.display())))
    }

    fn label_of(&self, event: &TraceEvent) -> &'static str {
        self.rows
            .iter()
            .find(|r| {
                r.group == event.group
                    && (std::ptr::eq(r.graph, event.graph) || r.graph == event.graph)
            })
            .map_or("", |r| r.label)
    }
}

fn nanos(ns: u128) -> Duration {
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// Gives each event the lowest row on which it starts after the previous event of that row ended.
fn assign_lanes(events: &[TraceEvent]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| (events[i].start_ns, i));
    let mut lane_end: Vec<u128> = Vec::new();
    let mut lanes = vec![0; events.len()];
    for i in order {
        let e = &events[i];
        let end = e.start_ns + e.duration_ns;
        match lane_end
            .iter()
            .position(|&busy_until| busy_until <= e.start_ns)
        {
            Some(lane) => {
                lane_end[lane] = end;
                lanes[i] = lane;
            }
            None => {
                lanes[i] = lane_end.len();
                lane_end.push(end);
            }
        }
    }
    lanes
}

/// Formats a duration with a unit that keeps three to four significant digits.
fn duration_text(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.2} µs", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}

impl fmt::Display for ProfileReport {
    /// An aligned table: graph, group, ops and shape, calls, total, mean, share.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rows.is_empty() {
            return writeln!(
                f,
                "no profile recorded (make the session with `profile: true`)"
            );
        }
        let header = [
            "graph",
            "group",
            "ops and shape",
            "calls",
            "total",
            "mean",
            "share",
        ];
        let cells: Vec<[String; 7]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    r.graph.to_string(),
                    format!("g{}", r.group),
                    r.label.to_string(),
                    r.calls.to_string(),
                    duration_text(r.total),
                    duration_text(r.mean),
                    format!("{:.1}%", r.share * 100.0),
                ]
            })
            .collect();
        let mut widths = header.map(|h| h.chars().count());
        for row in &cells {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        // Text columns are left-aligned, numbers right-aligned.
        let left = [true, true, true, false, false, false, false];
        let line = |f: &mut fmt::Formatter<'_>, row: &[&str]| -> fmt::Result {
            let mut text = String::new();
            for (i, cell) in row.iter().enumerate() {
                let pad = " ".repeat(widths[i].saturating_sub(cell.chars().count()));
                if i > 0 {
                    text.push_str("  ");
                }
                if left[i] {
                    text.push_str(cell);
                    text.push_str(&pad);
                } else {
                    text.push_str(&pad);
                    text.push_str(cell);
                }
            }
            writeln!(f, "{}", text.trim_end())
        };
        line(f, &header)?;
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        line(f, &rule.iter().map(String::as_str).collect::<Vec<_>>())?;
        for row in &cells {
            line(f, &row.iter().map(String::as_str).collect::<Vec<_>>())?;
        }
        let calls: u64 = self.rows.iter().map(|r| r.calls).sum();
        writeln!(
            f,
            "{} groups, {calls} executions, {} in all",
            self.rows.len(),
            duration_text(self.total)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn profiler() -> Profiler {
        let mut p = Profiler::default();
        let start = Instant::now();
        p.record("g", 0, "relu [4]", start);
        p.record("g", 1, "matmul [4, \"4\"]", start);
        p.record("g", 0, "relu [4]", Instant::now());
        p
    }

    #[test]
    fn chrome_trace_is_json_with_one_complete_event_per_execution() {
        let report = ProfileReport::from_profiler(&profiler());
        let trace: serde_json::Value =
            serde_json::from_str(&report.to_chrome_trace()).expect("valid JSON");
        let events = trace["traceEvents"]
            .as_array()
            .expect("traceEvents is an array");
        let complete: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(complete.len(), 3);
        for e in &complete {
            assert!(e["ts"].is_f64() && e["dur"].is_f64(), "{e}");
            assert_eq!(e["pid"], 1);
            assert_eq!(e["cat"], "g");
            assert!(
                e["name"].as_str().is_some_and(|n| n.starts_with('g')),
                "{e}"
            );
        }
        assert_eq!(complete[1]["args"]["label"], "matmul [4, \"4\"]");
        assert!(events
            .iter()
            .any(|e| e["ph"] == "M" && e["name"] == "process_name"));
    }

    #[test]
    fn overlapping_executions_get_separate_rows() {
        let event = |start_ns, duration_ns| TraceEvent {
            graph: "g",
            group: 0,
            start_ns,
            duration_ns,
        };
        let events = [event(0, 10), event(5, 10), event(10, 2), event(16, 1)];
        assert_eq!(assign_lanes(&events), [0, 1, 0, 0]);
    }

    #[test]
    fn empty_report_says_how_to_profile() {
        let report = ProfileReport::default();
        assert!(report.is_empty());
        assert!(report.to_string().contains("profile: true"));
        let trace: serde_json::Value =
            serde_json::from_str(&report.to_chrome_trace()).expect("valid JSON");
        assert_eq!(trace["traceEvents"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(duration_text(Duration::from_nanos(999)), "999 ns");
        assert_eq!(duration_text(Duration::from_micros(12)), "12.00 µs");
        assert_eq!(duration_text(Duration::from_millis(3)), "3.000 ms");
        assert_eq!(duration_text(Duration::from_secs(2)), "2.000 s");
    }
}
