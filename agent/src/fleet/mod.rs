//! Fleet: one incident across a job's nodes, coordinated over NATS (`[fleet]`).
//!
//! When a local trigger opens a window, the agent announces it on its job's
//! subject; every agent of the job (or, with `peers = "named"`, only those that
//! own an address the line names) opens the same window, back-dated from the
//! announcement's times, under the same incident id. How the id is agreed is
//! [`ledger`]'s: one JetStream stream orders the announcements, and every agent
//! applies the same rule to the same order. What goes over the wire is
//! [`message`]'s; the NATS connection, the stream and the outbox are `link`'s;
//! what the agent does with what it reads and fires is `respond`'s.
//!
//! NATS is never in the capture path: a local trigger opens its window before
//! anything is published, and with NATS down the agent records exactly as
//! without `[fleet]`; its announcements wait in an outbox and go out, with
//! their original times, when it reconnects.

pub mod ledger;
mod link;
pub mod message;
mod respond;

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Deserializer};

use tokio::sync::mpsc::UnboundedReceiver;

use crate::recorder::{Opened, Recorder, TriggerId};
use crate::ring::Ring;
use crate::sidecar::{FleetHost, FleetReport};
use crate::window::FleetParticipants;
pub use link::{start, FleetError};
pub use message::Peers;

/// Hello again this often, so membership outlives the stream's age (an hour).
const HELLO_EVERY: std::time::Duration = std::time::Duration::from_secs(15 * 60);

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

/// One message waiting to be published.
struct Outgoing {
    /// The subject.
    subject: String,
    /// The JSON.
    payload: bytes::Bytes,
    /// `Nats-Msg-Id`: a retry after a lost ack is stored once.
    id: String,
    /// Counted as an announcement sent when acknowledged.
    announcement: bool,
}

/// Name of the trigger under which windows opened for other agents' announcements are recorded.
pub const FLEET_TRIGGER: &str = "fleet";
/// The JetStream stream every agent of every job shares (subjects `tripcap.job.>`).
pub const DEFAULT_STREAM: &str = "TRIPCAP_FLEET";

/// The `[fleet]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetConfig {
    /// NATS server URL(s): `nats://host:4222`, `tls://host:4222`; one string or a list.
    #[serde(deserialize_with = "one_or_many")]
    pub nats: Vec<String>,
    /// Token (`${ENV}` expanded).
    #[serde(default)]
    pub token: Option<String>,
    /// User name (with `password`).
    #[serde(default)]
    pub user: Option<String>,
    /// Password (`${ENV}` expanded).
    #[serde(default)]
    pub password: Option<String>,
    /// NKey seed (`${ENV}` expanded).
    #[serde(default)]
    pub nkey: Option<String>,
    /// PEM CA certificates to trust for TLS.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// The job id; default `$SLURM_JOB_ID`.
    #[serde(default)]
    pub job: Option<String>,
    /// Which announcements this agent answers: `job` (default), `named`, `both`.
    #[serde(default)]
    pub peers: Peers,
    /// This node's addresses, as lines name them (default: the capture interfaces'
    /// addresses).
    #[serde(default)]
    pub addresses: Vec<IpAddr>,
    /// The JetStream stream.
    #[serde(default = "default_stream")]
    pub stream: String,
}

fn default_stream() -> String {
    DEFAULT_STREAM.to_string()
}

fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

impl FleetConfig {
    /// A config for `url` with every default.
    pub fn new(url: impl Into<String>) -> FleetConfig {
        FleetConfig {
            nats: vec![url.into()],
            token: None,
            user: None,
            password: None,
            nkey: None,
            ca_file: None,
            job: None,
            peers: Peers::Job,
            addresses: Vec::new(),
            stream: default_stream(),
        }
    }

    /// Check what can be checked without connecting: the job (set, or from
    /// `SLURM_JOB_ID`), the URLs, the credentials' shape. One line that names the
    /// key and the fix.
    pub fn check(&self) -> Result<String, String> {
        let job = match &self.job {
            Some(j) => j.clone(),
            None => std::env::var("SLURM_JOB_ID").map_err(|_| {
                "[fleet] `job` is not set and SLURM_JOB_ID is not in the environment: set `job` (or pass --job)".to_string()
            })?,
        };
        if !message::valid_job(&job) {
            return Err(format!(
                "[fleet] `job` {job:?} cannot name a NATS subject: use letters, digits, `-` and `_` only"
            ));
        }
        if self.nats.is_empty() {
            return Err("[fleet] `nats` is empty: give the NATS server's URL, e.g. \"nats://10.0.0.1:4222\"".into());
        }
        for url in &self.nats {
            url.parse::<async_nats::ServerAddr>().map_err(|e| {
                format!("[fleet] `nats` {url:?} is not a NATS URL ({e}): write it as nats://HOST:PORT or tls://HOST:PORT")
            })?;
        }
        let methods = [
            self.token.is_some(),
            self.user.is_some(),
            self.nkey.is_some(),
        ];
        if methods.iter().filter(|m| **m).count() > 1 {
            return Err(
                "[fleet] give one credential: `token`, `user` with `password`, or `nkey`".into(),
            );
        }
        if self.user.is_some() != self.password.is_some() {
            return Err("[fleet] `user` and `password` go together: set both".into());
        }
        if self.stream.is_empty()
            || !self
                .stream
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "[fleet] `stream` {:?} is not a JetStream stream name: use letters, digits, `-` and `_`",
                self.stream
            ));
        }
        Ok(job)
    }
}

/// Counters and state of the fleet link, for `/metrics` and `/status`.
#[derive(Debug, Default)]
pub struct FleetStats {
    /// Announcements this agent published (acknowledged by the stream).
    pub sent: AtomicU64,
    /// Announcements of other agents read.
    pub received: AtomicU64,
    /// Announcements this agent captured for (opened or extended a window).
    pub joined: AtomicU64,
    /// Messages ignored: malformed, oversized, another job's, or not for this agent.
    pub ignored: AtomicU64,
    /// Whether the NATS connection is up.
    pub connected: AtomicBool,
    /// Times the connection was lost.
    pub disconnects: AtomicU64,
    /// Messages waiting in the outbox.
    pub outbox: AtomicU64,
    /// Messages dropped from a full outbox.
    pub outbox_dropped: AtomicU64,
}

impl FleetStats {
    fn add(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// The job's ledger as this agent reads it, shared with closing windows.
#[derive(Debug)]
pub struct FleetBook {
    job: String,
    ledger: Mutex<ledger::Ledger>,
}

impl FleetBook {
    /// An empty book for `job`.
    pub fn new(job: impl Into<String>) -> Arc<FleetBook> {
        Arc::new(FleetBook {
            job: job.into(),
            ledger: Mutex::new(ledger::Ledger::default()),
        })
    }

    fn with<T>(&self, f: impl FnOnce(&mut ledger::Ledger) -> T) -> T {
        let mut l = self.ledger.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut l)
    }
}

impl FleetParticipants for FleetBook {
    fn report(&self, incident: &str) -> Option<FleetReport> {
        self.with(|l| {
            let inc = l.incident(incident)?;
            let hosts = inc
                .hosts
                .iter()
                .map(|(host, p)| FleetHost {
                    host: host.clone(),
                    announced: p.announced,
                    window: p.window,
                    ring_from_ns: p.ring_from_ns,
                })
                .collect();
            Some(FleetReport {
                job: self.job.clone(),
                incident: inc.id.clone(),
                announced_by: inc.announced_by.clone(),
                announcements: inc.announcements,
                hosts,
                silent: l.silent(incident),
            })
        })
    }
}

/// The addresses of network interfaces `names` (`getifaddrs`), for a fleet whose
/// `addresses` are not configured. An RDMA device name (`mlx5_0`) has no
/// addresses of its own: its netdev's are what lines name, so configure them.
pub fn interface_addresses(names: &[String]) -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut ifap) } != 0 {
        return out;
    }
    let mut cur = ifap;
    while !cur.is_null() {
        // SAFETY: cur is a node of the list getifaddrs returned.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }.to_string_lossy();
        if !names.iter().any(|n| n == name.as_ref()) {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points at a sockaddr of its family.
        let ip = unsafe {
            match i32::from((*ifa.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    Some(IpAddr::from(u32::from_be(sa.sin_addr.s_addr).to_be_bytes()))
                }
                libc::AF_INET6 => {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    Some(IpAddr::from(sa.sin6_addr.s6_addr))
                }
                _ => None,
            }
        };
        if let Some(ip) = ip.filter(|ip| !out.contains(ip)) {
            out.push(ip);
        }
    }
    // SAFETY: ifap came from getifaddrs.
    unsafe { libc::freeifaddrs(ifap) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_checks_name_the_key_and_the_fix() {
        let mut c = FleetConfig::new("nats://127.0.0.1:4222");
        c.job = Some("a.b".into());
        assert!(c.check().unwrap_err().contains("`job` \"a.b\" cannot name"));
        c.job = Some("1234".into());
        assert_eq!(c.check(), Ok("1234".to_string()));
        c.token = Some("t".into());
        c.user = Some("u".into());
        assert!(c.check().unwrap_err().contains("give one credential"));
        c.token = None;
        assert!(c
            .check()
            .unwrap_err()
            .contains("`user` and `password` go together"));
        let mut c = FleetConfig::new("nats://[::1");
        c.job = Some("1".into());
        assert!(
            c.check().unwrap_err().contains("is not a NATS URL"),
            "{:?}",
            c.check()
        );
    }

    #[test]
    fn loopback_has_its_addresses() {
        let got = interface_addresses(&["lo".to_string()]);
        assert!(got.contains(&"127.0.0.1".parse().expect("ip")), "{got:?}");
    }
}
