//! The HTTP side of uploading: the reqwest client built from an `[upload]`
//! table (timeouts, `ca_file`, client certificate), the headers of a unit's
//! requests, and one attempt at sending a file (PUT) or a unit (multipart POST).
//!
//! Bodies stream from disk with an explicit `Content-Length` from the file's
//! metadata (never chunked: presigned-URL stores refuse it), so memory stays
//! constant for multi-GB files; the file is re-opened on every attempt because
//! a streamed request cannot be replayed.
//!
//! Idempotency: every request carries `Idempotency-Key` (`<incident>` for a
//! multipart POST, `<incident>/<file>` for a PUT) and the file's SHA-256, so a
//! repeated upload is recognised by the collector and stored once.
//!
//! Secrets: header values come from the config with `${ENV}` expanded; they are
//! marked sensitive, never logged, and errors name the header, not its value.
//! Logged URLs lose their query string and user info ([`redact_url`]).

use std::path::Path;
use std::time::SystemTime;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use tokio_util::io::ReaderStream;

use super::retry::{classify, Failure, Verdict};
use super::upload_config::{UploadConfig, UploadError};
use crate::auth::expand_env;
use crate::capture_file::media_type;
use crate::s3::describe;

/// A file of a unit as announced to the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileDigest {
    /// File name in the spool.
    pub name: String,
    /// Bytes.
    pub len: u64,
    /// SHA-256, hex.
    pub sha256: String,
}

/// The HTTP client of a checked `[upload]` table.
pub(super) struct Client {
    config: UploadConfig,
    client: reqwest::Client,
    /// URL template with `${ENV}` expanded.
    url: String,
    /// Configured headers, values expanded and marked sensitive.
    headers: HeaderMap,
    sha_header: HeaderName,
}

impl Client {
    /// Ask the endpoint whether this agent could upload, sending nothing to
    /// store: a `HEAD` of the URL a probe file would go to, with the configured
    /// TLS and headers. `Ok(status)` when it answered other than 401/403.
    pub(super) async fn probe(&self, host: &str) -> Result<u16, String> {
        let url = expand_url(&self.url, host, "tripcap-selftest", "probe");
        let shown = redact_url(&url);
        let resp = self
            .client
            .head(url)
            .headers(self.headers.clone())
            .send()
            .await
            .map_err(|e| {
                format!(
                    "{shown}: {} (check the URL, the network and `ca_file`)",
                    describe(e)
                )
            })?;
        match resp.status().as_u16() {
            s @ (401 | 403) => Err(format!(
                "{shown} refused these credentials (HTTP {s}): check the token or headers of [upload]"
            )),
            s => Ok(s),
        }
    }

    /// Fails on an unusable config (unset `${ENV}`, unreadable certificate,
    /// bad header name), before anything is sent.
    pub(super) fn new(config: UploadConfig) -> Result<Client, UploadError> {
        let url = endpoint(&config)?;
        let headers = configured_headers(&config)?;
        let sha_header = HeaderName::from_bytes(config.sha256_header.as_bytes()).map_err(|_| {
            UploadError::Config(format!(
                "`sha256_header` = \"{}\" is not a valid header name: use letters, digits and `-`",
                config.sha256_header
            ))
        })?;
        let client = build_client(&config)?;
        Ok(Client {
            config,
            client,
            url,
            headers,
            sha_header,
        })
    }

    /// The table it was built from.
    pub(super) fn config(&self) -> &UploadConfig {
        &self.config
    }

    /// The headers of one request for `incident`: the configured ones, the
    /// idempotency key and the unit's identity; for a PUT (`file` given) also
    /// the file's name and SHA-256, for a POST the key is the incident alone.
    fn unit_headers(&self, host: &str, incident: &str, file: Option<&FileDigest>) -> HeaderMap {
        let mut headers = self.headers.clone();
        let key = match file {
            Some(f) => format!("{incident}/{}", f.name),
            None => incident.to_string(),
        };
        set(
            &mut headers,
            HeaderName::from_static("idempotency-key"),
            &key,
        );
        set(
            &mut headers,
            HeaderName::from_static("x-tripcap-incident"),
            incident,
        );
        set(
            &mut headers,
            HeaderName::from_static("x-tripcap-host"),
            host,
        );
        if let Some(f) = file {
            set(&mut headers, self.sha_header.clone(), &f.sha256);
            set(
                &mut headers,
                HeaderName::from_static("x-tripcap-file"),
                &f.name,
            );
        }
        headers
    }

    /// One attempt at PUTting `file` of `incident` from the spool `dir`.
    pub(super) async fn send_put(
        &self,
        dir: &Path,
        host: &str,
        incident: &str,
        file: &FileDigest,
    ) -> Result<(), Failure> {
        let url = expand_url(&self.url, host, incident, &file.name);
        let path = dir.join(&file.name);
        let body = open(&path).await?;
        let resp = self
            .client
            .put(url)
            .headers(self.unit_headers(host, incident, Some(file)))
            .header(CONTENT_LENGTH, file.len)
            .header(CONTENT_TYPE, media_type(&file.name))
            .body(reqwest::Body::wrap_stream(ReaderStream::with_capacity(
                body,
                64 << 10,
            )))
            .send()
            .await;
        judge(resp).await
    }

    /// One attempt at POSTting `files` of `incident` from the spool `dir` as
    /// one multipart request: a `metadata` JSON part, then a `file` part each.
    pub(super) async fn send_post(
        &self,
        dir: &Path,
        host: &str,
        incident: &str,
        files: &[FileDigest],
    ) -> Result<(), Failure> {
        let metadata = serde_json::json!({
            "incident": incident,
            "host": host,
            "files": files.iter().map(|f| serde_json::json!({"name": f.name, "size": f.len, "sha256": f.sha256})).collect::<Vec<_>>(),
        })
        .to_string();
        let part = |p: reqwest::multipart::Part, mime: &str| {
            p.mime_str(mime)
                .map_err(|e| Failure::transient(describe(e)))
        };
        let mut form = reqwest::multipart::Form::new().part(
            "metadata",
            part(reqwest::multipart::Part::text(metadata), "application/json")?,
        );
        for f in files {
            let path = dir.join(&f.name);
            let file = open(&path).await?;
            let body = reqwest::Body::wrap_stream(ReaderStream::with_capacity(file, 64 << 10));
            let p =
                reqwest::multipart::Part::stream_with_length(body, f.len).file_name(f.name.clone());
            form = form.part("file", part(p, media_type(&f.name))?);
        }
        let resp = self
            .client
            .post(expand_url(&self.url, host, incident, ""))
            .headers(self.unit_headers(host, incident, None))
            .multipart(form)
            .send()
            .await;
        judge(resp).await
    }
}

/// The `url` with `${ENV}` expanded, checked to be an http(s) URL once its
/// placeholders are filled.
fn endpoint(config: &UploadConfig) -> Result<String, UploadError> {
    let url = expand_env(&config.url, "`url`")?;
    let probe = expand_url(&url, "h", "i", "f");
    let parsed = reqwest::Url::parse(&probe).map_err(|e| {
        UploadError::Config(format!(
            "`url` = {} is not a URL ({e}): write e.g. \"https://collector:9480/upload/{{host}}/{{incident}}/{{file}}\"",
            redact_url(&config.url)
        ))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(UploadError::Config(format!(
            "`url` scheme `{}` is not supported: use http or https",
            parsed.scheme()
        )));
    }
    Ok(url)
}

/// The `headers` table with `${ENV}` expanded, values marked sensitive.
fn configured_headers(config: &UploadConfig) -> Result<HeaderMap, UploadError> {
    let mut headers = HeaderMap::new();
    for (name, value) in &config.headers {
        let what = format!("header `{name}`");
        let hn = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            UploadError::Config(format!(
                "{what} is not a valid header name: use letters, digits and `-`"
            ))
        })?;
        let expanded = expand_env(value, &what)?;
        let mut hv = HeaderValue::from_str(&expanded).map_err(|_| {
            UploadError::Config(format!(
                "{what} has a value with characters not allowed in a header (check the variable it expands)"
            ))
        })?;
        hv.set_sensitive(true);
        headers.insert(hn, hv);
    }
    Ok(headers)
}

/// The reqwest client: timeouts, user agent, and the TLS material.
pub(super) fn build_client(config: &UploadConfig) -> Result<reqwest::Client, UploadError> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .read_timeout(config.idle_timeout)
        .user_agent(concat!("tripcap/", env!("CARGO_PKG_VERSION")));
    if let Some(t) = config.timeout {
        builder = builder.timeout(t);
    }
    if let Some(ca) = &config.ca_file {
        for c in ca_certificates(ca)? {
            builder = builder.add_root_certificate(c);
        }
    }
    match (&config.client_cert, &config.client_key) {
        (Some(cert), Some(key)) => builder = builder.identity(identity(cert, key)?),
        (None, None) => {}
        _ => {
            return Err(UploadError::Config(
                "`client_cert` and `client_key` go together: set both or neither".into(),
            ))
        }
    }
    builder
        .build()
        .map_err(|e| UploadError::Config(format!("cannot build the HTTP client: {}", describe(e))))
}

fn read_pem(path: &Path, key: &str) -> Result<Vec<u8>, UploadError> {
    std::fs::read(path).map_err(|e| {
        UploadError::Config(format!(
            "`{key}` = {}: cannot read it ({e}): fix the path or its permissions",
            path.display()
        ))
    })
}

/// The certificates of the PEM bundle `ca_file`; at least one.
fn ca_certificates(ca: &Path) -> Result<Vec<reqwest::Certificate>, UploadError> {
    let pem = read_pem(ca, "ca_file")?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
        UploadError::Config(format!(
            "`ca_file` = {}: not PEM certificates ({}): give a PEM bundle",
            ca.display(),
            describe(e)
        ))
    })?;
    if certs.is_empty() {
        return Err(UploadError::Config(format!(
            "`ca_file` = {}: no certificate in it: give a PEM bundle",
            ca.display()
        )));
    }
    Ok(certs)
}

/// The client identity of `client_cert` and `client_key`.
fn identity(cert: &Path, key: &Path) -> Result<reqwest::Identity, UploadError> {
    let mut pem = read_pem(cert, "client_cert")?;
    pem.push(b'\n');
    pem.extend(read_pem(key, "client_key")?);
    reqwest::Identity::from_pem(&pem).map_err(|e| {
        UploadError::Config(format!(
            "`client_cert`/`client_key`: not a PEM certificate and key ({}): check both files",
            describe(e)
        ))
    })
}

/// A URL (or URL template) fit for logs: no user info, no query (presigned
/// URLs carry their signatures there).
pub fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, _)) => (b, true),
        None => (url, false),
    };
    let base = match base.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => base.to_string(),
    };
    if query {
        format!("{base}?REDACTED")
    } else {
        base
    }
}

/// Percent-encode a path segment value.
fn encode_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The URL for one request: placeholders replaced and percent-encoded.
pub fn expand_url(template: &str, host: &str, incident: &str, file: &str) -> String {
    template
        .replace("{host}", &encode_segment(host))
        .replace("{incident}", &encode_segment(incident))
        .replace("{file}", &encode_segment(file))
}

fn set(headers: &mut HeaderMap, name: HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(name, v);
    }
}

async fn open(path: &Path) -> Result<tokio::fs::File, Failure> {
    tokio::fs::File::open(path).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Failure::Gone
        } else {
            Failure::transient(format!("cannot open {}: {e}", path.display()))
        }
    })
}

/// Turn a response (or transport error) into a result.
async fn judge(resp: Result<reqwest::Response, reqwest::Error>) -> Result<(), Failure> {
    let resp = resp.map_err(|e| Failure::transient(describe(e)))?;
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let verdict = classify(status.as_u16(), retry_after.as_deref(), SystemTime::now());
    if verdict == Verdict::Done {
        return Ok(());
    }
    // A short excerpt of what the server said, on one line.
    let text = resp.text().await.unwrap_or_default();
    let excerpt: String = text
        .chars()
        .take(200)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let why = format!("endpoint answered {status}: {}", excerpt.trim());
    match verdict {
        Verdict::Retry(after) => Err(Failure::Transient {
            why,
            retry_after: after,
        }),
        _ => Err(Failure::Refused {
            status: status.as_u16(),
            code: None,
            why,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::uploader::check_upload;
    use super::*;

    #[test]
    fn urls_expand_and_redact() {
        assert_eq!(
            expand_url(
                "http://c/u/{host}/{incident}/{file}",
                "h 1",
                "i",
                "a.pcapng"
            ),
            "http://c/u/h%201/i/a.pcapng"
        );
        assert_eq!(
            redact_url("https://user:pw@s3.example/b/k?X-Amz-Signature=secret"),
            "https://s3.example/b/k?REDACTED"
        );
        assert!(!redact_url("https://x/?sig=abc").contains("abc"));
    }

    #[test]
    fn bad_header_config_is_refused_without_the_value() {
        std::env::set_var("TRIPCAP_TEST_BAD_XYZ", "line\nbreak-secret");
        let mut c = UploadConfig::new("http://127.0.0.1:1/{file}");
        c.headers
            .insert("Authorization".into(), "${TRIPCAP_TEST_BAD_XYZ}".into());
        let e = check_upload(&c).expect_err("refused").to_string();
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn bad_urls_and_half_tls_configs_are_refused() {
        let e = check_upload(&UploadConfig::new("ftp://x/{file}"))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("use http or https"), "{e}");
        let mut c = UploadConfig::new("https://x/{file}");
        c.client_cert = Some("/nonexistent/cert.pem".into());
        let e = check_upload(&c).expect_err("refused").to_string();
        assert!(e.contains("set both or neither"), "{e}");
        c.client_key = Some("/nonexistent/key.pem".into());
        let e = check_upload(&c).expect_err("refused").to_string();
        assert!(e.contains("cannot read it"), "{e}");
    }

    #[test]
    fn put_and_post_headers_carry_key_and_identity() {
        let mut c = UploadConfig::new("http://127.0.0.1:1/{incident}/{file}");
        c.headers.insert("X-Team".into(), "rdma".into());
        c.sha256_header = "X-Checksum".into();
        let client = Client::new(c).expect("client");
        let file = FileDigest {
            name: "i1.pcapng".into(),
            len: 3,
            sha256: "ab".repeat(32),
        };
        let get =
            |h: &HeaderMap, n: &str| h.get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
        let put = client.unit_headers("node7", "i1", Some(&file));
        assert_eq!(
            get(&put, "idempotency-key").as_deref(),
            Some("i1/i1.pcapng")
        );
        assert_eq!(get(&put, "x-tripcap-incident").as_deref(), Some("i1"));
        assert_eq!(get(&put, "x-tripcap-host").as_deref(), Some("node7"));
        assert_eq!(get(&put, "x-tripcap-file").as_deref(), Some("i1.pcapng"));
        assert_eq!(get(&put, "x-checksum"), Some("ab".repeat(32)));
        assert_eq!(get(&put, "x-team").as_deref(), Some("rdma"));
        assert!(put.get("x-team").is_some_and(HeaderValue::is_sensitive));
        let post = client.unit_headers("node7", "i1", None);
        assert_eq!(get(&post, "idempotency-key").as_deref(), Some("i1"));
        assert_eq!(get(&post, "x-tripcap-host").as_deref(), Some("node7"));
        assert!(post.get("x-tripcap-file").is_none() && post.get("x-checksum").is_none());
        assert_eq!(get(&post, "x-team").as_deref(), Some("rdma"));
    }
}
