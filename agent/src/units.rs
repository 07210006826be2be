//! Units a user writes in config files and flags: durations (`"30s"`), byte
//! sizes (`"64MiB"`) and snapshot lengths (`128`, `"full"`).
//!
//! A leaf module: it imports nothing from the crate, so every layer may use it.
//! Each parser's error is one sentence that shows how to write the value.

use std::time::Duration;

/// The snapshot length that keeps whole packets (libpcap's maximum).
pub const FULL_SNAPLEN: u32 = 262_144;

/// Parse a duration with a unit; the error says how to write one.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!(
            "\"{t}\" has no unit: write \"{t}s\" (or \"{t}ms\", \"{t}m\")"
        ));
    }
    humantime::parse_duration(t).map_err(|e| {
        format!("\"{t}\" is not a duration ({e}): write e.g. \"30s\", \"500ms\", \"15m\"")
    })
}

/// Parse a byte size (`"64MiB"`, `"1GiB"`, `"500k"`, `"1048576"`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<bytesize::ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|_| format!("\"{text}\" is not a size: write e.g. \"64MiB\", \"1GiB\" (binary) or \"500MB\" (decimal)"))
}

/// Parse a packet rate (`"2M"`, `"500k"`, `"2Mpps"`, `"2000000"`), packets per second.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t.strip_suffix("pps").unwrap_or(t).trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'M')) => (&t[..i], 1e6),
        Some((i, 'G')) => (&t[..i], 1e9),
        _ => (t, 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n * scale >= 1.0 => Ok((n * scale) as u64),
        _ => Err(format!(
            "\"{text}\" is not a packet rate: write e.g. \"2M\", \"500k\" or 2000000 (packets per second)"
        )),
    }
}

/// What a capture keeps of each packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snaplen {
    /// At most this many bytes.
    Bytes(u32),
    /// Exactly the headers diagnosis reads (`wire::headers_len`): through the
    /// BTH's extended headers, no application payload.
    Headers,
}

/// The most bytes a packet keeps with `snaplen = "headers"` (libpcap's snapshot
/// length then): Ethernet, two VLAN tags, IPv6, UDP, BTH, DETH and a 256-byte
/// management datagram fit.
pub const HEADERS_MAX: u32 = 384;

/// Parse a capture's snapshot length: bytes, `full`/`0`, or `headers`.
pub fn parse_capture_snaplen(text: &str) -> Result<Snaplen, String> {
    match text.trim() {
        "headers" => Ok(Snaplen::Headers),
        t => parse_snaplen(t)
            .map(Snaplen::Bytes)
            .map_err(|e| e.replace(", or \"full\"", ", \"full\" or \"headers\"")),
    }
}

/// Parse a snapshot length: bytes, or `full`/`0` for whole packets.
pub fn parse_snaplen(text: &str) -> Result<u32, String> {
    match text.trim() {
        "full" | "0" => Ok(FULL_SNAPLEN),
        t => match t.parse::<u32>() {
            Ok(n) if n >= 64 => Ok(n.min(FULL_SNAPLEN)),
            Ok(n) => Err(format!(
                "snaplen {n} is too short to hold the RoCE headers: use at least 64, or \"full\""
            )),
            Err(_) => Err(format!(
                "snaplen \"{t}\" is not a number of bytes: write e.g. 128, or \"full\""
            )),
        },
    }
}
