//! Where captures go: the host name in their file names and metadata, and the
//! output directory, created 0700 and checked writable before anything starts.

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use super::AgentError;

/// The host name (up to the first dot), for file names and metadata.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for its length; gethostname NUL-terminates or truncates.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let full = String::from_utf8_lossy(&buf[..end]).into_owned();
    full.split('.')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("localhost")
        .to_string()
}

/// Create the output directory (0700) and check we can write in it.
pub fn prepare_output(dir: &Path) -> Result<(), AgentError> {
    let err = |message: String| AgentError::Output {
        path: dir.display().to_string(),
        message,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            err(format!(
                "cannot create it ({e}): choose another with `-o DIR` or `output.dir`"
            ))
        })?;
    let probe = dir.join(format!(".tripcap-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| {
        err(format!(
            "cannot write in it ({e}): fix its permissions or choose another with `-o DIR`"
        ))
    })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Complete what a crash or a full disk left in the output directory (before
/// any window opens, so nothing in it is being written), and say what was done.
pub fn recover_spool(dir: &Path, host: &str) {
    match crate::deliver::recover::recover(dir, host) {
        Ok(r) => {
            if !r.swept.is_empty() {
                tracing::info!(
                    files = r.swept.len(),
                    "removed temporary files left by an earlier run"
                );
            }
            for incident in &r.completed {
                tracing::warn!(%incident, "a capture was left without its sidecar (the agent stopped or the disk filled): completed it with what the file holds; it is delivered like any other");
            }
            for (file, why) in &r.unreadable {
                tracing::warn!(%file, %why, "a capture left without its sidecar could not be completed: it stays in the output directory; look at it with `tripcap analyze`");
            }
        }
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot look for captures left by an earlier run")
        }
    }
}
