//! What a firing line says about time: when it was written ([`Evidence::line_time`])
//! and how long the failed operation had been stuck ([`Evidence::stuck_for`]).
//!
//! The agent places a capture window at `[onset - pre, T + post]`, where `T` is
//! when the line was written and `onset = T - stuck_for`: a watchdog line
//! arrives `Timeout(ms)` after the collective was enqueued, and the packets
//! that explain it are around the enqueue, not around the line.
//! [`Evidence::window`] does this arithmetic.
//!
//! Timestamps recognised anywhere in the line (the leftmost one wins, since
//! the outermost wrapper wrote it):
//! - ISO 8601 / RFC 3339 and friends: `2024-01-01T12:00:00.123Z`,
//!   `2025-02-25 15:46:48,390`, `2025-11-09 15:39:31.043 +08:00`, and the
//!   `NCCL_DEBUG_TIMESTAMP_FORMAT` default `[2025-02-25 15:46:48]`;
//! - glog and PyTorch's c10 logging: `E1218 20:27:21.426123`,
//!   `[E626 06:24:44.903881913` (month not zero-padded), `I20241209 23:39:42.495619`;
//! - mpirun `--timestamp-output`: `Mon Feb 26 12:09:38 2018`;
//! - UCX: `[1466599688.714393]` (seconds since the epoch, always UTC).
//!
//! **Time zone.** A timestamp is UTC unless the line says otherwise (`Z`,
//! `+08:00`, `-0500`). Logs written in local time are read correctly by passing
//! the host's UTC offset in [`TimeContext::local_offset_s`]; it is applied to
//! every timestamp without a zone (never to UCX epoch stamps).
//!
//! **Year.** glog without a year (`E1218 …`) gets the year that puts it
//! closest before [`TimeContext::reference_ns`] (the time the line was read),
//! allowing [`FUTURE_SLACK_S`] of clock skew: `E1231 23:59:59` read on
//! 1 January is last year's.
//!
//! Parsing never panics: every number is range-checked and every sum is
//! checked, so arbitrary bytes give `None`, not a crash.

use std::sync::LazyLock;
use std::time::Duration;

use regex::bytes::{Captures, Regex};

/// A line may carry a timestamp this far after the reference time and still
/// be taken as this year's (clock skew, a wrong `local_offset_s`).
pub const FUTURE_SLACK_S: i64 = 86_400;

/// How far [`Evidence::line_time`] may be from the time the line was read for
/// [`Evidence::window`] to trust it; beyond, the read time is used (a wrong
/// time-zone assumption must not move the window hours away from the ring).
pub const MAX_LINE_SKEW: Duration = Duration::from_secs(600);

/// What the caller knows about time when it reads a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeContext {
    /// When the line was read, nanoseconds since the Unix epoch (UTC).
    pub reference_ns: i64,
    /// Offset of the log writer's local time from UTC, in seconds (`+28800`
    /// for UTC+8), applied to timestamps that carry no zone. 0 means UTC.
    pub local_offset_s: i32,
}

impl TimeContext {
    /// Lines read at `reference_ns`, zone-less timestamps taken as UTC.
    pub fn utc(reference_ns: i64) -> Self {
        TimeContext {
            reference_ns,
            local_offset_s: 0,
        }
    }

    /// The same, with zone-less timestamps taken as local time `offset_s`
    /// seconds east of UTC.
    pub fn with_local_offset(self, offset_s: i32) -> Self {
        TimeContext {
            local_offset_s: offset_s,
            ..self
        }
    }
}

/// What a line says about time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Evidence {
    /// When the line was written, nanoseconds since the Unix epoch (UTC), from
    /// a timestamp in the line.
    pub line_time: Option<i64>,
    /// How long the failed operation had been stuck when the line was written:
    /// `ran for N milliseconds`, else `Timeout(ms)=N`, else `watchdog got stuck
    /// for N seconds`, Gloo's `Timed out waiting Nms`, `abort timed out after
    /// N ms`, how long a c10d store wait or connect lasted (`wait timeout after Nms`),
    /// or nvmet's `keep-alive timer (N seconds) expired`.
    /// Never the init print `TIMEOUT(ms): N`.
    pub stuck_for: Option<Duration>,
}

impl Evidence {
    /// The capture window `[onset - pre, T + post]` in nanoseconds since the
    /// epoch, where `T` is [`line_time`](Self::line_time) if it is within
    /// [`MAX_LINE_SKEW`] of `read_time_ns`, else `read_time_ns`, and
    /// `onset = T - stuck_for` (or `T`). Saturates instead of overflowing.
    pub fn window(&self, read_time_ns: i64, pre: Duration, post: Duration) -> (i64, i64) {
        let skew = duration_ns(MAX_LINE_SKEW);
        let t = match self.line_time {
            Some(lt) if lt.abs_diff(read_time_ns) <= skew.unsigned_abs() => lt,
            _ => read_time_ns,
        };
        let onset = t.saturating_sub(self.stuck_for.map_or(0, duration_ns));
        (
            onset.saturating_sub(duration_ns(pre)),
            t.saturating_add(duration_ns(post)),
        )
    }
}

fn duration_ns(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// Read the time evidence of `line`.
pub fn evidence(line: &[u8], ctx: TimeContext) -> Evidence {
    Evidence {
        line_time: line_time(line, ctx),
        stuck_for: stuck_for(line),
    }
}

fn re(pattern: &str) -> Regex {
    // Constant patterns, covered by tests: a failure here is a bug in this file.
    Regex::new(pattern).expect("evidence regex is valid")
}

static ISO: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?-u)(?:^|[^\d])(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[T ](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:[.,](?P<f>\d{1,9})\d*)?(?: ?(?P<tz>Z|[+-]\d{2}:?\d{2})(?:[^\d]|$))?",
    )
});
static GLOG: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?-u)(?:^|[^A-Za-z\d])[IWEF](?P<md>\d{3,8}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:\.(?P<f>\d{1,9})\d*)?(?:[^\d]|$)",
    )
});
static CTIME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?-u)\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}(?P<d>\d{1,2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2}) (?P<y>\d{4})",
    )
});
static EPOCH: LazyLock<Regex> = LazyLock::new(|| re(r"(?-u)\[(?P<s>\d{10})\.(?P<f>\d{6})\]"));

/// Phrases that say how long the failed operation had been stuck, in order of
/// preference (the first that matches wins): the regex's group 1 is the number,
/// and the unit says what it counts. One row per wording; every family whose
/// failure lines print a duration has its rows here (`triggers/tests/formats.rs`
/// checks that each such format string back-dates by exactly its duration).
const STUCK_FOR: &[(&str, Unit)] = &[
    // PyTorch ProcessGroupNCCL: `ran for 600027 milliseconds`, else `Timeout(ms)=600000`.
    (r"\bran for (\d{1,15}) milliseconds", Unit::Millis),
    (r"\bTimeout\(ms\)=(\d{1,15})\b", Unit::Millis),
    (r"watchdog got stuck for (\d{1,12}) seconds", Unit::Seconds),
    // The torchcomms NCCL backend (2.14+): its watchdog, a timed-out work, the communicator init.
    (r"\] Operation timed out after (\d{1,15}) ms", Unit::Millis),
    (
        r"(?:NCCL \w+ failed(?: in batch operation)?|NCCL communicator) timed out after (\d{1,15}) ms",
        Unit::Millis,
    ),
    // The TCPStore barrier (2.12+).
    (r"barrier timeout after (\d{1,15})ms, key: ", Unit::Millis),
    // Gloo, and ProcessGroupNCCL's abort.
    (r"Timed out waiting (\d{1,15})ms for", Unit::Millis),
    (r"abort timed out after (\d{1,15}) ms", Unit::Millis),
    // ProcessGroupNCCL's other futures and Gloo's monitoredBarrier: how long they waited.
    (
        r"Future for .*? timed out after (\d{1,15}) ms",
        Unit::Millis,
    ),
    (
        r"failed to pass monitoredBarrier in (\d{1,15}) ms",
        Unit::Millis,
    ),
    (
        r"timed out in monitoredBarrier after (\d{1,15}) ms",
        Unit::Millis,
    ),
    // ProcessGroupXCCL's `wait()` (torch-xpu-ops).
    (
        r"\bWork (?:timed out|ran time out) after (\d{1,15}) milliseconds",
        Unit::Millis,
    ),
    // oneCCL's key-value store while the ranks set up: the connection, a key's wait.
    (
        r"\bconnection time \((\d{1,12})\) >= limit \(",
        Unit::Seconds,
    ),
    (
        r"(?:kvs_init: connection error|KVS get error): timeout limit:? \(?(\d{1,12}) > ",
        Unit::Seconds,
    ),
    // The c10d store while the job is set up: how long the rank waited for its peers.
    (r"wait timeout after (\d{1,15})ms", Unit::Millis),
    (
        r"Timeout waiting for key: .*? after (\d{1,15}) ms",
        Unit::Millis,
    ),
    (
        r"Timed out after (\d{1,12}) seconds waiting for (?:clients|workers)",
        Unit::Seconds,
    ),
    (
        r"failed to connect/validate to host .*? - timed out \(try=-?\d+, timeout=(\d{1,15})ms\)",
        Unit::Millis,
    ),
    (
        r"waitForInput: socket .*? timed out after (\d{1,15})ms",
        Unit::Millis,
    ),
    (
        r"The client socket has timed out after (\d{1,15})ms while",
        Unit::Millis,
    ),
    (
        r"The client socket has timed out after (\d{1,12})s while",
        Unit::Seconds,
    ),
    // PyTorch 1.x c10d: a store connect that used up its timeout.
    (
        r"connect\(\) timed out\. Original timeout was (\d{1,15}) ms",
        Unit::Millis,
    ),
    // torchelastic: how long the agent waited at the exit barrier.
    (
        r"Error waiting on exit barrier\. Elapsed: (\d{1,12})(?:\.\d+)? seconds",
        Unit::Seconds,
    ),
    // Horovod's stall inspector: ranks have been missing for more than this.
    (
        r"waiting for remainder of ranks for more than (\d{1,12}) seconds",
        Unit::Seconds,
    ),
    // SGLang's scheduler watchdog.
    (
        r"Watchdog timeout \(self\.watchdog_timeout=(\d{1,12})\)",
        Unit::Seconds,
    ),
    // The kernel's hung-task detector: how long the task had been blocked.
    (r"\bblocked for more than (\d{1,12}) seconds", Unit::Seconds),
    // Its soft-lockup detector: how long the CPU had not scheduled.
    (
        r"BUG: soft lockup - CPU#-?\d+ stuck for (\d{1,12})s!",
        Unit::Seconds,
    ),
    // Lustre o2iblnd: how long a transmit to the peer had been waiting.
    (r"Timed out tx for \S+: (\d{1,12}) seconds", Unit::Seconds),
    // Mooncake Store: a batch that did not complete in its timeout.
    (
        r"Failed to complete transfers after (\d{1,12}) seconds",
        Unit::Seconds,
    ),
    // Linux nvmet: the host sent no keep-alive (or command) for the whole KATO.
    (
        r"keep-alive timer \((\d{1,12}) seconds\) expired",
        Unit::Seconds,
    ),
    // nccl-tests/rccl-tests `-T`: the collective ran past the timeout before the test gave up.
    (r"Test timeout \((\d{1,12})s\) \S+:-?\d+", Unit::Seconds),
    // XLA's rendezvous (JAX, TensorFlow): how long a participant has waited for the others.
    (
        r"This thread has been waiting for (?:`[^`\r\n]*` for )?(\d{1,12}) seconds and may be stuck",
        Unit::Seconds,
    ),
    // Ray's collective group: how long a rank waited for the NCCL unique id.
    (
        r"Unable to get the NCCLUniqueID from the store within (\d{1,12}) seconds",
        Unit::Seconds,
    ),
    // UCX's UD endpoint: how long its peer has not answered.
    (
        r"ep 0x[0-9a-fA-F]+: timeout of (\d{1,12})(?:\.\d+)? sec",
        Unit::Seconds,
    ),
    // MSCCL++: how long it polled a CQ for completions that never came.
    (
        r"poll(?:Send)?Cq timed out: waited for (\d{1,12})(?:\.\d+)? seconds",
        Unit::Seconds,
    ),
    // MoRI's bootstrap: how long the root waited for a rank to connect.
    (r"AcceptSocket timed out after (\d{1,15}) ms", Unit::Millis),
    // TensorRT-LLM's KV-cache transfers past their timeout, and its hang detector.
    (
        r"KV cache transfer for request \d+ (?:exceeded configured timeout|completed after its deadline): elapsed (\d{1,15}) ms",
        Unit::Millis,
    ),
    (r"Hang detected after (\d{1,12}) seconds\.", Unit::Seconds),
    // nvidia-resiliency-ext's rank monitor: how long it waited for a heartbeat, or how long
    // a section has been open (the fraction is dropped).
    (
        r"Did not get (?:initial|subsequent) heartbeat\. Waited (\d{1,12})(?:\.\d+)? seconds",
        Unit::Seconds,
    ),
    (
        r"Section '[^'\r\n]*' has been open for (\d{1,12})(?:\.\d+)? seconds",
        Unit::Seconds,
    ),
    // PaddlePaddle's TCPStore master waiting for the workers.
    (
        r"_timeout:-?\d+ elapsed:(\d{1,12}) \(elapsed > _timeout\)",
        Unit::Seconds,
    ),
    // UCC's collective timeout (`%g`: the fraction dropped).
    (
        r"timeout (\d{1,12})(?:\.\d+)? sec\.? has expired on ",
        Unit::Seconds,
    ),
    // DAOS's CaRT: how long an RPC waited for its answer.
    (
        r"crt_context_timeout_check\([^)\r\n]*\) [^\r\n]*? timed out \((\d{1,12}) seconds\)",
        Unit::Seconds,
    ),
    // NIXL's libfabric backend: how long it waited for the peer's handshake.
    (
        r"not received after (\d{1,12})s; connection cannot be established",
        Unit::Seconds,
    ),
];

/// What a [`STUCK_FOR`] number counts.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Millis,
    Seconds,
}

static STUCK_FOR_RES: LazyLock<Vec<(Regex, Unit)>> = LazyLock::new(|| {
    STUCK_FOR
        .iter()
        .map(|(p, unit)| (re(&format!("(?-u){}", crate::colour::tolerate(p))), *unit))
        .collect()
});

fn stuck_for(line: &[u8]) -> Option<Duration> {
    STUCK_FOR_RES.iter().find_map(|(re, unit)| {
        let n = re.captures(line).and_then(|c| number(&c, 1))?;
        Some(match unit {
            Unit::Millis => Duration::from_millis(n),
            Unit::Seconds => Duration::from_secs(n),
        })
    })
}

/// Group `i` of `caps` as a number (all groups used here are ASCII digits).
fn number(caps: &Captures<'_>, i: usize) -> Option<u64> {
    let m = caps.get(i)?;
    std::str::from_utf8(m.as_bytes()).ok()?.parse().ok()
}

fn named(caps: &Captures<'_>, name: &str) -> Option<u64> {
    let m = caps.name(name)?;
    std::str::from_utf8(m.as_bytes()).ok()?.parse().ok()
}

/// Nanoseconds from a fraction of up to 9 digits (`"39"` → 390 ms).
fn fraction_ns(caps: &Captures<'_>, name: &str) -> i64 {
    let Some(m) = caps.name(name) else { return 0 };
    let digits = m.as_bytes();
    let mut ns: i64 = 0;
    for i in 0..9 {
        let d = digits
            .get(i)
            .map_or(0, |b| i64::from(b.wrapping_sub(b'0')) % 10);
        ns = ns * 10 + d;
    }
    ns
}

/// A timestamp candidate: where it starts in the line and its UTC time.
type Found = (usize, i64);

fn line_time(line: &[u8], ctx: TimeContext) -> Option<i64> {
    let local = i64::from(ctx.local_offset_s);
    let candidates = [
        first_valid(&ISO, line, |c| iso(c, local)),
        first_valid(&GLOG, line, |c| glog(c, local, ctx.reference_ns)),
        first_valid(&CTIME, line, |c| ctime(c, local)),
        first_valid(&EPOCH, line, epoch),
    ];
    candidates
        .into_iter()
        .flatten()
        .min_by_key(|(start, _)| *start)
        .map(|(_, t)| t)
}

fn first_valid(
    re: &Regex,
    line: &[u8],
    parse: impl Fn(&Captures<'_>) -> Option<i64>,
) -> Option<Found> {
    re.captures_iter(line).find_map(|c| {
        let start = c.get(0)?.start();
        parse(&c).map(|t| (start, t))
    })
}

/// The date and time of day a timestamp names, as read from a line (not yet
/// validated).
struct Stamp {
    y: i64,
    mo: u64,
    d: u64,
    h: u64,
    mi: u64,
    s: u64,
}

impl Stamp {
    /// Seconds since the epoch for this date and time in UTC, if it is a real time
    /// (years 1970–2200; a leap second `:60` counts as `:59`).
    fn to_unix(&self) -> Option<i64> {
        if !(1970..=2200).contains(&self.y) {
            return None;
        }
        let small = |n: u64| i8::try_from(n).ok();
        let s = if self.s == 60 { 59 } else { self.s };
        let at = jiff::civil::DateTime::new(
            i16::try_from(self.y).ok()?,
            small(self.mo)?,
            small(self.d)?,
            small(self.h)?,
            small(self.mi)?,
            small(s)?,
            0,
        )
        .ok()?;
        Some(jiff::tz::Offset::UTC.to_timestamp(at).ok()?.as_second())
    }
}

/// The year (UTC) of `secs` since the epoch.
fn year_of(secs: i64) -> Option<i64> {
    let t = jiff::Timestamp::from_second(secs).ok()?;
    Some(i64::from(jiff::tz::Offset::UTC.to_datetime(t).year()))
}

fn to_ns(secs: i64, offset_s: i64, frac_ns: i64) -> Option<i64> {
    secs.checked_sub(offset_s)?
        .checked_mul(1_000_000_000)?
        .checked_add(frac_ns)
}

fn iso(c: &Captures<'_>, local: i64) -> Option<i64> {
    let stamp = Stamp {
        y: i64::try_from(named(c, "y")?).ok()?,
        mo: named(c, "mo")?,
        d: named(c, "d")?,
        h: named(c, "h")?,
        mi: named(c, "mi")?,
        s: named(c, "s")?,
    };
    let offset = match c.name("tz").map(|m| m.as_bytes()) {
        None => local,
        Some(b"Z") => 0,
        Some(tz) => zone_offset(tz)?,
    };
    to_ns(stamp.to_unix()?, offset, fraction_ns(c, "f"))
}

/// `+08:00`, `-0500` → seconds east of UTC.
fn zone_offset(tz: &[u8]) -> Option<i64> {
    let sign = match tz.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: Vec<i64> = tz[1..]
        .iter()
        .filter(|b| b.is_ascii_digit())
        .map(|b| i64::from(b - b'0'))
        .collect();
    let [h1, h2, m1, m2] = digits[..] else {
        return None;
    };
    let (h, m) = (h1 * 10 + h2, m1 * 10 + m2);
    (h <= 14 && m <= 59).then_some(sign * (h * 3600 + m * 60))
}

fn glog(c: &Captures<'_>, local: i64, reference_ns: i64) -> Option<i64> {
    let md = c.name("md")?.as_bytes();
    let n = named(c, "md")?;
    let (year, mo, d) = match md.len() {
        8 => (
            Some(i64::try_from(n / 10_000).ok()?),
            (n / 100) % 100,
            n % 100,
        ),
        3 | 4 => (None, n / 100, n % 100),
        _ => return None,
    };
    let (h, mi, s) = (named(c, "h")?, named(c, "mi")?, named(c, "s")?);
    let frac = fraction_ns(c, "f");
    let at = |y: i64| to_ns(Stamp { y, mo, d, h, mi, s }.to_unix()?, local, frac);
    if let Some(y) = year {
        return at(y);
    }
    // No year: the latest year that is not after the reference (plus slack).
    let ref_year = year_of(reference_ns.div_euclid(1_000_000_000))?;
    let limit = reference_ns.saturating_add(FUTURE_SLACK_S.saturating_mul(1_000_000_000));
    // Feb 29 may be up to 8 years back (2096 → 2104 has no leap year in between).
    (0..=8)
        .filter_map(|back| at(ref_year + 1 - back))
        .find(|&t| t <= limit)
}

fn ctime(c: &Captures<'_>, local: i64) -> Option<i64> {
    const MONTHS: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let mon = c.name("mon")?.as_bytes();
    let mo = MONTHS.iter().position(|m| *m == mon)? as u64 + 1;
    let stamp = Stamp {
        y: i64::try_from(named(c, "y")?).ok()?,
        mo,
        d: named(c, "d")?,
        h: named(c, "h")?,
        mi: named(c, "mi")?,
        s: named(c, "s")?,
    };
    to_ns(stamp.to_unix()?, local, 0)
}

fn epoch(c: &Captures<'_>) -> Option<i64> {
    let secs = i64::try_from(named(c, "s")?).ok()?;
    to_ns(secs, 0, fraction_ns(c, "f"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn at(line: &str, reference_s: i64) -> Option<i64> {
        evidence(line.as_bytes(), TimeContext::utc(reference_s * S)).line_time
    }

    #[test]
    fn iso_timestamps_with_and_without_zone() {
        // NCCL_DEBUG_TIMESTAMP_FORMAT-style prefix with a comma fraction.
        let line = "[03/16][2025-02-25 15:46:48,389] [misc/socket.cc:602] [s11gn1268:pid=3987720] NCCL WARN socketPollConnect poll() failed, ret 1, error Connection timed out, revents 8, connect to 172.16.30.229:39953";
        assert_eq!(at(line, 0), Some(1_740_498_408 * S + 389_000_000));
        let line = "2019-06-02T16:13:44.884Z: [1,12]<stdout>:container-e275-1553839402050-12124-01-000057:815:864 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : Got async event : local catastrophic error";
        assert_eq!(at(line, 0), Some(1_559_492_024 * S + 884_000_000));
        // The leftmost stamp carries +08:00; the bracketed NCCL stamp agrees in UTC.
        let line = "2025-11-09 15:39:31.043 +08:00 [2025-11-09 07:39:30] h100-28:238:1313 [0] transport/net_ib.cc:139 NCCL WARN communicator encountered a fatal error (detected in ncclIbTest)";
        assert_eq!(at(line, 0), Some(1_762_673_971 * S + 43_000_000));
        assert_eq!(at("[2025-11-09 07:39:31] x", 0), Some(1_762_673_971 * S));
        // No zone: the local offset parameter applies.
        let ctx = TimeContext::utc(0).with_local_offset(8 * 3600);
        assert_eq!(
            evidence(b"[2025-11-09 15:39:31] x", ctx).line_time,
            Some(1_762_673_971 * S)
        );
    }

    #[test]
    fn glog_timestamps_take_the_year_closest_before_the_reference() {
        let line = "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.";
        assert_eq!(
            at(line, 1_751_328_000),
            Some(1_750_919_084 * S + 903_881_913)
        ); // read 2025-07-01
        assert_eq!(
            at(line, 1_740_787_200),
            Some(1_719_383_084 * S + 903_881_913)
        ); // read 2025-03-01
           // Month not zero-padded: E126 is 26 January.
        let line = "[rank5]:[E126 01:18:04.728765521 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0(default_pg) Rank 5] Timeout at NCCL work: 14217, last enqueued NCCL work: 14221, last completed NCCL work: 14216.";
        assert_eq!(
            at(line, 1_769_904_000),
            Some(1_769_390_284 * S + 728_765_521)
        ); // read 2026-02-01
           // Read on 1 January: 31 December is last year's.
        assert_eq!(
            at("E1231 23:59:59.000000 1 x.cc:1] y", 1_735_689_610),
            Some(1_735_689_599 * S)
        );
        // Leap day read in a non-leap year goes back to the last leap year.
        assert_eq!(
            at("W0229 10:00:00.000000 1 x.cc:1] y", 1_740_787_200),
            Some(1_709_200_800 * S)
        );
        // glog with a year.
        let line = "F20250821 13:22:09.976752 3186121 rdma_io.cc:811] Check failed: wc->status == IBV_WC_SUCCESS RC send CQ state error: 12, 0";
        assert_eq!(at(line, 0), Some(1_755_782_529 * S + 976_752_000));
        // No date at all.
        assert_eq!(
            at(
                "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out!",
                0
            ),
            None
        );
    }

    #[test]
    fn mpirun_ctime_and_ucx_epoch() {
        let line = "Mon Feb 26 12:09:38 2018[1,564]<stderr>:[jazz21:194169:0:194169] ib_mlx5_log.c:113  FATAL: Error on QP 0x2e5d6 wqe[7]: Transport retry count exceeded (synd 0x15 vend 0x81) opcode RDMA_READ";
        assert_eq!(at(line, 0), Some(1_519_646_978 * S));
        // mpirun wrote local time (UTC+3), UCX wrote the epoch: with the right
        // offset the leftmost (mpirun) stamp agrees with UCX's.
        let line = "Wed Jun 22 15:48:08 2016[1,43]<stdout>:[1466599688.714393] [vegas30:25196:0] rc_verbs_iface.c:47   UCX  ERROR Send completion with error: transport retry counter exceeded";
        let ctx = TimeContext::utc(0).with_local_offset(3 * 3600);
        assert_eq!(
            evidence(line.as_bytes(), ctx).line_time,
            Some(1_466_599_688 * S)
        );
        assert_eq!(
            at("[1466599688.714393] [vegas30:25196:0] x", 0),
            Some(1_466_599_688 * S + 714_393_000)
        );
    }

    #[test]
    fn invalid_dates_are_skipped_not_guessed() {
        assert_eq!(at("2025-13-01 00:00:00 x", 0), None);
        assert_eq!(at("2025-02-30 00:00:00 x", 0), None);
        assert_eq!(at("2025-02-28 24:00:00 x", 0), None);
        assert_eq!(at("version 12025-02-28 10:00:00", 0), None);
        // An invalid first stamp does not hide a valid later one.
        assert_eq!(
            at("2025-99-01 00:00:00 [2025-11-09 07:39:31] x", 0),
            Some(1_762_673_971 * S)
        );
    }

    #[test]
    fn stuck_for_prefers_ran_for_and_ignores_the_init_print() {
        let ev = |l: &str| evidence(l.as_bytes(), TimeContext::utc(0)).stuck_for;
        let line = "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.";
        assert_eq!(ev(line), Some(Duration::from_millis(600_020)));
        let line = "[rank2]:[E424 01:11:21.160832730 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpTy";
        assert_eq!(ev(line), None);
        let line = "NCCL communicator was aborted on rank 1. Original reason for failure was: Work: WorkNCCL(OpType=ALLREDUCE, TensorShape=[1], Timeout(ms)=2000) timed out in call to wait().";
        assert_eq!(ev(line), Some(Duration::from_millis(2000)));
        let line = "I20241209 23:39:42.495619 138559122262912 ProcessGroupNCCL.cpp:905] [PG ID 0 PG GUID 0 Rank 1] ProcessGroupNCCL initialization options: size: 2, global rank: 1, TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: 0";
        assert_eq!(ev(line), None);
        assert_eq!(ev("TIMEOUT(ms): 5000"), None);
        let line = "[rank7]:[E626 05:14:36.393067540 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 7] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress";
        assert_eq!(ev(line), Some(Duration::from_secs(480)));
        let line = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete";
        assert_eq!(ev(line), Some(Duration::from_millis(1_800_000)));
    }

    #[test]
    fn window_starts_at_the_onset() {
        let read = 1_750_919_090 * S;
        let line = b"[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.";
        let ev = evidence(line, TimeContext::utc(read));
        let t = 1_750_919_084 * S + 903_881_913;
        let (from, to) = ev.window(read, Duration::from_secs(30), Duration::from_secs(30));
        assert_eq!(from, t - 600_020_000_000 - 30 * S);
        assert_eq!(to, t + 30 * S);
        // A line time hours away from the read time (wrong zone) is not trusted.
        let far = Evidence {
            line_time: Some(read - 8 * 3600 * S),
            stuck_for: None,
        };
        assert_eq!(
            far.window(read, Duration::ZERO, Duration::ZERO),
            (read, read)
        );
        let huge = Evidence {
            line_time: None,
            stuck_for: Some(Duration::MAX),
        };
        assert_eq!(
            huge.window(read, Duration::MAX, Duration::MAX),
            (i64::MIN, i64::MAX)
        );
    }

    #[test]
    fn date_times_convert_to_unix_seconds_and_back_to_years() {
        let unix = |y, mo, d, h, mi, s| Stamp { y, mo, d, h, mi, s }.to_unix();
        for (y, m, d, days) in [
            (1970, 1, 1, 0),
            (2000, 3, 1, 11_017),
            (2024, 2, 29, 19_782),
            (2200, 12, 31, 84_370),
        ] {
            assert_eq!(unix(y, m, d, 0, 0, 0), Some(days * 86_400), "{y}-{m}-{d}");
            assert_eq!(year_of(days * 86_400), Some(y));
        }
        assert_eq!(year_of(-1), Some(1969));
        assert_eq!(unix(2024, 2, 29, 23, 59, 59), Some(19_783 * 86_400 - 1));
        // A leap second counts as :59; nothing beyond it is a time.
        assert_eq!(
            unix(2016, 12, 31, 23, 59, 60),
            unix(2016, 12, 31, 23, 59, 59)
        );
        assert_eq!(unix(2016, 12, 31, 23, 59, 61), None);
        assert_eq!(unix(2025, 2, 29, 0, 0, 0), None);
        assert_eq!(unix(2025, 4, 31, 0, 0, 0), None);
        assert_eq!(unix(2025, 0, 1, 0, 0, 0), None);
        assert_eq!(unix(2025, 1, 1, 24, 0, 0), None);
        assert_eq!(unix(2025, 1, 1, 0, 60, 0), None);
        assert_eq!(unix(2025, 1, 1 << 40, 0, 0, 0), None);
        assert_eq!(unix(1969, 12, 31, 0, 0, 0), None);
        assert_eq!(unix(2201, 1, 1, 0, 0, 0), None);
    }

    #[test]
    fn random_bytes_never_panic() {
        // xorshift64*: deterministic, no dependency.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_F491_4F6C_DD1D)
        };
        let alphabet = b"0123456789 -:.,TZ+[]EIWFms()=ranfotuckilesdMJFbJuAgOcNvDTWS\xff\xc3";
        for _ in 0..20_000 {
            let len = (next() % 80) as usize;
            let line: Vec<u8> = (0..len)
                .map(|_| {
                    let r = next();
                    if r % 4 == 0 {
                        (r >> 8) as u8
                    } else {
                        alphabet[(r >> 8) as usize % alphabet.len()]
                    }
                })
                .collect();
            let reference = (next() >> 1) as i64 * if next() % 2 == 0 { 1 } else { -1 };
            let ctx = TimeContext {
                reference_ns: reference,
                local_offset_s: next() as i32,
            };
            let ev = evidence(&line, ctx);
            let _ = ev.window(reference, Duration::from_secs(next() % 1000), Duration::MAX);
        }
    }
}
