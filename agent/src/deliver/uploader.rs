//! The delivery loop: one [`DeliveryTask`] that scans the spool (on a poll
//! interval, and at once when the daemon pokes its [`Notify`] after writing a
//! capture), enforces `max_spool`, and — when an `[upload]` table is
//! configured, as an [`Uploader`] — uploads the oldest pending unit, one unit
//! at a time (one endpoint: parallel uploads would only compete for the same
//! link), parks what the endpoint refuses, and keeps the counters.
//!
//! Retries follow [`super::retry`]; after `attempts` failures in a row the unit
//! waits for the next round, so a dead endpoint costs one request per `poll` at
//! most. A refused unit is parked (its state file says why) and not retried
//! until someone removes that state file. The state file is written only after
//! the endpoint acknowledged, so an upload repeated after a crash is one the
//! collector recognises (idempotency key, SHA-256) and stores once.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::http::{redact_url, Client, FileDigest};
use super::retry::{retrying, Failure};
use super::s3_upload::{S3Target, Sending};
use super::spool::{self, Parked, Status, Unit, UnitState};
use super::upload_config::{Method, SpoolConfig, UploadConfig, UploadError};
use super::DeliverStats;
use crate::digest::{part_digests, sha256_file, PartDigests};

/// How often the spool is rescanned without a poke when nothing is uploaded.
const IDLE_POLL: Duration = Duration::from_secs(10);

/// The spool task. Build with [`DeliveryTask::new`], then
/// `tokio::spawn(task.run(token))`.
pub struct DeliveryTask {
    dir: PathBuf,
    spool: SpoolConfig,
    uploader: Option<Uploader>,
    stats: Arc<DeliverStats>,
    notify: Arc<Notify>,
}

/// Uploads units to the endpoint of one `[upload]` table.
pub struct Uploader {
    host: String,
    target: Target,
    /// Digests of the files of units in progress.
    hashes: HashMap<(String, String), PartDigests>,
    /// The first round's clean-up (S3: this host's orphaned multipart uploads) is done.
    prepared: bool,
}

/// Where the files go.
enum Target {
    /// An HTTP endpoint (PUT or multipart POST).
    Http(Box<Client>),
    /// An S3 bucket.
    S3(Box<S3Target>),
}

/// What an [`Uploader`] works on: the spool directory and the counters.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    dir: &'a Path,
    stats: &'a DeliverStats,
}

impl Uploader {
    /// An uploader sending as `host` to the endpoint of `upload`. Fails on an
    /// unusable config (unset `${ENV}`, unreadable certificate, bad header
    /// name), before anything starts.
    pub fn new(host: String, upload: UploadConfig) -> Result<Uploader, UploadError> {
        let target = if upload.is_s3() {
            if upload.method == Method::Post {
                return Err(UploadError::Config(
                    "`method = \"POST\"` does not apply to an s3:// `url` (each file is its own object): remove it".into(),
                ));
            }
            Target::S3(Box::new(S3Target::new(upload)?))
        } else {
            let s3_keys = upload.s3_keys_set();
            if !s3_keys.is_empty() {
                return Err(UploadError::Config(format!(
                    "{} only apply to an s3:// `url`: remove them, or write url = \"s3://BUCKET/PREFIX/{{incident}}/{{host}}/{{file}}\"",
                    s3_keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                )));
            }
            Target::Http(Box::new(Client::new(upload)?))
        };
        Ok(Uploader {
            host,
            target,
            hashes: HashMap::new(),
            prepared: false,
        })
    }

    fn config(&self) -> &UploadConfig {
        match &self.target {
            Target::Http(c) => c.config(),
            Target::S3(t) => t.config(),
        }
    }

    /// Where it uploads, for the start-up log line (no secrets).
    fn shown(&self) -> String {
        match &self.target {
            Target::Http(c) => redact_url(&c.config().url),
            Target::S3(t) => format!("{} at {}", t.config().url, t.shown()),
        }
    }

    /// Ask the endpoint whether this agent could upload (see [`probe_upload`]).
    async fn probe(&self) -> Result<u16, String> {
        match &self.target {
            Target::Http(c) => c.probe(&self.host).await,
            Target::S3(t) => t.probe(&self.host).await,
        }
    }

    /// Once per run, before the first upload: abort this host's S3 multipart
    /// uploads that no unit refers to. Retried next round when it fails.
    async fn prepare(&mut self, units: &[Unit]) {
        if self.prepared {
            return;
        }
        match &self.target {
            Target::Http(_) => self.prepared = true,
            Target::S3(t) => match t.sweep(&self.host, units).await {
                Ok(_) | Err(Failure::Gone) => self.prepared = true,
                Err(Failure::Transient { why, .. }) => {
                    tracing::warn!(error = %why, "cannot list this host's open multipart uploads: trying again next round")
                }
                // Refused (keys without s3:ListBucketMultipartUploads): said once; uploads go on.
                Err(Failure::Refused { why, .. }) => {
                    tracing::warn!(error = %why, "cannot list this host's open multipart uploads, so uploads a killed agent left open are not aborted: allow s3:ListBucketMultipartUploads and s3:AbortMultipartUpload on the prefix");
                    self.prepared = true;
                }
            },
        }
    }
}

impl DeliveryTask {
    /// The task for the spool `dir`. Without an `uploader` it only keeps the
    /// spool within `max_spool` and measures it.
    pub fn new(dir: PathBuf, spool: SpoolConfig, uploader: Option<Uploader>) -> DeliveryTask {
        DeliveryTask {
            dir,
            spool,
            uploader,
            stats: Arc::new(DeliverStats::default()),
            notify: Arc::new(Notify::new()),
        }
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
        if let Some(u) = &self.uploader {
            let c = u.config();
            tracing::info!(url = %u.shown(), method = ?c.method, "uploading captures");
        }
        let poll = self
            .uploader
            .as_ref()
            .map_or(IDLE_POLL, |u| u.config().poll);
        let mut skip = BTreeSet::new();
        while !shutdown.is_cancelled() {
            let units = match self.scan_and_bound() {
                Ok(u) => u,
                Err(e) => {
                    tracing::warn!(dir = %self.dir.display(), error = %e, "cannot scan the spool: check the output directory");
                    Vec::new()
                }
            };
            if let Some(u) = &mut self.uploader {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = u.prepare(&units) => {}
                }
            }
            let next = match &mut self.uploader {
                Some(u) => spool::next_upload(&units, &skip).cloned().map(|n| (u, n)),
                None => None,
            };
            let Some((uploader, unit)) = next else {
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
            let ctx = Ctx {
                dir: &self.dir,
                stats: &self.stats,
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                delivered = uploader.deliver(ctx, unit) => {
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
                if let Some(u) = units.iter().find(|u| &u.incident == incident) {
                    self.drop_unit(u, *status, max);
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
        *self
            .stats
            .parked_reasons
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = spool::parked_reasons(&units);
        Ok(units)
    }

    /// Delete `u` (in `status`) because the spool is over `max` bytes.
    fn drop_unit(&self, u: &Unit, status: Status, max: u64) {
        let incident = &u.incident;
        match spool::remove_unit(&self.dir, u) {
            Ok(()) => {
                let (counter, state) = match status {
                    Status::Uploaded => (&self.stats.dropped_uploaded, "already uploaded"),
                    Status::Parked => (&self.stats.dropped_pending, "parked, never delivered"),
                    Status::Pending => (&self.stats.dropped_pending, "NOT delivered"),
                };
                counter.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(incident = %incident, bytes = u.bytes(), state, max_spool = max, "spool full: capture dropped (raise max_spool or free the disk)");
            }
            Err(e) => {
                tracing::error!(incident = %incident, error = %e, "spool full but the capture cannot be deleted: fix the output directory's permissions")
            }
        }
    }
}

impl Uploader {
    /// Deliver one unit; true when it needs no more attention this round.
    async fn deliver(&mut self, ctx: Ctx<'_>, mut unit: Unit) -> bool {
        if unit.state_unreadable {
            tracing::warn!(incident = %unit.incident, "unreadable upload state: sending the whole capture again (the collector ignores repeats)");
        }
        let result = match (&self.target, self.config().method) {
            (Target::S3(_), _) => self.deliver_s3(ctx, &mut unit).await,
            (Target::Http(_), Method::Put) => self.deliver_put(ctx, &mut unit).await,
            (Target::Http(_), Method::Post) => self.deliver_post(ctx, &mut unit).await,
        };
        match result {
            Ok(()) => {
                ctx.stats.uploads_ok.fetch_add(1, Ordering::Relaxed);
                tracing::info!(incident = %unit.incident, files = unit.files.len(), bytes = unit.bytes(), "capture uploaded");
                if !self.config().keep_after_upload {
                    if let Err(e) = spool::remove_unit(ctx.dir, &unit) {
                        tracing::warn!(incident = %unit.incident, error = %e, "uploaded, but cannot delete it from the spool");
                    }
                }
                self.hashes.retain(|(i, _), _| i != &unit.incident);
                true
            }
            Err(Failure::Gone) => true,
            Err(Failure::Refused { status, code, why }) => {
                ctx.stats.parked.fetch_add(1, Ordering::Relaxed);
                tracing::error!(incident = %unit.incident, status, reason = %why, "upload refused: capture parked (fix the endpoint or config, then delete the unit's .state file to retry)");
                unit.state.parked = Some(Parked {
                    status: Some(status),
                    code,
                    reason: why,
                    at_ns: crate::clock::now_ns(),
                });
                persist(ctx.dir, &unit.incident, &unit.state);
                true
            }
            Err(Failure::Transient { why, .. }) => {
                tracing::warn!(incident = %unit.incident, error = %why, "upload failed: will retry");
                unit.state.last_error = Some(why);
                persist(ctx.dir, &unit.incident, &unit.state);
                false
            }
        }
    }

    /// Digests of a unit's file, cached for the unit's lifetime: SHA-256 and
    /// length, and for S3 the MD5 of each part.
    async fn digests(
        &mut self,
        dir: &Path,
        incident: &str,
        name: &str,
    ) -> Result<PartDigests, Failure> {
        let key = (incident.to_string(), name.to_string());
        if let Some(d) = self.hashes.get(&key) {
            return Ok(d.clone());
        }
        let path = dir.join(name);
        let gone_or = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::NotFound => Failure::Gone,
            _ => Failure::transient(format!("cannot read {name}: {e}")),
        };
        let d = match &self.target {
            Target::S3(t) => {
                let len = std::fs::metadata(&path).map_err(gone_or)?.len();
                let part_size = t.part_size(len);
                tokio::task::spawn_blocking(move || part_digests(&path, part_size))
                    .await
                    .map_err(|e| Failure::transient(format!("hashing stopped: {e}")))?
                    .map_err(gone_or)?
            }
            Target::Http(_) => {
                let (len, sha256) = tokio::task::spawn_blocking(move || sha256_file(&path))
                    .await
                    .map_err(|e| Failure::transient(format!("hashing stopped: {e}")))?
                    .map_err(gone_or)?;
                PartDigests {
                    len,
                    sha256,
                    part_size: len,
                    part_md5: Vec::new(),
                }
            }
        };
        self.hashes.insert(key, d.clone());
        Ok(d)
    }

    /// SHA-256 and length of a unit's file, as announced to an HTTP endpoint.
    async fn hash(
        &mut self,
        dir: &Path,
        incident: &str,
        name: &str,
    ) -> Result<FileDigest, Failure> {
        let d = self.digests(dir, incident, name).await?;
        Ok(FileDigest {
            name: name.to_string(),
            len: d.len,
            sha256: d.sha256,
        })
    }

    /// Send each file not yet in the bucket, saving the state after each.
    async fn deliver_s3(&mut self, ctx: Ctx<'_>, unit: &mut Unit) -> Result<(), Failure> {
        let pending: Vec<String> = unit.pending_files().map(|f| f.name.clone()).collect();
        let incident = unit.incident.clone();
        let mut files = Vec::new();
        for name in pending {
            let d = self.digests(ctx.dir, &incident, &name).await?;
            files.push((name, d));
        }
        let Target::S3(target) = &self.target else {
            return Err(Failure::transient("not an S3 upload".into()));
        };
        for (name, d) in files {
            let failures = AtomicU64::new(0);
            let save = |state: &UnitState| persist(ctx.dir, &incident, state);
            let how = Sending {
                dir: ctx.dir,
                host: &self.host,
                failures: &failures,
                save: &save,
            };
            let sent = target.send_file(&how, unit, &name, &d).await;
            let failed = failures.into_inner();
            ctx.stats
                .uploads_failed
                .fetch_add(failed, Ordering::Relaxed);
            unit.state.attempts += failed;
            sent?;
            unit.state.done.insert(name);
            unit.state.last_error = None;
            ctx.stats.files_ok.fetch_add(1, Ordering::Relaxed);
            ctx.stats.bytes_sent.fetch_add(d.len, Ordering::Relaxed);
            persist(ctx.dir, &unit.incident, &unit.state);
        }
        Ok(())
    }

    /// PUT each file not yet acknowledged, saving the state after each.
    async fn deliver_put(&mut self, ctx: Ctx<'_>, unit: &mut Unit) -> Result<(), Failure> {
        let pending: Vec<String> = unit.pending_files().map(|f| f.name.clone()).collect();
        let incident = unit.incident.clone();
        for name in pending {
            let file = self.hash(ctx.dir, &incident, &name).await?;
            let Target::Http(client) = &self.target else {
                return Err(Failure::transient("not an HTTP upload".into()));
            };
            let (host, incident) = (&self.host, &incident);
            let attempt = || client.send_put(ctx.dir, host, incident, &file);
            retrying_unit(self.config(), ctx.stats, attempt, unit).await?;
            unit.state.done.insert(name);
            unit.state.last_error = None;
            ctx.stats.files_ok.fetch_add(1, Ordering::Relaxed);
            ctx.stats.bytes_sent.fetch_add(file.len, Ordering::Relaxed);
            persist(ctx.dir, &unit.incident, &unit.state);
        }
        Ok(())
    }

    /// POST the files not yet acknowledged as one multipart request.
    async fn deliver_post(&mut self, ctx: Ctx<'_>, unit: &mut Unit) -> Result<(), Failure> {
        let pending: Vec<String> = unit.pending_files().map(|f| f.name.clone()).collect();
        let incident = unit.incident.clone();
        let mut files = Vec::new();
        for name in &pending {
            files.push(self.hash(ctx.dir, &incident, name).await?);
        }
        let Target::Http(client) = &self.target else {
            return Err(Failure::transient("not an HTTP upload".into()));
        };
        let (host, incident) = (&self.host, &incident);
        let attempt = || client.send_post(ctx.dir, host, incident, &files);
        retrying_unit(self.config(), ctx.stats, attempt, unit).await?;
        let bytes: u64 = files.iter().map(|f| f.len).sum();
        for f in files {
            unit.state.done.insert(f.name);
            ctx.stats.files_ok.fetch_add(1, Ordering::Relaxed);
        }
        unit.state.last_error = None;
        ctx.stats.bytes_sent.fetch_add(bytes, Ordering::Relaxed);
        persist(ctx.dir, &unit.incident, &unit.state);
        Ok(())
    }
}

fn persist(dir: &Path, incident: &str, state: &UnitState) {
    if let Err(e) = spool::save_state(dir, incident, state) {
        tracing::warn!(incident = %incident, error = %e, "cannot save upload state: a restart may send this capture again");
    }
}

/// [`retrying`] for one request of `unit`: its failed attempts counted in
/// `stats` and the unit's state.
async fn retrying_unit<T, F, Fut>(
    config: &UploadConfig,
    stats: &DeliverStats,
    attempt: F,
    unit: &mut Unit,
) -> Result<T, Failure>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    let failures = AtomicU64::new(0);
    let result = retrying(config, &failures, attempt).await;
    let failed = failures.into_inner();
    stats.uploads_failed.fetch_add(failed, Ordering::Relaxed);
    unit.state.attempts += failed;
    result
}

/// Check an `[upload]` table as the uploader would at start (URL, `${ENV}`
/// references, certificate files, header names, S3 credentials), without
/// sending anything: what `tripcap check` runs.
pub fn check_upload(config: &UploadConfig) -> Result<(), UploadError> {
    Uploader::new(String::new(), config.clone()).map(drop)
}

/// Ask the endpoint whether this agent (as `host`) could upload, sending
/// nothing to store: a `HEAD` of the URL or key a probe file would go to.
/// `Ok(status)` when it answered other than 401/403; the error says what is
/// wrong (unreachable, TLS, credentials) and what to do.
pub async fn probe_upload(config: &UploadConfig, host: &str) -> Result<u16, String> {
    let u = Uploader::new(host.to_string(), config.clone()).map_err(|e| e.to_string())?;
    u.probe().await
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
