//! Object storage: S3 and the stores that speak it (Ceph RGW, MinIO).
//!
//! Where a bucket's keys are ([`location`]), whose keys sign the requests and
//! where the store is ([`credentials`]: AWS's variables and files), and a
//! [`Bucket`] client for the few calls tripcap makes. Requests are signed with
//! SigV4 by `rusty-s3` (sans-IO: it only builds signed URLs) and sent with the
//! reqwest client the caller built (timeouts, TLS). Every call makes one
//! request; retrying is the caller's policy.
//!
//! Secrets: the secret key and session token live in the signer only; URLs
//! carry signatures, so they are never logged (errors name the key, not the URL).

pub mod credentials;
pub mod location;

use std::time::Duration;

use base64::Engine as _;
use instant_xml::FromXml;
use reqwest::header::{HeaderMap, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use rusty_s3::{S3Action, UrlStyle};

pub use credentials::{resolve, Environment, ProcessEnvironment, ResolveError, Resolved, Settings};
pub use location::Location;

/// How long a signed request stays valid (it is sent at once).
const SIGNED_FOR: Duration = Duration::from_secs(900);

/// The user metadata key that carries a whole object's SHA-256 (hex).
pub const SHA256_META: &str = "x-amz-meta-sha256";

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum S3Error {
    /// No answer: connection refused, timeout, TLS.
    Transport(String),
    /// The store answered with an error.
    Status {
        /// HTTP status.
        status: u16,
        /// S3 error code (`NoSuchBucket`), empty when the body had none.
        code: String,
        /// The store's message, one line.
        message: String,
        /// `Retry-After`, when sent.
        retry_after: Option<String>,
    },
    /// The store answered 2xx with something that is not what S3 sends.
    Malformed(String),
}

impl std::fmt::Display for S3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            S3Error::Transport(why) => write!(f, "{why}"),
            S3Error::Status {
                status,
                code,
                message,
                ..
            } => {
                write!(f, "store answered {status}")?;
                if !code.is_empty() {
                    write!(f, " {code}")?;
                }
                if !message.is_empty() {
                    write!(f, ": {message}")?;
                }
                if let Some(h) = hint(code) {
                    write!(f, " ({h})")?;
                }
                Ok(())
            }
            S3Error::Malformed(why) => write!(f, "unexpected answer from the store: {why}"),
        }
    }
}

/// What to do about an S3 error code.
fn hint(code: &str) -> Option<&'static str> {
    Some(match code {
        "NoSuchBucket" => "create the bucket or fix the bucket in `url`",
        "SignatureDoesNotMatch" => "the secret key is wrong for this access key",
        "InvalidAccessKeyId" => "the access key is unknown to this store",
        "AccessDenied" => {
            "these keys may not write here: grant s3:PutObject and multipart uploads on the prefix"
        }
        "RequestTimeTooSkewed" => "this host's clock is off: sync it (chrony, ntpd)",
        "InvalidRegion" | "AuthorizationHeaderMalformed" => "set `region` to the bucket's region",
        "PermanentRedirect" => {
            "the bucket is in another region or needs another endpoint: set `region`/`endpoint`"
        }
        "ExpiredToken" | "InvalidToken" => "the session token expired: refresh the credentials",
        _ => return None,
    })
}

/// What a HEAD says about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Bytes.
    pub len: u64,
    /// The SHA-256 metadata, when the object has it.
    pub sha256: Option<String>,
}

/// An open multipart upload, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenUpload {
    /// The object key.
    pub key: String,
    /// The upload's id.
    pub upload_id: String,
}

/// A part already uploaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadedPart {
    /// 1-based.
    pub number: u16,
    /// ETag as the store gave it (quotes removed).
    pub etag: String,
    /// Bytes.
    pub size: u64,
}

/// One page of a listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Objects: key and size.
    pub objects: Vec<(String, u64)>,
    /// Common prefixes (with the delimiter).
    pub prefixes: Vec<String>,
    /// Continuation token for the next page.
    pub next: Option<String>,
}

/// A bucket on a store, with the keys that sign for it.
pub struct Bucket {
    http: reqwest::Client,
    bucket: rusty_s3::Bucket,
    creds: rusty_s3::Credentials,
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bucket")
            .field("name", &self.bucket.name())
            .field("endpoint", &self.bucket.base_url().as_str())
            .finish_non_exhaustive()
    }
}

impl Bucket {
    /// The bucket `name` on the store `settings` resolved to, sent through `http`.
    pub fn new(http: reqwest::Client, name: &str, settings: &Resolved) -> Result<Bucket, String> {
        let endpoint = settings.endpoint.parse().map_err(|e| {
            format!(
                "endpoint `{}` is not a URL ({e}): write e.g. http://rgw.example:7480",
                settings.endpoint
            )
        })?;
        let style = if settings.path_style {
            UrlStyle::Path
        } else {
            UrlStyle::VirtualHost
        };
        let bucket =
            rusty_s3::Bucket::new(endpoint, style, name.to_string(), settings.region.clone())
                .map_err(|e| format!("bucket `{name}` on {}: {e}", settings.endpoint))?;
        let creds = match &settings.token {
            Some(t) => rusty_s3::Credentials::new_with_token(
                settings.key.clone(),
                settings.secret.clone(),
                t.clone(),
            ),
            None => rusty_s3::Credentials::new(settings.key.clone(), settings.secret.clone()),
        };
        Ok(Bucket {
            http,
            bucket,
            creds,
        })
    }

    /// The bucket's name.
    pub fn name(&self) -> &str {
        self.bucket.name()
    }

    /// The object's size and SHA-256 metadata; `None` when there is no such object.
    pub async fn head(&self, key: &str) -> Result<Option<Head>, S3Error> {
        let url = self
            .bucket
            .head_object(Some(&self.creds), key)
            .sign(SIGNED_FOR);
        let resp = send(self.http.head(url)).await?;
        if resp.status().as_u16() == 404 {
            return Ok(None);
        }
        let resp = match ok(resp).await {
            Ok(r) => r,
            // A HEAD's error has no body: ask again with a GET of one byte
            // for the store's code and message (`SignatureDoesNotMatch`).
            Err(S3Error::Status { status, code, .. })
                if code.is_empty() && (400..500).contains(&status) =>
            {
                let url = self
                    .bucket
                    .get_object(Some(&self.creds), key)
                    .sign(SIGNED_FOR);
                let again = send(self.http.get(url).header("range", "bytes=0-0")).await?;
                return Err(match ok(again).await {
                    Err(e @ S3Error::Status { .. }) => e,
                    _ => S3Error::Status {
                        status,
                        code: String::new(),
                        message: String::new(),
                        retry_after: None,
                    },
                });
            }
            Err(e) => return Err(e),
        };
        let headers = resp.headers();
        let len = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| S3Error::Malformed("HEAD without a Content-Length".into()))?;
        let sha256 = header(headers, SHA256_META);
        Ok(Some(Head { len, sha256 }))
    }

    /// PUT `body` (`len` bytes, MD5 `md5`) at `key` with the SHA-256 metadata.
    pub async fn put(
        &self,
        key: &str,
        body: reqwest::Body,
        len: u64,
        md5: [u8; 16],
        sha256: &str,
        content_type: &str,
    ) -> Result<(), S3Error> {
        let md5 = b64(&md5);
        let mut action = self.bucket.put_object(Some(&self.creds), key);
        let h = action.headers_mut();
        h.insert("content-md5", md5.clone());
        h.insert("content-type", content_type.to_string());
        h.insert(SHA256_META, sha256.to_string());
        let req = self
            .http
            .put(action.sign(SIGNED_FOR))
            .header("content-md5", md5)
            .header(CONTENT_TYPE, content_type)
            .header(SHA256_META, sha256)
            .header(CONTENT_LENGTH, len)
            .body(body);
        ok(send(req).await?).await.map(drop)
    }

    /// Start a multipart upload of `key`; the object will carry the SHA-256 metadata.
    pub async fn create_multipart(
        &self,
        key: &str,
        sha256: &str,
        content_type: &str,
    ) -> Result<String, S3Error> {
        let mut action = self.bucket.create_multipart_upload(Some(&self.creds), key);
        let h = action.headers_mut();
        h.insert("content-type", content_type.to_string());
        h.insert(SHA256_META, sha256.to_string());
        let req = self
            .http
            .post(action.sign(SIGNED_FOR))
            .header(CONTENT_TYPE, content_type)
            .header(SHA256_META, sha256);
        let text = body_text(ok(send(req).await?).await?).await?;
        let parsed = rusty_s3::actions::CreateMultipartUpload::parse_response(&text)
            .map_err(|e| S3Error::Malformed(format!("CreateMultipartUpload: {e}")))?;
        Ok(parsed.upload_id().to_string())
    }

    /// Upload part `number` (1-based) of an upload; returns its ETag.
    pub async fn upload_part(
        &self,
        key: &str,
        upload_id: &str,
        number: u16,
        body: reqwest::Body,
        len: u64,
        md5: [u8; 16],
    ) -> Result<String, S3Error> {
        let md5 = b64(&md5);
        let mut action = self
            .bucket
            .upload_part(Some(&self.creds), key, number, upload_id);
        action.headers_mut().insert("content-md5", md5.clone());
        let req = self
            .http
            .put(action.sign(SIGNED_FOR))
            .header("content-md5", md5)
            .header(CONTENT_LENGTH, len)
            .body(body);
        let resp = ok(send(req).await?).await?;
        header(resp.headers(), "etag")
            .map(|e| e.trim_matches('"').to_string())
            .ok_or_else(|| S3Error::Malformed("UploadPart answered without an ETag".into()))
    }

    /// The parts of an upload so far, in order.
    pub async fn list_parts(
        &self,
        key: &str,
        upload_id: &str,
    ) -> Result<Vec<UploadedPart>, S3Error> {
        let mut out = Vec::new();
        let mut marker = None;
        loop {
            let mut action = self.bucket.list_parts(Some(&self.creds), key, upload_id);
            if let Some(m) = marker {
                action.set_part_number_marker(m);
            }
            let text =
                body_text(ok(send(self.http.get(action.sign(SIGNED_FOR))).await?).await?).await?;
            let page = rusty_s3::actions::ListParts::parse_response(&text)
                .map_err(|e| S3Error::Malformed(format!("ListParts: {e}")))?;
            out.extend(page.parts.into_iter().map(|p| UploadedPart {
                number: p.number,
                etag: p.etag.trim_matches('"').to_string(),
                size: p.size,
            }));
            match page.next_part_number_marker {
                Some(m) => marker = Some(m),
                None => break,
            }
        }
        out.sort_by_key(|p| p.number);
        Ok(out)
    }

    /// Complete an upload from its parts' ETags, in part order.
    pub async fn complete(
        &self,
        key: &str,
        upload_id: &str,
        etags: &[String],
    ) -> Result<(), S3Error> {
        let action = self.bucket.complete_multipart_upload(
            Some(&self.creds),
            key,
            upload_id,
            etags.iter().map(String::as_str),
        );
        let url = action.sign(SIGNED_FOR);
        let body = action.body();
        let resp = ok(send(self.http.post(url).body(body)).await?).await?;
        // S3 may answer 200 and then report an error in the body.
        let text = body_text(resp).await?;
        if let Ok(e) = instant_xml::from_str::<ErrorBody>(&text) {
            return Err(S3Error::Status {
                status: 200,
                code: e.code,
                message: one_line(&e.message.unwrap_or_default()),
                retry_after: None,
            });
        }
        Ok(())
    }

    /// Abort an upload, freeing its parts. An upload already gone is fine.
    pub async fn abort(&self, key: &str, upload_id: &str) -> Result<(), S3Error> {
        let url = self
            .bucket
            .abort_multipart_upload(Some(&self.creds), key, upload_id)
            .sign(SIGNED_FOR);
        let resp = send(self.http.delete(url)).await?;
        if resp.status().as_u16() == 404 {
            return Ok(());
        }
        ok(resp).await.map(drop)
    }

    /// Multipart uploads still open under `prefix`.
    pub async fn open_uploads(&self, prefix: &str) -> Result<Vec<OpenUpload>, S3Error> {
        let mut out = Vec::new();
        let mut markers: Option<(String, String)> = None;
        loop {
            let mut query: Vec<(&str, &str)> = vec![("uploads", ""), ("prefix", prefix)];
            if let Some((k, u)) = &markers {
                query.push(("key-marker", k));
                query.push(("upload-id-marker", u));
            }
            // The signer merges sorted lists.
            query.sort_unstable();
            let url = rusty_s3::signing::sign(
                &jiff::Timestamp::now(),
                rusty_s3::Method::Get,
                self.bucket.base_url().clone(),
                self.creds.key(),
                self.creds.secret(),
                self.creds.token(),
                self.bucket.region(),
                SIGNED_FOR.as_secs(),
                query.iter().copied(),
                std::iter::empty(),
            );
            let text = body_text(ok(send(self.http.get(url)).await?).await?).await?;
            let page: ListUploadsBody = instant_xml::from_str(&text)
                .map_err(|e| S3Error::Malformed(format!("ListMultipartUploads: {e}")))?;
            out.extend(page.uploads.into_iter().map(|u| OpenUpload {
                key: u.key,
                upload_id: u.upload_id,
            }));
            match (
                page.is_truncated,
                page.next_key_marker,
                page.next_upload_id_marker,
            ) {
                (true, Some(k), Some(u)) => markers = Some((k, u)),
                _ => break,
            }
        }
        Ok(out)
    }

    /// One page of the keys under `prefix`, grouped at `delimiter` when given.
    pub async fn list(
        &self,
        prefix: &str,
        delimiter: Option<&str>,
        continuation: Option<&str>,
    ) -> Result<Listing, S3Error> {
        let mut action = self.bucket.list_objects_v2(Some(&self.creds));
        action.with_prefix(prefix.to_string());
        if let Some(d) = delimiter {
            action.with_delimiter(d.to_string());
        }
        if let Some(c) = continuation {
            action.with_continuation_token(c.to_string());
        }
        let text =
            body_text(ok(send(self.http.get(action.sign(SIGNED_FOR))).await?).await?).await?;
        let page = rusty_s3::actions::ListObjectsV2::parse_response(&text)
            .map_err(|e| S3Error::Malformed(format!("ListObjectsV2: {e}")))?;
        Ok(Listing {
            objects: page
                .contents
                .into_iter()
                .map(|c| (c.key, c.size.unwrap_or(0)))
                .collect(),
            prefixes: page.common_prefixes.into_iter().map(|p| p.prefix).collect(),
            next: page.next_continuation_token,
        })
    }

    /// GET an object; `None` when there is no such key. The body streams.
    pub async fn get(&self, key: &str) -> Result<Option<reqwest::Response>, S3Error> {
        let url = self
            .bucket
            .get_object(Some(&self.creds), key)
            .sign(SIGNED_FOR);
        let resp = send(self.http.get(url)).await?;
        if resp.status().as_u16() == 404 {
            return Ok(None);
        }
        ok(resp).await.map(Some)
    }
}

/// S3's `<Error>` body.
#[derive(Debug, FromXml)]
#[xml(rename = "Error")]
struct ErrorBody {
    #[xml(rename = "Code")]
    code: String,
    #[xml(rename = "Message")]
    message: Option<String>,
}

const S3_NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

#[derive(Debug, FromXml)]
#[xml(rename = "ListMultipartUploadsResult", ns(S3_NS))]
struct ListUploadsBody {
    #[xml(rename = "IsTruncated")]
    is_truncated: bool,
    #[xml(rename = "NextKeyMarker")]
    next_key_marker: Option<String>,
    #[xml(rename = "NextUploadIdMarker")]
    next_upload_id_marker: Option<String>,
    uploads: Vec<UploadEntry>,
}

#[derive(Debug, FromXml)]
#[xml(rename = "Upload", ns(S3_NS))]
struct UploadEntry {
    #[xml(rename = "Key")]
    key: String,
    #[xml(rename = "UploadId")]
    upload_id: String,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn one_line(text: &str) -> String {
    text.chars()
        .take(300)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_string()
}

/// One line from a reqwest error, without its URL (signed URLs carry
/// their signature; presigned ones are secrets).
pub fn describe(e: reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    let e = e.without_url();
    let mut msg = format!("{kind}: {e}");
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        msg.push_str(&format!(": {s}"));
        src = s.source();
    }
    msg.replace('\n', " ")
}

/// Send, turning a transport failure into one line without the (signed) URL.
async fn send(req: reqwest::RequestBuilder) -> Result<reqwest::Response, S3Error> {
    req.send()
        .await
        .map_err(|e| S3Error::Transport(one_line(&describe(e))))
}

/// A 2xx response as is; anything else as [`S3Error::Status`] with the
/// store's code and message.
async fn ok(resp: reqwest::Response) -> Result<reqwest::Response, S3Error> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let retry_after = header(resp.headers(), RETRY_AFTER.as_str());
    let text = resp.text().await.unwrap_or_default();
    let (code, message) = match instant_xml::from_str::<ErrorBody>(&text) {
        Ok(e) => (e.code, one_line(&e.message.unwrap_or_default())),
        Err(_) => (String::new(), one_line(&text)),
    };
    Err(S3Error::Status {
        status: status.as_u16(),
        code,
        message,
        retry_after,
    })
}

async fn body_text(resp: reqwest::Response) -> Result<String, S3Error> {
    resp.text().await.map_err(|e| {
        S3Error::Transport(one_line(&format!(
            "reading the answer: {}",
            e.without_url()
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_parse_and_say_what_to_do() {
        let e: ErrorBody = instant_xml::from_str(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NoSuchBucket</Code><BucketName>x</BucketName><RequestId>tx1</RequestId><HostId>h</HostId></Error>",
        )
        .expect("parses");
        assert_eq!(e.code, "NoSuchBucket");
        let shown = S3Error::Status {
            status: 404,
            code: e.code,
            message: String::new(),
            retry_after: None,
        }
        .to_string();
        assert_eq!(
            shown,
            "store answered 404 NoSuchBucket (create the bucket or fix the bucket in `url`)"
        );
    }

    #[test]
    fn open_uploads_parse() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker><NextKeyMarker>p/b</NextKeyMarker><NextUploadIdMarker>2~x</NextUploadIdMarker><MaxUploads>1000</MaxUploads><IsTruncated>true</IsTruncated><Upload><Key>p/a</Key><UploadId>2~abc</UploadId><Initiator><ID>u</ID><DisplayName>u</DisplayName></Initiator><Owner><ID>u</ID><DisplayName>u</DisplayName></Owner><StorageClass>STANDARD</StorageClass><Initiated>2026-12-01T10:00:00.000Z</Initiated></Upload><Upload><Key>p/b</Key><UploadId>2~x</UploadId></Upload></ListMultipartUploadsResult>"#;
        let page: ListUploadsBody = instant_xml::from_str(xml).expect("parses");
        assert!(page.is_truncated);
        assert_eq!(page.uploads.len(), 2);
        assert_eq!(page.uploads[0].key, "p/a");
        assert_eq!(page.uploads[1].upload_id, "2~x");
        assert_eq!(page.next_key_marker.as_deref(), Some("p/b"));
    }
}
