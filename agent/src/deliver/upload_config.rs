//! The `[upload]` and `[spool]` tables: what they hold, their defaults, and how
//! durations (`"30s"`) and sizes (`"20GiB"`) in them are read. Checking a table
//! beyond its syntax (URL, `${ENV}`, certificates) is [`super::http::check_upload`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// Header carrying the SHA-256 (hex) of the body, unless configured otherwise.
pub const DEFAULT_SHA256_HEADER: &str = "X-Content-SHA256";

/// How files are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum Method {
    /// One request per file, raw body (S3-style presigned URLs, WebDAV, the collector).
    #[default]
    #[serde(rename = "PUT", alias = "put")]
    Put,
    /// One multipart request per unit: a `metadata` JSON part, then one `file` part per file.
    #[serde(rename = "POST", alias = "post")]
    Post,
}

/// The `[spool]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpoolConfig {
    /// Bytes the output directory may hold in captures (`"20GiB"`); when over,
    /// the oldest uploaded units are deleted first, then parked, then pending ones.
    #[serde(default, deserialize_with = "de_opt_size")]
    pub max_spool: Option<u64>,
}

/// The `[upload]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UploadConfig {
    /// Endpoint; `{host}`, `{incident}` and `{file}` are replaced (`{file}` is
    /// empty for POST), and `${ENV}` is expanded.
    pub url: String,
    /// `"PUT"` (default) or `"POST"` (multipart).
    #[serde(default)]
    pub method: Method,
    /// Extra headers; values may use `${ENV}` (e.g. `Authorization = "Bearer ${TOKEN}"`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Name of the header carrying the body's SHA-256 (hex).
    #[serde(default = "default_sha_header")]
    pub sha256_header: String,
    /// PEM file of CA certificates to trust besides the system's.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate (chain) for mutual TLS; needs `client_key`.
    #[serde(default)]
    pub client_cert: Option<PathBuf>,
    /// PEM private key of `client_cert`.
    #[serde(default)]
    pub client_key: Option<PathBuf>,
    /// Keep units in the spool after upload (deleted only by `max_spool`).
    #[serde(default = "yes")]
    pub keep_after_upload: bool,
    /// Give up a connection attempt after this long.
    #[serde(default = "d_connect", deserialize_with = "de_duration")]
    pub connect_timeout: Duration,
    /// Give up a request when the server sends nothing for this long.
    #[serde(default = "d_idle", deserialize_with = "de_duration")]
    pub idle_timeout: Duration,
    /// Give up a whole request after this long (unset: no bound; multi-GB files take time).
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub timeout: Option<Duration>,
    /// First retry delay.
    #[serde(default = "d_min_backoff", deserialize_with = "de_duration")]
    pub min_backoff: Duration,
    /// Longest retry delay (also the longest `Retry-After` honoured).
    #[serde(default = "d_max_backoff", deserialize_with = "de_duration")]
    pub max_backoff: Duration,
    /// Attempts per round before the unit waits for the next round.
    #[serde(default = "d_attempts")]
    pub attempts: usize,
    /// How often the spool is rescanned without a poke.
    #[serde(default = "d_poll", deserialize_with = "de_duration")]
    pub poll: Duration,
    /// S3 (`url = "s3://…"`): the store's endpoint for Ceph RGW, MinIO and
    /// the like (`http://rgw:7480`); unset: `AWS_ENDPOINT_URL_S3`,
    /// `AWS_ENDPOINT_URL`, the profile's `endpoint_url`, else AWS.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// S3: the signing region (else `AWS_REGION`, the profile's, `us-east-1`).
    #[serde(default)]
    pub region: Option<String>,
    /// S3: the bucket in the path rather than the host name (default: true
    /// when the endpoint is not AWS's).
    #[serde(default)]
    pub path_style: Option<bool>,
    /// S3: access key id (`${ENV}` expanded; else AWS's variables and files).
    #[serde(default)]
    pub access_key: Option<String>,
    /// S3: secret access key (`${ENV}` expanded; never logged).
    #[serde(default)]
    pub secret_key: Option<String>,
    /// S3: session token of temporary credentials (`${ENV}` expanded).
    #[serde(default)]
    pub session_token: Option<String>,
    /// S3: the profile of `~/.aws/credentials` and `~/.aws/config` (else `AWS_PROFILE`, `default`).
    #[serde(default)]
    pub profile: Option<String>,
    /// S3: files larger than this go up as multipart uploads in parts of this size (5 MiB to 5 GiB).
    #[serde(default = "d_part_size", deserialize_with = "de_size")]
    pub part_size: u64,
    /// S3: parts of one file sent at the same time (each holds a connection, not memory).
    #[serde(default = "d_parts_in_flight")]
    pub parts_in_flight: usize,
}

/// The keys that only mean something for an `s3://` URL.
pub const S3_ONLY_KEYS: [&str; 9] = [
    "endpoint",
    "region",
    "path_style",
    "access_key",
    "secret_key",
    "session_token",
    "profile",
    "part_size",
    "parts_in_flight",
];

fn default_sha_header() -> String {
    DEFAULT_SHA256_HEADER.to_string()
}
fn yes() -> bool {
    true
}
fn d_connect() -> Duration {
    Duration::from_secs(10)
}
fn d_idle() -> Duration {
    Duration::from_secs(60)
}
fn d_min_backoff() -> Duration {
    Duration::from_secs(1)
}
fn d_max_backoff() -> Duration {
    Duration::from_secs(300)
}
fn d_attempts() -> usize {
    8
}
fn d_poll() -> Duration {
    Duration::from_secs(10)
}
fn d_part_size() -> u64 {
    64 << 20
}
fn d_parts_in_flight() -> usize {
    4
}

impl UploadConfig {
    /// Whether the URL names an S3 bucket (`s3://…`) rather than an HTTP endpoint.
    pub fn is_s3(&self) -> bool {
        self.url.starts_with("s3://")
    }

    /// The S3-only keys set in this table (to refuse them for an HTTP URL).
    pub fn s3_keys_set(&self) -> Vec<&'static str> {
        let set = [
            self.endpoint.is_some(),
            self.region.is_some(),
            self.path_style.is_some(),
            self.access_key.is_some(),
            self.secret_key.is_some(),
            self.session_token.is_some(),
            self.profile.is_some(),
            self.part_size != d_part_size(),
            self.parts_in_flight != d_parts_in_flight(),
        ];
        S3_ONLY_KEYS
            .iter()
            .zip(set)
            .filter_map(|(k, on)| on.then_some(*k))
            .collect()
    }

    /// A config for `url` with every default.
    pub fn new(url: impl Into<String>) -> UploadConfig {
        UploadConfig {
            url: url.into(),
            method: Method::Put,
            headers: BTreeMap::new(),
            sha256_header: default_sha_header(),
            ca_file: None,
            client_cert: None,
            client_key: None,
            keep_after_upload: true,
            connect_timeout: d_connect(),
            idle_timeout: d_idle(),
            timeout: None,
            min_backoff: d_min_backoff(),
            max_backoff: d_max_backoff(),
            attempts: d_attempts(),
            poll: d_poll(),
            endpoint: None,
            region: None,
            path_style: None,
            access_key: None,
            secret_key: None,
            session_token: None,
            profile: None,
            part_size: d_part_size(),
            parts_in_flight: d_parts_in_flight(),
        }
    }
}

fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    crate::units::parse_duration(&text).map_err(serde::de::Error::custom)
}

fn de_opt_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    de_duration(d).map(Some)
}

fn de_size<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    de_opt_size(d).map(|s| s.unwrap_or_default())
}

fn de_opt_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumOrText {
        Num(u64),
        Text(String),
    }
    match NumOrText::deserialize(d)? {
        NumOrText::Num(n) => Ok(Some(n)),
        NumOrText::Text(t) => crate::units::parse_size(&t)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// Errors that stop the uploader from starting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UploadError {
    /// The `[upload]` table is wrong.
    #[error("[upload] {0}")]
    Config(String),
    /// A `${NAME}` the table uses is not set in the environment.
    #[error("[upload] {0}")]
    UnsetEnv(String),
}

impl From<crate::auth::EnvError> for UploadError {
    fn from(e: crate::auth::EnvError) -> UploadError {
        match e {
            crate::auth::EnvError::Unset { .. } => UploadError::UnsetEnv(e.to_string()),
            _ => UploadError::Config(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_reads_from_toml() {
        let c: UploadConfig = toml::from_str(
            r#"
            url = "http://127.0.0.1:1/{incident}"
            method = "POST"
            headers = { Authorization = "Bearer ${T}" }
            idle_timeout = "2s"
            keep_after_upload = false
            "#,
        )
        .expect("parses");
        assert_eq!(c.method, Method::Post);
        assert_eq!(c.idle_timeout, Duration::from_secs(2));
        assert!(!c.keep_after_upload);
        assert_eq!(c.min_backoff, UploadConfig::new("x").min_backoff);
        let e = toml::from_str::<UploadConfig>("url = \"x\"\nidle_timeout = \"30\"")
            .expect_err("no unit")
            .to_string();
        assert!(e.contains("no unit"), "{e}");
        let e = toml::from_str::<UploadConfig>("url = \"x\"\nretries = 3")
            .expect_err("unknown key")
            .to_string();
        assert!(e.contains("retries"), "{e}");
        let s: SpoolConfig = toml::from_str("max_spool = \"20GiB\"").expect("size");
        assert_eq!(s.max_spool, Some(20 << 30));
        let s: SpoolConfig = toml::from_str("max_spool = 4096").expect("number");
        assert_eq!(s.max_spool, Some(4096));
    }
}
