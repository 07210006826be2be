//! From the file as written to a checked [`Config`], one section at a time,
//! and the checks that need every trigger at once: the trigger set compiles,
//! and every packet trigger has a name of its own. Pure: no I/O.

use std::collections::HashMap;
use std::path::PathBuf;

use toml::Spanned;
use tripcap_triggers::perftest::Thresholds;
use tripcap_triggers::{TriggerDef, TriggerSet};

use super::located::RawPerftest;
use super::located::{type_name, RawBaseline, RawCapture, RawConfig, RawLogs, RawOutput};
use super::located::{RawRing, RawTrigger, Reader};
use super::{apply_window_flags, Config, Error, ErrorKind, Location};
use crate::matcher::PERFTEST_THRESHOLD_TRIGGER;
use crate::units::parse_capture_snaplen;

/// Names the agent gives its own triggers, with what they are for. `manual`
/// is `agent::MANUAL_TRIGGER` (a layer above config; a test keeps them in step).
pub(super) const RESERVED_NAMES: &[(&str, &str)] = &[
    ("manual", "the agent's manual captures"),
    (
        PERFTEST_THRESHOLD_TRIGGER,
        "perftest results past the `[perftest]` thresholds",
    ),
];

impl Config {
    /// The checked configuration of a file read by `r`.
    pub(super) fn from_raw(r: &Reader<'_>, raw: RawConfig) -> Result<Config, Error> {
        let mut c = Config::default();
        c.capture_section(r, raw.capture)?;
        c.ring_section(r, &raw.ring)?;
        c.output_section(r, raw.output)?;
        c.logs_section(r, raw.logs)?;
        for p in raw.packs {
            c.pack_origins.push(r.at(p.span()));
            c.packs.push(p.into_inner());
        }
        for t in raw.packet_trigger {
            c.packet_name_origins.push(r.at(t.name.span()));
            c.packet_triggers.push(t.map_name(Spanned::into_inner));
        }
        for t in raw.trigger {
            c.trigger_section(r, t)?;
        }
        c.perftest = perftest_section(r, &raw.perftest)?;
        c.spool = raw.spool;
        c.upload = raw.upload;
        c.api = raw.api;
        c.fleet = raw.fleet;
        c.baseline_section(r, raw.baseline)?;
        if let Some(h) = raw.host {
            if !valid_host(h.get_ref()) {
                return r.invalid(
                    h.span(),
                    format!("`host` {:?} cannot name files and incidents", h.get_ref()),
                    "use 1 to 64 letters, digits, `.`, `-` and `_`",
                );
            }
            c.host = Some(h.into_inner());
        }
        c.trigger_set()?;
        Ok(c)
    }

    fn capture_section(&mut self, r: &Reader<'_>, raw: RawCapture) -> Result<(), Error> {
        if let Some(ifs) = raw.interfaces {
            self.interface_origins = ifs.iter().map(|i| r.at(i.span())).collect();
            self.capture.interfaces = ifs.into_iter().map(Spanned::into_inner).collect();
        }
        if let Some(f) = raw.filter {
            self.filter_origin = r.at(f.span());
            self.capture.filter = f.into_inner();
        }
        if let Some(s) = &raw.snaplen {
            let text = match s.get_ref() {
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::String(t) => t.clone(),
                other => {
                    return r.value_err(
                        s.span(),
                        format!(
                            "`snaplen` must be a number of bytes, \"full\" or \"headers\", not {}",
                            type_name(other)
                        ),
                    )
                }
            };
            let s = parse_capture_snaplen(&text).or_else(|m| r.value_err(s.span(), m))?;
            self.capture.set_snaplen(s);
        }
        if let Some(b) = &raw.buffer_size {
            let size = r.size(b, "buffer_size")?;
            self.capture.buffer_size = u32::try_from(size)
                .or_else(|_| r.value_err(b.span(), "`buffer_size` must be below 4GiB".into()))?;
        }
        if let Some(p) = raw.promiscuous {
            self.capture.promiscuous = p;
        }
        Ok(())
    }

    fn ring_section(&mut self, r: &Reader<'_>, raw: &RawRing) -> Result<(), Error> {
        if let Some(m) = &raw.memory_limit {
            self.ring.memory_limit = r.size(m, "memory_limit")?;
        }
        if let Some(a) = &raw.max_age {
            self.ring.max_age = r.duration(a, "max_age")?;
        }
        if let Some(b) = &raw.block_size {
            self.ring.block_size = r.size(b, "block_size")?;
            if self.ring.block_size < 4096 {
                return r.value_err(b.span(), "`block_size` must be at least 4KiB".into());
            }
        }
        if let Some(c) = raw.compress {
            self.ring.compress = c;
        }
        if let Some(t) = &raw.compress_threads {
            match usize::try_from(*t.get_ref()) {
                Ok(n @ 1..=64) => self.ring.compress_threads = n,
                _ => {
                    return r.value_err(
                        t.span(),
                        format!(
                            "`compress_threads` = {} must be 1 to 64 (set `compress = false` to compress nothing)",
                            t.get_ref()
                        ),
                    )
                }
            }
        }
        if let Some(v) = &raw.expected_rate {
            let text = match v.get_ref() {
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::String(s) => s.clone(),
                _ => String::new(),
            };
            self.ring.expected_rate = crate::units::parse_rate(&text)
                .or_else(|m| r.value_err(v.span(), format!("`expected_rate`: {m}")))?;
        }
        Ok(())
    }

    fn output_section(&mut self, r: &Reader<'_>, raw: RawOutput) -> Result<(), Error> {
        if let Some(d) = raw.dir {
            self.output.dir = PathBuf::from(d.into_inner());
        }
        if let Some(reports) = raw.reports {
            self.output.reports = reports;
        }
        if let Some(root) = raw.sysfs_root {
            self.output.sysfs_root = PathBuf::from(root);
        }
        if let Some(w) = &raw.max_window {
            self.output.max_window = r.duration(w, "max_window")?;
        }
        Ok(())
    }

    fn baseline_section(&mut self, r: &Reader<'_>, raw: RawBaseline) -> Result<(), Error> {
        let b = &mut self.baseline;
        if let Some(e) = raw.enabled {
            b.enabled = e;
        }
        if let Some(d) = raw.dir {
            b.dir = Some(PathBuf::from(d));
        }
        if let Some(v) = &raw.interval {
            b.interval = r.duration(v, "interval")?;
            if b.interval < std::time::Duration::from_secs(1) {
                return r.value_err(
                    v.span(),
                    "`interval` must be at least 1s (1m is the default)".into(),
                );
            }
        }
        if let Some(v) = &raw.max_bytes {
            b.max_bytes = r.size(v, "max_bytes")?;
            if b.max_bytes < 64 << 10 {
                return r.value_err(v.span(), "`max_bytes` must be at least 64KiB".into());
            }
        }
        if let Some(v) = &raw.keep {
            b.keep = r.duration(v, "keep")?;
            if b.keep < b.interval {
                return r.value_err(
                    v.span(),
                    "`keep` must be at least one `interval` (7d is the default)".into(),
                );
            }
        }
        Ok(())
    }

    fn logs_section(&mut self, r: &Reader<'_>, raw: RawLogs) -> Result<(), Error> {
        if let Some(p) = raw.paths {
            self.logs.paths = p.into_iter().map(Spanned::into_inner).collect();
        }
        if let Some(m) = &raw.max_line_bytes {
            self.logs.max_line_bytes = r.size(m, "max_line_bytes")?;
        }
        Ok(())
    }

    /// One `[[trigger]]`: its patterns' places are kept for regex errors.
    fn trigger_section(&mut self, r: &Reader<'_>, t: RawTrigger) -> Result<(), Error> {
        let name = t.name.get_ref().clone();
        if name.trim().is_empty() {
            return r.invalid(
                t.name.span(),
                "trigger `name` is empty".into(),
                "give it a short name like \"nccl-watchdog\"",
            );
        }
        let mut patterns = Vec::new();
        for p in t.pattern.into_iter().chain(t.patterns) {
            self.origins
                .insert((name.clone(), patterns.len()), r.at(p.span()));
            patterns.push(p.into_inner());
        }
        if patterns.is_empty() {
            return r.invalid(
                t.name.span(),
                format!("trigger `{name}` has no pattern"),
                "add `pattern = \"...\"` (a regex)",
            );
        }
        let mut unless = Vec::new();
        for u in t.unless {
            self.unless_origins
                .insert((name.clone(), unless.len()), r.at(u.span()));
            unless.push(u.into_inner());
        }
        self.name_origins
            .entry(name.clone())
            .or_insert_with(|| r.at(t.name.span()));
        let mut def = TriggerDef::new(name, patterns);
        def.unless = unless;
        if let Some(class) = t.class {
            def.class = class;
        }
        if let Some(v) = &t.pre {
            def.pre = r.duration(v, "pre")?;
        }
        if let Some(v) = &t.post {
            def.post = r.duration(v, "post")?;
        }
        if let Some(v) = &t.cooldown {
            def.cooldown = r.duration(v, "cooldown")?;
        }
        self.triggers.push(def);
        Ok(())
    }

    /// Every trigger (built-in packs, then user triggers), compiled, once the
    /// packet triggers' names are checked against them. Errors name the
    /// offending value's location.
    pub fn trigger_set(&self) -> Result<TriggerSet, Error> {
        let mut defs = Vec::new();
        // Log trigger name → the pack it comes from.
        let mut pack_of = HashMap::new();
        for (i, pack) in self.packs.iter().enumerate() {
            let Some(p) = tripcap_triggers::pack(pack) else {
                return Err(ErrorKind::Invalid {
                    at: self.pack_origins.get(i).cloned(),
                    what: format!("unknown trigger pack `{pack}`"),
                    fix: format!(
                        "known packs are {}",
                        tripcap_triggers::PACK_NAMES.join(", ")
                    ),
                }
                .into());
            };
            for d in &p {
                pack_of.entry(d.name.clone()).or_insert(pack.as_str());
            }
            defs.extend(p);
        }
        // Packs are expanded here, after the flags were applied: give them the flags too.
        for d in &mut defs {
            apply_window_flags(d, self.window_flags);
        }
        defs.extend(self.triggers.iter().cloned());
        let set = TriggerSet::new(defs).map_err(|e| self.set_error(e))?;
        self.check_packet_trigger_names(&set, &pack_of)?;
        Ok(set)
    }

    /// A [`TriggerSet`] error, with the bad regex's location.
    fn set_error(&self, e: tripcap_triggers::Error) -> Error {
        let at = match &e {
            tripcap_triggers::Error::BadPattern { trigger, index, .. } => {
                self.origins.get(&(trigger.clone(), *index))
            }
            tripcap_triggers::Error::BadUnless { trigger, index, .. } => {
                self.unless_origins.get(&(trigger.clone(), *index))
            }
            _ => return ErrorKind::Triggers { source: e }.into(),
        };
        ErrorKind::Pattern {
            at: at.cloned(),
            source: e,
        }
        .into()
    }

    /// Every packet trigger has a name, its own: not another packet
    /// trigger's, a log trigger's (`set`, packs included), or one the agent
    /// keeps for itself. Captures, sidecars and the recorder's list of
    /// triggers are keyed by name.
    fn check_packet_trigger_names(
        &self,
        set: &TriggerSet,
        pack_of: &HashMap<String, &str>,
    ) -> Result<(), Error> {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, t) in self.packet_triggers.iter().enumerate() {
            let name = t.name.as_str();
            let at = self.packet_name_origins.get(i);
            let invalid = |what: String, fix: &str| -> Result<(), Error> {
                Err(ErrorKind::Invalid {
                    at: at.cloned(),
                    what,
                    fix: fix.to_string(),
                }
                .into())
            };
            let rename =
                "give the packet trigger another name (captures are named after their trigger)";
            if name.trim().is_empty() {
                return invalid(
                    "packet trigger `name` is empty".into(),
                    "give it a short name like \"qp-stall\"",
                );
            }
            if let Some((_, what_for)) = RESERVED_NAMES.iter().find(|(n, _)| *n == name) {
                return invalid(
                    format!("packet trigger name `{name}` is reserved for {what_for}"),
                    "give it another name",
                );
            }
            if let Some(&first) = seen.get(name) {
                let other = match self.packet_name_origins.get(first).and_then(Location::line) {
                    Some(line) => format!("the packet trigger at line {line}"),
                    None => "another packet trigger".to_string(),
                };
                return invalid(
                    format!("packet trigger name `{name}` is taken by {other}"),
                    "give each `[[packet_trigger]]` its own name",
                );
            }
            if t.kind == crate::packet_triggers::PacketTriggerKind::Deviation {
                self.check_deviation(t, &invalid)?;
            }
            if set.defs().iter().any(|d| d.name == name) {
                let owner = self.log_trigger_owner(name, pack_of);
                return invalid(
                    format!("packet trigger name `{name}` is taken by {owner}"),
                    rename,
                );
            }
            seen.insert(name, i);
        }
        Ok(())
    }

    /// A `deviation` trigger names a metric the baseline keeps, a factor, and
    /// needs the baseline on.
    fn check_deviation(
        &self,
        t: &crate::packet_triggers::PacketTriggerDef,
        invalid: &dyn Fn(String, &str) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let metrics = crate::analyze::baseline::summary::METRICS;
        let name = &t.name;
        match t.metric.as_deref() {
            None => {
                return invalid(
                    format!("deviation trigger `{name}` has no `metric`"),
                    &format!(
                        "add `metric = \"cnp_per_s\"` (one of {})",
                        metrics.join(", ")
                    ),
                )
            }
            Some(m) if !metrics.contains(&m) => {
                return invalid(
                    format!("deviation trigger `{name}`: unknown metric `{m}`"),
                    &format!("use one of {}", metrics.join(", ")),
                )
            }
            Some(_) => {}
        }
        if t.factor.is_some_and(|f| !(f.is_finite() && f > 0.0)) {
            return invalid(
                format!("deviation trigger `{name}`: `factor` must be above 0"),
                "use e.g. `factor = 2.0` (above twice the band)",
            );
        }
        if !self.baseline.enabled {
            return invalid(
                format!("deviation trigger `{name}` needs the baseline, and `[baseline] enabled = false`"),
                "remove `enabled = false` from `[baseline]`, or the trigger",
            );
        }
        Ok(())
    }

    /// Where log trigger `name` comes from, for messages.
    fn log_trigger_owner(&self, name: &str, pack_of: &HashMap<String, &str>) -> String {
        let user = self.triggers.iter().any(|t| t.name == name);
        match (user, self.name_origins.get(name), pack_of.get(name)) {
            (true, Some(Location::Flag(flag)), _) => format!("the `{flag}` trigger"),
            (true, Some(at), _) => match at.line() {
                Some(line) => format!("the log trigger at line {line}"),
                None => "a log trigger".to_string(),
            },
            (false, _, Some(pack)) => format!("a trigger of pack `{pack}`"),
            _ => "a log trigger".to_string(),
        }
    }
}

/// `[perftest]`: thresholds, if any is set.
fn perftest_section(r: &Reader<'_>, raw: &RawPerftest) -> Result<Option<Thresholds>, Error> {
    if raw.bw_below.is_none() && raw.lat_above.is_none() {
        return Ok(None);
    }
    let mut t = Thresholds::default();
    if let Some(b) = &raw.bw_below {
        t.bw_below_gbps = Some(
            tripcap_triggers::perftest::parse_bandwidth(b.get_ref())
                .or_else(|e| r.value_err(b.span(), format!("`bw_below`: {e}")))?,
        );
    }
    if let Some(l) = &raw.lat_above {
        t.lat_above_us = Some(
            tripcap_triggers::perftest::parse_latency(l.get_ref())
                .or_else(|e| r.value_err(l.span(), format!("`lat_above`: {e}")))?,
        );
    }
    Ok(Some(t))
}

/// Whether `h` can be the host part of incident ids and file names.
pub(super) fn valid_host(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 64
        && !h.starts_with('.')
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
}
