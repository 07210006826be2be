//! What agents say to each other over NATS: small JSON messages, one kind per
//! subject, checked on the way in (size, shape, job) before anything acts on them.
//!
//! | subject | message | sent when |
//! | --- | --- | --- |
//! | `tripcap.job.<job>.hello` | [`Hello`] | the agent connects (and reconnects), and `bye` on a clean stop |
//! | `tripcap.job.<job>.announce` | [`Announcement`] | a local trigger opens a window |
//! | `tripcap.job.<job>.answer` | [`Answer`] | the agent captures for a fleet incident |
//!
//! All three go into one JetStream stream, so every agent of a job reads them
//! in the same order (see [`super::ledger`]).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// Messages larger than this are ignored (a real one is well under 8 KiB: the
/// line is cut at [`MAX_LINE`]).
pub const MAX_MESSAGE: usize = 64 << 10;
/// Bytes of the trigger line carried in an announcement.
pub const MAX_LINE: usize = 4096;
/// Peer addresses carried in an announcement at most.
pub const MAX_PEERS: usize = 32;

/// Version tag of every message.
pub const VERSION: u32 = 1;

/// Which announcements an agent answers (`[fleet] peers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Peers {
    /// Every announcement of its job.
    #[default]
    Job,
    /// Only announcements whose evidence names one of its addresses.
    Named,
    /// Either.
    Both,
}

impl Peers {
    /// Whether an agent in this mode answers `a`, given its own `addresses`.
    pub fn answers(self, a: &Announcement, addresses: &[IpAddr]) -> bool {
        let named = a.peers.iter().any(|p| addresses.contains(p));
        match self {
            Peers::Job | Peers::Both => true,
            Peers::Named => named,
        }
    }
}

/// "I am part of this job" (or, with `bye`, no longer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// [`VERSION`].
    pub v: u32,
    /// The job.
    pub job: String,
    /// The agent's host name.
    pub host: String,
    /// Its addresses (what a line's evidence may name).
    #[serde(default)]
    pub addresses: Vec<IpAddr>,
    /// Which announcements it answers.
    #[serde(default)]
    pub peers: Peers,
    /// True when the agent is stopping cleanly: it is not asked from now on.
    #[serde(default)]
    pub bye: bool,
}

/// "A trigger fired here: capture this window."
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Announcement {
    /// [`VERSION`].
    pub v: u32,
    /// The job.
    pub job: String,
    /// The announcing host.
    pub host: String,
    /// The incident id it proposes (its own capture's name); the ledger decides
    /// whether it starts an incident or joins an earlier one.
    pub incident: String,
    /// The trigger.
    pub trigger: String,
    /// Its class.
    pub class: String,
    /// The line, cut at [`MAX_LINE`] bytes.
    #[serde(default)]
    pub line: Option<String>,
    /// When the trigger fired (capture clock, ns since the epoch).
    pub at_ns: i64,
    /// When the failure began, if the line said.
    #[serde(default)]
    pub onset_ns: Option<i64>,
    /// The trigger's `pre` and `post` (ns).
    pub pre_ns: i64,
    /// See `pre_ns`.
    pub post_ns: i64,
    /// The window asked for: [onset - pre, at + post].
    pub asked: [i64; 2],
    /// The announcer's `max_window` (ns): the bound on how far later
    /// announcements may extend the incident, the same on every agent.
    pub max_window_ns: i64,
    /// Addresses the line's evidence names (the `peer` group).
    #[serde(default)]
    pub peers: Vec<IpAddr>,
}

/// "I capture for this incident, over this window."
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// [`VERSION`].
    pub v: u32,
    /// The job.
    pub job: String,
    /// The answering host.
    pub host: String,
    /// The agreed incident id.
    pub incident: String,
    /// The window it captures: [start, end] (ns).
    pub window: [i64; 2],
    /// How far back its ring reached when it answered (ns); packets before it are gone.
    pub ring_from_ns: Option<i64>,
}

/// One message off the stream, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A member says hello (or bye).
    Hello(Hello),
    /// A trigger fired somewhere.
    Announce(Announcement),
    /// Someone captures.
    Answer(Answer),
}

/// Why a message was ignored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// Larger than [`MAX_MESSAGE`].
    #[error("message of {0} bytes is over the {MAX_MESSAGE}-byte limit")]
    Oversized(usize),
    /// Not the JSON of its subject's kind.
    #[error("malformed {kind} message: {error}")]
    Malformed {
        /// The kind the subject says.
        kind: &'static str,
        /// What serde said.
        error: String,
    },
    /// A subject that is no message kind of ours.
    #[error("unknown subject {0}")]
    Subject(String),
    /// Another job's message on our subject (or a version we do not read).
    #[error("message for job {0:?}, not ours")]
    OtherJob(String),
    /// A version we do not read.
    #[error("message version {0}, this agent reads {VERSION}")]
    Version(u32),
}

/// The subject prefix of `job`'s messages.
pub fn job_prefix(job: &str) -> String {
    format!("tripcap.job.{job}")
}

/// Prefix of the subjects that carry announcements to the owners of named
/// addresses, whatever their job.
pub const ADDR_PREFIX: &str = "tripcap.addr.";

/// The subject on which announcements naming `ip` reach its owner (`.` and `:`
/// become `_`: `tripcap.addr.10_0_3_7`).
pub fn addr_subject(ip: &IpAddr) -> String {
    format!("{ADDR_PREFIX}{}", ip.to_string().replace(['.', ':'], "_"))
}

/// Read an announcement that reached us because it names one of our addresses:
/// any job (it must be a valid one), our version, within the size limit.
pub fn parse_named(payload: &[u8]) -> Result<Announcement, Rejected> {
    if payload.len() > MAX_MESSAGE {
        return Err(Rejected::Oversized(payload.len()));
    }
    let a: Announcement = serde_json::from_slice(payload).map_err(|e| Rejected::Malformed {
        kind: "announce",
        error: e.to_string(),
    })?;
    if a.v != VERSION {
        return Err(Rejected::Version(a.v));
    }
    if !valid_job(&a.job) {
        return Err(Rejected::OtherJob(a.job));
    }
    Ok(a)
}

/// Read the message on `subject` (its last token names the kind), for `job`.
pub fn parse(job: &str, subject: &str, payload: &[u8]) -> Result<Message, Rejected> {
    if payload.len() > MAX_MESSAGE {
        return Err(Rejected::Oversized(payload.len()));
    }
    fn de<T: for<'a> Deserialize<'a>>(kind: &'static str, p: &[u8]) -> Result<T, Rejected> {
        serde_json::from_slice(p).map_err(|e| Rejected::Malformed {
            kind,
            error: e.to_string(),
        })
    }
    let (v, msg_job, msg) = match subject.rsplit('.').next() {
        Some("hello") => {
            let h: Hello = de("hello", payload)?;
            (h.v, h.job.clone(), Message::Hello(h))
        }
        Some("announce") => {
            let a: Announcement = de("announce", payload)?;
            (a.v, a.job.clone(), Message::Announce(a))
        }
        Some("answer") => {
            let a: Answer = de("answer", payload)?;
            (a.v, a.job.clone(), Message::Answer(a))
        }
        _ => return Err(Rejected::Subject(subject.to_string())),
    };
    if v != VERSION {
        return Err(Rejected::Version(v));
    }
    if msg_job != job {
        return Err(Rejected::OtherJob(msg_job));
    }
    Ok(msg)
}

/// The addresses named in a line's evidence: every `peer` group that starts with
/// an IP address (`10.0.3.7<52311>`, `10.0.3.7:52311`, `[fe80::1]:4791`).
pub fn peer_addresses(groups: &[(String, String)]) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for (name, value) in groups {
        if name != "peer" {
            continue;
        }
        if let Some(ip) = leading_ip(value) {
            if !out.contains(&ip) && out.len() < MAX_PEERS {
                out.push(ip);
            }
        }
    }
    out
}

fn leading_ip(s: &str) -> Option<IpAddr> {
    let s = s.trim().trim_start_matches('[');
    let end = s
        .find(|c: char| !(c.is_ascii_hexdigit() || c == '.' || c == ':'))
        .unwrap_or(s.len());
    let head = &s[..end];
    if let Ok(ip) = head.parse() {
        return Some(ip);
    }
    // `10.0.3.7:52311`: an IPv4 address with a port.
    head.rsplit_once(':').and_then(|(ip, _)| ip.parse().ok())
}

/// Cut `line` to [`MAX_LINE`] bytes on a character boundary.
pub fn cut_line(line: &str) -> String {
    if line.len() <= MAX_LINE {
        return line.to_string();
    }
    let mut end = MAX_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_string()
}

/// Whether `job` can be a subject token: letters, digits, `-`, `_` (Slurm and
/// Kubernetes ids are), 1 to 128 of them.
pub fn valid_job(job: &str) -> bool {
    !job.is_empty()
        && job.len() <= 128
        && job
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn announcement() -> Announcement {
        Announcement {
            v: VERSION,
            job: "42".into(),
            host: "a".into(),
            incident: "20261201T000000Z-a-nccl".into(),
            trigger: "nccl-ib-error".into(),
            class: "nccl_ib_error".into(),
            line: Some("NET/IB : Got completion from peer 10.0.3.7<52311> with error 12".into()),
            at_ns: 10,
            onset_ns: None,
            pre_ns: 5,
            post_ns: 5,
            asked: [5, 15],
            max_window_ns: 100,
            peers: vec!["10.0.3.7".parse().expect("ip")],
        }
    }

    #[test]
    fn round_trip_and_checks() {
        let a = announcement();
        let bytes = serde_json::to_vec(&a).expect("json");
        assert_eq!(
            parse("42", "tripcap.job.42.announce", &bytes),
            Ok(Message::Announce(a.clone()))
        );
        assert_eq!(
            parse("43", "tripcap.job.43.announce", &bytes),
            Err(Rejected::OtherJob("42".into()))
        );
        assert!(matches!(
            parse("42", "tripcap.job.42.answer", &bytes),
            Err(Rejected::Malformed { kind: "answer", .. })
        ));
        assert_eq!(
            parse(
                "42",
                "tripcap.job.42.announce",
                &vec![b' '; MAX_MESSAGE + 1]
            ),
            Err(Rejected::Oversized(MAX_MESSAGE + 1))
        );
        let mut v2 = a;
        v2.v = 2;
        let bytes = serde_json::to_vec(&v2).expect("json");
        assert_eq!(
            parse("42", "tripcap.job.42.announce", &bytes),
            Err(Rejected::Version(2))
        );
    }

    #[test]
    fn named_announcements_come_from_any_valid_job() {
        let mut a = announcement();
        a.job = "other-job".into();
        let bytes = serde_json::to_vec(&a).expect("json");
        assert_eq!(parse_named(&bytes), Ok(a.clone()));
        a.job = "bad.job".into();
        let bytes = serde_json::to_vec(&a).expect("json");
        assert_eq!(
            parse_named(&bytes),
            Err(Rejected::OtherJob("bad.job".into()))
        );
        assert_eq!(
            addr_subject(&"10.0.3.7".parse().expect("ip")),
            "tripcap.addr.10_0_3_7"
        );
        assert_eq!(
            addr_subject(&"fe80::1".parse().expect("ip")),
            "tripcap.addr.fe80__1"
        );
    }

    #[test]
    fn peers_from_evidence() {
        let g = |v: &str| ("peer".to_string(), v.to_string());
        let got = peer_addresses(&[
            g("10.0.3.7<52311>"),
            g("10.0.3.8:4791"),
            g("[fe80::1]:4791"),
            g("10.0.3.7"),
            g("mlx5_0"),
            ("rank".into(), "10.0.0.1".into()),
        ]);
        let want: Vec<IpAddr> = ["10.0.3.7", "10.0.3.8", "fe80::1"]
            .iter()
            .map(|s| s.parse().expect("ip"))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn who_answers() {
        let a = announcement();
        let named: Vec<IpAddr> = vec!["10.0.3.7".parse().expect("ip")];
        let other: Vec<IpAddr> = vec!["10.0.3.9".parse().expect("ip")];
        assert!(Peers::Job.answers(&a, &other));
        assert!(Peers::Named.answers(&a, &named));
        assert!(!Peers::Named.answers(&a, &other));
        assert!(Peers::Both.answers(&a, &other));
    }

    #[test]
    fn lines_are_cut_on_a_char_boundary() {
        let long = "é".repeat(MAX_LINE);
        let cut = cut_line(&long);
        assert!(cut.len() <= MAX_LINE && cut.len() >= MAX_LINE - 1);
        assert!(valid_job("12345_7-a") && !valid_job("a.b") && !valid_job(""));
    }
}
