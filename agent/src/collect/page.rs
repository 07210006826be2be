//! The collector's web page: server-rendered HTML, no JavaScript.
//!
//! `GET /` lists incidents newest first (in a directory by the trigger time of
//! the sidecars, else the directory's time; in a bucket by id, which starts
//! with that time), 50 a page, filtered by host, trigger or text
//! ([`super::catalog::Filter`]), each with its hosts, and for each host
//! its trigger lines, the window's completeness, the SVG timeline (`<img>`, so a
//! script inside an uploaded SVG never runs), the key findings of
//! `summary.json` when present (and the worst metrics that left the host's
//! baseline band, when it was compared with one), and download links. Every value from an upload
//! is HTML-escaped. A directory is scanned per request (the page is for
//! people, not for load); a bucket is read as [`super::bucket`] says.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use serde_json::Value;
use tokio_util::io::ReaderStream;

use super::catalog::{scan_dir, select, Filter, HostView, IncidentView, Page, PER_PAGE};
use super::store::safe_name;
use super::{Collector, Storage};
/// Most findings shown per capture.
pub const MAX_FINDINGS: usize = 12;
/// Most baseline deviations shown per capture.
pub const MAX_DEVIATIONS: usize = 5;

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

/// The whole page: head, the filter form, where this page is among the
/// matching incidents, one section per incident, links to the pages around it.
fn render(page: &Page<IncidentView>, filter: &Filter) -> String {
    let mut h = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tripcap captures</title>\
<style>body{font-family:sans-serif;margin:1.5em}section{border-top:1px solid #ccc;padding:.5em 0}\
.hosts{display:grid;grid-template-columns:repeat(auto-fit,minmax(24em,1fr));gap:1em;align-items:start}\
.host{min-width:0}\
code,pre{font-size:.9em}pre{white-space:pre-wrap;background:#f6f6f6;padding:.3em}.bad{color:#a00}\
img{max-width:100%;border:1px solid #ddd}</style></head><body>\n<h1>tripcap captures</h1>\n",
    );
    let value = |v: &Option<String>| esc(v.as_deref().unwrap_or(""));
    h.push_str(&format!(
        "<form class=\"filter\" method=\"get\" action=\"/\">\
<label>Host <input name=\"host\" value=\"{}\"></label> \
<label>Trigger <input name=\"trigger\" value=\"{}\"></label> \
<label>Text <input name=\"q\" value=\"{}\"></label> \
<button type=\"submit\">Filter</button></form>\n",
        value(&filter.host),
        value(&filter.trigger),
        value(&filter.q)
    ));
    if page.total == 0 {
        h.push_str("<p>No captures received yet.</p>\n");
    } else if page.items.is_empty() {
        h.push_str(&format!(
            "<p class=\"count\">No incident of {} matches.</p>\n",
            page.total
        ));
    } else {
        let first = (page.page - 1) * PER_PAGE + 1;
        h.push_str(&format!(
            "<p class=\"count\">Incidents {first}–{} of {}{}, newest first (page {} of {}).</p>\n",
            first + page.items.len() - 1,
            page.matching,
            if filter.is_empty() {
                String::new()
            } else {
                format!(" matching, {} in all", page.total)
            },
            page.page,
            page.pages
        ));
    }
    for inc in &page.items {
        render_incident(&mut h, inc);
    }
    render_pages(&mut h, page, filter);
    h.push_str("</body></html>\n");
    h
}

/// Links to the newer and older pages, keeping the filter.
fn render_pages(h: &mut String, page: &Page<IncidentView>, filter: &Filter) {
    let link = |n: usize, text: &str| {
        let mut q = format!("?page={n}");
        for (k, v) in [
            ("host", &filter.host),
            ("trigger", &filter.trigger),
            ("q", &filter.q),
        ] {
            if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                let v: String = url::form_urlencoded::byte_serialize(v.as_bytes()).collect();
                q.push_str(&format!("&{k}={}", esc(&v)));
            }
        }
        format!(
            "<a rel=\"{}\" href=\"/{q}\">{text}</a>",
            if n < page.page { "prev" } else { "next" }
        )
    };
    let mut links = Vec::new();
    if page.page > 1 {
        links.push(link(page.page - 1, "← newer"));
    }
    if page.page < page.pages {
        links.push(link(page.page + 1, "older →"));
    }
    if !links.is_empty() {
        h.push_str(&format!("<nav class=\"pages\">{}</nav>\n", links.join(" ")));
    }
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
        render_verdict(h, summary);
        render_baseline(h, summary);
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

/// "Why slow": the throughput verdict's limiter and evidence (`throughput.verdict`
/// of `tripcap analyze`'s schema 4 on), when the capture had RoCE data.
fn render_verdict(h: &mut String, summary: &Value) {
    let Some(v) = summary.get("throughput").and_then(|t| t.get("verdict")) else {
        return;
    };
    let (Some(limiter), Some(evidence)) = (str_at(v, "limiter"), str_at(v, "evidence")) else {
        return;
    };
    if evidence == "no RoCE data packets" {
        return;
    }
    let class = if limiter == "none" {
        ""
    } else {
        " class=\"bad\""
    };
    h.push_str(&format!(
        "<h4>Why slow</h4>\n<p class=\"verdict\"><b{class}>{}</b>: {}</p>\n",
        esc(&limiter.replace('_', " ")),
        esc(evidence)
    ));
}

/// The worst metrics of the summary that left their baseline band (the
/// `baseline.deviations[].text` of `tripcap analyze`'s schema 5), when it
/// was compared with one.
fn baseline_deviations(summary: &Value) -> Option<Vec<String>> {
    let b = summary.get("baseline")?;
    Some(
        b.get("deviations")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|d| str_at(d, "text"))
                    .map(str::to_string)
                    .take(MAX_DEVIATIONS)
                    .collect()
            })
            .unwrap_or_default(),
    )
}

/// "Against the baseline": the worst deviations, or that every metric was
/// within its band.
fn render_baseline(h: &mut String, summary: &Value) {
    let Some(d) = baseline_deviations(summary) else {
        return;
    };
    h.push_str("<h4>Against the baseline</h4>\n");
    if d.is_empty() {
        h.push_str("<p class=\"baseline\">Every metric within its band.</p>\n");
        return;
    }
    h.push_str("<ul class=\"baseline\">\n");
    for x in d {
        h.push_str(&format!("<li class=\"bad\">{}</li>\n", esc(&x)));
    }
    h.push_str("</ul>\n");
}

/// `GET /?host=…&trigger=…&q=…&page=N`.
pub async fn index(State(st): State<Arc<Collector>>, Query(filter): Query<Filter>) -> Response {
    let page = match st.storage() {
        Storage::Dir(store) => {
            let root = store.root().to_path_buf();
            let filter = filter.clone();
            tokio::task::spawn_blocking(move || {
                let all = scan_dir(&root);
                select(&all, filter.page.unwrap_or(1), PER_PAGE, |v| {
                    filter.matches(&v.incident, Some(v))
                })
            })
            .await
            .map_err(|e| e.to_string())
        }
        Storage::Bucket(b) => b.page(&filter).await.map_err(|e| e.to_string()),
    };
    match page {
        Ok(page) => Html(render(&page, &filter)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot read the store for the page");
            (
                StatusCode::BAD_GATEWAY,
                format!("cannot read the store: {e}\n"),
            )
                .into_response()
        }
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
    let (body, len) = match st.storage() {
        Storage::Dir(store) => {
            let path = store.path(&incident, &host, &file);
            let f = match tokio::fs::File::open(&path).await {
                Ok(f) => f,
                Err(_) => return (StatusCode::NOT_FOUND, "no such file\n").into_response(),
            };
            let len = match f.metadata().await {
                Ok(m) if m.is_file() => m.len(),
                _ => return (StatusCode::NOT_FOUND, "no such file\n").into_response(),
            };
            (Body::from_stream(ReaderStream::new(f)), Some(len))
        }
        Storage::Bucket(b) => match b.open(&incident, &host, &file).await {
            Ok(Some((len, resp))) => (Body::from_stream(resp.bytes_stream()), len),
            Ok(None) => return (StatusCode::NOT_FOUND, "no such file\n").into_response(),
            Err(e) => {
                tracing::error!(error = %e, "cannot read a file from the store");
                return (
                    StatusCode::BAD_GATEWAY,
                    format!("cannot read the store: {e}\n"),
                )
                    .into_response();
            }
        },
    };
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(crate::capture_file::media_type(&file)),
    );
    if let Some(len) = len {
        h.insert(header::CONTENT_LENGTH, header::HeaderValue::from(len));
    }
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

    #[test]
    fn the_verdict_is_shown_escaped_and_not_without_data() {
        let mut h = String::new();
        render_verdict(
            &mut h,
            &serde_json::json!({"throughput": {"verdict": {
                "limiter": "pfc_pauses", "evidence": "PFC priority 3 paused <b>5 ms</b>"}}}),
        );
        assert_eq!(
            h,
            "<h4>Why slow</h4>\n<p class=\"verdict\"><b class=\"bad\">pfc pauses</b>: PFC priority 3 paused &lt;b&gt;5 ms&lt;/b&gt;</p>\n"
        );
        let mut h = String::new();
        render_verdict(
            &mut h,
            &serde_json::json!({"throughput": {"verdict": {
                "limiter": "none", "evidence": "no RoCE data packets"}}}),
        );
        assert!(h.is_empty(), "{h}");
    }

    #[test]
    fn baseline_deviations_are_shown_escaped() {
        let v: Value = serde_json::json!({"baseline": {"deviations": [
            {"metric": "cnp_per_s", "text": "cnp_per_s 48/s on <eth0> class 26: the baseline median is 0"},
            {"metric": "x"}
        ]}});
        let mut h = String::new();
        render_baseline(&mut h, &v);
        assert!(h.contains("<h4>Against the baseline</h4>"), "{h}");
        assert!(h.contains("cnp_per_s 48/s on &lt;eth0&gt; class 26"), "{h}");
        assert_eq!(h.matches("<li").count(), 1, "{h}");
        let mut h = String::new();
        render_baseline(&mut h, &serde_json::json!({"baseline": {"deviations": []}}));
        assert!(h.contains("Every metric within its band."), "{h}");
        let mut h = String::new();
        render_baseline(&mut h, &serde_json::json!({"findings": []}));
        assert!(h.is_empty());
    }
}
