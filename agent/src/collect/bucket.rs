//! The collector with a bucket behind it (`collect --store s3://BUCKET/PREFIX`):
//! files are kept as `PREFIX/<incident>/<host>/<file>`, the layout agents
//! write when they upload straight to the bucket, so one collector can serve
//! what agents put there and several collectors can share one bucket, none
//! holding state of its own.
//!
//! Storing: a body is streamed to a private temporary file while its SHA-256
//! and MD5 are computed, checked against what the sender announced, then
//! PUT with `Content-MD5` and `x-amz-meta-sha256`; a name already in the bucket
//! with the same SHA-256 is not written again, with another one it is a
//! conflict (the same answers as the directory store).
//!
//! Reading: the incidents are the common prefixes under `PREFIX/` (a listing
//! with a delimiter: 1,000 per request), cached for [`INDEX_TTL`] and bounded
//! to the newest [`MAX_INDEX`]; an incident's hosts, files, sidecars and
//! summaries are read for the page being shown only, and kept in a bounded
//! cache once complete (every host's sidecar arrived: nothing changes after).

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use md5::{Digest, Md5};
use tokio::io::AsyncWriteExt;

use super::catalog::{
    parse_json, select, trigger_ns, Filter, HostView, IncidentView, Page, PER_PAGE,
};
use super::store::{receive, safe_name, StoreError, Stored};
use crate::s3::{self, Bucket, S3Error};

/// How long the incident index is reused before the bucket is listed again.
pub const INDEX_TTL: Duration = Duration::from_secs(5);
/// Most incidents the index holds (the newest).
pub const MAX_INDEX: usize = 200_000;
/// Most incidents whose detail is cached.
pub const MAX_DETAILS: usize = 2_000;
/// The largest object one PUT can store.
pub const MAX_PUT: u64 = 5 << 30;
/// Largest sidecar or summary read for the page.
const MAX_JSON: usize = 8 << 20;
/// Incidents read at once for a page.
const READ_AT_ONCE: usize = 8;

/// A bucket as the collector's storage.
pub struct BucketStore {
    bucket: Bucket,
    /// `PREFIX/` (or empty).
    prefix: String,
    max_file: u64,
    /// Private directory for bodies on their way in.
    incoming: tempfile::TempDir,
    seq: AtomicU64,
    index: Mutex<Option<(Instant, Arc<Vec<String>>)>>,
    details: Mutex<Details>,
    /// Requests made to list the bucket (for `/healthz`-style checks and tests).
    pub list_requests: AtomicU64,
}

impl std::fmt::Debug for BucketStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketStore")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// A bounded cache of complete incidents, oldest inserted dropped first.
#[derive(Default)]
struct Details {
    map: BTreeMap<String, IncidentView>,
    order: VecDeque<String>,
}

impl Details {
    fn insert(&mut self, v: IncidentView) {
        if self.map.insert(v.incident.clone(), v.clone()).is_none() {
            self.order.push_back(v.incident);
        }
        while self.order.len() > MAX_DETAILS {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }
}

fn store_error(file: &str, e: S3Error) -> StoreError {
    StoreError::Io {
        file: file.to_string(),
        source: io::Error::other(format!("the bucket: {e}")),
    }
}

impl BucketStore {
    /// The bucket of `location` (`PREFIX` from its template), through `bucket`.
    pub fn new(bucket: Bucket, location: &s3::Location, max_file: u64) -> io::Result<BucketStore> {
        let incoming = tempfile::Builder::new()
            .prefix("tripcap-collect-")
            .tempdir()?;
        Ok(BucketStore {
            bucket,
            prefix: location.store_prefix(),
            max_file: max_file.min(MAX_PUT),
            incoming,
            seq: AtomicU64::new(0),
            index: Mutex::new(None),
            details: Mutex::new(Details::default()),
            list_requests: AtomicU64::new(0),
        })
    }

    /// Check that the bucket answers and these keys may list it.
    pub async fn check(&self) -> Result<(), String> {
        self.bucket
            .list(&self.prefix, Some("/"), None)
            .await
            .map(drop)
            .map_err(|e| format!("bucket `{}`: {e}", self.bucket.name()))
    }

    fn key(&self, incident: &str, host: &str, file: &str) -> String {
        format!("{}{incident}/{host}/{file}", self.prefix)
    }

    /// Stream `chunks` into the bucket as `incident/host/file`, checking size and digest.
    pub async fn put<S, E>(
        &self,
        incident: &str,
        host: &str,
        file: &str,
        sha256: &str,
        size: Option<u64>,
        mut chunks: S,
    ) -> Result<Stored, StoreError>
    where
        S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let key = self.key(incident, host, file);
        let too_large = |size| StoreError::TooLarge {
            file: file.to_string(),
            size,
            limit: self.max_file,
        };
        if let Some(s) = size.filter(|s| *s > self.max_file) {
            return Err(too_large(s));
        }
        if let Some(found) = self.existing(&key, file, sha256).await? {
            return Ok(found);
        }
        let io_err = |source| StoreError::Io {
            file: file.to_string(),
            source,
        };
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let tmp = self.incoming.path().join(format!("{n}.tmp"));
        let result = async {
            let mut out = tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)
                .await
                .map_err(io_err)?;
            let mut md5 = Md5::new();
            let got = receive(
                &mut out,
                &mut chunks,
                file,
                self.max_file,
                size,
                sha256,
                Some(&mut md5),
            )
            .await?;
            out.flush().await.map_err(io_err)?;
            drop(out);
            let (got, received) = (got.len, got.sha256);
            let body = tokio::fs::File::open(&tmp).await.map_err(io_err)?;
            let body = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::with_capacity(
                body,
                64 << 10,
            ));
            self.bucket
                .put(
                    &key,
                    body,
                    got,
                    md5.finalize().into(),
                    &received,
                    crate::capture_file::media_type(file),
                )
                .await
                .map_err(|e| store_error(file, e))?;
            Ok(Stored::Created)
        }
        .await;
        let _ = tokio::fs::remove_file(&tmp).await;
        result
    }

    /// `Some(Existing)` when `key` holds the same SHA-256, a conflict when
    /// it holds another, `None` when absent.
    async fn existing(
        &self,
        key: &str,
        file: &str,
        sha256: &str,
    ) -> Result<Option<Stored>, StoreError> {
        match self
            .bucket
            .head(key)
            .await
            .map_err(|e| store_error(file, e))?
        {
            None => Ok(None),
            Some(h)
                if h.sha256
                    .as_deref()
                    .is_some_and(|s| s.eq_ignore_ascii_case(sha256)) =>
            {
                Ok(Some(Stored::Existing))
            }
            Some(h) => Err(StoreError::Conflict {
                file: file.to_string(),
                stored: h.sha256.unwrap_or_else(|| "(none)".into()),
            }),
        }
    }

    /// The incident ids in the bucket, newest first (ids start with their time).
    pub async fn index(&self) -> Result<Arc<Vec<String>>, S3Error> {
        if let Some((at, ids)) = &*self.index.lock().unwrap_or_else(|e| e.into_inner()) {
            if at.elapsed() < INDEX_TTL {
                return Ok(Arc::clone(ids));
            }
        }
        let mut ids = Vec::new();
        let mut next: Option<String> = None;
        loop {
            self.list_requests.fetch_add(1, Ordering::Relaxed);
            let page = self
                .bucket
                .list(&self.prefix, Some("/"), next.as_deref())
                .await?;
            ids.extend(page.prefixes.iter().filter_map(|p| {
                let id = p.strip_prefix(&self.prefix)?.trim_end_matches('/');
                safe_name(id).then(|| id.to_string())
            }));
            if ids.len() > 2 * MAX_INDEX {
                ids.sort_unstable_by(|a, b| b.cmp(a));
                ids.truncate(MAX_INDEX);
            }
            match page.next {
                Some(n) => next = Some(n),
                None => break,
            }
        }
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids.truncate(MAX_INDEX);
        let ids = Arc::new(ids);
        *self.index.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Instant::now(), Arc::clone(&ids)));
        Ok(ids)
    }

    /// One incident: its hosts' files, sidecars and summaries.
    pub async fn incident(&self, id: &str) -> Result<IncidentView, S3Error> {
        if let Some(v) = self
            .details
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map
            .get(id)
        {
            return Ok(v.clone());
        }
        let base = format!("{}{id}/", self.prefix);
        let mut by_host: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
        let mut next: Option<String> = None;
        loop {
            self.list_requests.fetch_add(1, Ordering::Relaxed);
            let page = self.bucket.list(&base, None, next.as_deref()).await?;
            for (key, size) in page.objects {
                let Some((host, file)) = key.strip_prefix(&base).and_then(|r| r.split_once('/'))
                else {
                    continue;
                };
                if safe_name(host) && safe_name(file) {
                    by_host
                        .entry(host.to_string())
                        .or_default()
                        .push((file.to_string(), size));
                }
            }
            match page.next {
                Some(n) => next = Some(n),
                None => break,
            }
        }
        let mut view = IncidentView {
            incident: id.to_string(),
            newest_ns: 0,
            hosts: Vec::new(),
        };
        for (host, files) in by_host {
            let has = |name: &str| files.iter().any(|(f, _)| f == name);
            let sidecar_name = format!("{id}.json");
            let summary_name = format!("{id}.summary.json");
            let sidecar = match has(&sidecar_name) {
                true => self.json(&format!("{base}{host}/{sidecar_name}")).await?,
                false => None,
            };
            let summary = match has(&summary_name) {
                true => self.json(&format!("{base}{host}/{summary_name}")).await?,
                false => None,
            };
            if let Some(at) = trigger_ns(sidecar.as_ref()) {
                view.newest_ns = view.newest_ns.max(at);
            }
            view.hosts.push(HostView {
                host,
                files,
                sidecar,
                summary,
            });
        }
        if view.complete() {
            self.details
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(view.clone());
        }
        Ok(view)
    }

    async fn json(&self, key: &str) -> Result<Option<serde_json::Value>, S3Error> {
        let Some(resp) = self.bucket.get(key).await? else {
            return Ok(None);
        };
        let mut body = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| S3Error::Transport(format!("reading {key}: {e}")))?;
            body.extend_from_slice(&chunk);
            if body.len() > MAX_JSON {
                return Ok(None);
            }
        }
        Ok(parse_json(&body))
    }

    /// The page of incidents `filter` asks for, newest first.
    pub async fn page(&self, filter: &Filter) -> Result<Page<IncidentView>, S3Error> {
        let ids = self.index().await?;
        let ids_page = {
            let details = self.details.lock().unwrap_or_else(|e| e.into_inner());
            select(&ids, filter.page.unwrap_or(1), PER_PAGE, |id| {
                filter.matches(id, details.map.get(id.as_str()))
            })
        };
        let views: Vec<Result<IncidentView, S3Error>> =
            futures_util::stream::iter(ids_page.items.clone())
                .map(|id: String| async move { self.incident(&id).await })
                .buffered(READ_AT_ONCE)
                .collect()
                .await;
        let mut items = Vec::with_capacity(views.len());
        for v in views {
            let v = v?;
            // The detail may rule out an incident its id let through (never the reverse).
            if filter.matches(&v.incident, Some(&v)) {
                items.push(v);
            }
        }
        Ok(Page {
            items,
            total: ids_page.total,
            matching: ids_page.matching,
            page: ids_page.page,
            pages: ids_page.pages,
        })
    }

    /// GET `incident/host/file`: its length and a streaming body, `None` when absent.
    pub async fn open(
        &self,
        incident: &str,
        host: &str,
        file: &str,
    ) -> Result<Option<(Option<u64>, reqwest::Response)>, S3Error> {
        let Some(resp) = self.bucket.get(&self.key(incident, host, file)).await? else {
            return Ok(None);
        };
        Ok(Some((resp.content_length(), resp)))
    }

    /// The spool directory for incoming bodies (private, removed on exit).
    pub fn incoming(&self) -> PathBuf {
        self.incoming.path().to_path_buf()
    }
}
