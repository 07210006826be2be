//! Which keys sign the requests, where the store is, and in which region:
//! the AWS conventions users already have, in AWS's order.
//!
//! - Keys: the table's own `access_key`/`secret_key` (`${ENV}` expanded by the
//!   caller), else `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`
//!   (+ `AWS_SESSION_TOKEN`), else the profile (`profile`, else `AWS_PROFILE`,
//!   else `default`) in `~/.aws/credentials` (`AWS_SHARED_CREDENTIALS_FILE`),
//!   then in `~/.aws/config` (`AWS_CONFIG_FILE`).
//! - Region: `region`, `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's
//!   `region`, else `us-east-1`.
//! - Endpoint: `endpoint`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, the
//!   profile's `endpoint_url`, else AWS (`https://s3.REGION.amazonaws.com`).
//!
//! [`resolve`] is pure: the environment and the files come in as functions.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// What the configuration says (each optional; the rest comes from AWS's conventions).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Endpoint URL (`http://rgw:7480`) for Ceph RGW, MinIO and the like.
    pub endpoint: Option<String>,
    /// Region for signing.
    pub region: Option<String>,
    /// Bucket in the path (`endpoint/bucket/key`) rather than the host name.
    pub path_style: Option<bool>,
    /// Access key id.
    pub access_key: Option<String>,
    /// Secret access key.
    pub secret_key: Option<String>,
    /// Session token of temporary credentials.
    pub session_token: Option<String>,
    /// Profile of the AWS files.
    pub profile: Option<String>,
}

/// Settings resolved: everything a client needs.
#[derive(Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Endpoint, `http(s)://host[:port]`.
    pub endpoint: String,
    /// Signing region.
    pub region: String,
    /// Path-style addressing.
    pub path_style: bool,
    /// Access key id.
    pub key: String,
    /// Secret access key (never printed).
    pub secret: String,
    /// Session token (never printed).
    pub token: Option<String>,
    /// Where the keys came from, for logs (`environment`, `profile prod in ~/.aws/credentials`).
    pub source: String,
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("path_style", &self.path_style)
            .field("key", &self.key)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// The machine's side: environment variables and file contents.
pub trait Environment {
    /// An environment variable, when set and not empty.
    fn var(&self, name: &str) -> Option<String>;
    /// A file's text, `None` when it does not exist; an error when it exists
    /// but cannot be read.
    fn read(&self, path: &std::path::Path) -> Result<Option<String>, String>;
}

/// The real process environment and file system.
pub struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    fn read(&self, path: &std::path::Path) -> Result<Option<String>, String> {
        match std::fs::read_to_string(path) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!(
                "cannot read {} ({e}): fix its permissions or set the keys another way",
                path.display()
            )),
        }
    }
}

/// One profile's keys, from either AWS file.
type Profile = BTreeMap<String, String>;

/// Why settings cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// No keys anywhere (the agent's environment may have them where a check does not).
    #[error("{0}")]
    Missing(String),
    /// Something given is wrong.
    #[error("{0}")]
    Invalid(String),
}

impl From<String> for ResolveError {
    fn from(s: String) -> ResolveError {
        ResolveError::Invalid(s)
    }
}

impl From<&str> for ResolveError {
    fn from(s: &str) -> ResolveError {
        ResolveError::Invalid(s.to_string())
    }
}

/// Resolve `settings` against the environment. The error names what is
/// missing and the ways to give it.
pub fn resolve(settings: &Settings, env: &dyn Environment) -> Result<Resolved, ResolveError> {
    let home = env.var("HOME").map(PathBuf::from);
    let aws_file = |var: &str, name: &str| {
        env.var(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    let profile_name = settings
        .profile
        .clone()
        .or_else(|| env.var("AWS_PROFILE"))
        .unwrap_or_else(|| "default".to_string());
    let load = |path: Option<PathBuf>,
                config_file: bool|
     -> Result<Option<(Profile, String)>, ResolveError> {
        let Some(path) = path else { return Ok(None) };
        let Some(text) = env.read(&path).map_err(ResolveError::Invalid)? else {
            return Ok(None);
        };
        let section = if config_file && profile_name != "default" {
            format!("profile {profile_name}")
        } else {
            profile_name.clone()
        };
        Ok(parse_profiles(&text)
            .remove(&section)
            .map(|p| (p, path.display().to_string())))
    };
    let creds_file = load(
        aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
        false,
    )?;
    let config_file = load(aws_file("AWS_CONFIG_FILE", "config"), true)?;
    let from_profile = |k: &str| -> Option<(String, String)> {
        [&creds_file, &config_file]
            .into_iter()
            .flatten()
            .find_map(|(p, path)| p.get(k).map(|v| (v.clone(), path.clone())))
    };

    let (key, secret, token, source) = match (&settings.access_key, &settings.secret_key) {
        (Some(k), Some(s)) => (
            k.clone(),
            s.clone(),
            settings.session_token.clone(),
            "the config's access_key/secret_key".to_string(),
        ),
        (Some(_), None) | (None, Some(_)) => {
            return Err("`access_key` and `secret_key` go together: set both or neither".into());
        }
        (None, None) => match (env.var("AWS_ACCESS_KEY_ID"), env.var("AWS_SECRET_ACCESS_KEY")) {
            (Some(k), Some(s)) => (
                k,
                s,
                env.var("AWS_SESSION_TOKEN"),
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY".to_string(),
            ),
            (Some(_), None) | (None, Some(_)) => {
                return Err(
                    "only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set: set both".into(),
                );
            }
            (None, None) => match (
                from_profile("aws_access_key_id"),
                from_profile("aws_secret_access_key"),
            ) {
                (Some((k, path)), Some((s, _))) => (
                    k,
                    s,
                    from_profile("aws_session_token").map(|(t, _)| t),
                    format!("profile `{profile_name}` in {path}"),
                ),
                _ => {
                    return Err(ResolveError::Missing(format!(
                        "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or access_key/secret_key in [upload], or give profile `{profile_name}` aws_access_key_id and aws_secret_access_key in ~/.aws/credentials"
                    )))
                }
            },
        },
    };

    let region = settings
        .region
        .clone()
        .or_else(|| env.var("AWS_REGION"))
        .or_else(|| env.var("AWS_DEFAULT_REGION"))
        .or_else(|| from_profile("region").map(|(r, _)| r))
        .unwrap_or_else(|| "us-east-1".to_string());
    let custom = settings
        .endpoint
        .clone()
        .or_else(|| env.var("AWS_ENDPOINT_URL_S3"))
        .or_else(|| env.var("AWS_ENDPOINT_URL"))
        .or_else(|| from_profile("endpoint_url").map(|(e, _)| e));
    let path_style = settings.path_style.unwrap_or(custom.is_some());
    let endpoint = match custom {
        Some(e) => check_endpoint(&e).map_err(ResolveError::Invalid)?,
        None => format!("https://s3.{region}.amazonaws.com"),
    };
    Ok(Resolved {
        endpoint,
        region,
        path_style,
        key,
        secret,
        token,
        source,
    })
}

/// An endpoint is `http(s)://host[:port]` with nothing after it.
fn check_endpoint(e: &str) -> Result<String, String> {
    let trimmed = e.trim_end_matches('/');
    let url = url::Url::parse(trimmed).map_err(|err| {
        format!("endpoint `{e}` is not a URL ({err}): write e.g. http://rgw.example:7480")
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!(
            "endpoint `{e}` must be http:// or https:// and name a host: write e.g. http://rgw.example:7480"
        ));
    }
    if url.path() != "/" || url.query().is_some() {
        return Err(format!(
            "endpoint `{e}` has a path or query: give only scheme, host and port; the bucket goes in the s3:// URL"
        ));
    }
    Ok(trimmed.to_string())
}

/// Sections of an AWS credentials or config file: `[name]` headers and
/// `key = value` lines; `#`/`;` comments; indented lines (the nested
/// `s3 =` blocks of the config file) are skipped.
fn parse_profiles(text: &str) -> BTreeMap<String, Profile> {
    let mut out: BTreeMap<String, Profile> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            out.entry(name.clone()).or_default();
            current = Some(name);
        } else if let (Some(section), Some((k, v))) = (&current, line.split_once('=')) {
            if let Some(p) = out.get_mut(section) {
                p.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct FakeEnv {
        vars: HashMap<&'static str, &'static str>,
        files: HashMap<PathBuf, &'static str>,
    }

    impl Environment for FakeEnv {
        fn var(&self, name: &str) -> Option<String> {
            self.vars.get(name).map(|v| v.to_string())
        }
        fn read(&self, path: &std::path::Path) -> Result<Option<String>, String> {
            Ok(self.files.get(path).map(|t| t.to_string()))
        }
    }

    fn env(vars: &[(&'static str, &'static str)], files: &[(&str, &'static str)]) -> FakeEnv {
        FakeEnv {
            vars: vars.iter().copied().chain([("HOME", "/h")]).collect(),
            files: files.iter().map(|(p, t)| (PathBuf::from(p), *t)).collect(),
        }
    }

    const CREDS: &str = "[default]\naws_access_key_id = DK\naws_secret_access_key = DS\n\n# team\n[prod]\naws_access_key_id=PK\naws_secret_access_key=PS\naws_session_token = PT\n";
    const CONFIG: &str = "[default]\nregion = eu-west-1\n[profile prod]\nregion = us-west-2\nendpoint_url = http://rgw:7480/\ns3 =\n  addressing_style = path\n";

    #[test]
    fn the_config_wins_then_the_environment_then_the_profile() {
        let files = [("/h/.aws/credentials", CREDS), ("/h/.aws/config", CONFIG)];
        let vars = [("AWS_ACCESS_KEY_ID", "EK"), ("AWS_SECRET_ACCESS_KEY", "ES")];
        let mine = Settings {
            access_key: Some("CK".into()),
            secret_key: Some("CS".into()),
            ..Settings::default()
        };
        let r = resolve(&mine, &env(&vars, &files)).expect("config keys");
        assert_eq!((r.key.as_str(), r.secret.as_str()), ("CK", "CS"));
        let r = resolve(&Settings::default(), &env(&vars, &files)).expect("env keys");
        assert_eq!((r.key.as_str(), r.token), ("EK", None));
        let r = resolve(&Settings::default(), &env(&[], &files)).expect("default profile");
        assert_eq!(r.key, "DK");
        assert_eq!(r.region, "eu-west-1");
        assert_eq!(r.endpoint, "https://s3.eu-west-1.amazonaws.com");
        assert!(!r.path_style);
        assert!(r.source.contains("/h/.aws/credentials"), "{}", r.source);
        let r = resolve(
            &Settings::default(),
            &env(&[("AWS_PROFILE", "prod")], &files),
        )
        .expect("named profile");
        assert_eq!((r.key.as_str(), r.token.as_deref()), ("PK", Some("PT")));
        assert_eq!(r.region, "us-west-2");
        assert_eq!(r.endpoint, "http://rgw:7480");
        assert!(r.path_style);
    }

    #[test]
    fn region_and_endpoint_follow_aws_order() {
        let vars = [
            ("AWS_ACCESS_KEY_ID", "K"),
            ("AWS_SECRET_ACCESS_KEY", "S"),
            ("AWS_DEFAULT_REGION", "ap-south-1"),
            ("AWS_ENDPOINT_URL", "http://generic:1"),
            ("AWS_ENDPOINT_URL_S3", "http://s3only:2"),
        ];
        let r = resolve(&Settings::default(), &env(&vars, &[])).expect("resolves");
        assert_eq!(r.region, "ap-south-1");
        assert_eq!(r.endpoint, "http://s3only:2");
        let mine = Settings {
            region: Some("r1".into()),
            endpoint: Some("https://mine:3".into()),
            path_style: Some(false),
            ..Settings::default()
        };
        let r = resolve(&mine, &env(&vars, &[])).expect("resolves");
        assert_eq!(
            (r.region.as_str(), r.endpoint.as_str()),
            ("r1", "https://mine:3")
        );
        assert!(!r.path_style);
    }

    #[test]
    fn missing_or_half_credentials_say_how_to_give_them() {
        let e = resolve(&Settings::default(), &env(&[], &[])).expect_err("none");
        assert!(matches!(e, ResolveError::Missing(_)));
        let e = e.to_string();
        assert!(
            e.contains("AWS_ACCESS_KEY_ID") && e.contains("~/.aws/credentials"),
            "{e}"
        );
        let e = resolve(
            &Settings::default(),
            &env(&[("AWS_ACCESS_KEY_ID", "K")], &[]),
        )
        .expect_err("half")
        .to_string();
        assert!(e.contains("set both"), "{e}");
        let half = Settings {
            secret_key: Some("S".into()),
            ..Settings::default()
        };
        assert!(resolve(&half, &env(&[], &[])).is_err());
        let bad = Settings {
            endpoint: Some("http://rgw:7480/bucket".into()),
            ..Settings::default()
        };
        let e = resolve(
            &bad,
            &env(
                &[("AWS_ACCESS_KEY_ID", "K"), ("AWS_SECRET_ACCESS_KEY", "S")],
                &[],
            ),
        )
        .expect_err("path")
        .to_string();
        assert!(e.contains("has a path"), "{e}");
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let r = resolve(
            &Settings::default(),
            &env(
                &[
                    ("AWS_ACCESS_KEY_ID", "K"),
                    ("AWS_SECRET_ACCESS_KEY", "TOPSECRET"),
                    ("AWS_SESSION_TOKEN", "TOK"),
                ],
                &[],
            ),
        )
        .expect("resolves");
        let shown = format!("{r:?}");
        assert!(
            !shown.contains("TOPSECRET") && !shown.contains("TOK"),
            "{shown}"
        );
    }
}
