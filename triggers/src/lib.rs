//! Trigger definitions and log-line matching for tripcap.
//!
//! A *trigger* is a named set of byte regexes plus the capture window it asks
//! for. The crate is split by job:
//! - [`def`]: [`TriggerDef`], the plain definition, and the default window;
//! - [`set`]: [`TriggerSet`], which matches a line against every trigger in one pass;
//! - [`scan`]: which lines of a whole chunk of a log may fire, in one pass over the chunk;
//! - [`which`]: which patterns of the set match one of those lines;
//! - `colour`: the colour codes a pattern's line boundaries allow;
//! - `literals`: the strings a pattern's every match holds, so a set can leave a
//!   pattern uncompiled until a line holds one of them;
//! - [`packs`]: the built-in packs (`nccl`, `pytorch`, `perftest`, `verbs`, …);
//! - [`formats`]: the format strings of the programs that print the lines, which
//!   every built-in pattern cites (`triggers/formats/*.tsv`);
//! - [`mod@evidence`]: what a firing line says about time (its timestamp, how long
//!   the collective was stuck), so the agent can place the window;
//! - [`perftest`]: a streaming parser of perftest output with bandwidth and
//!   latency thresholds.

mod colour;
pub mod def;
pub mod evidence;
pub mod formats;
mod literals;
pub mod packs;
pub mod perftest;
pub mod scan;
pub mod set;
pub mod which;

pub use def::{TriggerDef, DEFAULT_COOLDOWN, DEFAULT_POST, DEFAULT_PRE};
pub use evidence::{evidence, Evidence, TimeContext};
pub use packs::{all_packs, describe, pack, PackInfo, PACK_NAMES, RETRY_EXCEEDED_PRE};
pub use set::{Error, LineMatch, ScanCache, TriggerSet};
