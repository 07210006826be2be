//! What a trigger is: [`TriggerDef`], the plain data a configuration file or a
//! built-in pack produces, and the default window around a firing.
//!
//! A definition holds no compiled state; [`crate::TriggerSet`] compiles it.
//! Fields added after the first release get defaults in [`TriggerDef::new`], so
//! code that builds definitions with `new` keeps compiling.

use std::time::Duration;

/// Default time kept before a trigger.
pub const DEFAULT_PRE: Duration = Duration::from_secs(30);
/// Default time kept after a trigger.
pub const DEFAULT_POST: Duration = Duration::from_secs(30);
/// Default cooldown between two captures of one trigger.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(60);

/// What a trigger is: its name, the class of failure it detects, its patterns and
/// the window of packets it asks for around the moment it fires.
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerDef {
    /// Unique name, used in file names and metadata (`nccl-watchdog`).
    pub name: String,
    /// Kind of failure (`nccl_timeout`, `nccl_ib_error`, …; `custom` for user patterns).
    pub class: String,
    /// Byte regexes; the trigger fires when any of them matches anywhere in a line.
    pub patterns: Vec<String>,
    /// Byte regexes that veto the trigger: when one of them matches the line,
    /// the trigger does not fire even if a pattern matched. Built-in packs use
    /// this so that one line belongs to one class (a watchdog timeout quoted
    /// inside `NCCL communicator was aborted` is the abort, not a new timeout).
    pub unless: Vec<String>,
    /// Packets kept from before the moment the trigger fires.
    pub pre: Duration,
    /// Packets kept from after the moment the trigger fires.
    pub post: Duration,
    /// After firing, further matches of this trigger within `cooldown` open no
    /// new capture (they are counted as suppressed, or merged into an open window).
    pub cooldown: Duration,
    /// One sentence on what the trigger detects (empty for user triggers).
    pub description: String,
    /// A real log line the trigger fires on, for `tripcap triggers list`
    /// (empty for user triggers).
    pub example: String,
    /// The format rows (`triggers/formats/*.tsv` ids) each pattern was written
    /// from, one list per pattern (same order); [`TriggerDef::sources`] says what
    /// they are. Empty for user triggers.
    pub cites: Vec<&'static [&'static str]>,
    /// Fires only on a line no other trigger of the set fires on: a generic shape
    /// (a failed verbs call, a queue pair gone to error) that catches programs no
    /// pack knows, without adding a second incident to lines a specific trigger
    /// already explains. Of several fallbacks matching one line, the first fires.
    pub fallback: bool,
}

impl TriggerDef {
    /// A user trigger with the default window (30 s + 30 s) and cooldown (60 s),
    /// class `custom`, no `unless` patterns and no description or example.
    pub fn new(name: impl Into<String>, patterns: Vec<String>) -> Self {
        TriggerDef {
            name: name.into(),
            class: "custom".to_string(),
            patterns,
            unless: Vec::new(),
            pre: DEFAULT_PRE,
            post: DEFAULT_POST,
            cooldown: DEFAULT_COOLDOWN,
            description: String::new(),
            example: String::new(),
            cites: Vec::new(),
            fallback: false,
        }
    }

    /// Where each pattern comes from, one entry per pattern (same order): the
    /// project, file and releases whose format strings it was written from
    /// (`nccl src/transport/net_ib.cc (v2.19.3-)`). Empty for user triggers.
    /// Looked up when asked (reading the format tables is a tenth of compiling
    /// the built-in packs, and only `tripcap triggers list` shows it).
    pub fn sources(&self) -> Vec<String> {
        self.cites
            .iter()
            .map(|ids| crate::formats::describe(ids))
            .collect()
    }
}
