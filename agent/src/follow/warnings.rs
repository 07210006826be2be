//! Warn once per path and problem, then stay quiet while it persists.
//!
//! An unreadable log path is retried every poll; logging every retry would flood the agent's log.
//! A problem is logged when first seen and again only after it cleared and came back.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The set of (path, problem) pairs already warned about.
#[derive(Debug, Default)]
pub(crate) struct Warnings {
    active: HashSet<(PathBuf, &'static str)>,
}

impl Warnings {
    /// Logs `message` at WARN unless this problem at this path was already reported.
    pub(crate) fn once(
        &mut self,
        path: &Path,
        problem: &'static str,
        message: impl FnOnce() -> String,
    ) {
        if self.active.insert((path.to_path_buf(), problem)) {
            tracing::warn!(path = %path.display(), problem, "{}", message());
        }
    }

    /// The path works again: forget its problems (and say so if there were any).
    pub(crate) fn clear(&mut self, path: &Path) {
        if self.active.is_empty() {
            return;
        }
        let before = self.active.len();
        self.active.retain(|(p, _)| p != path);
        if self.active.len() != before {
            tracing::info!(path = %path.display(), "log file readable again");
        }
    }
}
