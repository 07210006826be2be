//! Discovery: which regular files the globs match now, and which directories to watch.
//!
//! Globs are expanded afresh on every poll (a job restart may create whole new directories), and
//! every match is stat'ed: the scan, not an inotify event, is what the follower believes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::identity::{FileId, Observed};
use super::warnings::Warnings;
use super::FollowError;

/// A validated glob and the deepest directory it names literally.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    text: String,
    static_dir: PathBuf,
}

impl Pattern {
    pub(crate) fn parse(text: &str) -> Result<Pattern, FollowError> {
        if text.trim().is_empty() {
            return Err(FollowError::EmptyGlob);
        }
        if let Err(e) = glob::Pattern::new(text) {
            return Err(FollowError::BadGlob {
                glob: text.to_string(),
                reason: e.msg.to_string(),
                pos: e.pos,
            });
        }
        Ok(Pattern {
            text: text.to_string(),
            static_dir: static_dir(text),
        })
    }
}

fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The directory part of `text` before the first component holding a glob character
/// (the parent directory for a glob without any).
fn static_dir(text: &str) -> PathBuf {
    let mut dir = PathBuf::new();
    let mut comps = Path::new(text).components().peekable();
    while let Some(c) = comps.next() {
        if comps.peek().is_none() || has_meta(&c.as_os_str().to_string_lossy()) {
            break;
        }
        dir.push(c.as_os_str());
    }
    if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir
    }
}

/// One regular file a glob matched.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub id: FileId,
    pub observed: Observed,
}

/// Expands every pattern; returns matched regular files by path (first pattern wins).
/// Unreadable directories and paths are warned about once and left out.
pub(crate) fn scan(patterns: &[Pattern], warnings: &mut Warnings) -> BTreeMap<PathBuf, Found> {
    let mut out = BTreeMap::new();
    for pattern in patterns {
        let paths = match glob::glob(&pattern.text) {
            Ok(paths) => paths,
            // Validated in `Pattern::parse`; nothing to expand if it still fails.
            Err(_) => continue,
        };
        for entry in paths {
            let path = match entry {
                Ok(path) => path,
                Err(e) => {
                    let path = e.path().to_path_buf();
                    warnings.once(&path, "list", || {
                        let fix = if e.error().kind() == std::io::ErrorKind::PermissionDenied {
                            "; grant tripcap read and execute permission on it"
                        } else {
                            "; will retry"
                        };
                        format!(
                            "cannot list directory while expanding `{}`: {}{fix}",
                            pattern.text,
                            e.error()
                        )
                    });
                    continue;
                }
            };
            if out.contains_key(&path) {
                continue;
            }
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_file() => {
                    out.insert(
                        path,
                        Found {
                            id: FileId::of(&meta),
                            observed: Observed::of(&meta),
                        },
                    );
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => warnings.once(&path, "stat", || {
                    format!("cannot stat log file: {e}; grant tripcap read permission on it and its directories")
                }),
            }
        }
    }
    out
}

/// Directories whose inotify events should wake the poller: the nearest existing ancestor of each
/// pattern's literal directory, and the directory of every followed path. With identities, so a
/// directory removed and re-created is watched again.
pub(crate) fn watch_dirs<'a>(
    patterns: &[Pattern],
    followed: impl Iterator<Item = &'a Path>,
) -> Vec<(PathBuf, FileId)> {
    let mut dirs = BTreeSet::new();
    for p in patterns {
        let mut dir = p.static_dir.as_path();
        loop {
            if dir.is_dir() {
                dirs.insert(dir.to_path_buf());
                break;
            }
            match dir.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => dir = parent,
                _ => break,
            }
        }
    }
    for path in followed {
        if let Some(parent) = path.parent() {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            dirs.insert(parent.to_path_buf());
        }
    }
    dirs.into_iter()
        .filter_map(|d| {
            let meta = std::fs::metadata(&d).ok()?;
            meta.is_dir().then(|| (d, FileId::of(&meta)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_dir_stops_at_first_glob_component() {
        assert_eq!(
            static_dir("/logs/attempt_*/0/stderr.log"),
            PathBuf::from("/logs")
        );
        assert_eq!(static_dir("/var/log/nccl.log"), PathBuf::from("/var/log"));
        assert_eq!(static_dir("/a/b/**/x.log"), PathBuf::from("/a/b"));
        assert_eq!(static_dir("*.log"), PathBuf::from("."));
        assert_eq!(static_dir("logs/*.log"), PathBuf::from("logs"));
    }

    #[test]
    fn bad_glob_error_names_glob_and_fix() {
        let err = Pattern::parse("/logs/[rank*.log").map(|_| ()).err();
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("/logs/[rank*.log"), "{msg}");
        assert!(msg.contains("fix"), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        assert!(Pattern::parse("").is_err());
        assert!(Pattern::parse("/logs/**/*.log").is_ok());
    }
}
