//! A streaming parser of perftest output (`ib_{send,write,read}_{bw,lat}`)
//! with bandwidth and latency thresholds.
//!
//! [`PerftestParser::feed_line`] takes one line at a time (a followed log or a
//! pasted run) and returns an event when the line finishes something:
//! - a result row of a bandwidth table (`#bytes #iterations BW peak[Gb/sec]
//!   BW average[Gb/sec] MsgRate[Mpps]`) or a latency table (`t_min[usec]
//!   t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec] 99% percentile[usec]
//!   …`), with the header block of its run (test name, device, MTU, link type,
//!   …) and numbers normalised to Gb/s and µs: [`PerftestEvent::Result`], or
//!   [`PerftestEvent::Breach`] when it breaks a [`Thresholds`] limit;
//! - a line on which the built-in `perftest` pack fires (`Completion with error`,
//!   `Couldn't create IB resources`, …): [`PerftestEvent::Error`].
//!
//! Columns are found by name in the table header, not by position, because
//! perftest versions and modes print different columns (duration mode prints a
//! peak of 0.00; old versions have no percentiles). Lines inside a table that
//! are not rows (`Conflicting CPU frequency values detected…`) are skipped; a
//! `-----` separator ends the table. Only the trailing numbers of a line are
//! read, so wrapper prefixes (`[1,0]<stdout>:`, `host: `) do not matter.
//!
//! Units: perftest reports bandwidth in 2^20-byte units per second by default
//! (`format_factor = 0x100000` in `perftest_parameters.c`), labelled `[MB/sec]`
//! up to 24.04 and `[MiB/sec]` from 24.07.0-0.44 (commit 1d202bb: the same
//! number, relabelled), and in 10^9 bits per second with `--report_gbits`
//! (`[Gb/sec]`). Both byte labels are read as 2^20 bytes (1 MiB/s =
//! 0.008388608 Gb/s) and every bandwidth is normalised to Gb/s. A threshold in
//! `MB/s` or `MiB/s` uses the same 2^20, so a threshold copied from perftest
//! output means what it says.

use std::sync::LazyLock;

use regex::bytes::Regex;

use crate::packs::pack;
use crate::set::{LineMatch, TriggerSet};

/// Gb/s in one perftest `MB/sec` or `MiB/sec`, both 2^20 bytes per second
/// (2^20 bytes × 8 bits / 10^9).
const GBPS_PER_MBPS: f64 = 1_048_576.0 * 8.0 / 1e9;

/// perftest's default message size for bandwidth tests: rows with smaller
/// messages (an `-a` sweep starts at 2 bytes) are not compared to `bw_below`.
pub const DEFAULT_BW_MIN_BYTES: u64 = 65_536;

/// The header block of a run (everything is optional: runs are cut short).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PerftestHeader {
    /// `RDMA_Write BW Test`, `RDMA_Read Latency Test`, `Send BW Test`, …
    pub test: Option<String>,
    /// `Device : mlx5_0`.
    pub device: Option<String>,
    /// `Transport type : IB`.
    pub transport: Option<String>,
    /// `Connection type : RC`.
    pub connection: Option<String>,
    /// `Mtu : 4096[B]`, in bytes.
    pub mtu: Option<u32>,
    /// `Link type : Ethernet` (RoCE) or `IB`.
    pub link_type: Option<String>,
    /// `Number of qps : 1`.
    pub qps: Option<u32>,
}

/// The measured numbers of one result row.
#[derive(Debug, Clone, PartialEq)]
pub enum Measure {
    /// A bandwidth row, in Gb/s (10^9 bits per second) and millions of messages per second.
    Bandwidth {
        /// `BW peak` (0.00 in duration mode, by design of perftest).
        peak_gbps: Option<f64>,
        /// `BW average`.
        average_gbps: Option<f64>,
        /// `MsgRate[Mpps]`.
        msg_rate_mpps: Option<f64>,
    },
    /// A latency row, in microseconds.
    Latency {
        /// `t_min`.
        min_us: Option<f64>,
        /// `t_max`.
        max_us: Option<f64>,
        /// `t_typical` (the median).
        typical_us: Option<f64>,
        /// `t_avg`.
        avg_us: Option<f64>,
        /// `t_stdev`.
        stdev_us: Option<f64>,
        /// `99% percentile`.
        p99_us: Option<f64>,
        /// `99.9% percentile`.
        p999_us: Option<f64>,
    },
}

/// One finished result row.
#[derive(Debug, Clone, PartialEq)]
pub struct PerftestResult {
    /// The header block of the run the row belongs to.
    pub header: PerftestHeader,
    /// `#bytes`: message size.
    pub bytes: u64,
    /// `#iterations`.
    pub iterations: u64,
    /// The numbers.
    pub measure: Measure,
}

/// Which limit a row broke.
#[derive(Debug, Clone, PartialEq)]
pub enum Breach {
    /// `BW average` below `bw_below`.
    BandwidthBelow {
        /// Measured average, Gb/s.
        measured_gbps: f64,
        /// The threshold, Gb/s.
        threshold_gbps: f64,
    },
    /// Average (else typical) latency above `lat_above`.
    LatencyAbove {
        /// Measured latency, µs.
        measured_us: f64,
        /// The threshold, µs.
        threshold_us: f64,
    },
}

/// What a line finished.
#[derive(Debug, Clone, PartialEq)]
pub enum PerftestEvent {
    /// A result row within every threshold.
    Result(PerftestResult),
    /// A result row that broke a threshold: fires.
    Breach {
        /// The row.
        result: PerftestResult,
        /// The limit it broke.
        breach: Breach,
    },
    /// perftest reported a failure: fires.
    Error {
        /// Name of the `perftest` pack trigger that fired.
        trigger: String,
        /// The line (lossy UTF-8).
        line: String,
        /// Its named capture groups (`status`, `syndrome`, `peer`, …).
        groups: Vec<(String, String)>,
    },
}

impl PerftestEvent {
    /// Whether this event should fire a capture (a breach or an error).
    pub fn fires(&self) -> bool {
        !matches!(self, PerftestEvent::Result(_))
    }
}

/// Limits that turn a result row into a [`PerftestEvent::Breach`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Fire when `BW average` is below this many Gb/s.
    pub bw_below_gbps: Option<f64>,
    /// Fire when the average latency (else the typical one) is above this many µs.
    pub lat_above_us: Option<f64>,
    /// Rows with smaller messages are not compared to `bw_below_gbps`
    /// (default [`DEFAULT_BW_MIN_BYTES`]).
    pub bw_min_bytes: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            bw_below_gbps: None,
            lat_above_us: None,
            bw_min_bytes: DEFAULT_BW_MIN_BYTES,
        }
    }
}

impl Thresholds {
    /// Thresholds from configuration text: `bw_below` like `"40Gb/s"` or
    /// `"5000MB/s"`, `lat_above` like `"10us"`.
    pub fn parse(bw_below: Option<&str>, lat_above: Option<&str>) -> Result<Self, ThresholdError> {
        Ok(Thresholds {
            bw_below_gbps: bw_below.map(parse_bandwidth).transpose()?,
            lat_above_us: lat_above.map(parse_latency).transpose()?,
            ..Thresholds::default()
        })
    }

    fn check(&self, bytes: u64, measure: &Measure) -> Option<Breach> {
        match *measure {
            Measure::Bandwidth {
                average_gbps: Some(measured),
                ..
            } => {
                let threshold = self.bw_below_gbps?;
                (bytes >= self.bw_min_bytes && measured < threshold).then_some(
                    Breach::BandwidthBelow {
                        measured_gbps: measured,
                        threshold_gbps: threshold,
                    },
                )
            }
            Measure::Latency {
                avg_us, typical_us, ..
            } => {
                let threshold = self.lat_above_us?;
                let measured = avg_us.or(typical_us)?;
                (measured > threshold).then_some(Breach::LatencyAbove {
                    measured_us: measured,
                    threshold_us: threshold,
                })
            }
            Measure::Bandwidth {
                average_gbps: None, ..
            } => None,
        }
    }
}

/// A threshold that could not be read; the message says how to write it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{what} threshold `{text}`: {problem}; write it like {example}")]
pub struct ThresholdError {
    what: &'static str,
    text: String,
    problem: &'static str,
    example: &'static str,
}

/// Split `"40Gb/s"` into `(40.0, "Gb/s")`.
fn number_and_unit(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let value: f64 = t[..end].parse().ok()?;
    value.is_finite().then_some((value, t[end..].trim()))
}

/// Parse a bandwidth threshold into Gb/s: `40Gb/s` (also `Gbit/s`, `Gbps`,
/// `Gb/sec`), `400Mb/s`, `5000MB/s` or `5000MiB/s` (perftest's 2^20 bytes, as
/// it labels them before and from 24.07), `10GB/s` or `10GiB/s` (2^30 bytes).
pub fn parse_bandwidth(text: &str) -> Result<f64, ThresholdError> {
    let err = |problem| ThresholdError {
        what: "bandwidth",
        text: text.to_string(),
        problem,
        example: "`40Gb/s` or `5000MB/s`",
    };
    let (value, unit) = number_and_unit(text).ok_or_else(|| err("not a number"))?;
    let factor = match unit {
        "Gb/s" | "Gbit/s" | "Gbps" | "Gb/sec" => 1.0,
        "Mb/s" | "Mbit/s" | "Mbps" | "Mb/sec" => 1e-3,
        "MB/s" | "MB/sec" | "MiB/s" | "MiB/sec" => GBPS_PER_MBPS,
        "GB/s" | "GB/sec" | "GiB/s" | "GiB/sec" => GBPS_PER_MBPS * 1024.0,
        "" => return Err(err("no unit")),
        _ => return Err(err("unknown unit")),
    };
    Ok(value * factor)
}

/// Parse a latency threshold into µs: `10us` (also `µs`, `usec`), `1.5ms`, `800ns`.
pub fn parse_latency(text: &str) -> Result<f64, ThresholdError> {
    let err = |problem| ThresholdError {
        what: "latency",
        text: text.to_string(),
        problem,
        example: "`10us` or `1.5ms`",
    };
    let (value, unit) = number_and_unit(text).ok_or_else(|| err("not a number"))?;
    let factor = match unit {
        "us" | "µs" | "usec" => 1.0,
        "ms" | "msec" => 1e3,
        "ns" | "nsec" => 1e-3,
        "" => return Err(err("no unit")),
        _ => return Err(err("unknown unit")),
    };
    Ok(value * factor)
}

/// A column of a result table.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Column {
    Bytes,
    Iterations,
    BwPeak,
    BwAverage,
    MsgRate,
    TMin,
    TMax,
    TTypical,
    TAvg,
    TStdev,
    P99,
    P999,
    /// A column this parser does not use (`tps average`, …).
    Other,
}

/// The table being read.
#[derive(Debug, Clone)]
struct Table {
    columns: Vec<Column>,
    /// Multiply bandwidth cells by this to get Gb/s.
    bw_factor: f64,
    latency: bool,
}

static COLUMN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)#\w+|99(?:\.9)?% percentile\[[^\]]*\]|BW (?:peak|average)\[[^\]]*\]|tps average|[A-Za-z_]\w*\[[^\]]*\]")
        .expect("constant regex")
});
static TEST_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\b((?:RDMA_Write|RDMA_Read|Send|Atomic|Fetch_&_Add|Compare_&_Swap)(?: [A-Za-z]+)*? (?:BW|Latency)(?: [A-Za-z]+)*? Test)\s*$")
        .expect("constant regex")
});
static FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?-u)\b(Device|Transport type|Connection type|Mtu|Link type|Number of qps)\s*: (\S+)",
    )
    .expect("constant regex")
});

impl Table {
    /// The table whose header is `line`, if it is one (`#bytes` and known columns).
    fn from_header(line: &[u8]) -> Option<Table> {
        let mut columns = Vec::new();
        let mut bw_factor = 1.0;
        let mut latency = false;
        for m in COLUMN.find_iter(line) {
            let token = m.as_bytes();
            let unit = token.iter().position(|&b| b == b'[').map(|i| &token[i..]);
            let column = match token {
                b"#bytes" => Column::Bytes,
                b"#iterations" => Column::Iterations,
                _ if token.starts_with(b"BW peak") => Column::BwPeak,
                _ if token.starts_with(b"BW average") => Column::BwAverage,
                _ if token.starts_with(b"MsgRate") => Column::MsgRate,
                _ if token.starts_with(b"t_min") => Column::TMin,
                _ if token.starts_with(b"t_max") => Column::TMax,
                _ if token.starts_with(b"t_typical") => Column::TTypical,
                _ if token.starts_with(b"t_avg") => Column::TAvg,
                _ if token.starts_with(b"t_stdev") => Column::TStdev,
                _ if token.starts_with(b"99.9%") => Column::P999,
                _ if token.starts_with(b"99%") => Column::P99,
                _ => Column::Other,
            };
            match (column, unit) {
                // `[MB/sec]` to 24.04, `[MiB/sec]` from 24.07: both 2^20 bytes.
                (Column::BwPeak | Column::BwAverage, Some(b"[MB/sec]" | b"[MiB/sec]")) => {
                    bw_factor = GBPS_PER_MBPS
                }
                (Column::BwPeak | Column::BwAverage, Some(b"[Gb/sec]")) => bw_factor = 1.0,
                (Column::BwPeak | Column::BwAverage, _) => return None, // unknown unit: don't guess
                (
                    Column::TMin
                    | Column::TMax
                    | Column::TTypical
                    | Column::TAvg
                    | Column::TStdev
                    | Column::P99
                    | Column::P999,
                    u,
                ) => {
                    if u != Some(b"[usec]") {
                        return None; // `[cycles]` (-C) cannot be turned into time
                    }
                    latency = true;
                }
                _ => {}
            }
            columns.push(column);
        }
        (columns.first() == Some(&Column::Bytes) && columns.len() > 2).then_some(Table {
            columns,
            bw_factor,
            latency,
        })
    }

    /// The row `line` holds, if its trailing numbers fill every column.
    fn row(&self, line: &[u8], header: &PerftestHeader) -> Option<PerftestResult> {
        let text = std::str::from_utf8(line).ok()?;
        let tokens: Vec<&str> = text.split_ascii_whitespace().collect();
        let numeric = tokens
            .iter()
            .rev()
            .take_while(|t| t.parse::<f64>().is_ok_and(f64::is_finite))
            .count();
        if numeric != self.columns.len() {
            return None;
        }
        let cells = &tokens[tokens.len() - numeric..];
        let value = |c: Column| -> Option<f64> {
            let i = self.columns.iter().position(|&k| k == c)?;
            cells.get(i)?.parse().ok()
        };
        let integer = |c: Column| -> Option<u64> {
            let i = self.columns.iter().position(|&k| k == c)?;
            cells.get(i)?.parse().ok()
        };
        let measure = if self.latency {
            Measure::Latency {
                min_us: value(Column::TMin),
                max_us: value(Column::TMax),
                typical_us: value(Column::TTypical),
                avg_us: value(Column::TAvg),
                stdev_us: value(Column::TStdev),
                p99_us: value(Column::P99),
                p999_us: value(Column::P999),
            }
        } else {
            let bw = |c| value(c).map(|v| v * self.bw_factor);
            Measure::Bandwidth {
                peak_gbps: bw(Column::BwPeak),
                average_gbps: bw(Column::BwAverage),
                msg_rate_mpps: value(Column::MsgRate),
            }
        };
        Some(PerftestResult {
            header: header.clone(),
            bytes: integer(Column::Bytes)?,
            iterations: integer(Column::Iterations).unwrap_or(0),
            measure,
        })
    }
}

/// Reads perftest output line by line; see the module doc.
#[derive(Debug, Clone)]
pub struct PerftestParser {
    thresholds: Thresholds,
    header: PerftestHeader,
    table: Option<Table>,
    errors: &'static TriggerSet,
    matches: Vec<LineMatch>,
}

/// The built-in `perftest` pack, compiled once for every parser (one per log
/// source). The pack is tested to compile; an empty set is the safe fallback.
static PERFTEST_ERRORS: LazyLock<TriggerSet> = LazyLock::new(|| {
    let defs = pack("perftest").unwrap_or_default();
    TriggerSet::new(defs).unwrap_or_else(|_| TriggerSet::empty())
});

impl PerftestParser {
    /// A parser that fires on errors and on rows breaking `thresholds`.
    pub fn new(thresholds: Thresholds) -> Self {
        PerftestParser {
            thresholds,
            header: PerftestHeader::default(),
            table: None,
            errors: &PERFTEST_ERRORS,
            matches: Vec::new(),
        }
    }

    /// The error triggers this parser matches (the built-in `perftest` pack,
    /// shared by every parser).
    pub fn error_set(&self) -> &'static TriggerSet {
        self.errors
    }

    /// The header block read so far for the current run.
    pub fn header(&self) -> &PerftestHeader {
        &self.header
    }

    /// Feed one line (without its newline); returns what it finished, if anything.
    pub fn feed_line(&mut self, line: &[u8]) -> Option<PerftestEvent> {
        if self.errors.match_line(line, &mut self.matches) {
            let m = &self.matches[0];
            return Some(PerftestEvent::Error {
                trigger: self.errors.defs()[m.trigger].name.clone(),
                line: String::from_utf8_lossy(line).into_owned(),
                groups: m.groups.clone(),
            });
        }
        if let Some(table) = &self.table {
            if let Some(result) = table.row(line, &self.header) {
                return Some(match self.thresholds.check(result.bytes, &result.measure) {
                    Some(breach) => PerftestEvent::Breach { result, breach },
                    None => PerftestEvent::Result(result),
                });
            }
        }
        if line.windows(5).any(|w| w == b"-----") {
            self.table = None;
        } else if line.windows(6).any(|w| w == b"#bytes") {
            self.table = Table::from_header(line);
        } else if let Some(c) = TEST_NAME.captures(line) {
            self.header = PerftestHeader {
                test: c.get(1).map(|m| lossy(m.as_bytes())),
                ..PerftestHeader::default()
            };
            self.table = None;
        } else {
            for c in FIELD.captures_iter(line) {
                let (Some(key), Some(value)) = (c.get(1), c.get(2)) else {
                    continue;
                };
                let value = lossy(value.as_bytes());
                let number = || value.trim_end_matches("[B]").parse().ok();
                match key.as_bytes() {
                    b"Device" => self.header.device = Some(value.clone()),
                    b"Transport type" => self.header.transport = Some(value.clone()),
                    b"Connection type" => self.header.connection = Some(value.clone()),
                    b"Mtu" => self.header.mtu = number(),
                    b"Link type" => self.header.link_type = Some(value.clone()),
                    b"Number of qps" => self.header.qps = number(),
                    _ => {}
                }
            }
        }
        None
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn parsers_share_one_compiled_error_set() {
        // One parser per log source: the pack must not be compiled again for each.
        let a = PerftestParser::new(Thresholds::default());
        let b = PerftestParser::new(Thresholds::default());
        assert!(std::ptr::eq(a.error_set(), b.error_set()));
        assert!(!a.error_set().is_empty());
    }

    use super::*;

    #[test]
    fn thresholds_parse_with_units_and_name_the_fix() {
        assert_eq!(parse_bandwidth("40Gb/s"), Ok(40.0));
        assert_eq!(parse_bandwidth(" 400 Mbps"), Ok(0.4));
        let mb = parse_bandwidth("5000MB/s").expect("valid");
        assert!((mb - 41.943_04).abs() < 1e-9, "{mb}");
        assert_eq!(parse_latency("10us"), Ok(10.0));
        assert_eq!(parse_latency("1.5ms"), Ok(1500.0));
        assert_eq!(parse_latency("10µs"), Ok(10.0));
        let e = parse_bandwidth("40").unwrap_err().to_string();
        assert_eq!(
            e,
            "bandwidth threshold `40`: no unit; write it like `40Gb/s` or `5000MB/s`"
        );
        let e = parse_latency("fast").unwrap_err().to_string();
        assert!(e.contains("not a number") && e.contains("`10us`"), "{e}");
        assert!(parse_bandwidth("40 furlongs").is_err());
        assert!(Thresholds::parse(Some("40Gb/s"), Some("3 parsecs")).is_err());
    }

    #[test]
    fn rows_need_a_table_and_every_column() {
        let mut p = PerftestParser::new(Thresholds::default());
        assert_eq!(
            p.feed_line(
                b" 65536      5000             381.50             381.41               0.727473"
            ),
            None
        );
        p.feed_line(
            b" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
        );
        assert_eq!(p.feed_line(b" 65536      5000             381.50"), None);
        assert_eq!(p.feed_line(b"Conflicting CPU frequency values detected: 1000.000000 != 1259.399000. CPU Frequency is not max."), None);
        let Some(PerftestEvent::Result(r)) = p.feed_line(b"[1,0]<stdout>: 65536      5000             381.50             381.41               0.727473") else {
            panic!("row after a prefix");
        };
        assert_eq!((r.bytes, r.iterations), (65536, 5000));
        p.feed_line(b"---------------------------------------------------------------------------------------");
        assert_eq!(
            p.feed_line(
                b" 65536      5000             381.50             381.41               0.727473"
            ),
            None
        );
    }

    #[test]
    fn mib_per_second_tables_from_24_07_are_read_as_2_20_bytes() {
        // perftest 24.07.0-0.44 and later: RESULT_FMT and REPORT_FMT of
        // src/perftest_parameters.h, the row printed with
        // " %-7lu    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t     %-7.6lf".
        let table: [&[u8]; 5] = [
            b"---------------------------------------------------------------------------------------",
            b" #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]",
            b" 2          5000             11.52              11.43  \t\t     5.992612",
            b" 65536      5000             11025.44            11024.71\t\t     0.176395",
            b"---------------------------------------------------------------------------------------",
        ];
        let mut p =
            PerftestParser::new(Thresholds::parse(Some("11500MiB/s"), None).expect("valid"));
        let events: Vec<PerftestEvent> = table.iter().filter_map(|l| p.feed_line(l)).collect();
        assert_eq!(events.len(), 2, "{events:?}");
        // 1 MiB/s = 2^20 × 8 / 10^9 Gb/s = 0.008388608 Gb/s.
        let gbps = |mibps: f64| mibps * 0.008_388_608;
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
        let PerftestEvent::Result(small) = &events[0] else {
            panic!("2-byte rows are under the size floor: {events:?}");
        };
        let PerftestEvent::Breach {
            result: big,
            breach: Breach::BandwidthBelow { threshold_gbps, .. },
        } = &events[1]
        else {
            panic!("11024.71 MiB/s is below 11500 MiB/s: {events:?}");
        };
        assert!((threshold_gbps - gbps(11500.0)).abs() < 1e-9);
        for (r, bytes, peak, avg, rate) in [
            (small, 2, 11.52, 11.43, 5.992612),
            (big, 65536, 11025.44, 11024.71, 0.176395),
        ] {
            assert_eq!((r.bytes, r.iterations), (bytes, 5000));
            let Measure::Bandwidth {
                peak_gbps,
                average_gbps,
                msg_rate_mpps,
            } = r.measure
            else {
                panic!("{r:?}");
            };
            assert!(close(peak_gbps, gbps(peak)), "{r:?}");
            assert!(close(average_gbps, gbps(avg)), "{r:?}");
            // The message rate is unit-free: 11024.71 MiB/s of 65536-byte messages.
            assert!(close(msg_rate_mpps, rate), "{r:?}");
        }
        assert!((gbps(11024.71) - 92.481_970_503_68).abs() < 1e-9);

        // The same numbers under the old `[MB/sec]` label mean the same.
        let mut old = PerftestParser::new(Thresholds::default());
        old.feed_line(
            b" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
        );
        let Some(PerftestEvent::Result(r)) = old.feed_line(table[3]) else {
            panic!("MB/sec row");
        };
        assert_eq!(r.measure, big.measure);
        assert_eq!(parse_bandwidth("5000MiB/s"), parse_bandwidth("5000MB/s"));
        assert_eq!(parse_bandwidth("1GiB/s"), parse_bandwidth("1024MiB/s"));
    }

    #[test]
    fn cycles_tables_are_not_mistaken_for_time() {
        let mut p = PerftestParser::new(Thresholds::default());
        p.feed_line(b" #bytes #iterations    t_min[cycles]    t_max[cycles]  t_typical[cycles]");
        assert_eq!(
            p.feed_line(b" 2       1000          2640           5500         2690"),
            None
        );
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        };
        let pieces: [&[u8]; 9] = [
            b" #bytes #iterations ",
            b"BW average[MB/sec] ",
            b"t_avg[usec] ",
            b"12 ",
            b"1e308 ",
            b"-----",
            b"nan ",
            b"\xff",
            b"Mtu : 9[B] ",
        ];
        let mut p =
            PerftestParser::new(Thresholds::parse(Some("1Gb/s"), Some("1us")).expect("valid"));
        for _ in 0..5_000 {
            let line: Vec<u8> = (0..next() % 8)
                .flat_map(|_| pieces[(next() % 9) as usize].iter().copied())
                .collect();
            let _ = p.feed_line(&line);
        }
    }
}
