//! Where captures go in a bucket: `s3://BUCKET/KEY-TEMPLATE`, the template
//! holding `{host}`, `{incident}` and `{file}` like an HTTP upload URL. Pure:
//! parsing, the key of one file, and whether a key is one this host would
//! write (to find its own abandoned multipart uploads).

/// A parsed `s3://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The bucket's name.
    pub bucket: String,
    /// The key template (no leading `/`); may be empty for `--store s3://BUCKET`.
    pub template: String,
}

impl Location {
    /// Parse `s3://BUCKET/TEMPLATE`. The error says what to write instead.
    pub fn parse(url: &str) -> Result<Location, String> {
        let rest = url.strip_prefix("s3://").ok_or_else(|| {
            format!("`{url}` is not an s3:// URL: write s3://BUCKET/PREFIX/{{incident}}/{{host}}/{{file}}")
        })?;
        let (bucket, template) = rest.split_once('/').unwrap_or((rest, ""));
        check_bucket_name(bucket)?;
        if template.contains("//") || template.contains('?') || template.contains('#') {
            return Err(format!(
                "the key template `{template}` has an empty path segment, `?` or `#`: write e.g. PREFIX/{{incident}}/{{host}}/{{file}}"
            ));
        }
        Ok(Location {
            bucket: bucket.to_string(),
            template: template.to_string(),
        })
    }

    /// Check that the template names every file apart: `{host}` and `{file}`
    /// must be in it (a fleet incident has the same file names on every host).
    pub fn check_upload_template(&self) -> Result<(), String> {
        for p in ["{host}", "{file}"] {
            if !self.template.contains(p) {
                return Err(format!(
                    "the key template `{}` has no {p}: hosts and files would overwrite each other; write s3://{}/PREFIX/{{incident}}/{{host}}/{{file}}",
                    self.template, self.bucket
                ));
            }
        }
        Ok(())
    }

    /// The key of `file` of `incident` written by `host`.
    pub fn key(&self, host: &str, incident: &str, file: &str) -> String {
        self.template
            .replace("{host}", &segment(host))
            .replace("{incident}", &segment(incident))
            .replace("{file}", &segment(file))
    }

    /// The part of the template before its first placeholder: every key it
    /// makes starts with it (a listing prefix).
    pub fn fixed_prefix(&self) -> &str {
        match self.template.find('{') {
            Some(i) => &self.template[..i],
            None => &self.template,
        }
    }

    /// The prefix for `--store s3://BUCKET/PREFIX`: the template with a
    /// trailing `/` (none when empty).
    pub fn store_prefix(&self) -> String {
        let t = self.template.trim_end_matches('/');
        if t.is_empty() {
            String::new()
        } else {
            format!("{t}/")
        }
    }

    /// Whether `key` is one that `host` would write with this template, for
    /// some incident and file.
    pub fn is_own_key(&self, key: &str, host: &str) -> bool {
        let host = segment(host);
        matches_template(&self.template, key, &host)
    }
}

/// A placeholder's value as it goes into a key: one path segment.
fn segment(value: &str) -> String {
    value.replace('/', "_")
}

/// Match `key` against `template` where `{host}` must equal `host` and
/// `{incident}`/`{file}` are any non-empty text without `/`.
fn matches_template(template: &str, key: &str, host: &str) -> bool {
    let Some(open) = template.find('{') else {
        return template == key;
    };
    let Some(rest) = key.strip_prefix(&template[..open]) else {
        return false;
    };
    let after = &template[open..];
    let Some(close) = after.find('}') else {
        return after == rest;
    };
    let name = &after[1..close];
    let tail = &after[close + 1..];
    if name == "host" {
        return rest
            .strip_prefix(host)
            .is_some_and(|r| matches_template(tail, r, host));
    }
    // Any non-empty run without `/`, then the rest of the template.
    let limit = rest.find('/').unwrap_or(rest.len());
    (1..=limit).any(|n| matches_template(tail, &rest[n..], host))
}

/// S3's bucket naming rules, the ones that catch typos.
fn check_bucket_name(name: &str) -> Result<(), String> {
    let ok_chars = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    let ok_ends = name
        .bytes()
        .next()
        .zip(name.bytes().last())
        .is_some_and(|(a, z)| a.is_ascii_alphanumeric() && z.is_ascii_alphanumeric());
    if (3..=63).contains(&name.len()) && ok_chars && ok_ends {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a bucket name: 3 to 63 lowercase letters, digits, `-` or `.`, starting and ending with a letter or digit"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_expands() {
        let l = Location::parse("s3://caps/rdma/{incident}/{host}/{file}").expect("parses");
        assert_eq!(l.bucket, "caps");
        assert_eq!(l.fixed_prefix(), "rdma/");
        assert_eq!(l.key("n/1", "i1", "i1.pcapng"), "rdma/i1/n_1/i1.pcapng");
        assert!(l.check_upload_template().is_ok());
        let bare = Location::parse("s3://caps").expect("bare bucket");
        assert_eq!(bare.store_prefix(), "");
        assert_eq!(
            Location::parse("s3://caps/a/b/")
                .expect("prefix")
                .store_prefix(),
            "a/b/"
        );
    }

    #[test]
    fn refuses_what_would_go_wrong() {
        for (url, says) in [
            ("http://caps/x", "not an s3:// URL"),
            ("s3://Caps/x", "not a bucket name"),
            ("s3://c/x", "not a bucket name"),
            ("s3://caps/a//b", "empty path segment"),
        ] {
            let e = Location::parse(url).expect_err(url);
            assert!(e.contains(says), "{url}: {e}");
        }
        let e = Location::parse("s3://caps/{incident}/{file}")
            .expect("parses")
            .check_upload_template()
            .expect_err("no host");
        assert!(e.contains("no {host}"), "{e}");
    }

    #[test]
    fn own_keys_are_recognised() {
        let l = Location::parse("s3://caps/p/{incident}/{host}/{file}").expect("parses");
        assert!(l.is_own_key("p/i1/node1/i1.pcapng", "node1"));
        assert!(!l.is_own_key("p/i1/node2/i1.pcapng", "node1"));
        assert!(!l.is_own_key("q/i1/node1/i1.pcapng", "node1"));
        assert!(!l.is_own_key("p/i1/node1/sub/i1.pcapng", "node1"));
        assert!(!l.is_own_key("p//node1/i1.pcapng", "node1"));
        let flat = Location::parse("s3://caps/{host}-{file}").expect("parses");
        assert!(flat.is_own_key("node1-a.json", "node1"));
        assert!(!flat.is_own_key("node12-a.json", "node1x"));
    }
}
