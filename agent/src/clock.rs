//! The wall clock, and how tripcap writes instants for people: RFC 3339 in
//! UTC with nanoseconds.
//!
//! A leaf module: it imports nothing from the crate. Packet timestamps are
//! nanoseconds since the Unix epoch (`i64`) everywhere in tripcap; this is the
//! one place that reads the clock and formats them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch, now.
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Format ns since the epoch as RFC 3339 with nanoseconds (UTC); instants
/// before the epoch print as the epoch.
pub fn rfc3339(ns: i64) -> String {
    if ns <= 0 {
        return "1970-01-01T00:00:00.000000000Z".to_string();
    }
    let t = UNIX_EPOCH + Duration::from_nanos(ns as u64);
    humantime::format_rfc3339_nanos(t).to_string()
}

/// Format ns since the epoch as RFC 3339 to the millisecond (UTC): the form
/// for lines people read.
pub fn rfc3339_millis(ns: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64);
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_with_nanoseconds_and_millis() {
        assert_eq!(
            rfc3339(1_700_000_000_123_456_789),
            "2023-11-14T22:13:20.123456789Z"
        );
        assert_eq!(
            rfc3339_millis(1_700_000_000_123_456_789),
            "2023-11-14T22:13:20.123Z"
        );
        assert_eq!(rfc3339(-5), "1970-01-01T00:00:00.000000000Z");
    }
}
