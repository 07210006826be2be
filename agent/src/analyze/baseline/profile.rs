//! What normal looks like: the band (median, p1 and p99) of each metric over a
//! history of [`Summary`]s, per interface and traffic class, and how a
//! window's metrics stand against it ([`Profile::assess`], [`Profile::compare`]).
//! Pure.
//!
//! # When a metric left its band
//!
//! A band is made of intervals (a second, a minute) of healthy traffic; a
//! window is compared whole, its rates over its span. Being above the p99 alone
//! says little: one interval in a hundred is there by definition, and a metric
//! that is almost always zero has a p99 of a fraction of an event. So a metric
//! left its band ([`significance`]) when:
//!
//! - **above**: its value is above the p99 *and* at least 1.5 × the median
//!   (noise around a busy median stays inside); rates of events (CNPs, ECN CE
//!   marks, NAKs, go-back-N, duplicates, PFC frames, ARP; and frames for
//!   `packets_per_s`/`bits_per_s`) also need at least 3 events in the window,
//!   so one stray CNP in a quiet baseline is not a storm; `qps` needs 2 queue
//!   pairs more than the p99, and a window at most twice as long as the
//!   baseline's intervals (distinct queue pairs grow with the span they are
//!   counted over), `small_frame_share` 5 points more;
//! - **below** (`packets_per_s` and `bits_per_s` only: traffic that collapsed):
//!   its value is below the p1 *and* below half the median. A baseline that
//!   was ever idle (p1 of 0) never flags this side.
//!
//! A metric the baseline never saw (a new class, a new kind of event) is
//! compared with a band of zeros. A class the baseline knows on an interface
//! of the window, but absent from the window, is compared with zero packets
//! and bits per second (so traffic that stopped shows).
//!
//! Worst first: by how far the value is from the median, `max(ratio, 1/ratio)`
//! (infinite for a zero median); on a tie, signals (event rates) before
//! volume, then more events first.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use super::summary::{Summary, NO_CLASS};

/// One metric's band.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// Median over the history.
    pub median: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 1st percentile (0 in profiles written before it existed).
    #[serde(default)]
    pub p1: f64,
    /// Intervals it is made of.
    pub samples: usize,
}

impl Band {
    #[cfg(test)]
    fn with_samples(self, samples: usize) -> Band {
        Band { samples, ..self }
    }

    /// The band of a metric the baseline never saw.
    pub const UNSEEN: Band = Band {
        median: 0.0,
        p99: 0.0,
        p1: 0.0,
        samples: 0,
    };
}

/// Where a metric is measured: interface, traffic class, metric name.
pub type MetricKey = (String, u8, String);

/// The bands of every metric seen in a history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// First and last interval start, ns.
    pub span_ns: Option<[i64; 2]>,
    /// The intervals' length, ns (their median; absent in profiles written
    /// before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ns: Option<i64>,
    /// Bands, by interface, class and metric (serialised as a list).
    #[serde(with = "keyed")]
    pub bands: BTreeMap<MetricKey, Band>,
}

/// Which side of its band a metric left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// Above the p99 (and the other conditions of [`significance`]).
    Above,
    /// Below the p1 (traffic that collapsed).
    Below,
}

/// One metric of a window against its band, left or not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Assessed {
    /// Interface.
    pub interface: String,
    /// Traffic class (DSCP, or 255).
    pub class: u8,
    /// Metric name.
    pub metric: String,
    /// The window's value.
    pub value: f64,
    /// The baseline's band ([`Band::UNSEEN`] when it never saw the metric).
    pub band: Band,
    /// `value / median` (infinite when the median is 0 and the value is not; 1
    /// when both are 0).
    pub ratio: f64,
    /// Events the window's value counts (rates of events only).
    pub events: Option<u64>,
    /// The side of the band it left, if it did.
    pub left: Option<Side>,
}

/// A metric of a window outside its band.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Deviation {
    /// Interface.
    pub interface: String,
    /// Traffic class (DSCP, or 255).
    pub class: u8,
    /// Metric name.
    pub metric: String,
    /// The window's value.
    pub value: f64,
    /// The baseline's band.
    pub band: Band,
    /// `value / median` (infinite when the median is 0).
    pub ratio: f64,
    /// Above the p99, or below the p1.
    pub side: Side,
    /// Events the window's value counts (rates of events only).
    pub events: Option<u64>,
}

/// How a metric is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Frames and bits per second: both sides.
    Volume,
    /// A rate of events.
    Events,
    /// Distinct queue pairs.
    Qps,
    /// A share (0 … 1).
    Share,
    /// Anything else (latencies).
    Other,
}

fn kind(metric: &str) -> Kind {
    match metric {
        "packets_per_s" | "bits_per_s" => Kind::Volume,
        "qps" => Kind::Qps,
        m if m.ends_with("_share") => Kind::Share,
        m if m.ends_with("_per_s") => Kind::Events,
        _ => Kind::Other,
    }
}

/// Above the p99 only when at least this many times the median.
pub const MIN_RATIO: f64 = 1.5;
/// Events a window needs for an event rate to leave its band.
pub const MIN_EVENTS: u64 = 3;
/// Queue pairs above the p99 needed for `qps` to leave its band.
pub const MIN_EXTRA_QPS: f64 = 2.0;
/// Share above the p99 needed for a share to leave its band.
pub const MIN_EXTRA_SHARE: f64 = 0.05;

/// Whether `value` of `metric` (counting `events`, for rates) left `band`, and
/// on which side: the rule of the module documentation.
pub fn significance(metric: &str, value: f64, band: &Band, events: Option<u64>) -> Option<Side> {
    let kind = kind(metric);
    if !value.is_finite() {
        return None;
    }
    if kind == Kind::Volume && value < band.p1 && value < band.median / 2.0 {
        return Some(Side::Below);
    }
    if !(value > band.p99 && value > 0.0 && value >= MIN_RATIO * band.median) {
        return None;
    }
    let enough = match kind {
        Kind::Volume | Kind::Events => events.is_none_or(|n| n >= MIN_EVENTS),
        Kind::Qps => value - band.p99 >= MIN_EXTRA_QPS,
        Kind::Share => value - band.p99 >= MIN_EXTRA_SHARE,
        Kind::Other => true,
    };
    enough.then_some(Side::Above)
}

fn ratio_of(value: f64, median: f64) -> f64 {
    if median > 0.0 {
        value / median
    } else if value > 0.0 {
        f64::INFINITY
    } else {
        1.0
    }
}

impl Profile {
    /// The profile of `history`.
    pub fn of(history: &[Summary]) -> Profile {
        let mut values: BTreeMap<MetricKey, Vec<f64>> = BTreeMap::new();
        for s in history {
            for (name, v) in s.metrics() {
                values
                    .entry((s.interface.clone(), s.class, name.to_string()))
                    .or_default()
                    .push(v);
            }
        }
        let span_ns = history
            .iter()
            .map(|s| s.start_ns)
            .min()
            .zip(history.iter().map(|s| s.start_ns).max())
            .map(|(a, b)| [a, b]);
        let bands = values
            .into_iter()
            .map(|(k, mut v)| {
                v.sort_by(f64::total_cmp);
                let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
                let band = Band {
                    median: at(0.5),
                    p99: at(0.99),
                    p1: at(0.01),
                    samples: v.len(),
                };
                (k, band)
            })
            .collect();
        let mut lengths: Vec<i64> = history.iter().map(|s| s.end_ns - s.start_ns).collect();
        lengths.sort_unstable();
        let interval_ns = lengths.get(lengths.len() / 2).copied();
        Profile {
            span_ns,
            interval_ns,
            bands,
        }
    }

    /// The interfaces the profile has bands for.
    pub fn interfaces(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.bands.keys().map(|k| k.0.as_str()).collect();
        v.dedup();
        v
    }

    /// The same profile with interface `from` called `to` (to compare a
    /// capture from another host, whose one interface has another name).
    pub fn renamed(&self, from: &str, to: &str) -> Profile {
        let bands = self
            .bands
            .iter()
            .map(|((i, c, m), b)| {
                let i = if i == from { to.to_string() } else { i.clone() };
                ((i, *c, m.clone()), *b)
            })
            .collect();
        Profile {
            span_ns: self.span_ns,
            interval_ns: self.interval_ns,
            bands,
        }
    }

    /// Every metric of `window` (summaries of the captured span) against its
    /// band, in the window's order; then, for each class the profile knows on
    /// an interface of the window but the window lacks, its packet and bit
    /// rates as zero. Interfaces the profile does not know are left out.
    pub fn assess(&self, window: &[Summary]) -> Vec<Assessed> {
        self.assess_captured(window, &[])
    }

    /// [`Profile::assess`], with `captured` also interfaces of the window (the
    /// capture says it watched them: without a packet there, their classes'
    /// packet and bit rates are zero).
    pub fn assess_captured(&self, window: &[Summary], captured: &[String]) -> Vec<Assessed> {
        let known: Vec<&str> = self.interfaces();
        let mut out = Vec::new();
        for s in window
            .iter()
            .filter(|s| known.contains(&s.interface.as_str()))
        {
            for (name, value) in s.metrics() {
                let key = (s.interface.clone(), s.class, name.to_string());
                let band = self.bands.get(&key).copied().unwrap_or(Band::UNSEEN);
                let events = s.events(name);
                // Distinct queue pairs grow with the span they are counted over: a
                // window much longer than the baseline's intervals is not held to them.
                let comparable = name != "qps"
                    || self
                        .interval_ns
                        .is_some_and(|i| (s.end_ns - s.start_ns) as f64 <= 2.0 * i as f64);
                out.push(Assessed {
                    interface: s.interface.clone(),
                    class: s.class,
                    metric: name.to_string(),
                    value,
                    band,
                    ratio: ratio_of(value, band.median),
                    events,
                    left: significance(name, value, &band, events).filter(|_| comparable),
                });
            }
        }
        for ((interface, class, metric), band) in &self.bands {
            let seen_interface =
                window.iter().any(|s| &s.interface == interface) || captured.contains(interface);
            let seen_class = window
                .iter()
                .any(|s| &s.interface == interface && s.class == *class);
            if !seen_interface || seen_class || kind(metric) != Kind::Volume {
                continue;
            }
            out.push(Assessed {
                interface: interface.clone(),
                class: *class,
                metric: metric.clone(),
                value: 0.0,
                band: *band,
                ratio: ratio_of(0.0, band.median),
                events: Some(0),
                left: significance(metric, 0.0, band, Some(0)),
            });
        }
        out
    }

    /// The metrics of `window` that left their band ([`significance`]), worst
    /// first (see the module documentation).
    pub fn compare(&self, window: &[Summary]) -> Vec<Deviation> {
        deviations(&self.assess(window))
    }
}

/// The assessed metrics that left their band, worst first.
pub fn deviations(assessed: &[Assessed]) -> Vec<Deviation> {
    let mut out: Vec<Deviation> = assessed
        .iter()
        .filter_map(|a| {
            Some(Deviation {
                interface: a.interface.clone(),
                class: a.class,
                metric: a.metric.clone(),
                value: a.value,
                band: a.band,
                ratio: a.ratio,
                side: a.left?,
                events: a.events,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.severity()
            .total_cmp(&a.severity())
            .then_with(|| (kind(&b.metric) == Kind::Events).cmp(&(kind(&a.metric) == Kind::Events)))
            .then_with(|| b.events.cmp(&a.events))
            .then_with(|| a.metric.cmp(&b.metric))
    });
    out
}

impl Deviation {
    /// How far from the median: `max(ratio, 1/ratio)` (infinite for a zero
    /// median, or a zero value below a band).
    pub fn severity(&self) -> f64 {
        if self.ratio > 0.0 {
            self.ratio.max(1.0 / self.ratio)
        } else {
            f64::INFINITY
        }
    }

    /// One line for people, e.g. `cnp_per_s 48/s on eth0 class 26: 240× the
    /// baseline median 0.2/s, above its p99 of 0.9/s`.
    pub fn describe(&self) -> String {
        let m = &self.metric;
        let b = &self.band;
        let head = format!(
            "{m} {} on {}",
            show(m, self.value),
            place(&self.interface, self.class)
        );
        match self.side {
            Side::Below => format!(
                "{head}: {} the baseline median {}, below its p1 of {}",
                times(self.ratio),
                show(m, b.median),
                show(m, b.p1)
            ),
            Side::Above if b.samples == 0 => {
                format!("{head}: the baseline never saw it (a band of zeros)")
            }
            Side::Above if b.median <= 0.0 && b.p99 <= 0.0 => {
                format!("{head}: the baseline median and p99 are 0")
            }
            Side::Above if b.median <= 0.0 => format!(
                "{head}: the baseline median is 0, above its p99 of {}",
                show(m, b.p99)
            ),
            Side::Above => format!(
                "{head}: {} the baseline median {}, above its p99 of {}",
                times(self.ratio),
                show(m, b.median),
                show(m, b.p99)
            ),
        }
    }
}

/// `eth0 class 26`, or `eth0 (no DSCP)` for [`NO_CLASS`].
pub fn place(interface: &str, class: u8) -> String {
    if class == NO_CLASS {
        format!("{interface} (no DSCP)")
    } else {
        format!("{interface} class {class}")
    }
}

/// A ratio as `240×`, `1.6×`, `0.05×`.
fn times(r: f64) -> String {
    format!("{}×", number(r))
}

/// A metric's value with its unit: `48/s`, `1.02k/s`, `2.5 Gbit/s`, `12%`, `35 µs`, `4`.
pub fn show(metric: &str, v: f64) -> String {
    if metric == "bits_per_s" {
        let (x, p) = si(v);
        format!("{} {p}bit/s", number(x))
    } else if metric.ends_with("_per_s") {
        let (x, p) = si(v);
        format!("{}{p}/s", number(x))
    } else if metric.ends_with("_share") {
        format!("{}%", number(v * 100.0))
    } else if metric.ends_with("_us") {
        format!("{} µs", number(v))
    } else {
        number(v)
    }
}

/// `v` scaled to below 1000 with its SI prefix (`k`, `M`, `G`, `T`).
fn si(v: f64) -> (f64, &'static str) {
    let mut x = v;
    for p in ["", "k", "M", "G"] {
        if x.abs() < 999.5 {
            return (x, p);
        }
        x /= 1000.0;
    }
    (x, "T")
}

/// Three significant digits at most, no trailing zeros: `48`, `0.2`, `12345`,
/// `0.00123`; `inf` for infinity.
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "inf".to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let digits = v.abs().log10().floor() as i32;
    let decimals = (2 - digits).clamp(0, 9) as usize;
    let mut s = format!("{v:.decimals$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    s
}

/// The host's current profile, shared between the agent's baseline thread
/// (which replaces it as intervals close) and the windows that compare their
/// captures with it. Empty until the baseline has a first interval.
#[derive(Debug, Clone, Default)]
pub struct SharedProfile(Arc<RwLock<Option<Arc<Profile>>>>);

impl SharedProfile {
    /// Replaces the profile.
    pub fn set(&self, profile: Profile) {
        let mut slot = self.0.write().unwrap_or_else(|e| e.into_inner());
        *slot = Some(Arc::new(profile));
    }

    /// The profile now, if there is one.
    pub fn get(&self) -> Option<Arc<Profile>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// `bands` as a list of `{interface, class, metric, median, p99, samples}`.
mod keyed {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Row {
        interface: String,
        class: u8,
        metric: String,
        #[serde(flatten)]
        band: Band,
    }

    pub fn serialize<S: serde::Serializer>(
        m: &BTreeMap<MetricKey, Band>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter().map(|((i, c, n), b)| Row {
            interface: i.clone(),
            class: *c,
            metric: n.clone(),
            band: *b,
        }))
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<MetricKey, Band>, D::Error> {
        let rows = Vec::<Row>::deserialize(d)?;
        Ok(rows
            .into_iter()
            .map(|r| ((r.interface, r.class, r.metric), r.band))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minute(i: i64, cnp: u64) -> Summary {
        Summary {
            start_ns: i * 60_000_000_000,
            end_ns: (i + 1) * 60_000_000_000,
            interface: "eth0".into(),
            class: 26,
            packets: 600_000,
            bytes: 600_000 * 4096,
            cnp,
            ..Summary::default()
        }
    }

    #[test]
    fn a_storm_leaves_its_band_and_a_normal_minute_does_not() {
        // A week of minutes with a CNP now and then.
        let history: Vec<Summary> = (0..10_080)
            .map(|i| minute(i, u64::from(i % 97 == 0) * 30))
            .collect();
        let p = Profile::of(&history);
        let cnp = p.bands[&("eth0".to_string(), 26, "cnp_per_s".to_string())];
        assert_eq!(cnp.median, 0.0);
        assert!(cnp.p99 > 0.0 && cnp.p99 <= 0.5, "{cnp:?}");
        assert!(
            p.compare(&[minute(20_000, 0)]).is_empty(),
            "a normal minute"
        );
        let storm = p.compare(&[minute(20_000, 48 * 60)]);
        assert_eq!(storm.len(), 1, "{storm:?}");
        assert_eq!(storm[0].metric, "cnp_per_s");
        assert!((storm[0].value - 48.0).abs() < 1e-9);
        assert!(storm[0].ratio.is_infinite());
        let text = serde_json::to_string(&p).expect("serialise");
        let back: Profile = serde_json::from_str(&text).expect("read back");
        assert_eq!(back, p);
    }

    fn band(median: f64, p99: f64, p1: f64) -> Band {
        Band {
            median,
            p99,
            p1,
            samples: 100,
        }
    }

    #[test]
    fn noise_around_a_busy_median_stays_inside() {
        let b = band(1000.0, 1100.0, 900.0);
        // Above the p99 but not 1.5 × the median: noise.
        assert_eq!(
            significance("packets_per_s", 1200.0, &b, Some(12_000)),
            None
        );
        assert_eq!(significance("cnp_per_s", 1400.0, &b, Some(14_000)), None);
        assert_eq!(significance("ack_p99_us", 1499.0, &b, None), None);
        // Below the p1 but not under half the median: noise too.
        assert_eq!(significance("packets_per_s", 800.0, &b, Some(8_000)), None);
        // Far out: flagged.
        assert_eq!(
            significance("cnp_per_s", 1500.0, &b, Some(15_000)),
            Some(Side::Above)
        );
        assert_eq!(
            significance("ack_p99_us", 1600.0, &b, None),
            Some(Side::Above)
        );
    }

    #[test]
    fn an_event_rate_needs_three_events() {
        // A baseline with a stray CNP now and then.
        let b = band(0.0, 0.1, 0.0);
        // Two CNPs in 10 s: 0.2/s, above the p99 but only two events.
        assert_eq!(significance("cnp_per_s", 0.2, &b, Some(2)), None);
        assert_eq!(
            significance("cnp_per_s", 0.3, &b, Some(3)),
            Some(Side::Above)
        );
        // Frames count for bits too: two big frames in a nanosecond are no burst.
        assert_eq!(significance("bits_per_s", 1e13, &b, Some(2)), None);
        // Never seen, no events: nothing.
        assert_eq!(
            significance("nak_seq_per_s", 0.0, &Band::UNSEEN, Some(0)),
            None
        );
    }

    #[test]
    fn only_volume_has_a_low_side_and_an_idle_baseline_never_flags_it() {
        let b = band(1000.0, 1100.0, 900.0);
        assert_eq!(
            significance("packets_per_s", 400.0, &b, Some(4000)),
            Some(Side::Below)
        );
        assert_eq!(
            significance("bits_per_s", 0.0, &b, Some(0)),
            Some(Side::Below)
        );
        assert_eq!(significance("cnp_per_s", 0.0, &b, Some(0)), None);
        assert_eq!(significance("qps", 1.0, &b, None), None);
        let idle = band(1000.0, 1100.0, 0.0);
        assert_eq!(significance("packets_per_s", 0.0, &idle, Some(0)), None);
    }

    #[test]
    fn queue_pairs_and_shares_need_a_margin() {
        let qps = band(4.0, 4.0, 4.0);
        assert_eq!(significance("qps", 6.0, &qps, None), Some(Side::Above));
        let one = band(1.0, 1.0, 1.0);
        assert_eq!(significance("qps", 2.0, &one, None), None);
        assert_eq!(significance("qps", 3.0, &one, None), Some(Side::Above));
        let share = band(0.0, 0.0, 0.0);
        assert_eq!(significance("small_frame_share", 0.01, &share, None), None);
        assert_eq!(
            significance("small_frame_share", 0.2, &share, None),
            Some(Side::Above)
        );
    }

    #[test]
    fn queue_pairs_are_held_only_to_intervals_of_about_the_windows_length() {
        let second = |i: i64, qps: u32, seconds: i64| Summary {
            start_ns: i * 1_000_000_000,
            end_ns: (i + seconds) * 1_000_000_000,
            interface: "eth0".into(),
            class: 26,
            packets: 100 * seconds as u64,
            qps,
            ..Summary::default()
        };
        let p = Profile::of(&(0..100).map(|i| second(i, 2, 1)).collect::<Vec<_>>());
        assert_eq!(p.interval_ns, Some(1_000_000_000));
        let qps = |w: &Summary| p.compare(std::slice::from_ref(w));
        // Ten seconds of short-lived queue pairs: more of them, as counting longer gives.
        assert!(qps(&second(200, 12, 10)).is_empty());
        // Two seconds: held to the band.
        let d = qps(&second(200, 12, 2));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].metric, "qps");
        // A profile that does not say its intervals' length holds no window to it.
        let old = Profile {
            interval_ns: None,
            ..p.clone()
        };
        assert!(old.compare(&[second(200, 12, 1)]).is_empty());
    }

    fn sec(i: i64, class: u8, packets: u64, pfc: u64) -> Summary {
        Summary {
            start_ns: i * 1_000_000_000,
            end_ns: (i + 1) * 1_000_000_000,
            interface: "eth0".into(),
            class,
            packets,
            bytes: packets * 1000,
            pfc_frames: [0, 0, 0, pfc, 0, 0, 0, 0],
            ..Summary::default()
        }
    }

    #[test]
    fn a_class_that_stopped_is_below_its_band_and_signals_come_first() {
        // Ten minutes of seconds: class 26 busy with some noise, class 0 light.
        let history: Vec<Summary> = (0..600)
            .flat_map(|i| [sec(i, 26, 1000 + (i as u64 * 7) % 50, 0), sec(i, 0, 10, 0)])
            .collect();
        let p = Profile::of(&history);
        let b = p.bands[&("eth0".to_string(), 26, "packets_per_s".to_string())];
        assert!(b.p1 >= 1000.0 && b.p99 < 1050.0, "{b:?}");
        // A healthy second: nothing.
        assert!(p
            .compare(&[sec(700, 26, 1020, 0), sec(700, 0, 10, 0)])
            .is_empty());
        // Class 26 gone, and a PFC storm in a class never seen.
        let window = [sec(700, 0, 10, 0), sec(700, NO_CLASS, 500, 500)];
        let d = p.compare(&window);
        let names: Vec<(u8, &str, Side)> = d
            .iter()
            .map(|d| (d.class, d.metric.as_str(), d.side))
            .collect();
        assert_eq!(
            names,
            [
                (NO_CLASS, "pfc_frames_per_s", Side::Above),
                (NO_CLASS, "bits_per_s", Side::Above),
                (NO_CLASS, "packets_per_s", Side::Above),
                (26, "bits_per_s", Side::Below),
                (26, "packets_per_s", Side::Below),
            ],
            "{d:?}"
        );
        assert_eq!(
            d[0].describe(),
            "pfc_frames_per_s 500/s on eth0 (no DSCP): the baseline never saw it (a band of zeros)"
        );
        let seen = Deviation {
            band: band(0.0, 0.0, 0.0),
            ..d[0].clone()
        };
        assert_eq!(
            seen.describe(),
            "pfc_frames_per_s 500/s on eth0 (no DSCP): the baseline median and p99 are 0"
        );
        assert_eq!(
            d[4].describe(),
            format!(
                "packets_per_s 0/s on eth0 class 26: 0× the baseline median {}, below its p1 of {}",
                show("packets_per_s", b.median),
                show("packets_per_s", b.p1)
            )
        );
        assert_eq!(show("packets_per_s", b.p1), "1k/s");
    }

    #[test]
    fn an_interface_captured_without_a_packet_is_traffic_that_stopped() {
        let history: Vec<Summary> = (0..100).map(|i| sec(i, 26, 1000, 0)).collect();
        let p = Profile::of(&history);
        assert!(p.compare(&[]).is_empty(), "nothing said to be watched");
        let d = deviations(&p.assess_captured(&[], &["eth0".to_string()]));
        let names: Vec<(&str, Side)> = d.iter().map(|d| (d.metric.as_str(), d.side)).collect();
        assert_eq!(
            names,
            [("bits_per_s", Side::Below), ("packets_per_s", Side::Below)]
        );
        assert!(p.assess_captured(&[], &["eth1".to_string()]).is_empty());
    }

    #[test]
    fn deviations_read_as_sentences() {
        let d = Deviation {
            interface: "eth0".into(),
            class: 26,
            metric: "cnp_per_s".into(),
            value: 48.0,
            band: band(0.2, 0.9, 0.0),
            ratio: 240.0,
            side: Side::Above,
            events: Some(480),
        };
        assert_eq!(
            d.describe(),
            "cnp_per_s 48/s on eth0 class 26: 240× the baseline median 0.2/s, above its p99 of 0.9/s"
        );
        let zero = Deviation {
            band: band(0.0, 0.5, 0.0),
            ratio: f64::INFINITY,
            ..d.clone()
        };
        assert_eq!(
            zero.describe(),
            "cnp_per_s 48/s on eth0 class 26: the baseline median is 0, above its p99 of 0.5/s"
        );
        let bits = Deviation {
            metric: "bits_per_s".into(),
            value: 2.5e9,
            band: band(40e9, 42e9, 38e9),
            ratio: 2.5 / 40.0,
            side: Side::Below,
            ..d
        };
        assert_eq!(
            bits.describe(),
            "bits_per_s 2.5 Gbit/s on eth0 class 26: 0.0625× the baseline median 40 Gbit/s, below its p1 of 38 Gbit/s"
        );
        assert_eq!(number(12345.0), "12345");
        assert_eq!(number(0.001234), "0.00123");
        assert_eq!(show("small_frame_share", 0.125), "12.5%");
        assert_eq!(show("packets_per_s", 12_345_678.0), "12.3M/s");
    }

    #[test]
    fn profiles_without_p1_still_read() {
        let old = r#"{"span_ns": [1, 2], "bands": [{"interface": "eth0", "class": 26,
            "metric": "packets_per_s", "median": 10.0, "p99": 20.0, "samples": 5}]}"#;
        let p: Profile = serde_json::from_str(old).expect("old profile");
        let b = p.bands[&("eth0".to_string(), 26, "packets_per_s".to_string())];
        assert_eq!(b, band(10.0, 20.0, 0.0).with_samples(5));
    }
}
