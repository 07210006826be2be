//! What an agent does with what it reads and what it fires: announce its own
//! captures, feed the job's messages to the ledger in order, and capture for the
//! announcements that concern it (answering once per incident).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::ledger::Verdict;
use super::message::{self, Announcement, Answer, Hello, Message, Peers, VERSION};
use super::{FleetParts, Outgoing, HELLO_EVERY};
use crate::recorder::Opened;
use crate::sidecar::TriggerRecord;

/// What the reading loop needs to act on messages.
struct Reader {
    parts: FleetParts,
    out: UnboundedSender<Outgoing>,
    prefix: String,
    seq: u64,
    warned_malformed: bool,
    /// Incidents this agent has answered (once each: a storm of announcements
    /// joining one incident costs one answer per agent), newest last.
    answered: VecDeque<String>,
}

impl Reader {
    fn send<T: serde::Serialize>(&mut self, kind: &str, body: &T, announcement: bool) {
        let subject = format!("{}.{kind}", self.prefix);
        self.send_to(subject, body, announcement);
    }

    fn send_to<T: serde::Serialize>(&mut self, subject: String, body: &T, announcement: bool) {
        let Ok(payload) = serde_json::to_vec(body) else {
            return;
        };
        self.seq += 1;
        let _ = self.out.send(Outgoing {
            subject,
            payload: payload.into(),
            id: format!("{}/{}/{}", self.parts.host, self.parts.started_at, self.seq),
            announcement,
        });
    }

    fn hello(&mut self, bye: bool) {
        let h = Hello {
            v: VERSION,
            job: self.parts.job.clone(),
            host: self.parts.host.clone(),
            addresses: self.parts.addresses.clone(),
            peers: self.parts.config.peers,
            bye,
        };
        self.send("hello", &h, false);
    }

    /// A local trigger opened a capture: announce it.
    fn announce(&mut self, o: Opened) {
        let nanos = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        let r = &o.record;
        let a = Announcement {
            v: VERSION,
            job: self.parts.job.clone(),
            host: self.parts.host.clone(),
            incident: o.incident,
            trigger: r.name.clone(),
            class: r.class.clone(),
            line: r.line.as_deref().map(message::cut_line),
            at_ns: r.at_ns,
            onset_ns: r.onset_ns,
            pre_ns: nanos(o.pre),
            post_ns: nanos(o.post),
            asked: r.asked,
            max_window_ns: nanos(o.max_window),
            peers: message::peer_addresses(&r.groups),
        };
        self.send("announce", &a, true);
    }

    fn answer(&mut self, incident: &str, window: [i64; 2]) -> bool {
        let job = self.parts.job.clone();
        self.answer_to(&job, incident, window)
    }

    /// Answer incident `incident` of `job` (ours, or the job of an announcement
    /// that named our address), once: false when it was answered before.
    fn answer_to(&mut self, job: &str, incident: &str, window: [i64; 2]) -> bool {
        if self.answered.iter().any(|i| i == incident) {
            return false;
        }
        self.answered.push_back(incident.to_string());
        if self.answered.len() > super::ledger::MAX_INCIDENTS {
            self.answered.pop_front();
        }
        let a = Answer {
            v: VERSION,
            job: job.to_string(),
            host: self.parts.host.clone(),
            incident: incident.to_string(),
            window,
            ring_from_ns: Some(self.parts.ring.span().reaches_back_to),
        };
        let subject = format!("{}.answer", message::job_prefix(job));
        self.send_to(subject, &a, false);
        true
    }

    /// Tell the owners of the addresses `a` names, whatever their job, under the
    /// agreed id `id`.
    fn tell_named(&mut self, a: &Announcement, id: &str) {
        let mut named = a.clone();
        named.incident = id.to_string();
        for ip in &a.peers {
            self.send_to(message::addr_subject(ip), &named, false);
        }
    }

    fn rejected(&mut self, subject: &str, e: &message::Rejected) {
        super::FleetStats::add(&self.parts.stats.ignored);
        if !self.warned_malformed {
            self.warned_malformed = true;
            tracing::warn!(subject, error = %e, "fleet: ignored a message (further ones are only counted in /metrics)");
        }
    }

    /// One message off the stream, in order.
    fn read(&mut self, subject: &str, payload: &[u8]) {
        if subject.starts_with(message::ADDR_PREFIX) {
            match message::parse_named(payload) {
                Ok(a) => self.act_named(&a),
                Err(e) => self.rejected(subject, &e),
            }
            return;
        }
        let msg = match message::parse(&self.parts.job, subject, payload) {
            Ok(m) => m,
            Err(e) => {
                self.rejected(subject, &e);
                return;
            }
        };
        match msg {
            Message::Hello(h) => self.parts.book.with(|l| l.hello(&h)),
            Message::Answer(a) => self.parts.book.with(|l| l.answer(&a)),
            Message::Announce(a) => {
                let verdict = self.parts.book.with(|l| l.announce(&a));
                self.act(&a, &verdict);
            }
        }
    }

    /// Capture for announcement `a` when it concerns this agent.
    fn act(&mut self, a: &Announcement, verdict: &Verdict) {
        let stats = Arc::clone(&self.parts.stats);
        let id = verdict.id().to_string();
        if a.host == self.parts.host {
            // Our own announcement: our window takes the agreed id, and the owners
            // of the addresses it names hear of it (once).
            if let Some(window) = self.parts.recorder.tie(&a.incident, &id) {
                if self.answer(&id, window) && !a.peers.is_empty() {
                    self.tell_named(a, &id);
                }
            }
            return;
        }
        super::FleetStats::add(&stats.received);
        let asked = match verdict {
            Verdict::Started { .. } => a.asked,
            Verdict::Joined { window, .. } => *window,
        };
        if asked[1] < self.parts.started_at {
            return; // before this agent started: nothing of it is in the ring
        }
        if !self.parts.config.peers.answers(a, &self.parts.addresses) {
            super::FleetStats::add(&stats.ignored);
            return;
        }
        let job = self.parts.job.clone();
        self.capture(&job, a, &id, asked);
    }

    /// An announcement of another job that names one of our addresses (it carries
    /// the id its job agreed on): capture it, and answer on that job's subject.
    fn act_named(&mut self, a: &Announcement) {
        if a.job == self.parts.job {
            return; // our job's stream carries it, in order
        }
        if !a.peers.iter().any(|p| self.parts.addresses.contains(p)) {
            super::FleetStats::add(&self.parts.stats.ignored);
            return;
        }
        super::FleetStats::add(&self.parts.stats.received);
        if a.asked[1] < self.parts.started_at {
            return;
        }
        let (job, id) = (a.job.clone(), a.incident.clone());
        self.capture(&job, a, &id, a.asked);
    }

    /// Open (or extend) the window `asked` for incident `id` of `job`, and answer.
    fn capture(&mut self, job: &str, a: &Announcement, id: &str, asked: [i64; 2]) {
        let stats = Arc::clone(&self.parts.stats);
        let record = TriggerRecord {
            name: super::FLEET_TRIGGER.to_string(),
            class: a.class.clone(),
            at_ns: a.at_ns,
            at: crate::clock::rfc3339(a.at_ns),
            onset_ns: a.onset_ns,
            source: Some(format!("fleet: {} on {}", a.trigger, a.host)),
            line_no: None,
            line: a.line.clone(),
            groups: Vec::new(),
            asked,
        };
        match self
            .parts
            .recorder
            .join(self.parts.trigger, id, asked, record)
        {
            Ok(Some(window)) => {
                super::FleetStats::add(&stats.joined);
                self.answer_to(job, id, window);
            }
            Ok(None) => {}
            Err(e) => {
                tracing::error!(incident = %id, error = %e, "fleet: cannot open a capture for the incident")
            }
        }
    }
}

/// Say hello, then act on what the followers read while announcing local
/// captures; on stop, say bye.
pub(super) async fn run(
    parts: FleetParts,
    js: jetstream::Context,
    client: async_nats::Client,
    out: UnboundedSender<Outgoing>,
    mut incoming: tokio::sync::mpsc::Receiver<(String, bytes::Bytes)>,
    stop: CancellationToken,
) {
    let prefix = message::job_prefix(&parts.job);
    let mut reader = Reader {
        parts,
        out,
        prefix: prefix.clone(),
        seq: 0,
        warned_malformed: false,
        answered: VecDeque::new(),
    };
    reader.hello(false);
    let mut hello_at = tokio::time::Instant::now() + HELLO_EVERY;
    let mut was_connected = true;
    loop {
        let connected = client.connection_state() == async_nats::connection::State::Connected;
        if connected && !was_connected {
            reader.hello(false); // membership after an outage
        }
        was_connected = connected;
        tokio::select! {
            _ = stop.cancelled() => break,
            o = reader.parts.opened.recv() => if let Some(o) = o { reader.announce(o) },
            _ = tokio::time::sleep_until(hello_at) => {
                reader.hello(false);
                hello_at = tokio::time::Instant::now() + HELLO_EVERY;
            }
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            m = incoming.recv() => match m {
                Some((subject, payload)) => reader.read(&subject, &payload),
                None => break,
            },
        }
    }
    // A clean stop: not asked from now on. Best effort, bounded.
    if let Ok(payload) = serde_json::to_vec(&Hello {
        v: VERSION,
        job: reader.parts.job.clone(),
        host: reader.parts.host.clone(),
        addresses: Vec::new(),
        peers: Peers::Job,
        bye: true,
    }) {
        let subject = format!("{prefix}.hello");
        let bye = async {
            if let Ok(ack) = js.publish(subject, payload.into()).await {
                let _ = ack.await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), bye).await;
    }
}
