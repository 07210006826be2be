//! The collector's web page: server-rendered HTML, no JavaScript.
//!
//! `GET /` lists incidents newest first (by the first trigger's time in the
//! sidecar, else the directory's time), each with its hosts, and for each host
//! its trigger lines, the window's completeness, the SVG timeline (`<img>`, so a
//! script inside an uploaded SVG never runs), the key findings of
//! `summary.json` when present, and download links. Every value from an upload
//! is HTML-escaped. Reading the storage is a scan per request: the page is for
//! people, not for load.

use std::path::Path as FsPath;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use serde_json::Value;
use tokio_util::io::ReaderStream;

use super::store::safe_name;
use super::Collector;

/// Most incidents shown on the page.
pub const MAX_INCIDENTS: usize = 200;
/// Most findings shown per capture.
pub const MAX_FINDINGS: usize = 12;

/// Escape text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One host's files of one incident.
#[derive(Debug, Default)]
struct HostView {
    host: String,
    files: Vec<(String, u64)>,
    sidecar: Option<Value>,
    summary: Option<Value>,
}

/// One incident.
#[derive(Debug, Default)]
struct IncidentView {
    incident: String,
    newest_ns: i64,
    hosts: Vec<HostView>,
}

fn read_json(path: &FsPath) -> Option<Value> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn mtime_ns(path: &FsPath) -> i64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn visible_entries(dir: &FsPath) -> Vec<(String, std::fs::Metadata)> {
    let mut v: Vec<(String, std::fs::Metadata)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_str()?.to_string();
                    if !safe_name(&name) {
                        return None;
                    }
                    Some((name, e.metadata().ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn scan(root: &FsPath) -> (Vec<IncidentView>, usize) {
    let mut incidents = Vec::new();
    for (incident, meta) in visible_entries(root) {
        if !meta.is_dir() {
            continue;
        }
        let idir = root.join(&incident);
        let mut view = IncidentView {
            incident: incident.clone(),
            newest_ns: 0,
            hosts: Vec::new(),
        };
        let mut trigger_ns: Option<i64> = None;
        for (host, hmeta) in visible_entries(&idir) {
            if !hmeta.is_dir() {
                continue;
            }
            let hdir = idir.join(&host);
            let files: Vec<(String, u64)> = visible_entries(&hdir)
                .into_iter()
                .filter(|(_, m)| m.is_file())
                .map(|(n, m)| (n, m.len()))
                .collect();
            let sidecar = read_json(&hdir.join(format!("{incident}.json")));
            if let Some(at) = sidecar
                .as_ref()
                .and_then(|s| s.pointer("/triggers/0/at_ns"))
                .and_then(Value::as_i64)
            {
                trigger_ns = Some(trigger_ns.map_or(at, |t| t.max(at)));
            }
            let summary = read_json(&hdir.join(format!("{incident}.summary.json")));
            view.hosts.push(HostView {
                host,
                files,
                sidecar,
                summary,
            });
        }
        // The trigger time when a sidecar says it, else when the directory changed.
        view.newest_ns = trigger_ns.unwrap_or_else(|| mtime_ns(&idir));
        incidents.push(view);
    }
    incidents.sort_by(|a, b| {
        b.newest_ns
            .cmp(&a.newest_ns)
            .then_with(|| b.incident.cmp(&a.incident))
    });
    let total = incidents.len();
    incidents.truncate(MAX_INCIDENTS);
    (incidents, total)
}

/// The findings of a summary document: the first `findings` array found, each
/// item's `text` (or the item itself when it is a string), with its severity.
fn findings(summary: &Value) -> Vec<String> {
    fn find(v: &Value, depth: usize) -> Option<&Vec<Value>> {
        if depth > 4 {
            return None;
        }
        match v {
            Value::Object(m) => {
                if let Some(Value::Array(a)) = m.get("findings") {
                    return Some(a);
                }
                m.values().find_map(|x| find(x, depth + 1))
            }
            _ => None,
        }
    }
    let Some(items) = find(summary, 0) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|f| match f {
            Value::String(s) => Some(s.clone()),
            Value::Object(m) => {
                let text = m.get("text").or_else(|| m.get("message"))?.as_str()?;
                Some(match m.get("severity").and_then(Value::as_str) {
                    Some(sev) => format!("[{sev}] {text}"),
                    None => text.to_string(),
                })
            }
            _ => None,
        })
        .take(MAX_FINDINGS)
        .collect()
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The whole page: head, a note when empty or truncated, one section per incident.
fn render(incidents: &[IncidentView], total: usize) -> String {
    let mut h = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tripcap captures</title>\
<style>body{font-family:sans-serif;margin:1.5em}section{border-top:1px solid #ccc;padding:.5em 0}\
.hosts{display:grid;grid-template-columns:repeat(auto-fit,minmax(24em,1fr));gap:1em;align-items:start}\
.host{min-width:0}\
code,pre{font-size:.9em}pre{white-space:pre-wrap;background:#f6f6f6;padding:.3em}.bad{color:#a00}\
img{max-width:100%;border:1px solid #ddd}</style></head><body>\n<h1>tripcap captures</h1>\n",
    );
    if incidents.is_empty() {
        h.push_str("<p>No captures received yet.</p>\n");
    }
    if total > incidents.len() {
        h.push_str(&format!(
            "<p>Showing the {} newest of {total} incidents.</p>\n",
            incidents.len()
        ));
    }
    for inc in incidents {
        render_incident(&mut h, inc);
    }
    h.push_str("</body></html>\n");
    h
}

/// One incident's section: who took part (a fleet incident), then its hosts
/// side by side.
fn render_incident(h: &mut String, inc: &IncidentView) {
    let iid = esc(&inc.incident);
    h.push_str(&format!(
        "<section class=\"incident\" id=\"{iid}\">\n<h2>Incident <code>{iid}</code></h2>\n"
    ));
    render_fleet(h, inc);
    h.push_str("<div class=\"hosts\">\n");
    for host in &inc.hosts {
        render_host(h, inc, host);
    }
    h.push_str("</div></section>\n");
}

/// A fleet incident: the job, who announced it, the hosts that captured (with
/// or without an upload here yet) and those asked that did not answer. Read from
/// the sidecar that knows most hosts (they close at different times).
fn render_fleet(h: &mut String, inc: &IncidentView) {
    let fleet = inc
        .hosts
        .iter()
        .filter_map(|host| host.sidecar.as_ref()?.get("fleet"))
        .max_by_key(|f| f.get("hosts").and_then(Value::as_array).map_or(0, Vec::len));
    let Some(f) = fleet else {
        return;
    };
    let names = |key: &str, field: Option<&str>| -> Vec<String> {
        f.get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| match field {
                        Some(k) => str_at(x, k),
                        None => x.as_str(),
                    })
                    .map(|s| format!("<code>{}</code>", esc(s)))
                    .collect()
            })
            .unwrap_or_default()
    };
    let captured = names("hosts", Some("host"));
    let silent = names("silent", None);
    h.push_str(&format!(
        "<p class=\"fleet\">Job <code>{}</code>, announced by <code>{}</code>: captured by {} host(s): {}",
        esc(str_at(f, "job").unwrap_or("?")),
        esc(str_at(f, "announced_by").unwrap_or("?")),
        captured.len(),
        captured.join(", ")
    ));
    if !silent.is_empty() {
        h.push_str(&format!(
            "; <span class=\"bad\">not answering: {}</span>",
            silent.join(", ")
        ));
    }
    h.push_str("</p>\n");
}

/// One host of an incident: triggers and window (from the sidecar), timeline,
/// key findings, download links.
fn render_host(h: &mut String, inc: &IncidentView, host: &HostView) {
    let iid = esc(&inc.incident);
    let hn = esc(&host.host);
    h.push_str(&format!(
        "<div class=\"host\"><h3>Host <code>{hn}</code></h3>\n"
    ));
    if let Some(side) = &host.sidecar {
        render_triggers(h, side);
        render_window(h, side);
    } else {
        h.push_str("<p class=\"bad\">No sidecar yet (upload in progress?).</p>\n");
    }
    let href = |f: &str| {
        format!(
            "/files/{}/{}/{}",
            esc(&inc.incident),
            esc(&host.host),
            esc(f)
        )
    };
    if let Some(svg) = host.files.iter().find(|(n, _)| n.ends_with(".svg")) {
        h.push_str(&format!(
            "<p><img class=\"timeline\" src=\"{}\" alt=\"timeline of {iid} on {hn}\"></p>\n",
            href(&svg.0)
        ));
    }
    if let Some(summary) = &host.summary {
        render_findings(h, summary);
    }
    h.push_str("<ul class=\"files\">\n");
    for (name, len) in &host.files {
        h.push_str(&format!(
            "<li><a href=\"{}\" download>{}</a> ({len} bytes)</li>\n",
            href(name),
            esc(name)
        ));
    }
    h.push_str("</ul></div>\n");
}

/// The sidecar's trigger lines: name, class, time, source and line.
fn render_triggers(h: &mut String, side: &Value) {
    let Some(triggers) = side.get("triggers").and_then(Value::as_array) else {
        return;
    };
    h.push_str("<ul class=\"triggers\">\n");
    for t in triggers {
        let mut item = format!(
            "<b>{}</b> ({}) at {}",
            esc(str_at(t, "name").unwrap_or("?")),
            esc(str_at(t, "class").unwrap_or("?")),
            esc(str_at(t, "at").unwrap_or("?")),
        );
        if let Some(src) = str_at(t, "source") {
            item.push_str(&format!(" from <code>{}", esc(src)));
            if let Some(n) = t.get("line_no").and_then(Value::as_u64) {
                item.push_str(&format!(":{n}"));
            }
            item.push_str("</code>");
        }
        if let Some(line) = str_at(t, "line") {
            item.push_str(&format!("<pre class=\"line\">{}</pre>", esc(line)));
        }
        h.push_str(&format!("<li>{item}</li>\n"));
    }
    h.push_str("</ul>\n");
}

/// The packet count and whether the window is complete (else its shortfall).
fn render_window(h: &mut String, side: &Value) {
    let complete = side
        .pointer("/window/complete")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let packets = side.get("packets").and_then(Value::as_u64).unwrap_or(0);
    if complete {
        h.push_str(&format!("<p>{packets} packets; window complete.</p>\n"));
    } else {
        let why: Vec<String> = side
            .pointer("/window/shortfall")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(esc).collect())
            .unwrap_or_default();
        h.push_str(&format!(
            "<p class=\"bad\">{packets} packets; window INCOMPLETE: {}</p>\n",
            why.join("; ")
        ));
    }
}

/// The summary's key findings, when it has any.
fn render_findings(h: &mut String, summary: &Value) {
    let f = findings(summary);
    if f.is_empty() {
        return;
    }
    h.push_str("<h4>Key findings</h4>\n<ul class=\"findings\">\n");
    for x in f {
        h.push_str(&format!("<li>{}</li>\n", esc(&x)));
    }
    h.push_str("</ul>\n");
}

/// `GET /`.
pub async fn index(State(st): State<Arc<Collector>>) -> Response {
    let root = st.store().root().to_path_buf();
    match tokio::task::spawn_blocking(move || {
        let (incidents, total) = scan(&root);
        render(&incidents, total)
    })
    .await
    {
        Ok(html) => Html(html).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "page failed\n").into_response(),
    }
}

fn content_type(name: &str) -> &'static str {
    if name.ends_with(".svg") {
        "image/svg+xml"
    } else if name.ends_with(".json") {
        "application/json"
    } else if name.ends_with(".pcapng") {
        "application/x-pcapng"
    } else {
        "application/octet-stream"
    }
}

/// `GET /files/{incident}/{host}/{file}`: streamed from disk.
pub async fn file(
    State(st): State<Arc<Collector>>,
    Path((incident, host, file)): Path<(String, String, String)>,
) -> Response {
    if ![&incident, &host, &file].iter().all(|n| safe_name(n)) {
        return (StatusCode::NOT_FOUND, "no such file\n").into_response();
    }
    let path = st.store().path(&incident, &host, &file);
    let f = match tokio::fs::File::open(&path).await {
        Ok(f) => f,
        Err(_) => return (StatusCode::NOT_FOUND, "no such file\n").into_response(),
    };
    let len = match f.metadata().await {
        Ok(m) if m.is_file() => m.len(),
        _ => return (StatusCode::NOT_FOUND, "no such file\n").into_response(),
    };
    let mut resp = Response::new(Body::from_stream(ReaderStream::new(f)));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type(&file)),
    );
    h.insert(header::CONTENT_LENGTH, header::HeaderValue::from(len));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; sandbox"),
    );
    if file.ends_with(".pcapng") {
        if let Ok(v) = header::HeaderValue::from_str(&format!("attachment; filename=\"{file}\"")) {
            h.insert(header::CONTENT_DISPOSITION, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn findings_are_found() {
        let v: Value = serde_json::json!({"report": {"findings": [
            {"severity": "error", "text": "PSN gap on QP 0x11"},
            "plain",
            {"kind": "x"}
        ]}});
        assert_eq!(findings(&v), ["[error] PSN gap on QP 0x11", "plain"]);
        assert!(findings(&serde_json::json!({})).is_empty());
    }
}
