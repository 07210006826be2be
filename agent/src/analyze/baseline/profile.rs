//! What normal looks like: the band (median and p99) of each metric over a
//! history of [`Summary`]s, per interface and traffic class, and how a
//! window's metrics stand against it ([`Profile::compare`]). Pure.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use super::summary::Summary;

/// One metric's band.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// Median over the history.
    pub median: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Intervals it is made of.
    pub samples: usize,
}

/// Where a metric is measured: interface, traffic class, metric name.
pub type MetricKey = (String, u8, String);

/// The bands of every metric seen in a history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// First and last interval start, ns.
    pub span_ns: Option<[i64; 2]>,
    /// Bands, by interface, class and metric (serialised as a list).
    #[serde(with = "keyed")]
    pub bands: BTreeMap<MetricKey, Band>,
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
                    samples: v.len(),
                };
                (k, band)
            })
            .collect();
        Profile { span_ns, bands }
    }

    /// The metrics of `window` (summaries of the captured span) above their
    /// band's p99, worst (largest ratio to the median) first. A metric the
    /// baseline never saw is compared with a band of zeros.
    pub fn compare(&self, window: &[Summary]) -> Vec<Deviation> {
        let mut out = Vec::new();
        for s in window {
            for (name, value) in s.metrics() {
                let key = (s.interface.clone(), s.class, name.to_string());
                let band = self.bands.get(&key).copied().unwrap_or(Band {
                    median: 0.0,
                    p99: 0.0,
                    samples: 0,
                });
                if value > band.p99 && value > 0.0 {
                    let ratio = if band.median > 0.0 {
                        value / band.median
                    } else {
                        f64::INFINITY
                    };
                    out.push(Deviation {
                        interface: s.interface.clone(),
                        class: s.class,
                        metric: name.to_string(),
                        value,
                        band,
                        ratio,
                    });
                }
            }
        }
        out.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
        out
    }
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
}
