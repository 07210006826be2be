//! Docker's `json-file` log driver: each line a JSON object whose `log` field holds
//! what the container printed, newline included
//! (`{"log":"NCCL WARN …\n","stream":"stderr","time":"2026-…Z"}`).
//!
//! Patterns are written against what the program printed, so a line in this envelope
//! is matched on its `log` text: JSON escapes a quote inside it (`\"`) and puts `\n"`
//! where a wording ends the line, and a pattern would miss either. Only that envelope
//! is opened (a line that starts with `{"log":"`); anything else, and an envelope that
//! does not parse, is matched as it is.

use std::borrow::Cow;

use serde::Deserialize;

/// What a json-file line starts with.
const OPENING: &[u8] = b"{\"log\":\"";

#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(borrow)]
    log: Cow<'a, str>,
}

/// Whether `bytes` is in the json-file envelope (by its opening alone).
pub(crate) fn is_envelope(bytes: &[u8]) -> bool {
    bytes.starts_with(OPENING)
}

/// The `log` text of a json-file line, without its trailing newline; `None` when
/// `line` is not one.
pub(crate) fn unwrap(line: &[u8]) -> Option<Cow<'_, str>> {
    if !is_envelope(line) {
        return None;
    }
    let entry: Entry = serde_json::from_slice(line).ok()?;
    Some(match entry.log {
        Cow::Borrowed(s) => Cow::Borrowed(trim_newline(s)),
        Cow::Owned(mut s) => {
            let keep = trim_newline(&s).len();
            s.truncate(keep);
            Cow::Owned(s)
        }
    })
}

fn trim_newline(s: &str) -> &str {
    let s = s.strip_suffix('\n').unwrap_or(s);
    s.strip_suffix('\r').unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_field_without_its_newline_escapes_undone() {
        let line = br#"{"log":"[rank0]: Failed to check the \"should dump\" flag on TCPStore\n","stream":"stderr","time":"2026-12-07T10:00:00.123456789Z"}"#;
        assert_eq!(
            unwrap(line).as_deref(),
            Some(r#"[rank0]: Failed to check the "should dump" flag on TCPStore"#)
        );
        // A partial line (Docker splits lines over 16 KiB) has no newline; \u escapes
        // and a CRLF program's \r are undone too.
        let line =
            br#"{"log":"caf\u00e9 \u001b[31mRuntimeError: Socket Timeout\r\n","stream":"stdout"}"#;
        assert_eq!(
            unwrap(line).as_deref(),
            Some("café \u{1b}[31mRuntimeError: Socket Timeout")
        );
        assert_eq!(
            unwrap(br#"{"log":"no escapes at all","stream":"stdout"}"#).as_deref(),
            Some("no escapes at all")
        );
    }

    #[test]
    fn anything_else_is_left_alone() {
        for line in [
            &b"NCCL WARN NET/IB : Got completion from peer"[..],
            br#"{"level":"error","msg":"x"}"#,
            br#"{"log":"cut in the middle"#,
            br#"{"log":5}"#,
            b"{\"log\":\"\xff\xfe\"}",
            b"",
        ] {
            assert_eq!(unwrap(line), None, "{}", String::from_utf8_lossy(line));
        }
    }
}
