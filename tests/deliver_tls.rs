//! Private TLS: uploads to an HTTPS endpoint whose certificate is signed by a
//! private CA (`ca_file`) and which demands a client certificate
//! (`client_cert`/`client_key`). The server is Python's `ssl` + `http.server`
//! on 127.0.0.1, the certificates are made by the `openssl` CLI: nothing of
//! tripcap's on the far side. Without the client certificate the server
//! refuses the handshake and nothing arrives.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::*;

const SERVER: &str = r#"
import http.server, os, ssl, sys
root, ca, cert, key = sys.argv[1:5]
class H(http.server.BaseHTTPRequestHandler):
    def do_PUT(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        path = os.path.join(root, self.path.strip("/").replace("/", "__"))
        with open(path, "wb") as f:
            f.write(body)
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.load_verify_locations(ca)
ctx.verify_mode = ssl.CERT_REQUIRED
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"#;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(pki: &Path, root: &Path) -> (Server, u16) {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(SERVER)
        .arg(root)
        .arg(pki.join("ca.pem"))
        .arg(pki.join("server.pem"))
        .arg(pki.join("server.key"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("port");
    let port = line.trim().parse().expect("a port number");
    (Server(child), port)
}

fn replay_with_upload(dir: &Path, upload: &str) -> (std::process::Output, std::path::PathBuf) {
    let pcap = dir.join("in.pcap");
    write_generated(
        &pcap,
        1_796_000_000_000_000_000,
        1_000_000,
        2000,
        [10, 0, 0, 1].into(),
        [10, 0, 0, 2].into(),
        0x11,
    );
    let cfg = dir.join("t.toml");
    std::fs::write(&cfg, format!("[output]\nreports = false\n[upload]\n{upload}\nattempts = 2\nmin_backoff = \"50ms\"\nmax_backoff = \"100ms\"\n")).expect("config");
    let out = dir.join("out");
    let o = run(tripcap()
        .args([
            "run",
            "--upload-wait",
            "5s",
            "--pre",
            "1s",
            "--post",
            "0s",
            "--trigger-at",
            "1796000001",
            "-c",
        ])
        .arg(&cfg)
        .arg("-o")
        .arg(&out)
        .arg("--from-pcap")
        .arg(&pcap));
    (o, out)
}

#[test]
fn uploads_over_private_tls_with_a_client_certificate() {
    let pki = tempfile::tempdir().expect("tempdir");
    common::pki::make_pki(pki.path());
    let received = tempfile::tempdir().expect("tempdir");
    let (_server, port) = start_server(pki.path(), received.path());
    let p = |f: &str| pki.path().join(f).display().to_string();

    let dir = tempfile::tempdir().expect("tempdir");
    let (o, out) = replay_with_upload(
        dir.path(),
        &format!(
            "url = \"https://127.0.0.1:{port}/{{incident}}/{{file}}\"\nca_file = \"{}\"\nclient_cert = \"{}\"\nclient_key = \"{}\"",
            p("ca.pem"),
            p("client.pem"),
            p("client.key")
        ),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let side = read_sidecar(&sidecars(&out)[0]);
    let got = std::fs::read(
        received
            .path()
            .join(format!("{}__{}", side.incident, side.file)),
    )
    .expect("the pcapng arrived");
    assert_eq!(
        got,
        std::fs::read(out.join(&side.file)).expect("local copy"),
        "byte-identical"
    );

    // The same upload without the client certificate: the server refuses the
    // handshake, nothing arrives, and the agent says the upload failed.
    let received_before = std::fs::read_dir(received.path()).expect("ls").count();
    let dir2 = tempfile::tempdir().expect("tempdir");
    let (o, _) = replay_with_upload(
        dir2.path(),
        &format!(
            "url = \"https://127.0.0.1:{port}/{{incident}}/{{file}}\"\nca_file = \"{}\"",
            p("ca.pem")
        ),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(received.path()).expect("ls").count(),
        received_before,
        "nothing arrived without a client certificate"
    );
    assert!(
        stderr.to_lowercase().contains("upload"),
        "the failure is reported: {stderr}"
    );
}
