//! The NATS side of the fleet: connect (a refused credential stops the start; an
//! unreachable server does not), make sure the stream exists, publish through
//! an outbox that survives outages, and read the job's stream in order.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use async_nats::{ConnectErrorKind, ConnectOptions, ServerAddr};
use futures_util::StreamExt;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use super::ledger::Verdict;
use super::message::{self, Announcement, Answer, Hello, Message, Peers, VERSION};
use super::{FleetBook, FleetConfig, FleetStats};
use crate::recorder::{Opened, Recorder, TriggerId};
use crate::ring::Ring;
use crate::sidecar::TriggerRecord;
use crate::tasks::Tasks;

/// How long the first connection attempt may take before the agent goes on
/// without NATS (and keeps trying in the background).
const FIRST_CONNECT: Duration = Duration::from_secs(3);
/// Wait for the stream's acknowledgement of a publish.
const ACK_WAIT: Duration = Duration::from_secs(3);
/// Messages the outbox holds while NATS is away; the oldest go first when full.
const OUTBOX: usize = 4096;
/// How long the stream keeps messages (a late node replays this much).
const STREAM_AGE: Duration = Duration::from_secs(3600);
/// Hello again this often, so membership outlives the stream's age.
const HELLO_EVERY: Duration = Duration::from_secs(15 * 60);

/// Why the fleet cannot start.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The configuration is wrong.
    #[error("{0}")]
    Config(String),
    /// The server refused the credentials.
    #[error("[fleet] the NATS server at {url} refused the credentials ({kind}): check `token`, `user`/`password` or `nkey` in [fleet] and the server's authorization")]
    Credentials {
        /// The server.
        url: String,
        /// What it said.
        kind: String,
    },
    /// TLS could not be set up.
    #[error("[fleet] TLS to {url} failed ({error}): check `ca_file` and the server's certificate")]
    Tls {
        /// The server.
        url: String,
        /// What failed.
        error: String,
    },
}

/// Everything the fleet link is started with.
pub struct FleetParts {
    /// `[fleet]`.
    pub config: FleetConfig,
    /// The checked job id.
    pub job: String,
    /// This agent's host name.
    pub host: String,
    /// This node's addresses.
    pub addresses: Vec<IpAddr>,
    /// The recorder windows are opened on.
    pub recorder: Arc<Recorder>,
    /// The trigger fleet windows are recorded under.
    pub trigger: TriggerId,
    /// The ring (how far back it reaches goes into answers).
    pub ring: Arc<Ring>,
    /// Packets are all newer than this: older announcements only update the ledger.
    pub started_at: i64,
    /// Captures opened by local triggers.
    pub opened: UnboundedReceiver<Opened>,
    /// The ledger, shared with closing windows.
    pub book: Arc<FleetBook>,
    /// Counters.
    pub stats: Arc<FleetStats>,
}

/// Connect and start the link's tasks on `tasks`. Errors only for what a
/// restart would not fix: refused credentials, a broken TLS setup, bad config.
pub async fn start(parts: FleetParts, tasks: &Tasks) -> Result<(), FleetError> {
    let addrs: Vec<ServerAddr> = parts
        .config
        .nats
        .iter()
        .map(|u| {
            u.parse()
                .map_err(|e| FleetError::Config(format!("[fleet] `nats` {u:?}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let url = parts.config.nats.join(", ");
    let first = options(&parts.config, &parts.stats)?
        .connection_timeout(FIRST_CONNECT)
        .connect(addrs.clone());
    let client = match tokio::time::timeout(FIRST_CONNECT * 2, first).await {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => match e.kind() {
            ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication => {
                return Err(FleetError::Credentials {
                    url,
                    kind: e.kind().to_string(),
                })
            }
            ConnectErrorKind::Tls => {
                return Err(FleetError::Tls {
                    url,
                    error: e.to_string(),
                })
            }
            // A certificate the CA does not vouch for arrives as an I/O error from the
            // handshake: no retry fixes it, so it stops the start like a bad credential.
            ConnectErrorKind::Io if is_certificate_error(&e.to_string()) => {
                return Err(FleetError::Tls {
                    url,
                    error: e.to_string(),
                })
            }
            _ => {
                tracing::warn!(nats = %url, error = %e, "fleet: NATS is unreachable; local triggers and captures go on, and the agent keeps trying to connect");
                background_connect(&parts.config, &parts.stats, addrs).await?
            }
        },
        Err(_) => {
            tracing::warn!(nats = %url, "fleet: NATS did not answer in time; local triggers and captures go on, and the agent keeps trying to connect");
            background_connect(&parts.config, &parts.stats, addrs).await?
        }
    };
    let (out_tx, out_rx) = unbounded_channel();
    let stop = tasks.stop_token().clone();
    let js = jetstream::new(client.clone());
    tasks.spawn(publish_loop(
        js.clone(),
        out_rx,
        Arc::clone(&parts.stats),
        stop.clone(),
    ));
    // What this agent reads: its job's subjects, in the stream's order (the ledger
    // needs it), and with `peers = "named"`/`"both"` the announcements that name one
    // of its addresses, from any job.
    let (in_tx, in_rx) = tokio::sync::mpsc::channel(1024);
    let stream = parts.config.stream.clone();
    let mut follows = vec![(
        format!("{}.>", message::job_prefix(&parts.job)),
        "the job's announcements".to_string(),
    )];
    if parts.config.peers != Peers::Job {
        for ip in &parts.addresses {
            follows.push((
                message::addr_subject(ip),
                format!("announcements naming {ip}"),
            ));
        }
    }
    for (filter, what) in follows {
        tasks.spawn(follow(
            js.clone(),
            stream.clone(),
            filter,
            what,
            in_tx.clone(),
            stop.clone(),
        ));
    }
    tasks.spawn(run(parts, js, client, out_tx, in_rx, stop));
    Ok(())
}

/// Read the stream's messages on `filter` in order, from the first one kept,
/// into `tx`; after an error (the server went away) resume after the last one read.
async fn follow(
    js: jetstream::Context,
    stream: String,
    filter: String,
    what: String,
    tx: tokio::sync::mpsc::Sender<(String, bytes::Bytes)>,
    stop: CancellationToken,
) {
    let mut next_seq = 1u64;
    let mut backoff = Duration::from_millis(100);
    loop {
        let messages = tokio::select! {
            _ = stop.cancelled() => return,
            m = consume_from(&js, &stream, &filter, next_seq) => m,
        };
        let messages = match messages {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(error = %e, %filter, "fleet: stream not ready; retrying");
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        backoff = Duration::from_millis(100);
        tracing::info!(%stream, from = next_seq, "fleet: following {what}");
        tokio::pin!(messages);
        loop {
            let m = tokio::select! {
                _ = stop.cancelled() => return,
                m = messages.next() => m,
            };
            match m {
                Some(Ok(m)) => {
                    if let Ok(info) = m.info() {
                        next_seq = info.stream_sequence + 1;
                    }
                    if tx
                        .send((m.subject.to_string(), m.payload.clone()))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, %filter, "fleet: stream read failed; resuming");
                    break;
                }
                None => break,
            }
        }
    }
}

/// Whether a connection error is the TLS handshake refusing the server's
/// certificate (rustls' messages: `invalid peer certificate: …`).
fn is_certificate_error(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("certificate") || m.contains("handshake")
}

/// A client that connects in the background, retrying for ever.
async fn background_connect(
    config: &FleetConfig,
    stats: &Arc<FleetStats>,
    addrs: Vec<ServerAddr>,
) -> Result<async_nats::Client, FleetError> {
    options(config, stats)?
        .retry_on_initial_connect()
        .connect(addrs)
        .await
        .map_err(|e| FleetError::Config(format!("[fleet] cannot set up the NATS client: {e}")))
}

/// Connection options: credentials (`${ENV}` expanded), TLS, reconnects for
/// ever with backoff, and connection events into the log and counters.
fn options(config: &FleetConfig, stats: &Arc<FleetStats>) -> Result<ConnectOptions, FleetError> {
    let env = |v: &Option<String>, what: &str| {
        v.as_deref()
            .map(|t| crate::auth::expand_env(t, what))
            .transpose()
            .map_err(|e| FleetError::Config(format!("[fleet] {e}")))
    };
    let mut o = ConnectOptions::new()
        .name("tripcap")
        .max_reconnects(None)
        .reconnect_delay_callback(|attempts| {
            let ms = 100u64.saturating_mul(1 << attempts.min(6) as u64);
            Duration::from_millis(ms.min(5000))
        });
    if let Some(t) = env(&config.token, "`token`")? {
        o = o.token(t);
    }
    if let (Some(u), Some(p)) = (&config.user, env(&config.password, "`password`")?) {
        o = o.user_and_password(u.clone(), p);
    }
    if let Some(seed) = env(&config.nkey, "`nkey`")? {
        o = o.nkey(seed);
    }
    if let Some(ca) = &config.ca_file {
        if !ca.is_file() {
            return Err(FleetError::Config(format!(
                "[fleet] `ca_file` {} is not a readable file: point it at the PEM of the CA that signed the NATS server's certificate",
                ca.display()
            )));
        }
        o = o.add_root_certificates(ca.clone()).require_tls(true);
    }
    let stats = Arc::clone(stats);
    Ok(o.event_callback(move |event| {
        let stats = Arc::clone(&stats);
        async move {
            match event {
                async_nats::Event::Connected => {
                    stats.connected.store(true, Ordering::Relaxed);
                    tracing::info!("fleet: connected to NATS");
                }
                async_nats::Event::Disconnected => {
                    stats.connected.store(false, Ordering::Relaxed);
                    super::FleetStats::add(&stats.disconnects);
                    tracing::warn!("fleet: disconnected from NATS; local capture goes on, reconnecting with backoff");
                }
                other => tracing::debug!(event = %other, "fleet: NATS event"),
            }
        }
    }))
}

/// One message waiting to be published.
struct Outgoing {
    subject: String,
    payload: bytes::Bytes,
    /// `Nats-Msg-Id`: a retry after a lost ack is stored once.
    id: String,
    /// Counted as an announcement sent when acknowledged.
    announcement: bool,
}

/// Publish the outbox in order, each until the stream acknowledges it; on
/// failure wait (backoff) and try the same message again.
async fn publish_loop(
    js: jetstream::Context,
    mut rx: UnboundedReceiver<Outgoing>,
    stats: Arc<FleetStats>,
    stop: CancellationToken,
) {
    let mut queue: VecDeque<Outgoing> = VecDeque::new();
    let mut backoff = Duration::from_millis(100);
    loop {
        while let Ok(m) = rx.try_recv() {
            queue.push_back(m);
        }
        while queue.len() > OUTBOX {
            queue.pop_front();
            super::FleetStats::add(&stats.outbox_dropped);
        }
        stats.outbox.store(queue.len() as u64, Ordering::Relaxed);
        let Some(m) = queue.front() else {
            tokio::select! {
                _ = stop.cancelled() => return,
                m = rx.recv() => match m {
                    Some(m) => { queue.push_back(m); continue; }
                    None => return,
                },
            }
        };
        let publish = jetstream::message::PublishMessage::build()
            .payload(m.payload.clone())
            .message_id(&m.id);
        let sent = async {
            let ack = js.send_publish(m.subject.clone(), publish).await?;
            ack.await.map_err(async_nats::Error::from)?;
            Ok::<(), async_nats::Error>(())
        };
        let result = tokio::select! {
            _ = stop.cancelled() => return,
            r = tokio::time::timeout(ACK_WAIT, sent) => r,
        };
        match result {
            Ok(Ok(())) => {
                if m.announcement {
                    super::FleetStats::add(&stats.sent);
                }
                queue.pop_front();
                backoff = Duration::from_millis(100);
            }
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "fleet: publish failed; retrying");
                wait(&stop, &mut backoff).await;
            }
            Err(_) => wait(&stop, &mut backoff).await,
        }
    }
}

async fn wait(stop: &CancellationToken, backoff: &mut Duration) {
    tokio::select! {
        _ = stop.cancelled() => {}
        _ = tokio::time::sleep(*backoff) => {}
    }
    *backoff = (*backoff * 2).min(Duration::from_secs(5));
}

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

    fn answer(&mut self, incident: &str, window: [i64; 2]) {
        let job = self.parts.job.clone();
        self.answer_to(&job, incident, window);
    }

    /// Answer incident `incident` of `job` (ours, or the job of an announcement
    /// that named our address), once.
    fn answer_to(&mut self, job: &str, incident: &str, window: [i64; 2]) {
        if self.answered.iter().any(|i| i == incident) {
            return;
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
                if !a.peers.is_empty() && !self.answered.iter().any(|i| *i == id) {
                    self.tell_named(a, &id);
                }
                self.answer(&id, window);
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
            Ok(Some(j)) => {
                super::FleetStats::add(&stats.joined);
                self.answer_to(job, id, j.window);
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
async fn run(
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

/// Ensure the stream and read `filter` from stream sequence `seq` on, in order.
async fn consume_from(
    js: &jetstream::Context,
    name: &str,
    filter: &str,
    seq: u64,
) -> Result<consumer::pull::Ordered, async_nats::Error> {
    let stream = js
        .get_or_create_stream(stream::Config {
            name: name.to_string(),
            subjects: vec![
                "tripcap.job.>".to_string(),
                format!("{}>", message::ADDR_PREFIX),
            ],
            max_age: STREAM_AGE,
            duplicate_window: Duration::from_secs(120),
            max_message_size: i32::try_from(message::MAX_MESSAGE).unwrap_or(i32::MAX),
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await?;
    let consumer = stream
        .create_consumer(consumer::pull::OrderedConfig {
            filter_subject: filter.to_string(),
            deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                start_sequence: seq,
            },
            ..Default::default()
        })
        .await?;
    Ok(consumer.messages().await?)
}
