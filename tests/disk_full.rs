//! A full disk: the capture fails with one line that says so and what to do,
//! no temporary file is left behind, and the agent exits non-zero instead of
//! panicking. Uses a tiny tmpfs (root needed, as CI has).

mod common;

use std::net::Ipv4Addr;
use std::process::Command;

use common::*;

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Mount a tmpfs of `size` (e.g. "256k") on `dir`; unmounted when dropped.
fn tmpfs(dir: &std::path::Path, size: &str) -> Mount {
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .status()
        .expect("mount runs");
    assert!(ok.success(), "mounting a tmpfs needs root");
    Mount(dir.to_path_buf())
}

/// A capture of `packets` generated packets, one per millisecond from `t0`.
fn generated(dir: &std::path::Path, t0: i64, packets: usize) -> std::path::PathBuf {
    let pcap = dir.join("in.pcap");
    write_generated(
        &pcap,
        t0,
        1_000_000,
        packets,
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        0x11,
    );
    pcap
}

#[test]
fn a_full_disk_fails_the_capture_clearly_and_cleans_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = generated(dir.path(), 1_796_000_000_000_000_000, 20_000);
    let small = dir.path().join("small");
    std::fs::create_dir(&small).expect("mkdir");
    let _m = tmpfs(&small, "256k");

    let o = run(tripcap()
        .arg("run")
        .arg("-o")
        .arg(&small)
        .arg("--from-pcap")
        .arg(&pcap)
        .args(["--pre", "30s", "--post", "1s", "--trigger-at", "1796000010"]));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("is full") && stderr.contains("free space there"),
        "{stderr}"
    );
    let left: Vec<_> = std::fs::read_dir(&small)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}

/// The disk fills after the capture file is in place but before its sidecar:
/// the capture is kept (the error says so), and the next start completes it
/// with a sidecar from the file and sweeps the temporaries a crash left.
#[test]
fn a_capture_whose_sidecar_did_not_fit_is_completed_at_the_next_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = generated(dir.path(), 1_796_000_000_000_000_000, 3_000);
    let cfg = dir.path().join("t.toml");
    std::fs::write(&cfg, "[output]\nreports = false\n").expect("config");
    let capture = |out: &std::path::Path| {
        run(tripcap()
            .arg("run")
            .arg("-c")
            .arg(&cfg)
            .arg("-o")
            .arg(out)
            .arg("--from-pcap")
            .arg(&pcap)
            .args([
                "--pre",
                "1s",
                "--post",
                "500ms",
                "--trigger-at",
                "1796000002",
            ]))
    };
    // How many pages the capture file takes, on a roomy disk.
    let roomy = dir.path().join("roomy");
    assert!(capture(&roomy).status.success());
    let pcapng_len = std::fs::read_dir(&roomy)
        .expect("ls")
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".pcapng"))
        .and_then(|e| e.metadata().ok())
        .map(|m| m.len())
        .expect("a capture on the roomy disk");
    let pages = pcapng_len.div_ceil(4096);

    // A disk with room for the capture file and not its sidecar: the file's
    // pages, plus the page or two tmpfs takes beyond them, found by trying.
    let small = dir.path().join("small");
    std::fs::create_dir(&small).expect("mkdir");
    let mut mounted = None;
    for extra in 0..4 {
        let m = tmpfs(&small, &format!("{}k", (pages + extra) * 4));
        let o = capture(&small);
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        if stderr.contains("is kept without its sidecar") {
            assert_eq!(o.status.code(), Some(1), "{stderr}");
            mounted = Some(m);
            break;
        }
        assert!(
            sidecars(&small).is_empty(),
            "with {extra} pages to spare the sidecar fit before the capture was kept: {stderr}"
        );
        drop(m); // the capture itself did not fit: one page more
    }
    let _m = mounted.expect("a tmpfs size where the capture fits and its sidecar does not");
    let lone: Vec<String> = std::fs::read_dir(&small)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(lone.len(), 1, "only the capture: {lone:?}");
    assert!(lone[0].ends_with(".pcapng"));

    // Room again, and a temporary as a crash would leave it; the next start
    // (a replay with no trigger) completes the unit.
    let ok = Command::new("mount")
        .args(["-o", "remount,size=4m"])
        .arg(&small)
        .status()
        .expect("remount runs");
    assert!(ok.success());
    std::fs::write(small.join(".x.pcapng.tmp"), b"half a capture").expect("tmp");
    let o = run(tripcap()
        .arg("run")
        .arg("-c")
        .arg(&cfg)
        .arg("-o")
        .arg(&small)
        .arg("--from-pcap")
        .arg(&pcap));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("completed it with what the file holds"),
        "{stderr}"
    );
    assert!(!small.join(".x.pcapng.tmp").exists(), "temporary swept");
    let files = sidecars(&small);
    assert_eq!(files.len(), 1);
    let side = read_sidecar(&files[0]);
    let pcapng = small.join(&side.file);
    assert_eq!(side.packets as usize, tshark_rows_any(&pcapng));
    assert!(side.packets > 0 && !side.window.complete);
    assert!(
        side.window.shortfall[0].starts_with("recovered at start"),
        "{:?}",
        side.window.shortfall
    );
}
