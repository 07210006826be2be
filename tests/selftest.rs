//! `tripcap selftest`: ready on a healthy node (exit 0), and each cause of
//! "not ready" fails its own line, naming the fix, with exit 1: a missing
//! interface, no permission to capture, a directory too small for a window, a
//! dead upload endpoint, a refused token. Live on `lo` (root), with a real
//! collector on 127.0.0.1.

mod common;

use std::process::Command;

use common::*;

const TOKEN: &str = "selftest-token-77c1";
const TOKEN_ENV: &str = "TRIPCAP_TEST_SELFTEST_TOKEN";
/// Holds a token the collector does not accept.
const WRONG_ENV: &str = "TRIPCAP_TEST_SELFTEST_WRONG_TOKEN";

/// Run `tripcap selftest --json` with `config` (TOML) and `args`; (exit code, checks).
fn selftest(
    dir: &std::path::Path,
    config: &str,
    args: &[&str],
) -> (Option<i32>, Vec<serde_json::Value>) {
    let cfg = dir.join("t.toml");
    std::fs::write(&cfg, config).expect("config");
    let o = run(tripcap()
        .arg("selftest")
        .arg("--json")
        .arg("-c")
        .arg(&cfg)
        .args(args)
        .env(TOKEN_ENV, TOKEN)
        .env(WRONG_ENV, "not-the-token"));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    let checks = doc["checks"].as_array().cloned().unwrap_or_default();
    assert_eq!(doc["ready"].as_bool(), Some(o.status.success()));
    (o.status.code(), checks)
}

fn line<'a>(checks: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    checks
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no `{name}` check: {checks:#?}"))
}

fn failed(checks: &[serde_json::Value]) -> Vec<String> {
    checks
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| c["check"].as_str().unwrap_or("").to_string())
        .collect()
}

fn upload_config(url: &str, out: &std::path::Path, token_var: &str) -> String {
    format!(
        "[capture]\ninterfaces = [\"lo\"]\n[output]\ndir = {out:?}\n\
         [upload]\nurl = \"{url}/upload/{{host}}/{{incident}}/{{file}}\"\n\
         headers = {{ Authorization = \"Bearer ${{{token_var}}}\" }}\n"
    )
}

#[test]
fn a_healthy_node_is_ready_and_each_cause_fails_its_own_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = start_collector(&dir.path().join("collected"), TOKEN_ENV, TOKEN, &[]);
    let out = dir.path().join("out");

    // Ready: every check passes, nothing is uploaded.
    let (code, checks) = selftest(dir.path(), &upload_config(&c.url, &out, TOKEN_ENV), &[]);
    assert_eq!(code, Some(0), "{checks:#?}");
    assert!(line(&checks, "loopback path")["detail"]
        .as_str()
        .is_some_and(|d| d.starts_with("200 of 200 RoCE v2 packets")));
    assert!(line(&checks, "upload endpoint")["detail"]
        .as_str()
        .is_some_and(|d| d.starts_with("reachable, credentials accepted (HTTP 204)")));
    assert!(
        std::fs::read_dir(&c.dir).map(|d| d.count()).unwrap_or(0) == 0,
        "selftest uploaded something"
    );

    // A log glob with no file yet: no job runs here now, which leaves the node ready
    // (a warning naming the glob); a log file that exists but cannot be read fails.
    let glob = dir.path().join("jobs/*/*.log");
    let glob = glob.to_string_lossy();
    let (code, checks) = selftest(
        dir.path(),
        &upload_config(&c.url, &out, TOKEN_ENV),
        &["--log", &glob],
    );
    assert_eq!(code, Some(0), "{checks:#?}");
    let logs = line(&checks, "log files");
    assert_eq!(logs["warn"].as_bool(), Some(true), "{logs:#?}");
    assert!(logs["detail"]
        .as_str()
        .is_some_and(|d| d.contains(&*glob) && d.contains("no file yet")));

    // A missing interface.
    let (code, checks) = selftest(
        dir.path(),
        &upload_config(&c.url, &out, TOKEN_ENV),
        &["-i", "tripcapnosuch1"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(failed(&checks), ["interface tripcapnosuch1"]);
    assert!(line(&checks, "interface tripcapnosuch1")["detail"]
        .as_str()
        .is_some_and(|d| d.contains("does not exist") && d.contains("tripcap interfaces")));

    // A refused token.
    let (code, checks) = selftest(dir.path(), &upload_config(&c.url, &out, WRONG_ENV), &[]);
    assert_eq!(code, Some(1));
    assert_eq!(failed(&checks), ["upload endpoint"]);
    assert!(line(&checks, "upload endpoint")["detail"]
        .as_str()
        .is_some_and(
            |d| d.contains("refused these credentials (HTTP 403)") && d.contains("check the token")
        ));

    // A dead endpoint.
    let dead = format!("http://127.0.0.1:{}", free_port());
    let (code, checks) = selftest(dir.path(), &upload_config(&dead, &out, TOKEN_ENV), &[]);
    assert_eq!(code, Some(1));
    assert_eq!(failed(&checks), ["upload endpoint"]);
    assert!(line(&checks, "upload endpoint")["detail"]
        .as_str()
        .is_some_and(|d| d.contains("check the URL")));
}

#[test]
fn a_directory_too_small_for_a_window_is_not_ready() {
    let dir = tempfile::tempdir().expect("tempdir");
    let small = dir.path().join("small");
    std::fs::create_dir(&small).expect("mkdir");
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&small)
        .status()
        .expect("mount runs");
    assert!(ok.success(), "mounting a tmpfs needs root");
    let (code, checks) = selftest(
        dir.path(),
        &format!("[capture]\ninterfaces = [\"lo\"]\n[ring]\nmemory_limit = \"64MiB\"\n[output]\ndir = {small:?}\n"),
        &[],
    );
    let _ = Command::new("umount").arg(&small).status();
    assert_eq!(code, Some(1));
    assert_eq!(failed(&checks), ["output directory"]);
    assert!(line(&checks, "output directory")["detail"]
        .as_str()
        .is_some_and(
            |d| d.contains("less than one window can take") && d.contains("free space there")
        ));
}

#[test]
fn without_permission_to_capture_the_interface_and_the_loopback_path_fail() {
    let o = Unprivileged::new().run(&["selftest", "--json", "-i", "lo", "-o", "out"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let checks = doc["checks"].as_array().cloned().unwrap_or_default();
    assert_eq!(failed(&checks), ["interface lo", "loopback path"]);
    assert!(
        line(&checks, "interface lo")["detail"]
            .as_str()
            .is_some_and(|d| d.contains("CAP_NET_RAW") || d.contains("permission")),
        "{checks:#?}"
    );
}

#[test]
fn as_nobody_from_a_binary_with_permitted_file_capabilities_it_is_ready() {
    // `setcap …+p` (no effective bit): tripcap raises them itself. The same user without
    // them fails (the test above); with them every check passes, capture included.
    let bin = Unprivileged::new();
    bin.setcap("cap_net_raw,cap_net_admin+p");
    let o = bin.run(&["selftest", "--json", "-i", "lo", "-o", "out"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let checks = doc["checks"].as_array().cloned().unwrap_or_default();
    assert_eq!(failed(&checks), Vec::<String>::new(), "{checks:#?}");
    assert_eq!(o.status.code(), Some(0));
    assert!(
        line(&checks, "loopback path")["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("200 of 200")),
        "{checks:#?}"
    );
}
