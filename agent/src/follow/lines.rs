//! Line splitting: bytes in, lines out, no I/O.
//!
//! One [`LineSplitter`] per followed file (and one for stdin) turns the byte stream read from the
//! file into lines. It owns three rules and nothing else:
//!
//! - **Partial lines are held.** Bytes after the last `\n` stay in the splitter until a newline
//!   arrives, or until the caller decides the file has been idle long enough and calls
//!   [`LineSplitter::flush`].
//! - **Long lines are cut.** A line longer than `max_line_bytes` is emitted as its first
//!   `max_line_bytes` bytes with `truncated = true` as soon as that many bytes are held; the rest
//!   up to the next `\n` is skipped. Memory per file is therefore bounded by `max_line_bytes`.
//! - **NUL bytes are dropped.** Writers without `O_APPEND` (NCCL's `fopen(path, "w")`) keep
//!   writing at their old offset after a copytruncate, leaving a hole that reads as NULs. NULs never
//!   appear in text logs, so they are removed; a line that held nothing but NULs is not emitted
//!   (a real empty line, `\n` alone, is).
//!
//! Everything else passes through untouched: non-UTF-8 bytes, `\r` before `\n`, control bytes.

/// A complete (or cut, or idle-flushed) line, without its newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub bytes: Vec<u8>,
    /// The line was longer than `max_line_bytes` and was cut there.
    pub truncated: bool,
}

/// Splits a byte stream into lines. See the module docs for the rules.
#[derive(Debug)]
pub(crate) struct LineSplitter {
    max: usize,
    buf: Vec<u8>,
    /// The current raw line held NUL bytes (so an empty `buf` is not a real empty line).
    saw_nul: bool,
    /// The current line was already emitted cut; skip until the next newline.
    skipping: bool,
}

impl LineSplitter {
    pub(crate) fn new(max_line_bytes: usize) -> LineSplitter {
        LineSplitter {
            max: max_line_bytes.max(1),
            buf: Vec::new(),
            saw_nul: false,
            skipping: false,
        }
    }

    /// Feeds `chunk`; calls `emit` for every line it completes or cuts.
    pub(crate) fn push(&mut self, chunk: &[u8], mut emit: impl FnMut(Line)) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let (segment, newline) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], true),
                None => (rest, false),
            };
            rest = if newline {
                &rest[segment.len() + 1..]
            } else {
                &[]
            };
            if !self.skipping {
                for piece in segment.split(|&b| b == 0) {
                    self.take(piece, &mut emit);
                }
                if segment.contains(&0) {
                    self.saw_nul = true;
                }
            }
            if newline {
                if !self.skipping && (!self.buf.is_empty() || !self.saw_nul) {
                    emit(Line {
                        bytes: std::mem::take(&mut self.buf),
                        truncated: false,
                    });
                }
                self.buf.clear();
                self.saw_nul = false;
                self.skipping = false;
            }
        }
    }

    /// Appends non-NUL bytes of the current line, cutting it at `max`.
    fn take(&mut self, mut piece: &[u8], emit: &mut impl FnMut(Line)) {
        while !piece.is_empty() && !self.skipping {
            let room = self.max - self.buf.len();
            let n = room.min(piece.len());
            self.buf.extend_from_slice(&piece[..n]);
            piece = &piece[n..];
            if self.buf.len() == self.max && !piece.is_empty() {
                // More bytes of this line exist beyond `max`: cut here.
                self.cut(emit);
            }
        }
        // Exactly `max` bytes held: cut only if the line goes on, which the next byte tells.
    }

    fn cut(&mut self, emit: &mut impl FnMut(Line)) {
        emit(Line {
            bytes: std::mem::take(&mut self.buf),
            truncated: true,
        });
        self.skipping = true;
        self.saw_nul = false;
    }

    /// Emits the held partial line, if any (the caller saw the file idle). A line still being
    /// skipped after a cut stays skipped.
    pub(crate) fn flush(&mut self) -> Option<Line> {
        if self.buf.is_empty() {
            self.saw_nul = false;
            return None;
        }
        self.saw_nul = false;
        Some(Line {
            bytes: std::mem::take(&mut self.buf),
            truncated: false,
        })
    }

    /// Bytes of a partial line are held.
    pub(crate) fn has_partial(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Forgets all state (the file was truncated; a held partial is emitted by the caller first).
    pub(crate) fn reset(&mut self) {
        self.buf.clear();
        self.saw_nul = false;
        self.skipping = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(max: usize, chunks: &[&[u8]]) -> (Vec<Line>, LineSplitter) {
        let mut s = LineSplitter::new(max);
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, |l| out.push(l));
        }
        (out, s)
    }

    fn plain(b: &[u8]) -> Line {
        Line {
            bytes: b.to_vec(),
            truncated: false,
        }
    }

    #[test]
    fn splits_lines_across_chunks() {
        let (out, s) = split(100, &[b"ab", b"c\nde", b"f\n\ng"]);
        assert_eq!(out, vec![plain(b"abc"), plain(b"def"), plain(b"")]);
        assert!(s.has_partial());
    }

    #[test]
    fn flush_emits_partial_once() {
        let (_, mut s) = split(100, &[b"abc"]);
        assert_eq!(s.flush(), Some(plain(b"abc")));
        assert_eq!(s.flush(), None);
        let mut out = Vec::new();
        s.push(b"def\n", |l| out.push(l));
        assert_eq!(out, vec![plain(b"def")]);
    }

    #[test]
    fn long_line_is_cut_and_rest_skipped() {
        let (out, _) = split(4, &[b"0123456", b"789\nok\n"]);
        assert_eq!(
            out,
            vec![
                Line {
                    bytes: b"0123".to_vec(),
                    truncated: true
                },
                plain(b"ok")
            ]
        );
    }

    #[test]
    fn line_of_exactly_max_is_not_cut() {
        let (out, _) = split(4, &[b"0123", b"\n"]);
        assert_eq!(out, vec![plain(b"0123")]);
        let (out, _) = split(4, &[b"0123", b"4\n"]);
        assert_eq!(out.len(), 1);
        assert!(out[0].truncated);
    }

    #[test]
    fn nul_runs_are_dropped_and_nul_only_lines_skipped() {
        let (out, _) = split(100, &[b"\0\0\0\0", b"\0\0\nab\0c\n\0\0x\n\n"]);
        assert_eq!(out, vec![plain(b"abc"), plain(b"x"), plain(b"")]);
    }

    #[test]
    fn non_utf8_passes_through() {
        let (out, _) = split(100, &[b"\xff\xfe\r\n"]);
        assert_eq!(out, vec![plain(b"\xff\xfe\r")]);
    }

    #[test]
    fn reset_forgets_partial_and_skip() {
        let (_, mut s) = split(2, &[b"abcdef"]);
        s.reset();
        let mut out = Vec::new();
        s.push(b"x\n", |l| out.push(l));
        assert_eq!(out, vec![plain(b"x")]);
    }
}
