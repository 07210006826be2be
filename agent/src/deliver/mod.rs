//! Delivery: getting finished captures off the host.
//!
//! The output directory is the queue ([`spool`]): a capture unit is its files
//! plus a small state file, so the queue survives restarts and crashes with no
//! in-memory-only state. One [`DeliveryTask`] ([`uploader`]) keeps the spool
//! within `max_spool` and, when `[upload]` is configured ([`upload_config`]),
//! its [`Uploader`] sends each unit to the endpoint ([`http`]) with retries
//! ([`retry`]), idempotency keys and SHA-256 checksums. [`DeliverStats`] is
//! what the agent's API reports about both.

pub mod http;
pub mod recover;
pub mod retry;
mod s3_upload;
pub mod spool;
pub mod upload_config;
pub mod uploader;

use std::sync::atomic::{AtomicBool, AtomicU64};

pub use upload_config::{Method, SpoolConfig, UploadConfig, UploadError};
pub use uploader::{check_upload, probe_upload, wait_drained, DeliveryTask, Uploader};

/// Counters and gauges of the spool and the uploader (monotonic unless noted).
#[derive(Debug, Default)]
pub struct DeliverStats {
    /// Units delivered completely.
    pub uploads_ok: AtomicU64,
    /// Attempts that failed (transient or refused).
    pub uploads_failed: AtomicU64,
    /// Units parked because the endpoint refused them.
    pub parked: AtomicU64,
    /// Files acknowledged by the endpoint.
    pub files_ok: AtomicU64,
    /// Bytes of files acknowledged.
    pub bytes_sent: AtomicU64,
    /// Units deleted by `max_spool` after they were uploaded.
    pub dropped_uploaded: AtomicU64,
    /// Units deleted by `max_spool` before they were delivered (lost evidence).
    pub dropped_pending: AtomicU64,
    /// Gauge: units waiting to be uploaded at the last scan.
    pub pending: AtomicU64,
    /// Gauge: units parked at the last scan.
    pub parked_now: AtomicU64,
    /// Gauge: units in the spool at the last scan.
    pub units: AtomicU64,
    /// Gauge: bytes of units in the spool at the last scan.
    pub spool_bytes: AtomicU64,
    /// Scans that found nothing to upload (for waiting until drained).
    pub rounds: AtomicU64,
    /// Gauge: an upload is in flight.
    pub busy: AtomicBool,
    /// Gauge: why the parked units were refused, at the last scan.
    pub parked_reasons: std::sync::Mutex<Vec<spool::ParkedReason>>,
}

/// Captures the agent wrote or failed to write (counted for the API).
#[derive(Debug, Default)]
pub struct CaptureCounts {
    /// Capture files and sidecars written.
    pub written: AtomicU64,
    /// Captures that failed to be written.
    pub failed: AtomicU64,
}

/// The delivery side of a running agent: the [`DeliveryTask`] (always running:
/// without `[upload]` it has no [`Uploader`] and only measures and bounds the
/// spool) and the counters the API reads. The agent starts it before capturing, calls
/// [`DeliveryHook::on_capture`] for each capture outcome, and [`Delivery::finish`]
/// at the end.
pub struct Delivery {
    task: tokio::task::JoinHandle<()>,
    stop: tokio_util::sync::CancellationToken,
    notify: std::sync::Arc<tokio::sync::Notify>,
    stats: std::sync::Arc<DeliverStats>,
    captures: std::sync::Arc<CaptureCounts>,
    uploading: bool,
}

impl Delivery {
    /// Check the config and start the uploader on the spool `dir`, tracked by
    /// `tasks`. Delivery is the one part that outlives the agent's stop: it
    /// drains its queue after the last capture is written ([`Delivery::finish`]),
    /// so it stops on its own token.
    pub fn start(
        dir: std::path::PathBuf,
        host: String,
        spool: SpoolConfig,
        upload: Option<UploadConfig>,
        tasks: &crate::tasks::Tasks,
    ) -> Result<Delivery, UploadError> {
        let uploader = upload.map(|u| Uploader::new(host, u)).transpose()?;
        let uploading = uploader.is_some();
        let task = DeliveryTask::new(dir, spool, uploader);
        let stop = tokio_util::sync::CancellationToken::new();
        let notify = task.notifier();
        let stats = task.stats();
        let task = tasks.spawn(task.run(stop.clone()));
        Ok(Delivery {
            task,
            stop,
            notify,
            stats,
            captures: std::sync::Arc::default(),
            uploading,
        })
    }

    /// Counters of the spool and uploads.
    pub fn stats(&self) -> std::sync::Arc<DeliverStats> {
        std::sync::Arc::clone(&self.stats)
    }

    /// Counters of captures written.
    pub fn captures(&self) -> std::sync::Arc<CaptureCounts> {
        std::sync::Arc::clone(&self.captures)
    }

    /// A cheap handle for the task that sees capture outcomes.
    pub fn hook(&self) -> DeliveryHook {
        DeliveryHook {
            notify: std::sync::Arc::clone(&self.notify),
            captures: std::sync::Arc::clone(&self.captures),
        }
    }

    /// Stop the uploader, first waiting up to `wait` for every pending unit to be
    /// uploaded (replays: `--upload-wait`). An upload cut by the stop is resumed
    /// by the next run.
    pub async fn finish(self, wait: Option<std::time::Duration>) {
        if let (Some(limit), true) = (wait, self.uploading) {
            if !wait_drained(&self.stats, &self.notify, limit).await {
                let pending = self
                    .stats
                    .pending
                    .load(std::sync::atomic::Ordering::Relaxed);
                tracing::warn!(pending, waited = ?limit, "stopping with captures not uploaded: they stay in the spool and the next run sends them (raise --upload-wait to wait longer)");
            }
        }
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// Given each capture outcome by the agent: counts it and wakes the uploader.
#[derive(Debug, Clone)]
pub struct DeliveryHook {
    notify: std::sync::Arc<tokio::sync::Notify>,
    captures: std::sync::Arc<CaptureCounts>,
}

impl DeliveryHook {
    /// A capture closed.
    pub fn on_capture(&self, outcome: &crate::window::CaptureOutcome) {
        use std::sync::atomic::Ordering::Relaxed;
        match outcome {
            crate::window::CaptureOutcome::Written { .. } => {
                self.captures.written.fetch_add(1, Relaxed);
                self.notify.notify_one();
            }
            crate::window::CaptureOutcome::Failed { .. } => {
                self.captures.failed.fetch_add(1, Relaxed);
            }
        }
    }
}

/// How long a replay waits for its uploads by default (`--upload-wait`).
pub const DEFAULT_UPLOAD_WAIT: std::time::Duration = std::time::Duration::from_secs(180);
