//! What happens to each capture once its window is written: logged, counted,
//! handed to delivery and to the caller; and delivery's finish once the last
//! one is in.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use crate::deliver::Delivery;
use crate::window::CaptureOutcome;

/// Captures written and failed in this run.
#[derive(Default)]
pub(super) struct Counts {
    pub(super) written: AtomicU64,
    pub(super) failed: AtomicU64,
}

/// Delivery, and how to finish it once the last capture is handed over.
pub(super) struct DeliveryFinish {
    pub(super) delivery: Delivery,
    /// Wait this long for uploads (replays), else stop at once.
    pub(super) upload_wait: Option<Duration>,
    /// Cancelled when the replay ran to its end: only then wait for uploads
    /// (not when interrupted, nor when the agent failed to start).
    pub(super) replay_ended: CancellationToken,
}

/// Log each capture, hand it to delivery and the caller, count it; when the
/// last window is written, let delivery finish.
pub(super) async fn deliver_outcomes(
    mut done: UnboundedReceiver<CaptureOutcome>,
    finish: DeliveryFinish,
    outcomes: Option<UnboundedSender<CaptureOutcome>>,
    counts: Arc<Counts>,
) {
    let delivery = finish.delivery.hook();
    while let Some(outcome) = done.recv().await {
        match &outcome {
            CaptureOutcome::Written { pcapng, report, .. } => {
                counts.written.fetch_add(1, Ordering::Relaxed);
                if report.window.complete {
                    tracing::info!(file = %pcapng.display(), packets = report.packets, "capture written");
                } else {
                    tracing::warn!(file = %pcapng.display(), packets = report.packets, shortfall = %report.window.shortfall.join("; "), "capture written, incomplete");
                }
            }
            CaptureOutcome::Failed { path, error } => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                tracing::error!(file = %path.display(), error = %error, "capture failed")
            }
        }
        delivery.on_capture(&outcome);
        if let Some(tx) = &outcomes {
            let _ = tx.send(outcome);
        }
    }
    let wait = finish
        .upload_wait
        .filter(|_| finish.replay_ended.is_cancelled());
    finish.delivery.finish(wait).await;
}
