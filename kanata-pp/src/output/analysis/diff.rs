//! `kanata-pp diff OLD NEW`: the statistics of two traces side by side, the hot spots that
//! appeared, vanished or moved, and the gates of `--fail-if` (`docs/analysis.md`, "Diff").
//!
//! # Metrics
//!
//! Every number of `--stats` has a name ([`metrics`]):
//!
//! - the totals: `instructions`, `retired`, `flushed`, `open_instructions`, `max_in_flight`,
//!   `cycles`, `flush_rate`, `ipc`;
//! - per thread: `thread.T.instructions`, `thread.T.retired`, `thread.T.flushed`,
//!   `thread.T.ipc`;
//! - per stage: `stage.NAME.segments`, `.mean`, `.median`, `.p99`, `.max` for the lowest lane
//!   that has a stage NAME, `stage.NAME@LANE.…` for the other lanes;
//! - Konata's dialog and the classified counts: `konata.FIELD`, `classified.FIELD`, with the
//!   field names of Konata's `StatsValues` (`konata.mpkiBrPred`);
//! - the top-down breakdown, as shares of the slots (0 to 1): `topdown.retiring`,
//!   `topdown.squashed`, `topdown.recovery_bubbles`, `topdown.backend_bound`,
//!   `topdown.frontend_bound`.
//!
//! # Gates
//!
//! A gate is `METRIC OP CHANGE`: `OP` is `<`, `<=`, `>` or `>=`; `CHANGE` a number with an
//! optional sign, and a `%` for a change relative to OLD's value (`ipc < -2%`: IPC fell by
//! more than 2 %), else the change in the metric's own unit (`stage.Is.p99 > +5`: the 99th
//! percentile grew by more than 5 cycles). The gate trips when NEW − OLD (or its ratio to
//! |OLD|, in %) compares true. A relative change from 0 is 0 % to 0 and ±infinity to any
//! other value. A metric missing from one trace, or not a number in one (Konata's NaN),
//! trips the gate; a metric missing from both is a usage error.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use serde::Serialize;

use super::{printable, CycleSpot, FlushSpot};
use crate::output::stats::TraceStats;

/// Every metric of `stats` by name, in a stable order (see the [module](self) docs).
pub fn metrics(stats: &TraceStats) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = vec![
        ("instructions".into(), stats.instructions as f64),
        ("retired".into(), stats.retired as f64),
        ("flushed".into(), stats.flushed as f64),
        ("open_instructions".into(), stats.open_instructions as f64),
        ("max_in_flight".into(), stats.max_in_flight as f64),
        ("cycles".into(), stats.cycles as f64),
        ("flush_rate".into(), stats.flush_rate),
        ("ipc".into(), stats.ipc),
    ];
    for (thread, t) in &stats.threads {
        out.push((
            format!("thread.{thread}.instructions"),
            t.instructions as f64,
        ));
        out.push((format!("thread.{thread}.retired"), t.retired as f64));
        out.push((format!("thread.{thread}.flushed"), t.flushed as f64));
        out.push((format!("thread.{thread}.ipc"), t.ipc));
    }
    let mut lowest: BTreeMap<&str, u64> = BTreeMap::new();
    for (lane, name) in stats.stages.keys() {
        let entry = lowest.entry(name.as_str()).or_insert(*lane);
        *entry = (*entry).min(*lane);
    }
    for ((lane, name), s) in &stats.stages {
        let stage = if lowest.get(name.as_str()) == Some(lane) {
            format!("stage.{name}")
        } else {
            format!("stage.{name}@{lane}")
        };
        out.push((format!("{stage}.segments"), s.segments as f64));
        out.push((format!("{stage}.mean"), s.mean));
        out.push((format!("{stage}.median"), s.median));
        out.push((format!("{stage}.p99"), s.p99 as f64));
        out.push((format!("{stage}.max"), s.max as f64));
    }
    if let Some(analysis) = &stats.analysis {
        for (prefix, values) in [
            ("konata", &analysis.konata),
            ("classified", &analysis.classified),
        ] {
            for (field, value) in values.fields() {
                out.push((format!("{prefix}.{field}"), value));
            }
        }
        if let Some(t) = &analysis.topdown {
            let share = |n: u64| {
                if t.slots > 0 {
                    n as f64 / t.slots as f64
                } else {
                    0.0
                }
            };
            for (name, n) in [
                ("retiring", t.retiring),
                ("squashed", t.squashed),
                ("recovery_bubbles", t.recovery_bubbles),
                ("backend_bound", t.backend_bound),
                ("frontend_bound", t.frontend_bound),
            ] {
                out.push((format!("topdown.{name}"), share(n)));
            }
        }
    }
    out
}

/// A comparison of a gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Less,
    /// `<=`
    LessEq,
    /// `>`
    Greater,
    /// `>=`
    GreaterEq,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Less => a < b,
            Op::LessEq => a <= b,
            Op::Greater => a > b,
            Op::GreaterEq => a >= b,
        }
    }
}

/// One `--fail-if` gate (see the [module](self) docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Gate {
    /// The gate as written.
    pub text: String,
    /// The metric's name.
    pub metric: String,
    /// The comparison.
    pub op: Op,
    /// The change it compares with (in % when `relative`).
    pub threshold: f64,
    /// The change is relative to OLD's value, in percent.
    pub relative: bool,
}

impl FromStr for Gate {
    type Err = String;

    fn from_str(text: &str) -> Result<Gate, String> {
        let bad = |why: &str| {
            format!(
                "`{text}`: {why}; a gate is METRIC OP CHANGE, OP one of < <= > >=, CHANGE a \
                 number with an optional sign and %: `ipc < -2%`, `stage.Is.p99 > +5`"
            )
        };
        let at = text.find(['<', '>']).ok_or_else(|| bad("no comparison"))?;
        let metric = text[..at].trim();
        if metric.is_empty() || metric.contains(char::is_whitespace) {
            return Err(bad("the metric is one word"));
        }
        let rest = &text[at..];
        let (op, rest) = if let Some(rest) = rest.strip_prefix("<=") {
            (Op::LessEq, rest)
        } else if let Some(rest) = rest.strip_prefix(">=") {
            (Op::GreaterEq, rest)
        } else if let Some(rest) = rest.strip_prefix('<') {
            (Op::Less, rest)
        } else {
            (Op::Greater, &rest[1..])
        };
        let number = rest.trim();
        let (number, relative) = match number.strip_suffix('%') {
            Some(n) => (n.trim_end(), true),
            None => (number, false),
        };
        let digits = number.strip_prefix(['+', '-']).unwrap_or(number);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(bad("the change is not a number"));
        }
        let threshold: f64 = number
            .parse()
            .map_err(|_| bad("the change is not a number"))?;
        Ok(Gate {
            text: text.trim().to_owned(),
            metric: metric.to_owned(),
            op,
            threshold,
            relative,
        })
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// One metric of both traces.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MetricDiff {
    /// The metric's name.
    pub name: String,
    /// Its value in OLD (null when OLD does not have it, or it is not a number).
    pub old: Option<f64>,
    /// Its value in NEW.
    pub new: Option<f64>,
    /// `new − old`.
    pub change: Option<f64>,
    /// `(new − old) / |old|` in percent (null without both values, or from 0 to another
    /// value).
    pub relative: Option<f64>,
}

/// What a gate found.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct GateResult {
    /// The gate as written.
    pub gate: String,
    /// Whether it tripped.
    pub tripped: bool,
    /// Why, in words: the values and the change.
    pub reason: String,
}

/// A hot spot that appeared in NEW's top list, vanished from it, or moved in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SpotChange {
    /// `"appeared"`, `"vanished"` or `"moved"`.
    pub change: &'static str,
    /// The address, or null.
    pub pc: Option<String>,
    /// The label.
    pub label: String,
    /// The 1-based rank in OLD's list (null: not in it).
    pub old_rank: Option<usize>,
    /// The rank in NEW's list.
    pub new_rank: Option<usize>,
    /// The value in OLD's list (flushes, or cycles).
    pub old: Option<u64>,
    /// The value in NEW's list.
    pub new: Option<u64>,
}

/// The changes of the three hot-spot lists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct HotspotDiff {
    /// Of `flushes` (value: flushes caused).
    pub flushes: Vec<SpotChange>,
    /// Of `stalls` (value: cycles).
    pub stalls: Vec<SpotChange>,
    /// Of `latency` (value: cycles).
    pub latency: Vec<SpotChange>,
}

/// Two traces compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Diff {
    /// `"diff"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// OLD as given.
    pub old: String,
    /// NEW as given.
    pub new: String,
    /// Every metric of either trace, in the order of [`metrics`] (OLD's first).
    pub metrics: Vec<MetricDiff>,
    /// The hot spots.
    pub hotspots: HotspotDiff,
    /// The gates, in the order given.
    pub gates: Vec<GateResult>,
    /// Whether a gate tripped.
    pub failed: bool,
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// The relative change from `old` to `new` in percent.
fn relative(old: f64, new: f64) -> f64 {
    if old == 0.0 {
        if new == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(new)
        }
    } else {
        (new - old) / old.abs() * 100.0
    }
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v}")
    } else {
        format!("{v:.4}")
    }
}

/// A change with its sign.
fn signed(v: f64) -> String {
    let text = number(v);
    if v > 0.0 {
        format!("+{text}")
    } else {
        text
    }
}

/// Compares the statistics of OLD and NEW and evaluates `gates`.
///
/// # Errors
/// A gate that names a metric neither trace has (most likely a typo), with the message.
pub fn diff(
    old_name: &str,
    old: &TraceStats,
    new_name: &str,
    new: &TraceStats,
    gates: &[Gate],
) -> Result<Diff, String> {
    let old_metrics = metrics(old);
    let new_metrics = metrics(new);
    let old_map: BTreeMap<&str, f64> = old_metrics.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let new_map: BTreeMap<&str, f64> = new_metrics.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let mut names: Vec<&str> = old_metrics.iter().map(|(k, _)| k.as_str()).collect();
    names.extend(
        new_metrics
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !old_map.contains_key(k)),
    );
    let metrics: Vec<MetricDiff> = names
        .iter()
        .map(|name| {
            let o = old_map.get(name).copied().and_then(finite);
            let n = new_map.get(name).copied().and_then(finite);
            let (change, rel) = match (o, n) {
                (Some(o), Some(n)) => (Some(n - o), finite(relative(o, n))),
                _ => (None, None),
            };
            MetricDiff {
                name: (*name).to_owned(),
                old: o,
                new: n,
                change,
                relative: rel,
            }
        })
        .collect();

    let mut results = Vec::new();
    for gate in gates {
        let (o, n) = (
            old_map.get(gate.metric.as_str()),
            new_map.get(gate.metric.as_str()),
        );
        if o.is_none() && n.is_none() {
            let near: Vec<&str> = names
                .iter()
                .copied()
                .filter(|k| k.contains(gate.metric.as_str()) || gate.metric.contains(*k))
                .take(5)
                .collect();
            return Err(format!(
                "--fail-if `{}`: neither trace has a metric `{}`{}",
                gate.text,
                gate.metric,
                if near.is_empty() {
                    String::from(" (docs/analysis.md lists the metrics)")
                } else {
                    format!(" (did you mean {}?)", near.join(", "))
                }
            ));
        }
        let result = match (o.copied(), n.copied()) {
            (None, _) => (true, format!("{} is not in {old_name}", gate.metric)),
            (_, None) => (true, format!("{} is not in {new_name}", gate.metric)),
            (Some(o), Some(n)) if o.is_nan() && n.is_nan() => {
                (false, format!("{} is NaN in both", gate.metric))
            }
            (Some(o), Some(n)) if !o.is_finite() || !n.is_finite() => (
                true,
                format!(
                    "{} is {} in {old_name} and {} in {new_name}",
                    gate.metric,
                    super::konata::js_number(o),
                    super::konata::js_number(n)
                ),
            ),
            (Some(o), Some(n)) => {
                let change = if gate.relative { relative(o, n) } else { n - o };
                let tripped = gate.op.holds(change, gate.threshold);
                let shown = if gate.relative {
                    format!("{change:+.2} %")
                } else {
                    signed(change)
                };
                (
                    tripped,
                    format!("{} {} -> {} ({shown})", gate.metric, number(o), number(n)),
                )
            }
        };
        results.push(GateResult {
            gate: gate.text.clone(),
            tripped: result.0,
            reason: result.1,
        });
    }

    let (old_spots, new_spots) = (
        old.analysis.as_ref().map(|a| &a.hotspots),
        new.analysis.as_ref().map(|a| &a.hotspots),
    );
    let hotspots = match (old_spots, new_spots) {
        (Some(o), Some(n)) => HotspotDiff {
            flushes: spot_changes(&flush_values(&o.flushes), &flush_values(&n.flushes)),
            stalls: spot_changes(&cycle_values(&o.stalls), &cycle_values(&n.stalls)),
            latency: spot_changes(&cycle_values(&o.latency), &cycle_values(&n.latency)),
        },
        _ => HotspotDiff::default(),
    };
    let failed = results.iter().any(|r| r.tripped);
    Ok(Diff {
        kind: "diff",
        old: old_name.to_owned(),
        new: new_name.to_owned(),
        metrics,
        hotspots,
        gates: results,
        failed,
    })
}

/// (pc, label, value) of a list.
type Spot = (Option<String>, String, u64);

fn flush_values(spots: &[FlushSpot]) -> Vec<Spot> {
    spots
        .iter()
        .map(|s| (s.pc.clone(), s.label.clone(), s.flushes))
        .collect()
}

fn cycle_values(spots: &[CycleSpot]) -> Vec<Spot> {
    spots
        .iter()
        .map(|s| (s.pc.clone(), s.label.clone(), s.cycles))
        .collect()
}

/// What changed between two ranked lists: NEW's entries in order (appeared or moved), then
/// OLD's that vanished. An entry is the same when its address is (its label without one).
fn spot_changes(old: &[Spot], new: &[Spot]) -> Vec<SpotChange> {
    let key = |s: &Spot| match &s.0 {
        Some(pc) => pc.clone(),
        None => format!("label:{}", s.1),
    };
    let old_at: BTreeMap<String, usize> =
        old.iter().enumerate().map(|(i, s)| (key(s), i)).collect();
    let new_at: BTreeMap<String, usize> =
        new.iter().enumerate().map(|(i, s)| (key(s), i)).collect();
    let mut out = Vec::new();
    for (i, s) in new.iter().enumerate() {
        match old_at.get(&key(s)) {
            None => out.push(SpotChange {
                change: "appeared",
                pc: s.0.clone(),
                label: s.1.clone(),
                old_rank: None,
                new_rank: Some(i + 1),
                old: None,
                new: Some(s.2),
            }),
            Some(&j) if j != i || old[j].2 != s.2 => out.push(SpotChange {
                change: "moved",
                pc: s.0.clone(),
                label: s.1.clone(),
                old_rank: Some(j + 1),
                new_rank: Some(i + 1),
                old: Some(old[j].2),
                new: Some(s.2),
            }),
            Some(_) => {}
        }
    }
    for (j, s) in old.iter().enumerate() {
        if !new_at.contains_key(&key(s)) {
            out.push(SpotChange {
                change: "vanished",
                pc: s.0.clone(),
                label: s.1.clone(),
                old_rank: Some(j + 1),
                new_rank: None,
                old: Some(s.2),
                new: None,
            });
        }
    }
    out
}

impl Diff {
    /// The diff as one line of JSON: the fields of [`Diff`] in order.
    pub fn to_json(&self) -> String {
        crate::json::to_line(self)
    }

    /// Writes the diff as tables: the metrics that changed (all of them with `all`), the
    /// hot spots that changed, the gates.
    pub fn write_table(&self, out: &mut dyn Write, all: bool) -> io::Result<()> {
        writeln!(out, "{} -> {}", printable(&self.old), printable(&self.new))?;
        let show = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), number);
        let rows: Vec<&MetricDiff> = self
            .metrics
            .iter()
            // Unchanged: the same number, or not a number in both.
            .filter(|m| all || !(m.change == Some(0.0) || (m.old.is_none() && m.new.is_none())))
            .collect();
        let width = rows
            .iter()
            .map(|m| m.name.chars().count())
            .max()
            .unwrap_or(0)
            .max(6);
        writeln!(
            out,
            "  {:<width$}  {:>14}  {:>14}  {:>14}  {:>9}",
            "metric", "old", "new", "change", "relative"
        )?;
        for m in rows {
            let change = m.change.map_or_else(|| "-".to_owned(), signed);
            let rel = m
                .relative
                .map_or_else(|| "-".to_owned(), |r| format!("{r:+.2} %"));
            writeln!(
                out,
                "  {:<width$}  {:>14}  {:>14}  {:>14}  {:>9}",
                printable(&m.name),
                show(m.old),
                show(m.new),
                change,
                rel
            )?;
        }
        for (title, changes) in [
            ("flushes caused", &self.hotspots.flushes),
            ("stalled (lane 1)", &self.hotspots.stalls),
            ("latency", &self.hotspots.latency),
        ] {
            if changes.is_empty() {
                continue;
            }
            writeln!(out)?;
            writeln!(out, "  hot spots, {title}:")?;
            for c in changes {
                let rank = |r: Option<usize>| r.map_or_else(|| "-".to_owned(), |r| format!("#{r}"));
                let value = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
                writeln!(
                    out,
                    "    {:<8}  {:>4} -> {:<4}  {:>8} -> {:<8}  {}",
                    c.change,
                    rank(c.old_rank),
                    rank(c.new_rank),
                    value(c.old),
                    value(c.new),
                    match (&c.pc, c.label.is_empty()) {
                        (Some(pc), _) => printable(pc),
                        (None, true) => "(no label)".to_owned(),
                        (None, false) => printable(&c.label),
                    }
                )?;
            }
        }
        if !self.gates.is_empty() {
            writeln!(out)?;
            for g in &self.gates {
                writeln!(
                    out,
                    "  gate `{}`: {}: {}",
                    printable(&g.gate),
                    if g.tripped { "TRIPPED" } else { "ok" },
                    printable(&g.reason)
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_grammar() {
        let g: Gate = "ipc < -2%".parse().unwrap();
        assert_eq!(
            (g.metric.as_str(), g.op, g.threshold, g.relative),
            ("ipc", Op::Less, -2.0, true)
        );
        let g: Gate = "stage.Is.p99 > +5".parse().unwrap();
        assert_eq!(
            (g.metric.as_str(), g.op, g.threshold, g.relative),
            ("stage.Is.p99", Op::Greater, 5.0, false)
        );
        let g: Gate = "flush_rate>=10 %".parse().unwrap();
        assert_eq!((g.op, g.threshold, g.relative), (Op::GreaterEq, 10.0, true));
        let g: Gate = "konata.mpkiBrPred <= 0.5".parse().unwrap();
        assert_eq!((g.op, g.threshold), (Op::LessEq, 0.5));
        for bad in [
            "ipc",
            "ipc < ",
            "< 5",
            "ipc < x",
            "ipc < 5%%",
            "my ipc < 5",
            "ipc < 1e3",
            "ipc = 3",
        ] {
            let err = bad.parse::<Gate>().unwrap_err();
            assert!(err.contains("a gate is METRIC OP CHANGE"), "{bad}: {err}");
        }
    }

    #[test]
    fn relative_changes() {
        assert_eq!(relative(2.0, 1.0), -50.0);
        assert_eq!(relative(-2.0, -1.0), 50.0);
        assert_eq!(relative(0.0, 0.0), 0.0);
        assert_eq!(relative(0.0, 3.0), f64::INFINITY);
        assert_eq!(relative(0.0, -3.0), f64::NEG_INFINITY);
    }

    #[test]
    fn spot_lists() {
        let s = |pc: &str, v: u64| (Some(pc.to_owned()), pc.to_owned(), v);
        let old = [s("0x10", 9), s("0x20", 5), s("0x30", 1)];
        let new = [s("0x20", 8), s("0x10", 9), s("0x40", 2)];
        let changes = spot_changes(&old, &new);
        let got: Vec<_> = changes
            .iter()
            .map(|c| (c.change, c.pc.as_deref().unwrap(), c.old_rank, c.new_rank))
            .collect();
        assert_eq!(
            got,
            [
                ("moved", "0x20", Some(2), Some(1)),
                ("moved", "0x10", Some(1), Some(2)),
                ("appeared", "0x40", None, Some(3)),
                ("vanished", "0x30", Some(3), None),
            ]
        );
        assert!(spot_changes(&old, &old).is_empty());
    }
}
