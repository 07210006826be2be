//! Early wake-ups from inotify (through `notify`), watching directories, never files.
//!
//! Events are only a hint that something changed: the poller rescans and stats anyway, on its
//! interval, so lost events, `IN_Q_OVERFLOW`, network filesystems without events or a failed
//! `inotify_init` (instance limit) cost latency, never lines. Watching the parent directories
//! rather than the files means a renamed file's watch does not follow it away, and creations show
//! up. Our own reader's opens (`Access` events) are ignored, or every read would wake the next.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::Notify;

use super::identity::FileId;

/// Owns the watcher and the set of watched directories.
pub(crate) struct Wake {
    watcher: Option<RecommendedWatcher>,
    watched: BTreeMap<PathBuf, FileId>,
    notify: Arc<Notify>,
}

impl Wake {
    /// Starts the watcher; without one (no inotify, limits reached) the follower only polls.
    pub(crate) fn new() -> Wake {
        let notify = Arc::new(Notify::new());
        let n = Arc::clone(&notify);
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            match res {
                Ok(ev) if matches!(ev.kind, EventKind::Access(_)) => {}
                // Anything else, including errors and rescan flags: look now.
                _ => n.notify_one(),
            }
        });
        let watcher = match watcher {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(error = %e, "inotify unavailable; following logs by polling only (raise fs.inotify.max_user_instances to get early wake-ups)");
                None
            }
        };
        Wake {
            watcher,
            watched: BTreeMap::new(),
            notify,
        }
    }

    /// Resolves when an event arrived since the last call.
    pub(crate) async fn notified(&self) {
        self.notify.notified().await;
    }

    /// Watches exactly `dirs`; a directory whose identity changed (removed and re-created) is
    /// watched afresh.
    pub(crate) fn set_dirs(&mut self, dirs: Vec<(PathBuf, FileId)>) {
        let Some(watcher) = self.watcher.as_mut() else {
            return;
        };
        let want: BTreeMap<PathBuf, FileId> = dirs.into_iter().collect();
        if want == self.watched {
            return;
        }
        let old = std::mem::take(&mut self.watched);
        for (dir, id) in &old {
            if want.get(dir) != Some(id) {
                // The watch may already be gone with its directory.
                let _ = watcher.unwatch(dir);
            }
        }
        for (dir, id) in want {
            if old.get(&dir) == Some(&id) {
                self.watched.insert(dir, id);
                continue;
            }
            match watcher.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watched.insert(dir, id);
                }
                Err(e) => {
                    // Polling covers it; try again next time.
                    tracing::debug!(dir = %dir.display(), error = %e, "cannot watch log directory");
                }
            }
        }
    }
}
