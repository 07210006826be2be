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

use backon::Retryable;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::http::{redact_url, Client, Failure, FileDigest};
use super::retry::{backoff, next_delay};
use super::spool::{self, Parked, Status, Unit, UnitState};
use super::upload_config::{Method, SpoolConfig, UploadConfig, UploadError};
use super::DeliverStats;
use crate::digest::sha256_file;

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
    client: Client,
    /// SHA-256 and length of the files of units in progress.
    hashes: HashMap<(String, String), (u64, String)>,
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
        Ok(Uploader {
            host,
            client: Client::new(upload)?,
            hashes: HashMap::new(),
        })
    }

    fn config(&self) -> &UploadConfig {
        self.client.config()
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
            tracing::info!(url = %redact_url(&c.url), method = ?c.method, "uploading captures");
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
        let result = match self.config().method {
            Method::Put => self.deliver_put(ctx, &mut unit).await,
            Method::Post => self.deliver_post(ctx, &mut unit).await,
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
            Err(Failure::Refused { status, why }) => {
                ctx.stats.parked.fetch_add(1, Ordering::Relaxed);
                tracing::error!(incident = %unit.incident, status, reason = %why, "upload refused: capture parked (fix the endpoint or config, then delete the unit's .state file to retry)");
                unit.state.parked = Some(Parked {
                    status: Some(status),
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

    /// SHA-256 and length of a unit's file, cached for the unit's lifetime.
    async fn hash(
        &mut self,
        dir: &Path,
        incident: &str,
        name: &str,
    ) -> Result<FileDigest, Failure> {
        let key = (incident.to_string(), name.to_string());
        let (len, sha256) = match self.hashes.get(&key) {
            Some(h) => h.clone(),
            None => {
                let path = dir.join(name);
                let h = tokio::task::spawn_blocking(move || sha256_file(&path))
                    .await
                    .map_err(|e| Failure::transient(format!("hashing stopped: {e}")))?
                    .map_err(|e| match e.kind() {
                        std::io::ErrorKind::NotFound => Failure::Gone,
                        _ => Failure::transient(format!("cannot read {name}: {e}")),
                    })?;
                self.hashes.insert(key, h.clone());
                h
            }
        };
        Ok(FileDigest {
            name: name.to_string(),
            len,
            sha256,
        })
    }

    /// PUT each file not yet acknowledged, saving the state after each.
    async fn deliver_put(&mut self, ctx: Ctx<'_>, unit: &mut Unit) -> Result<(), Failure> {
        let pending: Vec<String> = unit.pending_files().map(|f| f.name.clone()).collect();
        let incident = unit.incident.clone();
        for name in pending {
            let file = self.hash(ctx.dir, &incident, &name).await?;
            let (client, host, incident) = (&self.client, &self.host, &incident);
            let attempt = || client.send_put(ctx.dir, host, incident, &file);
            retrying(self.config(), ctx.stats, attempt, unit).await?;
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
        let (client, host, incident) = (&self.client, &self.host, &incident);
        let attempt = || client.send_post(ctx.dir, host, incident, &files);
        retrying(self.config(), ctx.stats, attempt, unit).await?;
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

/// Run `attempt` with exponential backoff and jitter while it fails
/// transiently; count the failed attempts in `stats` and the unit's state.
async fn retrying<F, Fut>(
    config: &UploadConfig,
    stats: &DeliverStats,
    attempt: F,
    unit: &mut Unit,
) -> Result<(), Failure>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), Failure>>,
{
    let max = config.max_backoff;
    let failures = AtomicU64::new(0);
    let result = attempt
        .retry(backoff(config.min_backoff, max, config.attempts))
        .sleep(tokio::time::sleep)
        .when(|f| matches!(f, Failure::Transient { .. }))
        .adjust(|f, proposed| {
            let retry_after = match f {
                Failure::Transient { retry_after, .. } => *retry_after,
                _ => None,
            };
            next_delay(proposed, retry_after, max)
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
