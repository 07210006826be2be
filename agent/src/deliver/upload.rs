//! Upload: sends the spool's units to an HTTP endpoint, each exactly once as far
//! as the far end can tell.
//!
//! Shape: one [`Uploader`] task, `run(self, shutdown)`, that scans the spool
//! (on a poll interval, and at once when the agent pokes its [`Notify`] after
//! writing a capture), enforces `max_spool`, and uploads the oldest pending unit,
//! one unit at a time (one endpoint: parallel uploads would only compete for the
//! same link). Bodies stream from disk with an explicit `Content-Length` from the
//! file's metadata (never chunked: presigned-URL stores refuse it), so memory
//! stays constant for multi-GB files; the file is re-opened on every attempt
//! because a streamed request cannot be replayed.
//!
//! Failure policy ([`classify`], pure): connect errors, timeouts, 5xx, 408 and
//! 429 are retried with exponential backoff and jitter (`backon`), a
//! `Retry-After` overriding the delay; any other 4xx parks the unit (its state
//! file says why) — it is not retried until someone removes that state file.
//! After `attempts` failures in a row the unit waits for the next round, so a
//! dead endpoint costs one request per `poll` at most.
//!
//! Idempotency: every request carries `Idempotency-Key` (`<incident>` for a
//! multipart POST, `<incident>/<file>` for a PUT) and the file's SHA-256, so an
//! upload repeated after a crash (the state file is written only after the
//! endpoint acknowledged) is recognised by the collector and stored once.
//!
//! Secrets: header values come from the config with `${ENV}` expanded; they are
//! marked sensitive, never logged, and errors name the header, not its value.
//! Logged URLs lose their query string and user info ([`redact_url`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use backon::{ExponentialBuilder, Retryable};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use serde::{Deserialize, Deserializer};
use tokio::sync::Notify;
use tokio_util::io::ReaderStream;
use tokio_util::sync::CancellationToken;

use super::spool::{self, Parked, Status, Unit, UnitState};
use super::DeliverStats;
use crate::auth::expand_env;
use crate::digest::sha256_file;

/// Header carrying the SHA-256 (hex) of the body, unless configured otherwise.
pub const DEFAULT_SHA256_HEADER: &str = "X-Content-SHA256";

/// How files are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum Method {
    /// One request per file, raw body (S3-style presigned URLs, WebDAV, the collector).
    #[default]
    #[serde(rename = "PUT", alias = "put")]
    Put,
    /// One multipart request per unit: a `metadata` JSON part, then one `file` part per file.
    #[serde(rename = "POST", alias = "post")]
    Post,
}

/// The `[spool]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpoolConfig {
    /// Bytes the output directory may hold in captures (`"20GiB"`); when over,
    /// the oldest uploaded units are deleted first, then parked, then pending ones.
    #[serde(default, deserialize_with = "de_opt_size")]
    pub max_spool: Option<u64>,
}

/// The `[upload]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UploadConfig {
    /// Endpoint; `{host}`, `{incident}` and `{file}` are replaced (`{file}` is
    /// empty for POST), and `${ENV}` is expanded.
    pub url: String,
    /// `"PUT"` (default) or `"POST"` (multipart).
    #[serde(default)]
    pub method: Method,
    /// Extra headers; values may use `${ENV}` (e.g. `Authorization = "Bearer ${TOKEN}"`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Name of the header carrying the body's SHA-256 (hex).
    #[serde(default = "default_sha_header")]
    pub sha256_header: String,
    /// PEM file of CA certificates to trust besides the system's.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate (chain) for mutual TLS; needs `client_key`.
    #[serde(default)]
    pub client_cert: Option<PathBuf>,
    /// PEM private key of `client_cert`.
    #[serde(default)]
    pub client_key: Option<PathBuf>,
    /// Keep units in the spool after upload (deleted only by `max_spool`).
    #[serde(default = "yes")]
    pub keep_after_upload: bool,
    /// Give up a connection attempt after this long.
    #[serde(default = "d_connect", deserialize_with = "de_duration")]
    pub connect_timeout: Duration,
    /// Give up a request when the server sends nothing for this long.
    #[serde(default = "d_idle", deserialize_with = "de_duration")]
    pub idle_timeout: Duration,
    /// Give up a whole request after this long (unset: no bound; multi-GB files take time).
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub timeout: Option<Duration>,
    /// First retry delay.
    #[serde(default = "d_min_backoff", deserialize_with = "de_duration")]
    pub min_backoff: Duration,
    /// Longest retry delay (also the longest `Retry-After` honoured).
    #[serde(default = "d_max_backoff", deserialize_with = "de_duration")]
    pub max_backoff: Duration,
    /// Attempts per round before the unit waits for the next round.
    #[serde(default = "d_attempts")]
    pub attempts: usize,
    /// How often the spool is rescanned without a poke.
    #[serde(default = "d_poll", deserialize_with = "de_duration")]
    pub poll: Duration,
}

fn default_sha_header() -> String {
    DEFAULT_SHA256_HEADER.to_string()
}
fn yes() -> bool {
    true
}
fn d_connect() -> Duration {
    Duration::from_secs(10)
}
fn d_idle() -> Duration {
    Duration::from_secs(60)
}
fn d_min_backoff() -> Duration {
    Duration::from_secs(1)
}
fn d_max_backoff() -> Duration {
    Duration::from_secs(300)
}
fn d_attempts() -> usize {
    8
}
fn d_poll() -> Duration {
    Duration::from_secs(10)
}

impl UploadConfig {
    /// A config for `url` with every default.
    pub fn new(url: impl Into<String>) -> UploadConfig {
        UploadConfig {
            url: url.into(),
            method: Method::Put,
            headers: BTreeMap::new(),
            sha256_header: default_sha_header(),
            ca_file: None,
            client_cert: None,
            client_key: None,
            keep_after_upload: true,
            connect_timeout: d_connect(),
            idle_timeout: d_idle(),
            timeout: None,
            min_backoff: d_min_backoff(),
            max_backoff: d_max_backoff(),
            attempts: d_attempts(),
            poll: d_poll(),
        }
    }
}

fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    crate::units::parse_duration(&text).map_err(serde::de::Error::custom)
}

fn de_opt_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    de_duration(d).map(Some)
}

fn de_opt_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumOrText {
        Num(u64),
        Text(String),
    }
    match NumOrText::deserialize(d)? {
        NumOrText::Num(n) => Ok(Some(n)),
        NumOrText::Text(t) => crate::units::parse_size(&t)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// Errors that stop the uploader from starting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UploadError {
    /// The `[upload]` table is wrong.
    #[error("[upload] {0}")]
    Config(String),
    /// A `${NAME}` the table uses is not set in the environment.
    #[error("[upload] {0}")]
    UnsetEnv(String),
}

impl From<crate::auth::EnvError> for UploadError {
    fn from(e: crate::auth::EnvError) -> UploadError {
        match e {
            crate::auth::EnvError::Unset { .. } => UploadError::UnsetEnv(e.to_string()),
            _ => UploadError::Config(e.to_string()),
        }
    }
}

/// A URL (or URL template) fit for logs: no user info, no query (presigned
/// URLs carry their signatures there).
pub fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, _)) => (b, true),
        None => (url, false),
    };
    let base = match base.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => base.to_string(),
    };
    if query {
        format!("{base}?REDACTED")
    } else {
        base
    }
}

/// Percent-encode a path segment value.
fn encode_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The URL for one request: placeholders replaced and percent-encoded.
pub fn expand_url(template: &str, host: &str, incident: &str, file: &str) -> String {
    template
        .replace("{host}", &encode_segment(host))
        .replace("{incident}", &encode_segment(incident))
        .replace("{file}", &encode_segment(file))
}

/// What to do after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Delivered.
    Done,
    /// Try again, after this long if the server said.
    Retry(Option<Duration>),
    /// The endpoint refused it for good: park the unit.
    Park,
}

/// Decide on a response status (pure). `retry_after` is the header's text.
pub fn classify(status: u16, retry_after: Option<&str>, now: SystemTime) -> Verdict {
    match status {
        200..=299 => Verdict::Done,
        408 | 429 | 500..=599 => {
            Verdict::Retry(retry_after.and_then(|r| parse_retry_after(r, now)))
        }
        _ => Verdict::Park,
    }
}

/// `Retry-After`: delta-seconds or an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn parse_retry_after(text: &str, now: SystemTime) -> Option<Duration> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = parse_http_date(t)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

fn parse_http_date(t: &str) -> Option<SystemTime> {
    // "Sun, 06 Nov 1994 08:49:37 GMT"
    let rest = t.split_once(", ")?.1;
    let parts: Vec<&str> = rest.split_whitespace().collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: i64 = day.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as i64
        + 1;
    let year: i64 = year.parse().ok()?;
    let hms: Vec<i64> = time.split(':').filter_map(|x| x.parse().ok()).collect();
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + m * 60 + s;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// Why one attempt failed.
#[derive(Debug, Clone)]
enum Failure {
    /// Worth retrying (network, timeout, 5xx, 408, 429).
    Transient {
        why: String,
        retry_after: Option<Duration>,
    },
    /// Refused for good.
    Refused { status: u16, why: String },
    /// The unit's files vanished (dropped by the spool bound, or by hand).
    Gone,
}

/// One line from a reqwest error, without its URL.
fn describe(e: reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    let e = e.without_url();
    let mut msg = format!("{kind}: {e}");
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        msg.push_str(&format!(": {s}"));
        src = s.source();
    }
    msg.replace('\n', " ")
}

/// The uploader task. Build with [`Uploader::new`], then `tokio::spawn(u.run(token))`.
pub struct Uploader {
    dir: PathBuf,
    host: String,
    spool: SpoolConfig,
    upload: Option<Prepared>,
    stats: Arc<DeliverStats>,
    notify: Arc<Notify>,
    hashes: HashMap<(String, String), (u64, String)>,
}

struct Prepared {
    config: UploadConfig,
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    sha_header: HeaderName,
}

impl Uploader {
    /// An uploader for the spool `dir`. Without `upload` it only keeps the spool
    /// within `max_spool`. Fails on an unusable config (unset `${ENV}`, unreadable
    /// certificate, bad header name), before anything starts.
    pub fn new(
        dir: PathBuf,
        host: String,
        spool: SpoolConfig,
        upload: Option<UploadConfig>,
    ) -> Result<Uploader, UploadError> {
        let upload = upload.map(prepare).transpose()?;
        Ok(Uploader {
            dir,
            host,
            spool,
            upload,
            stats: Arc::new(DeliverStats::default()),
            notify: Arc::new(Notify::new()),
            hashes: HashMap::new(),
        })
    }

    /// Counters, shared with the API.
    pub fn stats(&self) -> Arc<DeliverStats> {
        Arc::clone(&self.stats)
    }

    /// Poke this after writing a capture: the spool is scanned at once.
    pub fn notifier(&self) -> Arc<Notify> {
        Arc::clone(&self.notify)
    }

    /// Scan, bound and upload until `shutdown`. An upload in flight at shutdown
    /// is abandoned; its unit stays pending and is sent again by the next run.
    pub async fn run(mut self, shutdown: CancellationToken) {
        if let Some(p) = &self.upload {
            tracing::info!(url = %redact_url(&p.config.url), method = ?p.config.method, "uploading captures");
        }
        let poll = self
            .upload
            .as_ref()
            .map_or(Duration::from_secs(10), |p| p.config.poll);
        let mut skip = BTreeSet::new();
        loop {
            if shutdown.is_cancelled() {
                break;
            }
            let units = match self.scan_and_bound() {
                Ok(u) => u,
                Err(e) => {
                    tracing::warn!(dir = %self.dir.display(), error = %e, "cannot scan the spool: check the output directory");
                    Vec::new()
                }
            };
            let next = if self.upload.is_some() {
                spool::next_upload(&units, &skip).cloned()
            } else {
                None
            };
            let Some(unit) = next else {
                self.stats.busy.store(false, Ordering::Relaxed);
                self.stats.rounds.fetch_add(1, Ordering::Relaxed);
                skip.clear();
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = self.notify.notified() => {}
                    _ = tokio::time::sleep(poll) => {}
                }
                continue;
            };
            self.stats.busy.store(true, Ordering::Relaxed);
            let incident = unit.incident.clone();
            tokio::select! {
                _ = shutdown.cancelled() => break,
                delivered = self.deliver(unit) => {
                    if !delivered {
                        skip.insert(incident);
                    }
                }
            }
        }
        self.stats.busy.store(false, Ordering::Relaxed);
    }

    /// Scan the spool, drop what `max_spool` requires, update the gauges.
    fn scan_and_bound(&mut self) -> std::io::Result<Vec<Unit>> {
        let mut units = spool::scan(&self.dir)?;
        if let Some(max) = self.spool.max_spool {
            let drops = spool::plan_drops(&units, max);
            for (incident, status) in &drops {
                let Some(u) = units.iter().find(|u| &u.incident == incident) else {
                    continue;
                };
                match spool::remove_unit(&self.dir, u) {
                    Ok(()) => {
                        let counter = match status {
                            Status::Uploaded => &self.stats.dropped_uploaded,
                            Status::Parked | Status::Pending => &self.stats.dropped_pending,
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                        let level_note = match status {
                            Status::Uploaded => "already uploaded",
                            Status::Parked => "parked, never delivered",
                            Status::Pending => "NOT delivered",
                        };
                        tracing::warn!(incident = %incident, bytes = u.bytes(), state = level_note, max_spool = max, "spool full: capture dropped (raise max_spool or free the disk)");
                    }
                    Err(e) => {
                        tracing::error!(incident = %incident, error = %e, "spool full but the capture cannot be deleted: fix the output directory's permissions")
                    }
                }
            }
            if !drops.is_empty() {
                units.retain(|u| !drops.iter().any(|(i, _)| i == &u.incident));
            }
        }
        let (bytes, pending, parked) = spool::totals(&units);
        self.stats.spool_bytes.store(bytes, Ordering::Relaxed);
        self.stats.pending.store(pending, Ordering::Relaxed);
        self.stats.parked_now.store(parked, Ordering::Relaxed);
        self.stats
            .units
            .store(units.len() as u64, Ordering::Relaxed);
        Ok(units)
    }

    /// Deliver one unit; true when it needs no more attention this round.
    async fn deliver(&mut self, mut unit: Unit) -> bool {
        let Some(p) = self.upload.as_ref() else {
            return true;
        };
        if unit.state_unreadable {
            tracing::warn!(incident = %unit.incident, "unreadable upload state: sending the whole capture again (the collector ignores repeats)");
        }
        let method = p.config.method;
        let result = match method {
            Method::Put => self.deliver_put(&mut unit).await,
            Method::Post => self.deliver_post(&mut unit).await,
        };
        let p = self.upload.as_ref().expect("checked above");
        match result {
            Ok(()) => {
                self.stats.uploads_ok.fetch_add(1, Ordering::Relaxed);
                tracing::info!(incident = %unit.incident, files = unit.files.len(), bytes = unit.bytes(), "capture uploaded");
                if !p.config.keep_after_upload {
                    if let Err(e) = spool::remove_unit(&self.dir, &unit) {
                        tracing::warn!(incident = %unit.incident, error = %e, "uploaded, but cannot delete it from the spool");
                    }
                }
                self.hashes.retain(|(i, _), _| i != &unit.incident);
                true
            }
            Err(Failure::Gone) => true,
            Err(Failure::Refused { status, why }) => {
                self.stats.parked.fetch_add(1, Ordering::Relaxed);
                tracing::error!(incident = %unit.incident, status, reason = %why, "upload refused: capture parked (fix the endpoint or config, then delete the unit's .state file to retry)");
                unit.state.parked = Some(Parked {
                    status: Some(status),
                    reason: why,
                    at_ns: crate::clock::now_ns(),
                });
                self.persist(&unit.incident, &unit.state);
                true
            }
            Err(Failure::Transient { why, .. }) => {
                tracing::warn!(incident = %unit.incident, error = %why, "upload failed: will retry");
                unit.state.last_error = Some(why);
                self.persist(&unit.incident, &unit.state);
                false
            }
        }
    }

    fn persist(&self, incident: &str, state: &UnitState) {
        if let Err(e) = spool::save_state(&self.dir, incident, state) {
            tracing::warn!(incident = %incident, error = %e, "cannot save upload state: a restart may send this capture again");
        }
    }

    /// SHA-256 and length of a unit's file, cached for the unit's lifetime.
    async fn hash(&mut self, incident: &str, name: &str) -> Result<(u64, String), Failure> {
        let key = (incident.to_string(), name.to_string());
        if let Some(h) = self.hashes.get(&key) {
            return Ok(h.clone());
        }
        let path = self.dir.join(name);
        let h = tokio::task::spawn_blocking(move || sha256_file(&path))
            .await
            .map_err(|e| Failure::Transient {
                why: format!("hashing stopped: {e}"),
                retry_after: None,
            })?
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Failure::Gone
                } else {
                    Failure::Transient {
                        why: format!("cannot read {name}: {e}"),
                        retry_after: None,
                    }
                }
            })?;
        self.hashes.insert(key, h.clone());
        Ok(h)
    }

    async fn deliver_put(&mut self, unit: &mut Unit) -> Result<(), Failure> {
        let pending: Vec<String> = unit.pending_files().map(|f| f.name.clone()).collect();
        for name in pending {
            let (len, sha) = self.hash(&unit.incident, &name).await?;
            let p = self.upload.as_ref().expect("upload configured");
            let url = expand_url(&p.url, &self.host, &unit.incident, &name);
            let path = self.dir.join(&name);
            let key = format!("{}/{name}", unit.incident);
            let mut headers = unit_headers(p, &key, &unit.incident, &self.host);
            set(&mut headers, p.sha_header.clone(), &sha);
            set(
                &mut headers,
                HeaderName::from_static("x-tripcap-file"),
                &name,
            );
            let client = p.client.clone();
            let attempt = || {
                let (client, url, headers, path) = (&client, &url, &headers, &path);
                async move {
                    let file = open(path).await?;
                    let body =
                        reqwest::Body::wrap_stream(ReaderStream::with_capacity(file, 64 << 10));
                    let resp = client
                        .put(url.as_str())
                        .headers(headers.clone())
                        .header(CONTENT_LENGTH, len)
                        .header(CONTENT_TYPE, content_type(path))
                        .body(body)
                        .send()
                        .await;
                    judge(resp).await
                }
            };
            self.retrying(attempt, unit).await?;
            unit.state.done.insert(name.clone());
            unit.state.last_error = None;
            self.stats.files_ok.fetch_add(1, Ordering::Relaxed);
            self.stats.bytes_sent.fetch_add(len, Ordering::Relaxed);
            self.persist(&unit.incident, &unit.state);
        }
        Ok(())
    }

    async fn deliver_post(&mut self, unit: &mut Unit) -> Result<(), Failure> {
        let pending: Vec<String> = unit.pending_files().map(|f| f.name.clone()).collect();
        let mut files = Vec::new();
        for name in &pending {
            let (len, sha) = self.hash(&unit.incident, name).await?;
            files.push((name.clone(), len, sha));
        }
        let p = self.upload.as_ref().expect("upload configured");
        let url = expand_url(&p.url, &self.host, &unit.incident, "");
        let metadata = serde_json::json!({
            "incident": unit.incident,
            "host": self.host,
            "files": files.iter().map(|(n, l, s)| serde_json::json!({"name": n, "size": l, "sha256": s})).collect::<Vec<_>>(),
        })
        .to_string();
        let headers = unit_headers(p, &unit.incident, &unit.incident, &self.host);
        let client = p.client.clone();
        let dir = self.dir.clone();
        let attempt = || {
            let (client, url, headers, files, metadata, dir) =
                (&client, &url, &headers, &files, &metadata, &dir);
            async move {
                let mut form = reqwest::multipart::Form::new().part(
                    "metadata",
                    reqwest::multipart::Part::text(metadata.clone())
                        .mime_str("application/json")
                        .map_err(|e| Failure::Transient {
                            why: describe(e),
                            retry_after: None,
                        })?,
                );
                for (name, len, _) in files {
                    let path = dir.join(name);
                    let file = open(&path).await?;
                    let body =
                        reqwest::Body::wrap_stream(ReaderStream::with_capacity(file, 64 << 10));
                    let part = reqwest::multipart::Part::stream_with_length(body, *len)
                        .file_name(name.clone())
                        .mime_str(content_type(&path))
                        .map_err(|e| Failure::Transient {
                            why: describe(e),
                            retry_after: None,
                        })?;
                    form = form.part("file", part);
                }
                let resp = client
                    .post(url.as_str())
                    .headers(headers.clone())
                    .multipart(form)
                    .send()
                    .await;
                judge(resp).await
            }
        };
        self.retrying(attempt, unit).await?;
        let bytes: u64 = files.iter().map(|f| f.1).sum();
        for (name, _, _) in files {
            unit.state.done.insert(name);
            self.stats.files_ok.fetch_add(1, Ordering::Relaxed);
        }
        unit.state.last_error = None;
        self.stats.bytes_sent.fetch_add(bytes, Ordering::Relaxed);
        self.persist(&unit.incident, &unit.state);
        Ok(())
    }

    /// Run `attempt` with exponential backoff and jitter while it fails transiently.
    async fn retrying<F, Fut>(&self, attempt: F, unit: &mut Unit) -> Result<(), Failure>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<(), Failure>>,
    {
        let p = self.upload.as_ref().expect("upload configured");
        let backoff = ExponentialBuilder::default()
            .with_jitter()
            .with_min_delay(p.config.min_backoff)
            .with_max_delay(p.config.max_backoff)
            .with_max_times(p.config.attempts.saturating_sub(1));
        let max = p.config.max_backoff;
        let stats = Arc::clone(&self.stats);
        let failures = AtomicU64::new(0);
        let result = attempt
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(|f| matches!(f, Failure::Transient { .. }))
            .adjust(|f, dur| match (f, dur) {
                (_, None) => None,
                (
                    Failure::Transient {
                        retry_after: Some(ra),
                        ..
                    },
                    Some(_),
                ) => Some((*ra).min(max)),
                (_, d) => d,
            })
            .notify(|f, dur| {
                failures.fetch_add(1, Ordering::Relaxed);
                if let Failure::Transient { why, .. } = f {
                    tracing::debug!(error = %why, retry_in = ?dur, "upload attempt failed");
                }
            })
            .await;
        let mut failed = failures.load(Ordering::Relaxed);
        if matches!(
            result,
            Err(Failure::Transient { .. } | Failure::Refused { .. })
        ) {
            failed += 1; // the last attempt is not notified
        }
        stats.uploads_failed.fetch_add(failed, Ordering::Relaxed);
        unit.state.attempts += failed;
        result
    }
}

/// The configured headers plus the idempotency key and the unit's identity,
/// common to PUT (one request per file) and POST (one per unit).
fn unit_headers(p: &Prepared, idempotency_key: &str, incident: &str, host: &str) -> HeaderMap {
    let mut headers = p.headers.clone();
    set(
        &mut headers,
        HeaderName::from_static("idempotency-key"),
        idempotency_key,
    );
    set(
        &mut headers,
        HeaderName::from_static("x-tripcap-incident"),
        incident,
    );
    set(
        &mut headers,
        HeaderName::from_static("x-tripcap-host"),
        host,
    );
    headers
}

fn set(headers: &mut HeaderMap, name: HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(name, v);
    }
}

fn content_type(path: &Path) -> &'static str {
    let name = path.to_string_lossy();
    if name.ends_with(".json") {
        "application/json"
    } else if name.ends_with(".svg") {
        "image/svg+xml"
    } else {
        "application/octet-stream"
    }
}

async fn open(path: &Path) -> Result<tokio::fs::File, Failure> {
    tokio::fs::File::open(path).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Failure::Gone
        } else {
            Failure::Transient {
                why: format!("cannot open {}: {e}", path.display()),
                retry_after: None,
            }
        }
    })
}

/// Turn a response (or transport error) into a result.
async fn judge(resp: Result<reqwest::Response, reqwest::Error>) -> Result<(), Failure> {
    let resp = resp.map_err(|e| Failure::Transient {
        why: describe(e),
        retry_after: None,
    })?;
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let verdict = classify(status.as_u16(), retry_after.as_deref(), SystemTime::now());
    if verdict == Verdict::Done {
        return Ok(());
    }
    // A short excerpt of what the server said, on one line.
    let text = resp.text().await.unwrap_or_default();
    let excerpt: String = text
        .chars()
        .take(200)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let why = format!("endpoint answered {status}: {}", excerpt.trim());
    match verdict {
        Verdict::Retry(after) => Err(Failure::Transient {
            why,
            retry_after: after,
        }),
        _ => Err(Failure::Refused {
            status: status.as_u16(),
            why,
        }),
    }
}

/// Check an `[upload]` table as the uploader would at start (URL scheme and
/// placeholders, `${ENV}` references, certificate files, header names),
/// without sending anything: what `tripcap check` runs.
pub fn check(config: &UploadConfig) -> Result<(), UploadError> {
    prepare(config.clone()).map(|_| ())
}

fn prepare(config: UploadConfig) -> Result<Prepared, UploadError> {
    let url = expand_env(&config.url, "`url`")?;
    let probe = expand_url(&url, "h", "i", "f");
    let parsed = reqwest::Url::parse(&probe).map_err(|e| {
        UploadError::Config(format!(
            "`url` = {} is not a URL ({e}): write e.g. \"https://collector:9480/upload/{{host}}/{{incident}}/{{file}}\"",
            redact_url(&config.url)
        ))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(UploadError::Config(format!(
            "`url` scheme `{}` is not supported: use http or https",
            parsed.scheme()
        )));
    }
    let mut headers = HeaderMap::new();
    for (name, value) in &config.headers {
        let what = format!("header `{name}`");
        let hn = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            UploadError::Config(format!(
                "{what} is not a valid header name: use letters, digits and `-`"
            ))
        })?;
        let expanded = expand_env(value, &what)?;
        let mut hv = HeaderValue::from_str(&expanded).map_err(|_| {
            UploadError::Config(format!(
                "{what} has a value with characters not allowed in a header (check the variable it expands)"
            ))
        })?;
        hv.set_sensitive(true);
        headers.insert(hn, hv);
    }
    let sha_header = HeaderName::from_bytes(config.sha256_header.as_bytes()).map_err(|_| {
        UploadError::Config(format!(
            "`sha256_header` = \"{}\" is not a valid header name: use letters, digits and `-`",
            config.sha256_header
        ))
    })?;
    let mut builder = reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .read_timeout(config.idle_timeout)
        .user_agent(concat!("tripcap/", env!("CARGO_PKG_VERSION")));
    if let Some(t) = config.timeout {
        builder = builder.timeout(t);
    }
    let read = |path: &Path, key: &str| {
        std::fs::read(path).map_err(|e| {
            UploadError::Config(format!(
                "`{key}` = {}: cannot read it ({e}): fix the path or its permissions",
                path.display()
            ))
        })
    };
    if let Some(ca) = &config.ca_file {
        let pem = read(ca, "ca_file")?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
            UploadError::Config(format!(
                "`ca_file` = {}: not PEM certificates ({}): give a PEM bundle",
                ca.display(),
                describe(e)
            ))
        })?;
        if certs.is_empty() {
            return Err(UploadError::Config(format!(
                "`ca_file` = {}: no certificate in it: give a PEM bundle",
                ca.display()
            )));
        }
        for c in certs {
            builder = builder.add_root_certificate(c);
        }
    }
    match (&config.client_cert, &config.client_key) {
        (Some(cert), Some(key)) => {
            let mut pem = read(cert, "client_cert")?;
            pem.push(b'\n');
            pem.extend(read(key, "client_key")?);
            let id = reqwest::Identity::from_pem(&pem).map_err(|e| {
                UploadError::Config(format!(
                    "`client_cert`/`client_key`: not a PEM certificate and key ({}): check both files",
                    describe(e)
                ))
            })?;
            builder = builder.identity(id);
        }
        (None, None) => {}
        _ => {
            return Err(UploadError::Config(
                "`client_cert` and `client_key` go together: set both or neither".into(),
            ))
        }
    }
    let client = builder.build().map_err(|e| {
        UploadError::Config(format!("cannot build the HTTP client: {}", describe(e)))
    })?;
    Ok(Prepared {
        config,
        client,
        url,
        headers,
        sha_header,
    })
}

/// Whether the uploader has nothing left to do: the last scan found no pending
/// unit and no upload is in flight.
pub fn is_drained(stats: &DeliverStats) -> bool {
    stats.pending.load(Ordering::Relaxed) == 0 && !stats.busy.load(Ordering::Relaxed)
}

/// Wait until a scan newer than this call finds nothing pending, or `limit`
/// passes; true when drained. For replays, which exit once their captures are out.
pub async fn wait_drained(stats: &DeliverStats, notify: &Notify, limit: Duration) -> bool {
    let start_round = stats.rounds.load(Ordering::Relaxed);
    notify.notify_one();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if stats.rounds.load(Ordering::Relaxed) > start_round && is_drained(stats) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_000);
        assert_eq!(classify(200, None, now), Verdict::Done);
        assert_eq!(classify(201, None, now), Verdict::Done);
        assert_eq!(classify(500, None, now), Verdict::Retry(None));
        assert_eq!(
            classify(503, Some("7"), now),
            Verdict::Retry(Some(Duration::from_secs(7)))
        );
        assert_eq!(classify(408, None, now), Verdict::Retry(None));
        assert_eq!(
            classify(429, Some("Sun, 06 Nov 1994 08:49:37 GMT"), now),
            Verdict::Retry(Some(Duration::from_secs(784_111_777 - 784_111_000)))
        );
        assert_eq!(classify(413, None, now), Verdict::Park);
        assert_eq!(classify(401, None, now), Verdict::Park);
        assert_eq!(classify(404, None, now), Verdict::Park);
        assert_eq!(classify(429, Some("soon"), now), Verdict::Retry(None));
    }

    #[test]
    fn http_dates_parse() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(784_111_777))
        );
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), None);
        // A date in the past means now.
        let later = UNIX_EPOCH + Duration::from_secs(800_000_000);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", later),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn urls_expand_and_redact() {
        assert_eq!(
            expand_url(
                "http://c/u/{host}/{incident}/{file}",
                "h 1",
                "i",
                "a.pcapng"
            ),
            "http://c/u/h%201/i/a.pcapng"
        );
        assert_eq!(
            redact_url("https://user:pw@s3.example/b/k?X-Amz-Signature=secret"),
            "https://s3.example/b/k?REDACTED"
        );
        assert!(!redact_url("https://x/?sig=abc").contains("abc"));
    }

    #[test]
    fn config_reads_from_toml() {
        let c: UploadConfig = toml::from_str(
            r#"
            url = "http://127.0.0.1:1/{incident}"
            method = "POST"
            headers = { Authorization = "Bearer ${T}" }
            idle_timeout = "2s"
            keep_after_upload = false
            "#,
        )
        .expect("parses");
        assert_eq!(c.method, Method::Post);
        assert_eq!(c.idle_timeout, Duration::from_secs(2));
        assert!(!c.keep_after_upload);
        let e = toml::from_str::<UploadConfig>("url = \"x\"\nidle_timeout = \"30\"")
            .expect_err("no unit")
            .to_string();
        assert!(e.contains("no unit"), "{e}");
        let s: SpoolConfig = toml::from_str("max_spool = \"20GiB\"").expect("size");
        assert_eq!(s.max_spool, Some(20 << 30));
    }

    #[test]
    fn bad_header_config_is_refused_without_the_value() {
        std::env::set_var("TRIPCAP_TEST_BAD_XYZ", "line\nbreak-secret");
        let mut c = UploadConfig::new("http://127.0.0.1:1/{file}");
        c.headers
            .insert("Authorization".into(), "${TRIPCAP_TEST_BAD_XYZ}".into());
        let e = prepare(c).err().expect("refused").to_string();
        assert!(!e.contains("secret"), "{e}");
    }
}
