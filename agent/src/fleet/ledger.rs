//! How a job's agents agree on one incident id per failure, without talking to
//! each other: pure, no I/O.
//!
//! Every announcement goes into one JetStream stream, which gives them a single
//! order. Each agent reads the whole stream of its job in that order and feeds it
//! to a [`Ledger`]; the ledger decides with nothing but what came before, so every
//! agent decides the same:
//! - an announcement whose asked window overlaps an incident's window **joins**
//!   it (the incident's end grows to the announcement's, bounded by the first
//!   announcer's `max_window`, the rule a single agent uses to merge windows);
//! - otherwise it **starts** an incident whose id is the one it proposed.
//!
//! The first announcement of an overlapping set wins, whichever agent reads it
//! and whenever it does (a node that reconnects late replays the same stream).
//! The ledger also keeps who took part: members (hellos), and per incident the
//! hosts that announced or answered, with their windows.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::IpAddr;

use super::message::{Announcement, Answer, Hello, Peers};

/// Incidents remembered; older ones are forgotten (they cannot overlap a new
/// announcement unless it asks for a window an hour old).
pub const MAX_INCIDENTS: usize = 1024;
/// Members remembered.
pub const MAX_MEMBERS: usize = 4096;

/// What the ledger decided for an announcement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It starts incident `id` (its own proposal).
    Started {
        /// The incident id.
        id: String,
    },
    /// It joins earlier incident `id`, whose window is now `window`.
    Joined {
        /// The incident id.
        id: String,
        /// The incident's window after the join.
        window: [i64; 2],
    },
}

impl Verdict {
    /// The agreed id.
    pub fn id(&self) -> &str {
        match self {
            Verdict::Started { id } | Verdict::Joined { id, .. } => id,
        }
    }
}

/// One incident of the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incident {
    /// The agreed id.
    pub id: String,
    /// Its window: the union of the announcements that joined it.
    pub window: [i64; 2],
    /// The first announcer.
    pub announced_by: String,
    /// The bound on its length (the first announcer's `max_window`).
    pub max_window_ns: i64,
    /// Announcements merged into it.
    pub announcements: u64,
    /// Hosts that announced into it, or answered it, with the window each captures.
    pub hosts: BTreeMap<String, Participant>,
    /// Addresses the announcements named.
    pub named: BTreeSet<IpAddr>,
}

/// A host that captures for an incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Participant {
    /// The window it said it captures (its latest answer), if it answered.
    pub window: Option<[i64; 2]>,
    /// How far back its ring reached then.
    pub ring_from_ns: Option<i64>,
    /// It announced a trigger into this incident.
    pub announced: bool,
}

/// A member of the job, as its hello said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its addresses.
    pub addresses: Vec<IpAddr>,
    /// Which announcements it answers.
    pub peers: Peers,
}

/// The job's incidents and members, in stream order.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    incidents: VecDeque<Incident>,
    members: BTreeMap<String, Member>,
}

impl Ledger {
    /// Apply an announcement (in stream order).
    pub fn announce(&mut self, a: &Announcement) -> Verdict {
        let found = self
            .incidents
            .iter_mut()
            .find(|i| a.asked[0] <= i.window[1] && a.asked[1] >= i.window[0]);
        let verdict = match found {
            Some(inc) => {
                let cap = inc.window[0].saturating_add(inc.max_window_ns);
                inc.window[1] = inc.window[1].max(a.asked[1].min(cap));
                inc.announcements += 1;
                inc.hosts.entry(a.host.clone()).or_default().announced = true;
                inc.named.extend(a.peers.iter().copied());
                Verdict::Joined {
                    id: inc.id.clone(),
                    window: inc.window,
                }
            }
            None => {
                let mut hosts = BTreeMap::new();
                hosts.insert(
                    a.host.clone(),
                    Participant {
                        announced: true,
                        ..Participant::default()
                    },
                );
                self.incidents.push_back(Incident {
                    id: a.incident.clone(),
                    window: [a.asked[0], a.asked[1].max(a.asked[0])],
                    announced_by: a.host.clone(),
                    max_window_ns: a.max_window_ns.max(0),
                    announcements: 1,
                    hosts,
                    named: a.peers.iter().copied().collect(),
                });
                while self.incidents.len() > MAX_INCIDENTS {
                    self.incidents.pop_front();
                }
                Verdict::Started {
                    id: a.incident.clone(),
                }
            }
        };
        // A member announcing is a member, hello or not.
        if !self.members.contains_key(&a.host) {
            self.hello_member(&a.host, Vec::new(), Peers::Job);
        }
        verdict
    }

    /// Apply an answer.
    pub fn answer(&mut self, a: &Answer) {
        if let Some(inc) = self.incidents.iter_mut().find(|i| i.id == a.incident) {
            let p = inc.hosts.entry(a.host.clone()).or_default();
            p.window = Some(a.window);
            p.ring_from_ns = a.ring_from_ns;
        }
        // Not a member on that account: an agent of another job that owns a
        // named address answers too, and must not be asked for the job's next incident.
    }

    /// Apply a hello (or bye).
    pub fn hello(&mut self, h: &Hello) {
        if h.bye {
            self.members.remove(&h.host);
        } else {
            self.hello_member(&h.host, h.addresses.clone(), h.peers);
        }
    }

    fn hello_member(&mut self, host: &str, addresses: Vec<IpAddr>, peers: Peers) {
        if self.members.len() >= MAX_MEMBERS && !self.members.contains_key(host) {
            return;
        }
        self.members
            .insert(host.to_string(), Member { addresses, peers });
    }

    /// The incident `id`, while remembered.
    pub fn incident(&self, id: &str) -> Option<&Incident> {
        self.incidents.iter().find(|i| i.id == id)
    }

    /// The members, by host.
    pub fn members(&self) -> &BTreeMap<String, Member> {
        &self.members
    }

    /// The members expected to capture for incident `id`: those whose mode
    /// answers it (every member for `job`/`both`; for `named`, those owning an
    /// address it names), plus every host that took part.
    pub fn asked(&self, id: &str) -> BTreeSet<String> {
        let Some(inc) = self.incident(id) else {
            return BTreeSet::new();
        };
        let mut out: BTreeSet<String> = inc.hosts.keys().cloned().collect();
        for (host, m) in &self.members {
            let named = m.addresses.iter().any(|a| inc.named.contains(a));
            if m.peers != Peers::Named || named {
                out.insert(host.clone());
            }
        }
        out
    }

    /// Of [`Ledger::asked`], the hosts that have neither answered nor announced.
    pub fn silent(&self, id: &str) -> Vec<String> {
        let Some(inc) = self.incident(id) else {
            return Vec::new();
        };
        self.asked(id)
            .into_iter()
            .filter(|h| inc.hosts.get(h).is_none_or(|p| p.window.is_none()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::message::VERSION;

    fn ann(host: &str, asked: [i64; 2]) -> Announcement {
        Announcement {
            v: VERSION,
            job: "j".into(),
            host: host.into(),
            incident: format!("{}-{host}", asked[0]),
            trigger: "t".into(),
            class: "c".into(),
            line: None,
            at_ns: asked[0] + 30,
            onset_ns: None,
            pre_ns: 30,
            post_ns: 30,
            asked,
            max_window_ns: 600,
            peers: Vec::new(),
        }
    }

    #[test]
    fn first_of_an_overlapping_set_wins_and_later_ones_join() {
        let mut l = Ledger::default();
        assert_eq!(
            l.announce(&ann("a", [0, 60])),
            Verdict::Started { id: "0-a".into() }
        );
        assert_eq!(
            l.announce(&ann("b", [10, 70])),
            Verdict::Joined {
                id: "0-a".into(),
                window: [0, 70]
            }
        );
        // Apart in time: a new incident.
        assert_eq!(
            l.announce(&ann("c", [1000, 1060])),
            Verdict::Started {
                id: "1000-c".into()
            }
        );
        // Growth is bounded by the first announcer's max_window.
        assert_eq!(
            l.announce(&ann("d", [50, 5000])),
            Verdict::Joined {
                id: "0-a".into(),
                window: [0, 600]
            }
        );
    }

    /// Model test: agents that read the same stream, whatever the prefix they
    /// had already read when they started, agree on every id.
    #[test]
    fn every_reader_of_the_same_order_agrees() {
        // A storm: 200 hosts within one "second" (100 units), then a second failure.
        let mut stream: Vec<Announcement> = (0..200)
            .map(|i| ann(&format!("h{i}"), [i * 7 % 100, i * 7 % 100 + 60]))
            .collect();
        stream.extend((0..50).map(|i| ann(&format!("h{i}"), [5000 + i, 5060 + i])));
        let decide = |from: &[Announcement]| {
            let mut l = Ledger::default();
            from.iter()
                .map(|a| l.announce(a).id().to_string())
                .collect::<Vec<_>>()
        };
        let all = decide(&stream);
        let ids: BTreeSet<&String> = all.iter().collect();
        assert_eq!(ids.len(), 2, "one incident per failure: {ids:?}");
        assert_eq!(all[0], "0-h0");
        assert_eq!(all[200], "5000-h0");
        // The same order again gives the same answers.
        assert_eq!(decide(&stream), all);
    }

    #[test]
    fn who_took_part_and_who_is_silent() {
        let mut l = Ledger::default();
        let hello = |host: &str, peers: Peers, addr: &str| Hello {
            v: VERSION,
            job: "j".into(),
            host: host.into(),
            addresses: vec![addr.parse().expect("ip")],
            peers,
            bye: false,
        };
        l.hello(&hello("a", Peers::Job, "10.0.0.1"));
        l.hello(&hello("b", Peers::Job, "10.0.0.2"));
        l.hello(&hello("c", Peers::Named, "10.0.0.3"));
        l.hello(&hello("d", Peers::Named, "10.0.0.4"));
        l.hello(&hello("e", Peers::Job, "10.0.0.5"));
        let mut a = ann("a", [0, 60]);
        a.peers = vec!["10.0.0.3".parse().expect("ip")];
        let id = l.announce(&a).id().to_string();
        for host in ["a", "c"] {
            l.answer(&Answer {
                v: VERSION,
                job: "j".into(),
                host: host.into(),
                incident: id.clone(),
                window: [0, 60],
                ring_from_ns: Some(-5),
            });
        }
        // d is not named: not asked. b and e are job members that did not answer.
        let asked: Vec<String> = l.asked(&id).into_iter().collect();
        assert_eq!(asked, ["a", "b", "c", "e"]);
        assert_eq!(l.silent(&id), ["b", "e"]);
        // A clean stop says bye: no longer asked.
        let mut bye = hello("e", Peers::Job, "10.0.0.5");
        bye.bye = true;
        l.hello(&bye);
        assert_eq!(l.silent(&id), ["b"]);
    }
}
