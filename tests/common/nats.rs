//! The real NATS server the fleet tests talk to: `nats-server -js` (Debian's
//! `nats-server` package, which `.ci/run` installs) on 127.0.0.1, with JetStream
//! storing under a temporary directory. Every fleet test starts servers through
//! here; one that kills and restarts its server keeps the port and the store.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `nats-server -js` (killed when dropped).
pub struct NatsServer {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The token clients must give, if any.
    pub token: Option<String>,
    /// The user and password clients must give, if any.
    pub user: Option<(String, String)>,
    /// A directory made by [`super::pki::make_pki`]: the server speaks TLS only,
    /// with `server.pem` signed by `ca.pem`.
    pub tls: Option<PathBuf>,
    /// The seed of the one NKey user the server accepts, if any.
    pub nkey_seed: Option<String>,
    /// The user's public key, for the server's `authorization` block.
    nkey_public: Option<String>,
    store: PathBuf,
    log: PathBuf,
}

impl NatsServer {
    /// Start a server on a free port, storing under `dir`; with `token`, clients must give it.
    pub fn start(dir: &Path, token: Option<&str>) -> NatsServer {
        NatsServer::start_with(dir, token, None, None)
    }

    /// Start a server with a token, or a user and password, and TLS (`pki`), as asked.
    pub fn start_with(
        dir: &Path,
        token: Option<&str>,
        user: Option<(&str, &str)>,
        pki: Option<&Path>,
    ) -> NatsServer {
        let mut s = NatsServer {
            child: None,
            port: super::free_port(),
            token: token.map(str::to_string),
            user: user.map(|(u, p)| (u.to_string(), p.to_string())),
            tls: pki.map(Path::to_path_buf),
            nkey_seed: None,
            nkey_public: None,
            store: dir.join("nats-store"),
            log: dir.join("nats-server.log"),
        };
        s.restart();
        s
    }

    /// Start a server that accepts one NKey user: `seed` is its private seed,
    /// `public` its public key (`U…`).
    pub fn start_nkey(dir: &Path, seed: &str, public: &str) -> NatsServer {
        let mut s = NatsServer {
            child: None,
            port: super::free_port(),
            token: None,
            user: None,
            tls: None,
            nkey_seed: Some(seed.to_string()),
            nkey_public: Some(public.to_string()),
            store: dir.join("nats-store"),
            log: dir.join("nats-server.log"),
        };
        s.restart();
        s
    }

    /// `nats://127.0.0.1:PORT` (`tls://` with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "tls" } else { "nats" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// Kill the server (SIGKILL: no goodbye to clients).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start it (again) on the same port and store, and wait until it accepts connections.
    pub fn restart(&mut self) {
        self.kill();
        let log = std::fs::File::create(&self.log).expect("nats log");
        let mut cmd = Command::new("nats-server");
        cmd.args(["-js", "-a", "127.0.0.1", "-p"])
            .arg(self.port.to_string())
            .arg("-sd")
            .arg(&self.store)
            .stdout(Stdio::null())
            .stderr(log);
        if let Some(t) = &self.token {
            cmd.args(["--auth", t]);
        }
        if let Some((u, p)) = &self.user {
            cmd.args(["--user", u, "--pass", p]);
        }
        if let Some(public) = &self.nkey_public {
            let conf = self.store.with_extension("conf");
            std::fs::write(
                &conf,
                format!("authorization {{ users = [ {{ nkey: \"{public}\" }} ] }}\n"),
            )
            .expect("nats config");
            cmd.arg("-c").arg(conf);
        }
        if let Some(pki) = &self.tls {
            cmd.arg("--tls")
                .arg("--tlscert")
                .arg(pki.join("server.pem"))
                .arg("--tlskey")
                .arg(pki.join("server.key"));
        }
        self.child = Some(
            cmd.spawn()
                .expect("nats-server runs (install it: apt-get install nats-server)"),
        );
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            if text.contains("Server is ready") {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "nats-server did not start: {text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A client of this server (with its token), for a test that speaks the
    /// agents' protocol itself.
    pub async fn client(&self) -> async_nats::Client {
        let mut o = async_nats::ConnectOptions::new();
        if let Some(t) = &self.token {
            o = o.token(t.clone());
        }
        o.connect(self.url()).await.expect("connect to nats-server")
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
