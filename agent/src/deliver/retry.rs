//! The retry and park policy, as pure functions: what a response status means
//! ([`classify`]), how long to wait before the next attempt ([`backoff`],
//! [`next_delay`]), and what a `Retry-After` says ([`parse_retry_after`]).
//!
//! Connect errors, timeouts, 5xx, 408 and 429 are retried with exponential
//! backoff and jitter, a `Retry-After` (capped at `max_backoff`) overriding the
//! delay; any other 4xx parks the unit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use backon::{ExponentialBuilder, Retryable};

use super::upload_config::UploadConfig;

/// What to do after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Delivered.
    Done,
    /// Try again, after this long if the server said.
    Retry(Option<Duration>),
    /// The endpoint refused it for good: park the unit.
    Park,
}

/// Decide on a response status. `retry_after` is the header's text.
pub fn classify(status: u16, retry_after: Option<&str>, now: SystemTime) -> Verdict {
    match status {
        200..=299 => Verdict::Done,
        408 | 429 | 500..=599 => {
            Verdict::Retry(retry_after.and_then(|r| parse_retry_after(r, now)))
        }
        _ => Verdict::Park,
    }
}

/// `Retry-After`: delta-seconds or an HTTP date (`Sun, 06 Nov 1994 08:49:37
/// GMT`, or the obsolete forms RFC 9110 asks recipients to accept). A date in
/// the past means now.
pub fn parse_retry_after(text: &str, now: SystemTime) -> Option<Duration> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(t).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Exponential backoff with jitter from `min` to `max`, for `attempts` attempts
/// in all (so `attempts - 1` delays).
pub fn backoff(min: Duration, max: Duration, attempts: usize) -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_jitter()
        .with_min_delay(min)
        .with_max_delay(max)
        .with_max_times(attempts.saturating_sub(1))
}

/// The delay before the next attempt: none when the backoff gave up
/// (`proposed` is `None`), else the server's `Retry-After` capped at `max`,
/// else the backoff's own.
pub fn next_delay(
    proposed: Option<Duration>,
    retry_after: Option<Duration>,
    max: Duration,
) -> Option<Duration> {
    let proposed = proposed?;
    Some(retry_after.map_or(proposed, |ra| ra.min(max)))
}

/// Why one attempt failed.
#[derive(Debug, Clone)]
pub(super) enum Failure {
    /// Worth retrying (network, timeout, 5xx, 408, 429).
    Transient {
        why: String,
        retry_after: Option<Duration>,
    },
    /// Refused for good.
    Refused {
        status: u16,
        /// The store's error code (S3: `NoSuchBucket`), when it gave one.
        code: Option<String>,
        why: String,
    },
    /// The unit's files vanished (dropped by the spool bound, or by hand).
    Gone,
}

impl Failure {
    /// A transient failure with no `Retry-After`.
    pub(super) fn transient(why: String) -> Failure {
        Failure::Transient {
            why,
            retry_after: None,
        }
    }
}

/// Run `attempt` with exponential backoff and jitter while it fails
/// transiently (honouring `Retry-After`), as `config` says; add the failed
/// attempts to `failures`.
pub(super) async fn retrying<T, F, Fut>(
    config: &UploadConfig,
    failures: &AtomicU64,
    attempt: F,
) -> Result<T, Failure>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    let max = config.max_backoff;
    let result = attempt
        .retry(backoff(config.min_backoff, max, config.attempts))
        .sleep(tokio::time::sleep)
        .when(|f| matches!(f, Failure::Transient { .. }))
        .adjust(|f, proposed| {
            let retry_after = match f {
                Failure::Transient { retry_after, .. } => *retry_after,
                _ => None,
            };
            next_delay(proposed, retry_after, max)
        })
        .notify(|f, dur| {
            failures.fetch_add(1, Ordering::Relaxed);
            if let Failure::Transient { why, .. } = f {
                tracing::debug!(error = %why, retry_in = ?dur, "upload attempt failed");
            }
        })
        .await;
    if matches!(
        result,
        Err(Failure::Transient { .. } | Failure::Refused { .. })
    ) {
        failures.fetch_add(1, Ordering::Relaxed); // the last attempt is not notified
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use backon::BackoffBuilder;
    use std::time::UNIX_EPOCH;

    #[test]
    fn statuses_are_classified() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_000);
        assert_eq!(classify(200, None, now), Verdict::Done);
        assert_eq!(classify(201, None, now), Verdict::Done);
        assert_eq!(classify(500, None, now), Verdict::Retry(None));
        assert_eq!(
            classify(503, Some("7"), now),
            Verdict::Retry(Some(Duration::from_secs(7)))
        );
        assert_eq!(classify(408, None, now), Verdict::Retry(None));
        assert_eq!(
            classify(429, Some("Sun, 06 Nov 1994 08:49:37 GMT"), now),
            Verdict::Retry(Some(Duration::from_secs(784_111_777 - 784_111_000)))
        );
        assert_eq!(classify(413, None, now), Verdict::Park);
        assert_eq!(classify(401, None, now), Verdict::Park);
        assert_eq!(classify(404, None, now), Verdict::Park);
        assert_eq!(classify(409, None, now), Verdict::Park);
        assert_eq!(classify(429, Some("soon"), now), Verdict::Retry(None));
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_000);
        let in_777 = Some(Duration::from_secs(777));
        assert_eq!(
            parse_retry_after(" 120 ", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            in_777
        );
        // The obsolete RFC 850 and asctime forms.
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now),
            in_777
        );
        assert_eq!(parse_retry_after("Sun Nov  6 08:49:37 1994", now), in_777);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 CET", now),
            None
        );
        assert_eq!(
            parse_retry_after("Sun, 31 Nov 1994 08:49:37 GMT", now),
            None
        );
        assert_eq!(parse_retry_after("-5", now), None);
        assert_eq!(parse_retry_after("", now), None);
        // A date in the past means now.
        let later = UNIX_EPOCH + Duration::from_secs(800_000_000);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", later),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn retry_after_overrides_the_backoff_up_to_max() {
        let (s, max) = (Duration::from_secs(1), Duration::from_secs(60));
        assert_eq!(next_delay(None, Some(s), max), None, "gave up");
        assert_eq!(next_delay(Some(s), None, max), Some(s));
        assert_eq!(next_delay(Some(s), Some(5 * s), max), Some(5 * s));
        assert_eq!(next_delay(Some(s), Some(3600 * s), max), Some(max));
        assert_eq!(
            next_delay(Some(s), Some(Duration::ZERO), max),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn backoff_allows_attempts_minus_one_delays() {
        let (min, max) = (Duration::from_millis(10), Duration::from_millis(80));
        let delays: Vec<Duration> = backoff(min, max, 5).build().collect();
        assert_eq!(delays.len(), 4);
        // Jitter adds up to one delay more.
        assert!(
            delays.iter().all(|d| *d >= min && *d <= 2 * max),
            "{delays:?}"
        );
        assert_eq!(backoff(min, max, 1).build().count(), 0);
        assert_eq!(backoff(min, max, 0).build().count(), 0);
    }
}
