//! What the collector's page shows, whatever holds the files: incidents,
//! their hosts and files, the sidecar and summary of each host, and which of
//! them a request asks for (a filter and a page). The selection is pure
//! ([`Filter`], [`select`]); reading a directory is [`scan_dir`], reading a
//! bucket is [`super::bucket`].

use std::path::Path as FsPath;

use serde::Deserialize;
use serde_json::Value;

use super::store::safe_name;

/// Incidents on one page.
pub const PER_PAGE: usize = 50;

/// One host's files of one incident.
#[derive(Debug, Default, Clone)]
pub struct HostView {
    /// Host name.
    pub host: String,
    /// File names and sizes.
    pub files: Vec<(String, u64)>,
    /// `<incident>.json`, when it arrived.
    pub sidecar: Option<Value>,
    /// `<incident>.summary.json`, when it arrived.
    pub summary: Option<Value>,
}

/// One incident.
#[derive(Debug, Default, Clone)]
pub struct IncidentView {
    /// Incident id.
    pub incident: String,
    /// Sort key: the newest trigger time its sidecars give, else when it changed.
    pub newest_ns: i64,
    /// Its hosts, by name.
    pub hosts: Vec<HostView>,
}

impl IncidentView {
    /// Every host's sidecar is there: nothing more will arrive (a cache may keep it).
    pub fn complete(&self) -> bool {
        !self.hosts.is_empty() && self.hosts.iter().all(|h| h.sidecar.is_some())
    }

    /// The trigger names its sidecars give.
    pub fn triggers(&self) -> impl Iterator<Item = &str> {
        self.hosts.iter().flat_map(|h| {
            h.sidecar
                .as_ref()
                .and_then(|s| s.get("triggers"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
        })
    }
}

/// What a request asks for: `?host=…&trigger=…&q=…&page=N`.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
pub struct Filter {
    /// A host that took part.
    #[serde(default)]
    pub host: Option<String>,
    /// A trigger that fired.
    #[serde(default)]
    pub trigger: Option<String>,
    /// Text in the incident id, a host name or a trigger line.
    #[serde(default)]
    pub q: Option<String>,
    /// 1-based page.
    #[serde(default)]
    pub page: Option<usize>,
}

impl Filter {
    fn wanted(v: &Option<String>) -> Option<&str> {
        v.as_deref().map(str::trim).filter(|s| !s.is_empty())
    }

    /// Whether it asks for anything beyond a page.
    pub fn is_empty(&self) -> bool {
        Filter::wanted(&self.host).is_none()
            && Filter::wanted(&self.trigger).is_none()
            && Filter::wanted(&self.q).is_none()
    }

    /// Whether incident `id` matches, knowing `detail` when it is at hand.
    ///
    /// An incident id is `<time>-<host>-<trigger>` (the host that captured
    /// first, the trigger that fired), so an id alone answers for that host
    /// and trigger; the detail adds every host, trigger name and trigger line.
    pub fn matches(&self, id: &str, detail: Option<&IncidentView>) -> bool {
        let lower = |s: &str| s.to_ascii_lowercase();
        let id_l = lower(id);
        if let Some(host) = Filter::wanted(&self.host) {
            let h = lower(host);
            let by_id = id_l.contains(&format!("-{h}-"));
            let by_detail =
                detail.is_some_and(|d| d.hosts.iter().any(|x| x.host.eq_ignore_ascii_case(host)));
            if !(by_id || by_detail) {
                return false;
            }
        }
        if let Some(trigger) = Filter::wanted(&self.trigger) {
            let t = lower(trigger);
            // The trigger ends the id, before a `-N` that keeps ids unique.
            let stem = id_l.trim_end_matches(|c: char| c.is_ascii_digit());
            let stem = match stem.strip_suffix('-') {
                Some(s) if stem.len() < id_l.len() => s,
                _ => id_l.as_str(),
            };
            let by_id = id_l.ends_with(&format!("-{t}")) || stem.ends_with(&format!("-{t}"));
            let by_detail = detail.is_some_and(|d| d.triggers().any(|x| lower(x) == t));
            if !(by_id || by_detail) {
                return false;
            }
        }
        if let Some(q) = Filter::wanted(&self.q) {
            let q = lower(q);
            let in_detail = detail.is_some_and(|d| {
                d.hosts.iter().any(|h| {
                    lower(&h.host).contains(&q)
                        || h.sidecar
                            .as_ref()
                            .and_then(|s| s.get("triggers"))
                            .and_then(Value::as_array)
                            .is_some_and(|ts| {
                                ts.iter().any(|t| {
                                    ["line", "name", "class"].iter().any(|k| {
                                        t.get(*k)
                                            .and_then(Value::as_str)
                                            .is_some_and(|v| lower(v).contains(&q))
                                    })
                                })
                            })
                })
            });
            if !(id_l.contains(&q) || in_detail) {
                return false;
            }
        }
        true
    }
}

/// One page of a selection.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items on this page.
    pub items: Vec<T>,
    /// Items in the store.
    pub total: usize,
    /// Items the filter lets through.
    pub matching: usize,
    /// This page, 1-based (clamped to the last).
    pub page: usize,
    /// Pages of matching items (at least 1).
    pub pages: usize,
}

/// Page `page` (1-based, clamped) of the `items` that `keep` lets through,
/// `per_page` at a time, in the order given.
pub fn select<T: Clone>(
    items: &[T],
    page: usize,
    per_page: usize,
    mut keep: impl FnMut(&T) -> bool,
) -> Page<T> {
    let matching: Vec<&T> = items.iter().filter(|i| keep(i)).collect();
    let pages = matching.len().div_ceil(per_page.max(1)).max(1);
    let page = page.clamp(1, pages);
    Page {
        items: matching
            .iter()
            .skip((page - 1) * per_page)
            .take(per_page)
            .map(|i| (*i).clone())
            .collect(),
        total: items.len(),
        matching: matching.len(),
        page,
        pages,
    }
}

/// Read a JSON document, `None` when absent or not JSON.
pub fn parse_json(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice(bytes).ok()
}

fn mtime_ns(path: &FsPath) -> i64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn visible_entries(dir: &FsPath) -> Vec<(String, std::fs::Metadata)> {
    let mut v: Vec<(String, std::fs::Metadata)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_str()?.to_string();
                    if !safe_name(&name) {
                        return None;
                    }
                    Some((name, e.metadata().ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The newest trigger time of a host's sidecar.
pub fn trigger_ns(sidecar: Option<&Value>) -> Option<i64> {
    sidecar?
        .pointer("/triggers/0/at_ns")
        .and_then(Value::as_i64)
}

/// Every incident under a collector directory (`<incident>/<host>/<file>`),
/// newest first (by trigger time, else the directory's time).
pub fn scan_dir(root: &FsPath) -> Vec<IncidentView> {
    let mut incidents = Vec::new();
    for (incident, meta) in visible_entries(root) {
        if !meta.is_dir() {
            continue;
        }
        let idir = root.join(&incident);
        let mut view = IncidentView {
            incident: incident.clone(),
            newest_ns: 0,
            hosts: Vec::new(),
        };
        let mut newest: Option<i64> = None;
        for (host, hmeta) in visible_entries(&idir) {
            if !hmeta.is_dir() {
                continue;
            }
            let hdir = idir.join(&host);
            let files: Vec<(String, u64)> = visible_entries(&hdir)
                .into_iter()
                .filter(|(_, m)| m.is_file())
                .map(|(n, m)| (n, m.len()))
                .collect();
            let read = |name: String| {
                std::fs::read(hdir.join(name))
                    .ok()
                    .and_then(|b| parse_json(&b))
            };
            let sidecar = read(format!("{incident}.json"));
            if let Some(at) = trigger_ns(sidecar.as_ref()) {
                newest = Some(newest.map_or(at, |t| t.max(at)));
            }
            let summary = read(format!("{incident}.summary.json"));
            view.hosts.push(HostView {
                host,
                files,
                sidecar,
                summary,
            });
        }
        view.newest_ns = newest.unwrap_or_else(|| mtime_ns(&idir));
        incidents.push(view);
    }
    incidents.sort_by(|a, b| {
        b.newest_ns
            .cmp(&a.newest_ns)
            .then_with(|| b.incident.cmp(&a.incident))
    });
    incidents
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(id: &str, hosts: &[&str], trigger: &str, line: &str) -> IncidentView {
        IncidentView {
            incident: id.into(),
            newest_ns: 0,
            hosts: hosts
                .iter()
                .map(|h| HostView {
                    host: h.to_string(),
                    files: vec![],
                    sidecar: Some(
                        serde_json::json!({"triggers": [{"name": trigger, "line": line}]}),
                    ),
                    summary: None,
                })
                .collect(),
        }
    }

    #[test]
    fn filters_use_the_id_and_the_detail_when_known() {
        let id = "20261201T100000Z-node7-nccl-watchdog-timeout";
        let f = |host: &str, trigger: &str, q: &str| Filter {
            host: Some(host.into()),
            trigger: Some(trigger.into()),
            q: Some(q.into()),
            page: None,
        };
        assert!(f("node7", "", "").matches(id, None));
        assert!(!f("node8", "", "").matches(id, None));
        assert!(
            !f("node", "", "").matches(id, None),
            "whole host names only"
        );
        assert!(f("", "nccl-watchdog-timeout", "").matches(id, None));
        assert!(
            !f("", "nccl", "").matches(id, None),
            "whole trigger names only"
        );
        assert!(f("", "", "WATCHDOG").matches(id, None));
        let d = view(
            id,
            &["node7", "node8"],
            "nccl-watchdog-timeout",
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12)",
        );
        assert!(f("node8", "", "").matches(id, Some(&d)), "a fleet host");
        assert!(
            f("", "", "seqnum=12").matches(id, Some(&d)),
            "the trigger line"
        );
        assert!(!f("node9", "", "").matches(id, Some(&d)));
        assert!(f("", "nccl-watchdog-timeout", "").matches(&format!("{id}-2"), None));
        assert!(Filter::default().matches(id, None));
        assert!(Filter::default().is_empty());
        assert!(f(" ", "", "").is_empty());
    }

    #[test]
    fn pages_are_clamped_and_counted() {
        let items: Vec<u32> = (0..125).collect();
        let p = select(&items, 1, 50, |_| true);
        assert_eq!(
            (p.items.len(), p.matching, p.pages, p.page),
            (50, 125, 3, 1)
        );
        assert_eq!(
            select(&items, 3, 50, |_| true).items,
            (100..125).collect::<Vec<_>>()
        );
        assert_eq!(select(&items, 9, 50, |_| true).page, 3);
        let even = select(&items, 2, 50, |i| i % 2 == 0);
        assert_eq!((even.matching, even.pages, even.items[0]), (63, 2, 100));
        let none = select(&items, 1, 50, |_| false);
        assert_eq!((none.items.len(), none.pages, none.page), (0, 1, 1));
    }
}
