//! `tripcap collect`: the endpoint for users who have none.
//!
//! An axum server that accepts both upload forms the agent speaks —
//! `PUT /upload/{host}/{incident}/{file}` (raw body, `X-Content-SHA256`) and
//! `POST /upload` (multipart: a `metadata` JSON part, then `file` parts) —
//! stores them by incident and host in a directory ([`store`]) or a bucket
//! ([`bucket`]), and serves a server-rendered page of what it holds ([`page`],
//! over [`catalog`]: which incidents a request asks for): `GET /`, and each
//! file under `GET /files/{incident}/{host}/{file}`.
//!
//! Bodies stream to disk as they arrive (no whole-body buffering; the default
//! body limit is lifted on the upload routes for that reason). Uploads need
//! `Authorization: Bearer <token>` when a token is configured: missing → 401,
//! wrong → 403, compared in constant time. Integrity failures are refused with
//! 422 (digest) or 400 (size, malformed request), and a file over
//! `--max-file-size` with 413, announced or not (the agent parks it: sending it
//! again cannot succeed). A name is written once: the same content again gets
//! 200, other content 409 Conflict, and of concurrent uploads of one name
//! exactly one is stored (201), the others answered as repeats or conflicts
//! ([`store`]; with a bucket, two collectors racing on one name with different
//! content may both succeed, the last one kept). The page is read-only and
//! open to anyone who can reach the listener, so bind it where only the people
//! who may read captures can.

pub mod bucket;
pub mod catalog;
pub mod page;
pub mod store;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use futures_util::StreamExt;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::auth::check_bearer;
use store::{check_name, is_sha256_hex, Store, StoreError, Stored};

/// Header the agent puts the body's SHA-256 in.
pub const SHA256_HEADER: &str = "x-content-sha256";

/// Where the collector keeps what it receives.
#[derive(Debug)]
pub enum Storage {
    /// A directory (`--dir`).
    Dir(Store),
    /// A bucket (`--store s3://…`).
    Bucket(Box<bucket::BucketStore>),
}

impl Storage {
    /// Store one file (see [`Store::put`]).
    pub async fn put<S, E>(
        &self,
        incident: &str,
        host: &str,
        file: &str,
        sha256: &str,
        size: Option<u64>,
        chunks: S,
    ) -> Result<Stored, StoreError>
    where
        S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        match self {
            Storage::Dir(s) => s.put(incident, host, file, sha256, size, chunks).await,
            Storage::Bucket(b) => b.put(incident, host, file, sha256, size, chunks).await,
        }
    }
}

/// Shared state of the collector's handlers.
#[derive(Debug)]
pub struct Collector {
    storage: Storage,
    token: Option<String>,
}

impl Collector {
    /// A collector storing under `dir` files of at most `max_file` bytes;
    /// uploads need `token` when set.
    pub fn new(
        dir: PathBuf,
        token: Option<String>,
        max_file: u64,
    ) -> std::io::Result<Arc<Collector>> {
        Ok(Arc::new(Collector {
            storage: Storage::Dir(Store::open(dir, max_file)?),
            token,
        }))
    }

    /// A collector keeping what it receives in a bucket.
    pub fn with_bucket(store: bucket::BucketStore, token: Option<String>) -> Arc<Collector> {
        Arc::new(Collector {
            storage: Storage::Bucket(Box::new(store)),
            token,
        })
    }

    /// The storage.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }
}

/// The routes.
pub fn router(state: Arc<Collector>) -> Router {
    let uploads = Router::new()
        .route(
            "/upload/{host}/{incident}/{file}",
            put(put_file).head(probe),
        )
        .route("/upload", post(post_unit))
        .layer(DefaultBodyLimit::disable());
    Router::new()
        .route("/", get(page::index))
        .route("/files/{incident}/{host}/{file}", get(page::file))
        .route("/healthz", get(|| async { "ok\n" }))
        .merge(uploads)
        .with_state(state)
}

/// Serve on `listener` until `shutdown`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<Collector>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

/// Why the collector could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CollectError {
    /// The storage directory is unusable.
    #[error(
        "collector directory `{dir}`: {source}: choose another with --dir or fix its permissions"
    )]
    Dir {
        /// Directory.
        dir: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The bucket is unusable (the message says why and what to do).
    #[error("--store: {0}")]
    Bucket(String),
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}: choose another address with --listen")]
    Listen {
        /// Address.
        addr: SocketAddr,
        /// Cause.
        source: std::io::Error,
    },
    /// The server stopped with an error.
    #[error("collector stopped: {0}")]
    Serve(std::io::Error),
}

/// Where `tripcap collect` keeps files.
#[derive(Debug, Clone)]
pub enum StorageChoice {
    /// `--dir DIR`.
    Dir(PathBuf),
    /// `--store s3://BUCKET/PREFIX`, with the store's settings (`--endpoint`,
    /// `--region`; the rest from AWS's variables and files).
    Bucket {
        /// The `s3://` URL.
        url: String,
        /// Endpoint, region, path style.
        settings: crate::s3::Settings,
    },
}

/// Open the storage: a directory, or a bucket that answers a listing.
async fn open_storage(
    choice: &StorageChoice,
    token: Option<String>,
    max_file: u64,
) -> Result<(Arc<Collector>, String), CollectError> {
    match choice {
        StorageChoice::Dir(dir) => {
            let state = Collector::new(dir.clone(), token, max_file).map_err(|source| {
                CollectError::Dir {
                    dir: dir.display().to_string(),
                    source,
                }
            })?;
            Ok((state, dir.display().to_string()))
        }
        StorageChoice::Bucket { url, settings } => {
            let location = crate::s3::Location::parse(url).map_err(CollectError::Bucket)?;
            let resolved = crate::s3::resolve(settings, &crate::s3::ProcessEnvironment)
                .map_err(|e| CollectError::Bucket(e.to_string()))?;
            let http = reqwest::Client::builder()
                .connect_timeout(std::time::Duration::from_secs(10))
                .read_timeout(std::time::Duration::from_secs(60))
                .user_agent(concat!("tripcap-collect/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| CollectError::Bucket(format!("cannot build the HTTP client: {e}")))?;
            let bucket = crate::s3::Bucket::new(http, &location.bucket, &resolved)
                .map_err(CollectError::Bucket)?;
            let store = bucket::BucketStore::new(bucket, &location, max_file).map_err(|e| {
                CollectError::Bucket(format!(
                    "cannot make a private temporary directory for incoming files ({e}): set TMPDIR"
                ))
            })?;
            store.check().await.map_err(CollectError::Bucket)?;
            let shown = format!(
                "{url} at {} (keys from {})",
                resolved.endpoint, resolved.source
            );
            Ok((Collector::with_bucket(store, token), shown))
        }
    }
}

/// Bind `listen` and serve until `shutdown`; logs `collector listening on http://ADDR`.
pub async fn run(
    listen: SocketAddr,
    storage: StorageChoice,
    token: Option<String>,
    max_file: u64,
    shutdown: CancellationToken,
) -> Result<(), CollectError> {
    let (state, shown) = open_storage(&storage, token.clone(), max_file).await?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| CollectError::Listen {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(CollectError::Serve)?;
    if token.is_none() && !addr.ip().is_loopback() {
        tracing::warn!(%addr, "no --token-env: anyone who reaches this address can upload");
    }
    tracing::info!(store = %shown, auth = token.is_some(), "collector listening on http://{addr}");
    serve(listener, state, shutdown)
        .await
        .map_err(CollectError::Serve)
}

fn refuse(e: &StoreError) -> Response {
    let status = match e {
        StoreError::BadName { .. } | StoreError::Size { .. } | StoreError::Body { .. } => {
            StatusCode::BAD_REQUEST
        }
        StoreError::Digest { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        StoreError::Conflict { .. } => StatusCode::CONFLICT,
        StoreError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        // A full disk is the collector's condition, not the upload's: 507 is a
        // 5xx, so agents keep the unit and retry once space is freed.
        StoreError::Io { source, .. } if store::is_disk_full(source) => {
            StatusCode::INSUFFICIENT_STORAGE
        }
        StoreError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
    };
    if status.is_server_error() {
        tracing::error!(error = %e, "upload not stored");
    } else {
        tracing::warn!(error = %e, "upload refused");
    }
    (status, format!("{e}\n")).into_response()
}

fn bad(msg: String) -> Response {
    tracing::warn!(error = %msg, "upload refused");
    (StatusCode::BAD_REQUEST, format!("{msg}\n")).into_response()
}

fn stored_response(results: Vec<(String, Stored)>) -> Response {
    let created = results.iter().any(|(_, s)| *s == Stored::Created);
    let body = serde_json::json!({
        "files": results.iter().map(|(f, s)| serde_json::json!({
            "file": f,
            "status": if *s == Stored::Created { "created" } else { "existing" },
        })).collect::<Vec<_>>()
    });
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    (status, Json(body)).into_response()
}

/// `HEAD` on an upload URL: whether this sender may upload (its bearer token),
/// without storing anything; `tripcap selftest` asks it. 204 when allowed.
async fn probe(State(st): State<Arc<Collector>>, headers: HeaderMap) -> Response {
    match check_bearer(&headers, st.token.as_deref()) {
        Some(r) => r,
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

async fn put_file(
    State(st): State<Arc<Collector>>,
    Path((host, incident, file)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(r) = check_bearer(&headers, st.token.as_deref()) {
        return r;
    }
    for (what, name) in [("host", &host), ("incident", &incident), ("file", &file)] {
        if let Err(e) = check_name(what, name) {
            return refuse(&e);
        }
    }
    let Some(sha) = headers
        .get(SHA256_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|s| is_sha256_hex(s))
    else {
        return bad(format!(
            "missing or malformed `X-Content-SHA256` for {file}: send the body's SHA-256 as 64 hex digits"
        ));
    };
    let size = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let stream = body.into_data_stream();
    match st
        .storage
        .put(&incident, &host, &file, sha, size, stream)
        .await
    {
        Ok(s) => {
            tracing::info!(%incident, %host, %file, status = ?s, "file stored");
            stored_response(vec![(file, s)])
        }
        Err(e) => refuse(&e),
    }
}

#[derive(Debug, Deserialize)]
struct Metadata {
    incident: String,
    host: String,
    files: Vec<MetaFile>,
}

#[derive(Debug, Deserialize)]
struct MetaFile {
    name: String,
    size: u64,
    sha256: String,
}

/// `POST /upload`: one unit as multipart, a `metadata` part then its `file` parts.
async fn post_unit(
    State(st): State<Arc<Collector>>,
    headers: HeaderMap,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Response {
    if let Some(r) = check_bearer(&headers, st.token.as_deref()) {
        return r;
    }
    let multipart = match multipart {
        Ok(m) => m,
        Err(e) => {
            return bad(format!(
                "not a multipart upload ({e}): send multipart/form-data"
            ))
        }
    };
    match store_unit(&st, multipart).await {
        Ok(results) => stored_response(results),
        Err(refusal) => refusal,
    }
}

/// Read the parts in order, storing each file part as it streams in; the
/// first refusal ends the request and is its response.
async fn store_unit(
    st: &Collector,
    mut multipart: Multipart,
) -> Result<Vec<(String, Stored)>, Response> {
    let mut meta: Option<Metadata> = None;
    let mut results = Vec::new();
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return Err(bad(format!("malformed multipart body: {e}"))),
        };
        match field.name() {
            Some("metadata") => meta = Some(read_metadata(field).await?),
            Some("file") => {
                let Some(m) = &meta else {
                    return Err(bad(
                        "the `metadata` part must come before the `file` parts".into()
                    ));
                };
                results.push(store_file_part(st, m, field).await?);
            }
            other => {
                return Err(bad(format!(
                    "unexpected part `{}`: send `metadata` then `file` parts",
                    other.unwrap_or("")
                )))
            }
        }
    }
    let Some(m) = meta else {
        return Err(bad(
            "no `metadata` part: send one with {incident, host, files}".into(),
        ));
    };
    match check_all_sent(&m, &results) {
        Some(refusal) => Err(refusal),
        None => Ok(results),
    }
}

/// The `metadata` part: parsed, its host and incident names checked.
async fn read_metadata(field: axum::extract::multipart::Field<'_>) -> Result<Metadata, Response> {
    let text = match field.text().await {
        Ok(t) => t,
        Err(e) => return Err(bad(format!("cannot read the metadata part: {e}"))),
    };
    let m: Metadata = match serde_json::from_str(&text) {
        Ok(m) => m,
        Err(e) => {
            return Err(bad(format!(
                "metadata part is not {{incident, host, files:[{{name,size,sha256}}]}}: {e}"
            )))
        }
    };
    for (what, name) in [("host", &m.host), ("incident", &m.incident)] {
        if let Err(e) = check_name(what, name) {
            return Err(refuse(&e));
        }
    }
    Ok(m)
}

/// One `file` part, listed in `meta`: streamed into the store under the size
/// and digest the metadata gives.
async fn store_file_part(
    st: &Collector,
    meta: &Metadata,
    field: axum::extract::multipart::Field<'_>,
) -> Result<(String, Stored), Response> {
    let name = field.file_name().unwrap_or_default().to_string();
    if let Err(e) = check_name("file", &name) {
        return Err(refuse(&e));
    }
    let Some(mf) = meta.files.iter().find(|f| f.name == name) else {
        return Err(bad(format!(
            "file part `{name}` is not listed in the metadata"
        )));
    };
    if !is_sha256_hex(&mf.sha256) {
        return Err(bad(format!(
            "metadata sha256 of `{name}` is not 64 hex digits"
        )));
    }
    let stream = futures_util::stream::unfold(field, |mut f| async move {
        match f.chunk().await {
            Ok(Some(c)) => Some((Ok(c), f)),
            Ok(None) => None,
            Err(e) => Some((Err(e), f)),
        }
    })
    .boxed();
    match st
        .storage
        .put(
            &meta.incident,
            &meta.host,
            &name,
            &mf.sha256,
            Some(mf.size),
            stream,
        )
        .await
    {
        Ok(s) => {
            tracing::info!(incident = %meta.incident, host = %meta.host, file = %name, status = ?s, "file stored");
            Ok((name, s))
        }
        Err(e) => Err(refuse(&e)),
    }
}

/// A refusal when the metadata lists files that were not sent (like
/// [`check_bearer`], `None` means go on).
fn check_all_sent(meta: &Metadata, results: &[(String, Stored)]) -> Option<Response> {
    let missing: Vec<&str> = meta
        .files
        .iter()
        .filter(|f| !results.iter().any(|(n, _)| n == &f.name))
        .map(|f| f.name.as_str())
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(bad(format!(
        "metadata lists files that were not sent: {}",
        missing.join(", ")
    )))
}
