//! Sending a unit's files to an S3 bucket (`url = "s3://BUCKET/…"`).
//!
//! One file at a time, in the unit's order (the sidecar last, so a sidecar in
//! the bucket means the incident is complete there):
//!
//! 1. `HEAD` the key: an object of the same size and SHA-256 metadata is
//!    already there, so nothing is sent (re-uploads are idempotent).
//! 2. A file of at most `part_size` bytes is one `PUT` with `Content-MD5` and
//!    `x-amz-meta-sha256`.
//! 3. A larger one is a multipart upload: its id is saved in the unit's state
//!    before any part is sent; parts (each with its `Content-MD5`) go up
//!    `parts_in_flight` at a time, each retried alone; after a restart the
//!    upload is resumed from the parts the store lists whose ETag is the MD5
//!    we computed. A unit that is parked aborts its upload.
//! 4. After the last byte, a `HEAD` checks size and SHA-256 before the file
//!    counts as delivered (and may be deleted by `keep_after_upload = false`).
//!
//! At the first round, open multipart uploads under the template's prefix
//! whose keys this host would write and that no unit's state refers to are
//! aborted ([`stale_uploads`]): an agent never leaves orphaned parts behind.

use std::collections::{BTreeMap, BTreeSet};
use std::io::SeekFrom;
use std::path::Path;
use std::sync::atomic::AtomicU64;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio_util::io::ReaderStream;

use super::http::build_client;
use super::retry::{classify, retrying, Failure, Verdict};
use super::spool::{Unit, UnitState};
use super::upload_config::{UploadConfig, UploadError};
use crate::auth::expand_env;
use crate::capture_file::media_type;
use crate::digest::PartDigests;
use crate::s3::{self, Bucket, Location, OpenUpload, S3Error};

/// S3 allows parts of 5 MiB (all but the last) to 5 GiB, and 10,000 of them.
const MIN_PART: u64 = 5 << 20;
const MAX_PART: u64 = 5 << 30;
const MAX_PARTS: u64 = 10_000;

/// The bucket side of one `[upload]` table.
pub(super) struct S3Target {
    config: UploadConfig,
    location: Location,
    bucket: Bucket,
    /// Endpoint and where the keys came from, for the start-up log line.
    shown: String,
}

/// What a file is sent with: where it is, as which host, where failed
/// attempts are counted, and how the unit's state is saved.
pub(super) struct Sending<'a> {
    /// The spool directory.
    pub dir: &'a Path,
    /// This host's name (for the key).
    pub host: &'a str,
    /// Failed attempts, added to.
    pub failures: &'a AtomicU64,
    /// Persists the unit's state.
    pub save: &'a (dyn Fn(&UnitState) + Sync),
}

/// One part of a file: number (1-based), offset, length, MD5.
type Part = (u16, u64, u64, [u8; 16]);

impl S3Target {
    /// Fails on an unusable table (bad URL, part size, unset `${ENV}`, no
    /// credentials), before anything is sent.
    pub(super) fn new(config: UploadConfig) -> Result<S3Target, UploadError> {
        let url = expand_env(&config.url, "`url`")?;
        let location =
            Location::parse(&url).map_err(|e| UploadError::Config(format!("`url`: {e}")))?;
        location
            .check_upload_template()
            .map_err(|e| UploadError::Config(format!("`url`: {e}")))?;
        if !(MIN_PART..=MAX_PART).contains(&config.part_size) {
            return Err(UploadError::Config(format!(
                "`part_size` = {} bytes: S3 takes parts of 5MiB to 5GiB (write e.g. \"64MiB\")",
                config.part_size
            )));
        }
        if !(1..=64).contains(&config.parts_in_flight) {
            return Err(UploadError::Config(format!(
                "`parts_in_flight` = {}: give 1 to 64",
                config.parts_in_flight
            )));
        }
        let env = |v: &Option<String>, what: &str| {
            v.as_deref()
                .map(|v| expand_env(v, &format!("`{what}`")))
                .transpose()
        };
        let settings = s3::Settings {
            endpoint: env(&config.endpoint, "endpoint")?,
            region: env(&config.region, "region")?,
            path_style: config.path_style,
            access_key: env(&config.access_key, "access_key")?,
            secret_key: env(&config.secret_key, "secret_key")?,
            session_token: env(&config.session_token, "session_token")?,
            profile: env(&config.profile, "profile")?,
        };
        let resolved = s3::resolve(&settings, &s3::ProcessEnvironment).map_err(|e| match e {
            s3::ResolveError::Missing(m) => UploadError::UnsetEnv(m),
            s3::ResolveError::Invalid(m) => UploadError::Config(m),
        })?;
        let http = build_client(&config)?;
        let bucket = Bucket::new(http, &location.bucket, &resolved).map_err(UploadError::Config)?;
        let shown = format!(
            "{} (region {}, keys from {})",
            resolved.endpoint, resolved.region, resolved.source
        );
        Ok(S3Target {
            config,
            location,
            bucket,
            shown,
        })
    }

    /// The table it was built from.
    pub(super) fn config(&self) -> &UploadConfig {
        &self.config
    }

    /// Endpoint, region and where the keys came from (no secret).
    pub(super) fn shown(&self) -> &str {
        &self.shown
    }

    /// Ask the store whether this agent could upload, sending nothing to
    /// store: a HEAD of the key a probe file would have. `Ok(status)` when the
    /// keys are accepted (200 or 404); else what is wrong and what to do.
    pub(super) async fn probe(&self, host: &str) -> Result<u16, String> {
        let key = self.location.key(host, "tripcap-selftest", "probe");
        let where_ = format!("s3://{}/{key} at {}", self.location.bucket, self.shown);
        match self.bucket.head(&key).await {
            Ok(Some(_)) => Ok(200),
            Ok(None) => Ok(404),
            Err(e) => Err(format!("{where_}: {e}")),
        }
    }

    /// The part size for a file of `len` bytes: the configured one, grown so
    /// that no file needs more than 10,000 parts.
    pub(super) fn part_size(&self, len: u64) -> u64 {
        part_size_for(self.config.part_size, len)
    }

    /// Abort this host's open multipart uploads that no unit refers to.
    /// Returns how many were aborted.
    pub(super) async fn sweep(&self, host: &str, units: &[Unit]) -> Result<usize, Failure> {
        let open = self
            .bucket
            .open_uploads(self.location.fixed_prefix())
            .await
            .map_err(failure)?;
        let referenced: BTreeSet<&str> = units
            .iter()
            .flat_map(|u| u.state.multipart.values().map(String::as_str))
            .collect();
        let stale = stale_uploads(&open, &self.location, host, &referenced);
        for u in &stale {
            self.bucket
                .abort(&u.key, &u.upload_id)
                .await
                .map_err(failure)?;
            tracing::info!(key = %u.key, "aborted a multipart upload a previous run left open");
        }
        Ok(stale.len())
    }

    /// Send one file of `unit` with `digests`, each request retried with the
    /// table's backoff (failed attempts added to `failures`). `save`
    /// persists the unit's state (called when a multipart upload starts or ends).
    pub(super) async fn send_file(
        &self,
        how: &Sending<'_>,
        unit: &mut Unit,
        name: &str,
        digests: &PartDigests,
    ) -> Result<(), Failure> {
        let (failures, save) = (how.failures, how.save);
        let key = self.location.key(how.host, &unit.incident, name);
        let path = how.dir.join(name);
        let sha = digests.sha256.as_str();
        let (c, bucket) = (&self.config, &self.bucket);

        // 1. Already there?
        let found = retrying(c, failures, || async {
            bucket.head(&key).await.map_err(failure)
        })
        .await?;
        if found.is_some_and(|h| h.len == digests.len && h.sha256.as_deref() == Some(sha)) {
            tracing::debug!(key = %key, "already in the bucket with the same SHA-256");
            self.forget_upload(unit, name, &key, save).await;
            return Ok(());
        }

        // 2./3. Send it.
        let result = if digests.part_md5.len() <= 1 {
            let md5 = digests.part_md5.first().copied().unwrap_or_default();
            retrying(c, failures, || async {
                let body = part_body(&path, 0, digests.len).await?;
                bucket
                    .put(&key, body, digests.len, md5, sha, media_type(name))
                    .await
                    .map_err(failure)
            })
            .await
        } else {
            self.send_multipart(&key, &path, unit, name, digests, how)
                .await
        };
        if let Err(f) = result {
            match f {
                Failure::Refused { .. } => self.forget_upload(unit, name, &key, save).await,
                // The file went (the spool bound dropped the unit): its upload goes too,
                // without a state file to save it in.
                Failure::Gone => {
                    if let Some(id) = unit.state.multipart.remove(name) {
                        if let Err(e) = self.bucket.abort(&key, &id).await {
                            tracing::warn!(key = %key, error = %e, "cannot abort the upload of a dropped capture: the next start does");
                        }
                    }
                }
                Failure::Transient { .. } => {}
            }
            return Err(f);
        }

        // 4. Check what the bucket holds.
        let check = retrying(c, failures, || async {
            bucket.head(&key).await.map_err(failure)
        })
        .await?;
        match check {
            Some(h) if h.len == digests.len && h.sha256.as_deref() == Some(sha) => Ok(()),
            Some(h) => Err(Failure::transient(format!(
                "after the upload the bucket holds {} bytes with SHA-256 {} for {key}, not {} bytes with {sha}: sending it again",
                h.len,
                h.sha256.as_deref().unwrap_or("(none)"),
                digests.len
            ))),
            None => Err(Failure::transient(format!(
                "the store acknowledged {key} but a HEAD does not find it: sending it again"
            ))),
        }
    }

    /// The multipart path: resume or start, send the missing parts, complete.
    async fn send_multipart(
        &self,
        key: &str,
        path: &Path,
        unit: &mut Unit,
        name: &str,
        digests: &PartDigests,
        how: &Sending<'_>,
    ) -> Result<(), Failure> {
        let (failures, save) = (how.failures, how.save);
        let (c, bucket) = (&self.config, &self.bucket);
        let expected = plan_parts(digests);
        // Resume: the parts the store already has with our MD5.
        let mut have: BTreeMap<u16, String> = BTreeMap::new();
        if let Some(id) = unit.state.multipart.get(name).cloned() {
            let listed = retrying(c, failures, || async {
                match bucket.list_parts(key, &id).await {
                    Ok(p) => Ok(Some(p)),
                    // The upload is gone (completed, aborted or expired): start again.
                    Err(S3Error::Status { status: 404, .. }) => Ok(None),
                    Err(e) => Err(failure(e)),
                }
            })
            .await?;
            match listed {
                Some(parts) => {
                    have = reusable_parts(&parts, &expected);
                    tracing::info!(key = %key, parts = have.len(), of = expected.len(), "resuming a multipart upload");
                }
                None => {
                    unit.state.multipart.remove(name);
                    save(&unit.state);
                }
            }
        }
        let id = match unit.state.multipart.get(name) {
            Some(id) => id.clone(),
            None => {
                let ctype = media_type(name);
                let id = retrying(c, failures, || async {
                    bucket
                        .create_multipart(key, &digests.sha256, ctype)
                        .await
                        .map_err(failure)
                })
                .await?;
                unit.state.multipart.insert(name.to_string(), id.clone());
                save(&unit.state);
                id
            }
        };

        // Send what is missing, a bounded number at a time, each part retried alone.
        let mut queue = expected
            .iter()
            .filter(|(n, ..)| !have.contains_key(n))
            .copied()
            .collect::<Vec<_>>()
            .into_iter();
        let id = id.as_str();
        let send_one = |(number, offset, len, md5): Part| async move {
            let etag = retrying(c, failures, || async {
                let body = part_body(path, offset, len).await?;
                bucket
                    .upload_part(key, id, number, body, len, md5)
                    .await
                    .map_err(failure)
            })
            .await?;
            Ok::<_, Failure>((number, etag))
        };
        let mut running = FuturesUnordered::new();
        for p in queue.by_ref().take(c.parts_in_flight) {
            running.push(send_one(p));
        }
        let mut first_error = None;
        while let Some(r) = running.next().await {
            match r {
                Ok((number, etag)) => {
                    have.insert(number, etag);
                    if first_error.is_none() {
                        if let Some(p) = queue.next() {
                            running.push(send_one(p));
                        }
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let etags: Vec<String> = have.into_values().collect();
        retrying(c, failures, || async {
            bucket.complete(key, id, &etags).await.map_err(failure)
        })
        .await?;
        unit.state.multipart.remove(name);
        save(&unit.state);
        Ok(())
    }

    /// Abort the multipart upload of `name`, if any, and forget it.
    async fn forget_upload(
        &self,
        unit: &mut Unit,
        name: &str,
        key: &str,
        save: &(dyn Fn(&UnitState) + Sync),
    ) {
        if let Some(id) = unit.state.multipart.remove(name) {
            if let Err(e) = self.bucket.abort(key, &id).await {
                tracing::warn!(key = %key, error = %e, "cannot abort a multipart upload: the next start tries again");
                unit.state.multipart.insert(name.to_string(), id);
            }
            save(&unit.state);
        }
    }
}

/// The configured part size grown so that `len` needs at most 10,000 parts.
fn part_size_for(configured: u64, len: u64) -> u64 {
    configured.max(len.div_ceil(MAX_PARTS)).min(MAX_PART)
}

/// The parts of a file: number, offset, length, MD5.
fn plan_parts(d: &PartDigests) -> Vec<Part> {
    d.part_md5
        .iter()
        .enumerate()
        .map(|(i, md5)| {
            let offset = i as u64 * d.part_size;
            let len = d.part_size.min(d.len - offset);
            (i as u16 + 1, offset, len, *md5)
        })
        .collect()
}

/// Parts the store lists that can be kept: the right size and our MD5 as ETag.
fn reusable_parts(listed: &[s3::UploadedPart], expected: &[Part]) -> BTreeMap<u16, String> {
    listed
        .iter()
        .filter(|p| {
            expected.iter().any(|(n, _, len, md5)| {
                *n == p.number && *len == p.size && p.etag.eq_ignore_ascii_case(&hex::encode(md5))
            })
        })
        .map(|p| (p.number, p.etag.clone()))
        .collect()
}

/// Open uploads this host started (by key) that no unit refers to.
pub(super) fn stale_uploads(
    open: &[OpenUpload],
    location: &Location,
    host: &str,
    referenced: &BTreeSet<&str>,
) -> Vec<OpenUpload> {
    open.iter()
        .filter(|u| location.is_own_key(&u.key, host) && !referenced.contains(u.upload_id.as_str()))
        .cloned()
        .collect()
}

/// `len` bytes of the file from `offset`, streamed in 64 KiB pieces.
async fn part_body(path: &Path, offset: u64, len: u64) -> Result<reqwest::Body, Failure> {
    let mut f = tokio::fs::File::open(path).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Failure::Gone
        } else {
            Failure::transient(format!("cannot open {}: {e}", path.display()))
        }
    })?;
    f.seek(SeekFrom::Start(offset))
        .await
        .map_err(|e| Failure::transient(format!("cannot read {}: {e}", path.display())))?;
    Ok(reqwest::Body::wrap_stream(ReaderStream::with_capacity(
        f.take(len),
        64 << 10,
    )))
}

/// What an S3 error means for the unit: the same policy as HTTP (5xx, 408,
/// 429, `SlowDown` and transport errors retried; other 4xx park), with the
/// store's code and message as the reason.
pub(super) fn failure(e: S3Error) -> Failure {
    match &e {
        S3Error::Transport(_) | S3Error::Malformed(_) => Failure::transient(e.to_string()),
        S3Error::Status {
            status,
            retry_after,
            ..
        } => match classify(
            *status,
            retry_after.as_deref(),
            std::time::SystemTime::now(),
        ) {
            // A 200 whose body is an error (CompleteMultipartUpload) is retried.
            Verdict::Done => Failure::transient(e.to_string()),
            Verdict::Retry(after) => Failure::Transient {
                why: e.to_string(),
                retry_after: after,
            },
            Verdict::Park => Failure::Refused {
                status: *status,
                code: match &e {
                    S3Error::Status { code, .. } if !code.is_empty() => Some(code.clone()),
                    _ => None,
                },
                why: e.to_string(),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_size_grows_to_stay_under_ten_thousand_parts() {
        assert_eq!(part_size_for(64 << 20, 1 << 30), 64 << 20);
        let huge = 1u64 << 40; // 1 TiB
        let p = part_size_for(64 << 20, huge);
        assert!(huge.div_ceil(p) <= MAX_PARTS, "{p}");
    }

    #[test]
    fn parts_are_planned_and_reused_by_md5() {
        let d = PartDigests {
            len: 25,
            sha256: String::new(),
            part_size: 10,
            part_md5: vec![[1; 16], [2; 16], [3; 16]],
        };
        let plan = plan_parts(&d);
        assert_eq!(
            plan.iter()
                .map(|(n, o, l, _)| (*n, *o, *l))
                .collect::<Vec<_>>(),
            vec![(1, 0, 10), (2, 10, 10), (3, 20, 5)]
        );
        let listed = vec![
            s3::UploadedPart {
                number: 1,
                etag: hex::encode([1u8; 16]),
                size: 10,
            },
            s3::UploadedPart {
                number: 2,
                etag: hex::encode([9u8; 16]), // another content: sent again
                size: 10,
            },
            s3::UploadedPart {
                number: 3,
                etag: hex::encode([3u8; 16]).to_uppercase(),
                size: 4, // cut short: sent again
            },
        ];
        let keep = reusable_parts(&listed, &plan);
        assert_eq!(keep.keys().copied().collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn only_this_hosts_unreferenced_uploads_are_stale() {
        let loc = Location::parse("s3://caps/p/{incident}/{host}/{file}").expect("parses");
        let up = |key: &str, id: &str| OpenUpload {
            key: key.into(),
            upload_id: id.into(),
        };
        let open = vec![
            up("p/i1/n1/i1.pcapng", "keep"),
            up("p/i2/n1/i2.pcapng", "orphan"),
            up("p/i2/n2/i2.pcapng", "other-host"),
            up("q/i3/n1/x", "other-prefix"),
        ];
        let referenced = BTreeSet::from(["keep"]);
        let stale = stale_uploads(&open, &loc, "n1", &referenced);
        assert_eq!(stale, vec![up("p/i2/n1/i2.pcapng", "orphan")]);
    }

    #[test]
    fn store_errors_retry_or_park_like_http() {
        let status = |s: u16, code: &str| S3Error::Status {
            status: s,
            code: code.into(),
            message: String::new(),
            retry_after: None,
        };
        assert!(matches!(
            failure(status(503, "SlowDown")),
            Failure::Transient { .. }
        ));
        assert!(matches!(
            failure(S3Error::Transport("refused".into())),
            Failure::Transient { .. }
        ));
        match failure(status(403, "SignatureDoesNotMatch")) {
            Failure::Refused { status, code, why } => {
                assert_eq!(status, 403);
                assert_eq!(code.as_deref(), Some("SignatureDoesNotMatch"));
                assert!(why.contains("secret key is wrong"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }
}
