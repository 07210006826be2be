//! The NATS side of the fleet: connect (a refused credential stops the start; an
//! unreachable server does not), make sure the stream exists, publish through
//! an outbox that survives outages, and read the job's stream in order.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use async_nats::{ConnectErrorKind, ConnectOptions, ServerAddr};
use futures_util::StreamExt;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio_util::sync::CancellationToken;

use super::message::{self, Peers};
use super::respond;
use super::{FleetConfig, FleetParts, FleetStats, Outgoing};
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
    tasks.spawn(respond::run(parts, js, client, out_tx, in_rx, stop));
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
