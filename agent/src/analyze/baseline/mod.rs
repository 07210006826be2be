//! What normal traffic looks like, as analysis (issue 14, part 1): pure, no
//! clock and no I/O.
//!
//! - [`summary`]: one interval per interface and traffic class (DSCP) as a
//!   [`Summary`] of rates, sizes, queue pairs, congestion and loss signals,
//!   PFC pauses and ACK latency, made from packets by the [`Summarizer`];
//! - [`profile`]: the band (median, p1, p99) of every metric over many
//!   summaries, and a window's metrics that left it, worst first (the rule of
//!   significance is documented there);
//! - [`comparison`]: a capture against a baseline as its report shows it.
//!
//! The agent keeps summaries on disk and watches them live in
//! [`crate::baseline`]; `tripcap analyze --baseline` compares a capture here.

pub mod comparison;
pub mod profile;
pub mod summary;

pub use profile::{Assessed, Band, Deviation, Profile, SharedProfile, Side};
pub use summary::{Summarizer, Summary, UNNAMED_INTERFACE};
