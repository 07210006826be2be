//! The `deviation` packet trigger, pure: one-second [`Summary`]s and the
//! host's [`Profile`] in, firings out.
//!
//! Every second, per interface and traffic class, the trigger's `metric` is
//! compared with its band: it is *outside* when it is above `factor` × the
//! larger of the band's median and p99 (a metric the baseline has at zero is
//! outside at any value above zero). A run of consecutive outside seconds as
//! long as `for` fires once, back-dated to the run's first second; a second
//! inside, or a second with no traffic in that class, ends the run. A run is
//! judged against the band as it stood at its first second: the baseline goes
//! on learning meanwhile, and a storm must not become its own normal. Nothing
//! fires until the baseline is `min_age` old (its oldest interval that long
//! before now), so a fresh agent does not call its first minutes unusual.
//! Window, merge and cooldown are the recorder's, as for every trigger.

use std::collections::HashMap;

use crate::analyze::baseline::{Band, Profile, Summary};
use crate::packet_triggers::PacketTriggerDef;
use crate::recorder::{Firing, TriggerId};

/// A run of outside seconds: its start, the end of its last second, the
/// limit and band it is judged against, whether it fired.
#[derive(Debug, Clone, Copy)]
struct Run {
    start_ns: i64,
    end_ns: i64,
    limit: f64,
    band: Option<Band>,
    fired: bool,
}

/// The deviation triggers and their runs.
#[derive(Debug, Default)]
pub struct Watch {
    defs: Vec<(TriggerId, PacketTriggerDef)>,
    /// (definition index, interface, class) → its current run.
    runs: HashMap<(usize, String, u8), Run>,
}

fn nanos(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

impl Watch {
    /// A watch over `defs` (those of kind `deviation`; others are ignored).
    pub fn new(defs: Vec<(TriggerId, PacketTriggerDef)>) -> Watch {
        Watch {
            defs: defs
                .into_iter()
                .filter(|(_, d)| d.kind == crate::packet_triggers::PacketTriggerKind::Deviation)
                .collect(),
            runs: HashMap::new(),
        }
    }

    /// Whether there is anything to watch.
    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    /// Seconds that closed (`seconds`, any order), judged against `profile`
    /// (`None`: no baseline yet) at capture time `now`; firings go to `out`.
    pub fn seconds(
        &mut self,
        seconds: &[Summary],
        profile: Option<&Profile>,
        now: i64,
        out: &mut Vec<Firing>,
    ) {
        let mut ordered: Vec<&Summary> = seconds.iter().collect();
        ordered.sort_by_key(|s| s.start_ns);
        for (i, (trigger, def)) in self.defs.iter().enumerate() {
            let oldest = profile.and_then(|p| p.span_ns).map(|[a, _]| a);
            let old_enough = oldest.is_some_and(|a| now.saturating_sub(a) >= nanos(def.min_age()));
            let Some(profile) = profile.filter(|_| old_enough) else {
                self.runs.retain(|k, _| k.0 != i);
                continue;
            };
            let metric = def.metric.as_deref().unwrap_or_default();
            for s in &ordered {
                let key = (i, s.interface.clone(), s.class);
                let value = s.metrics().into_iter().find(|(n, _)| *n == metric);
                // A gap (a second without traffic in this class) ends a run.
                if self.runs.get(&key).is_some_and(|r| r.end_ns != s.start_ns) {
                    self.runs.remove(&key);
                }
                let (limit, band) = match self.runs.get(&key) {
                    Some(r) => (r.limit, r.band),
                    None => {
                        let band = profile
                            .bands
                            .get(&(s.interface.clone(), s.class, metric.to_string()))
                            .copied();
                        (
                            band.map_or(0.0, |b| def.factor() * b.median.max(b.p99)),
                            band,
                        )
                    }
                };
                let Some((_, value)) = value.filter(|(_, v)| *v > limit && *v > 0.0) else {
                    self.runs.remove(&key);
                    continue;
                };
                let run = self.runs.entry(key).or_insert(Run {
                    start_ns: s.start_ns,
                    end_ns: s.start_ns,
                    limit,
                    band,
                    fired: false,
                });
                run.end_ns = s.end_ns;
                if !run.fired && run.end_ns - run.start_ns >= nanos(def.sustain()) {
                    run.fired = true;
                    out.push(firing(*trigger, def, s, value, run.band, *run));
                }
            }
        }
    }
}

fn firing(
    trigger: TriggerId,
    def: &PacketTriggerDef,
    s: &Summary,
    value: f64,
    band: Option<Band>,
    run: Run,
) -> Firing {
    let metric = def.metric.as_deref().unwrap_or_default();
    let against = match band {
        Some(b) => format!(
            "its baseline median {:.3} and p99 {:.3} over {} intervals",
            b.median, b.p99, b.samples
        ),
        None => "a baseline that never saw it (0)".to_string(),
    };
    let line = format!(
        "deviation: {metric} {value:.3} on {} class {} for {} s, above {}× {against}",
        s.interface,
        class_name(s.class),
        (run.end_ns - run.start_ns) / 1_000_000_000,
        def.factor(),
    );
    Firing {
        trigger,
        at_ns: run.end_ns,
        onset_ns: Some(run.start_ns),
        line: Some(line.into_bytes()),
        groups: vec![
            ("metric".to_owned(), metric.to_owned()),
            ("interface".to_owned(), s.interface.clone()),
            ("class".to_owned(), class_name(s.class)),
        ],
        ..Firing::default()
    }
}

/// A traffic class as people read it: the DSCP, or `none`.
pub fn class_name(class: u8) -> String {
    if class == crate::analyze::baseline::summary::NO_CLASS {
        "none".to_string()
    } else {
        format!("dscp {class}")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::packet_triggers::PacketTriggerKind;
    use crate::recorder::TriggerTable;

    const S: i64 = 1_000_000_000;
    const T0: i64 = 1_796_000_000 * S;

    fn second(at: i64, cnp: u64) -> Summary {
        Summary {
            start_ns: at,
            end_ns: at + S,
            interface: "lo".into(),
            class: 0,
            packets: 1000,
            bytes: 1_000_000,
            cnp,
            ..Summary::default()
        }
    }

    fn watch(min_age: Duration) -> (Watch, TriggerId) {
        let mut def = PacketTriggerDef::new("cnp-jump", PacketTriggerKind::Deviation);
        def.metric = Some("cnp_per_s".into());
        def.sustain = Some(Duration::from_secs(3));
        def.min_age = Some(min_age);
        let mut table = TriggerTable::default();
        let id = table.add(def.spec());
        (Watch::new(vec![(id, def)]), id)
    }

    /// A profile of `n` quiet seconds from `T0` (one CNP now and then).
    fn profile(n: i64) -> Profile {
        let history: Vec<Summary> = (0..n)
            .map(|i| second(T0 + i * S, u64::from(i % 50 == 0)))
            .collect();
        Profile::of(&history)
    }

    #[test]
    fn a_sustained_jump_fires_once_back_dated_and_a_short_one_does_not() {
        let (mut w, id) = watch(Duration::from_secs(60));
        let p = profile(600);
        let now0 = T0 + 600 * S;
        let mut out = Vec::new();
        // Two seconds out, one in: too short.
        for (k, cnp) in [(0, 80), (1, 80), (2, 0)] {
            w.seconds(
                &[second(now0 + k * S, cnp)],
                Some(&p),
                now0 + (k + 1) * S,
                &mut out,
            );
        }
        assert!(out.is_empty(), "{out:?}");
        // Four seconds out in a row: fires at the end of the third, once.
        for k in 3..7 {
            w.seconds(
                &[second(now0 + k * S, 80)],
                Some(&p),
                now0 + (k + 1) * S,
                &mut out,
            );
        }
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].trigger, id);
        assert_eq!(out[0].onset_ns, Some(now0 + 3 * S));
        assert_eq!(out[0].at_ns, now0 + 6 * S);
        let line = String::from_utf8_lossy(out[0].line.as_deref().unwrap_or_default()).into_owned();
        assert!(
            line.starts_with("deviation: cnp_per_s 80.000 on lo class dscp 0 for 3 s"),
            "{line}"
        );
        // A gap (no traffic in the class for a second) starts a new run.
        out.clear();
        w.seconds(
            &[second(now0 + 9 * S, 80)],
            Some(&p),
            now0 + 10 * S,
            &mut out,
        );
        w.seconds(
            &[second(now0 + 10 * S, 80)],
            Some(&p),
            now0 + 11 * S,
            &mut out,
        );
        w.seconds(
            &[second(now0 + 11 * S, 80)],
            Some(&p),
            now0 + 12 * S,
            &mut out,
        );
        assert_eq!(
            out.len(),
            1,
            "a new run fires anew (the recorder's cooldown may hold it)"
        );
        assert_eq!(out[0].onset_ns, Some(now0 + 9 * S));
    }

    #[test]
    fn nothing_fires_before_the_minimum_age_or_within_the_band() {
        let (mut young, _) = watch(Duration::from_secs(3600));
        let p = profile(600); // ten minutes old
        let now0 = T0 + 600 * S;
        let mut out = Vec::new();
        for k in 0..10 {
            young.seconds(
                &[second(now0 + k * S, 500)],
                Some(&p),
                now0 + (k + 1) * S,
                &mut out,
            );
            young.seconds(
                &[second(now0 + k * S, 500)],
                None,
                now0 + (k + 1) * S,
                &mut out,
            );
        }
        assert!(out.is_empty(), "{out:?}");
        let (mut w, _) = watch(Duration::from_secs(60));
        // Within the band: the same rate as the baseline's busiest seconds.
        let busy: Vec<Summary> = (0..600)
            .map(|i| second(T0 + i * S, 40 + (i % 3) as u64))
            .collect();
        let p = Profile::of(&busy);
        for k in 0..10 {
            w.seconds(
                &[second(now0 + k * S, 42)],
                Some(&p),
                now0 + (k + 1) * S,
                &mut out,
            );
        }
        assert!(out.is_empty(), "{out:?}");
        for k in 10..20 {
            w.seconds(
                &[second(now0 + k * S, 42 * 3)],
                Some(&p),
                now0 + (k + 1) * S,
                &mut out,
            );
        }
        assert_eq!(out.len(), 1, "3× the band's top for 10 s");
    }

    #[test]
    fn a_run_is_judged_against_the_band_from_before_it() {
        let (mut w, _) = watch(Duration::from_secs(60));
        let quiet = profile(600);
        let now0 = T0 + 600 * S;
        let mut out = Vec::new();
        w.seconds(&[second(now0, 80)], Some(&quiet), now0 + S, &mut out);
        // The baseline has meanwhile learnt the storm (as a short interval would).
        let learnt: Vec<Summary> = (0..600).map(|i| second(T0 + i * S, 80)).collect();
        let learnt = Profile::of(&learnt);
        for k in 1..4 {
            w.seconds(
                &[second(now0 + k * S, 80)],
                Some(&learnt),
                now0 + (k + 1) * S,
                &mut out,
            );
        }
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].onset_ns, Some(now0));
    }
}
