//! The configuration's unit tests.
use super::*;

fn err(text: &str) -> String {
    Config::parse("t.toml", text).unwrap_err().to_string()
}

#[test]
fn full_example_parses() {
    let c = Config::parse(
        "t.toml",
        r#"
[capture]
interfaces = ["ens1f0np0", "ens2f0np0"]
snaplen = "full"
buffer_size = "128MiB"
[ring]
memory_limit = "2GiB"
[output]
dir = "/tmp/x"
[logs]
paths = ["/var/log/nccl/*.log"]
[[trigger]]
name = "wd"
pattern = "Watchdog caught collective operation timeout"
pre = "10s"
post = "5s"
"#,
    )
    .expect("parses");
    assert_eq!(c.capture.interfaces, vec!["ens1f0np0", "ens2f0np0"]);
    assert_eq!(c.capture.snaplen, crate::units::FULL_SNAPLEN);
    assert_eq!(c.capture.buffer_size, 128 << 20);
    assert_eq!(c.ring.memory_limit, 2 << 30);
    assert_eq!(c.triggers[0].pre, Duration::from_secs(10));
    assert_eq!(c.triggers[0].post, Duration::from_secs(5));
}

#[test]
fn errors_name_line_and_column_and_the_fix() {
    assert_eq!(
        err("[[trigger]]\nname = \"x\"\npattern = \"a(b\"\n"),
        "t.toml:3:11: trigger `x`: pattern 0 is not a valid regex: unclosed group (in `a(b`): fix the regex (syntax: https://docs.rs/regex/#syntax)"
    );
    assert_eq!(
        err("[[trigger]]\nname = \"x\"\npattern = \"a\"\npre = 30\n"),
        "t.toml:4:7: `pre` = 30 has no unit: write \"30s\" (or \"30ms\", \"30m\")"
    );
    assert_eq!(
        err("[[trigger]]\nname = \"x\"\npattern = \"a\"\npost = \"30\"\n"),
        "t.toml:4:8: `post`: \"30\" has no unit: write \"30s\" (or \"30ms\", \"30m\")"
    );
    assert_eq!(
        err("[ring]\nmemory_limit = \"lots\"\n"),
        "t.toml:2:16: `memory_limit`: \"lots\" is not a size: write e.g. \"64MiB\", \"1GiB\" (binary) or \"500MB\" (decimal)"
    );
    let unknown = err("[capture]\ninterface = [\"x\"]\n");
    assert!(
        unknown.starts_with("t.toml:2:1: unknown field `interface`"),
        "{unknown}"
    );
    let wrong_type = err("[capture]\ninterfaces = \"eth0\"\n");
    assert!(
        wrong_type.starts_with("t.toml:2:14: invalid type: string \"eth0\", expected a sequence"),
        "{wrong_type}"
    );
    assert_eq!(
        err("[capture]\nsnaplen = 20\n"),
        "t.toml:2:11: snaplen 20 is too short to hold the RoCE headers: use at least 64, \"full\" or \"headers\""
    );
    assert_eq!(
        err("[[trigger]]\nname = \"x\"\n"),
        "t.toml:2:8: trigger `x` has no pattern: add `pattern = \"...\"` (a regex)"
    );
}

#[test]
fn unless_and_perftest_thresholds_parse_and_errors_are_located() {
    let c = Config::parse(
        "t.toml",
        "[perftest]\nbw_below = \"40Gb/s\"\nlat_above = \"10us\"\n[[trigger]]\nname = \"x\"\npattern = \"boom\"\nunless = [\"harmless boom\"]\n",
    )
    .expect("parses");
    assert_eq!(c.triggers[0].unless, vec!["harmless boom".to_string()]);
    let t = c.perftest.expect("thresholds");
    assert_eq!((t.bw_below_gbps, t.lat_above_us), (Some(40.0), Some(10.0)));
    let set = c.trigger_set().expect("valid");
    let mut out = Vec::new();
    assert!(set.match_line(b"a boom", &mut out));
    assert!(!set.match_line(b"a harmless boom", &mut out));
    assert_eq!(
        err("[[trigger]]\nname = \"x\"\npattern = \"a\"\nunless = [\"b(\"]\n"),
        "t.toml:4:11: trigger `x`: unless pattern 0 is not a valid regex: unclosed group (in `b(`): fix the regex (syntax: https://docs.rs/regex/#syntax)"
    );
    let e = err("[perftest]\nbw_below = \"40\"\n");
    assert!(
        e.starts_with("t.toml:2:12: `bw_below`: bandwidth threshold `40`: no unit"),
        "{e}"
    );
}

#[test]
fn bad_filter_is_located() {
    let c = Config::parse("t.toml", "[capture]\nfilter = \"udp prot 4791\"\n").expect("parses");
    let e = c.check().unwrap_err().to_string();
    assert!(
        e.starts_with("t.toml:2:10: bad capture filter `udp prot 4791`:"),
        "{e}"
    );
}

#[test]
fn memory_beyond_what_is_available_is_noted_with_the_fix() {
    assert_eq!(
        mem_available("MemTotal:       24684544 kB\nMemAvailable:   18190336 kB\n"),
        Some(18_190_336 * 1024)
    );
    assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
    let c = Config::parse(
        "m.toml",
        "[capture]\ninterfaces = [\"a\", \"b\"]\nbuffer_size = \"64MiB\"\n[ring]\nmemory_limit = \"1GiB\"\n",
    )
    .expect("parses");
    assert_eq!(
        c.memory_note(2 << 30),
        None,
        "1 GiB + 2 × 64 MiB fits in 2 GiB"
    );
    assert_eq!(
        c.memory_note(1 << 30).as_deref(),
        Some("ring.memory_limit (1024 MiB) and the kernel capture buffers (2 × 64 MiB) need 1152 MiB, but this machine has 1024 MiB available: lower ring.memory_limit (or capture.buffer_size), or the kernel may kill tripcap and every packet it holds")
    );
}

#[test]
fn flags_win_and_add_triggers() {
    let mut c = Config::parse(
        "t.toml",
        "[capture]\ninterfaces=[\"a\"]\n[[trigger]]\nname=\"x\"\npattern=\"y\"\n",
    )
    .expect("parses");
    c.apply(&QuickFlags {
        interfaces: vec!["b".into()],
        patterns: vec!["z(".into()],
        pre: Some(Duration::from_secs(3)),
        ..Default::default()
    });
    assert_eq!(c.capture.interfaces, vec!["b"]);
    assert!(c.triggers.iter().all(|t| t.pre == Duration::from_secs(3)));
    // The built-in packs get them too, whether listed before or after the flags.
    let mut packs = Config::parse("p.toml", "packs = [\"nccl\"]\n").expect("parses");
    packs.apply(&QuickFlags {
        pre: Some(Duration::from_secs(3)),
        post: Some(Duration::from_secs(4)),
        ..Default::default()
    });
    packs.packs.push("pytorch".into());
    let set = packs.trigger_set().expect("set");
    assert!(set.defs().len() > 2);
    for d in set.defs() {
        assert_eq!(
            (d.pre, d.post),
            (Duration::from_secs(3), Duration::from_secs(4)),
            "{}",
            d.name
        );
    }
    let e = c.trigger_set().unwrap_err().to_string();
    assert!(
        e.starts_with("--pattern: trigger `pattern`: pattern 0 is not a valid regex"),
        "{e}"
    );
}

fn kind(text: &str) -> ErrorKind {
    Config::parse("t.toml", text).unwrap_err().into_kind()
}

fn at(line: usize, col: usize) -> Location {
    Location::File {
        path: "t.toml".into(),
        line,
        col,
    }
}

#[test]
fn error_kinds_carry_the_location() {
    assert!(matches!(
        kind("[capture\n"),
        ErrorKind::Syntax {
            at: Location::File { line: 1, .. },
            ..
        }
    ));
    assert!(
        matches!(kind("[ring]\nmax_age = 30\n"), ErrorKind::Value { at: a, .. } if a == at(2, 11))
    );
    match kind("[[trigger]]\nname = \"x\"\n") {
        ErrorKind::Invalid { at: a, what, fix } => {
            assert_eq!(a, Some(at(2, 8)));
            assert_eq!(what, "trigger `x` has no pattern");
            assert_eq!(fix, "add `pattern = \"...\"` (a regex)");
        }
        other => panic!("{other:?}"),
    }
    let e = Config::parse("t.toml", "[[trigger]]\nname = \"x\"\npattern = \"(\"\n").unwrap_err();
    assert_eq!(e.location(), Some(&at(3, 11)));
    assert!(matches!(
        e.kind(),
        ErrorKind::Pattern {
            source: tripcap_triggers::Error::BadPattern { .. },
            ..
        }
    ));
    let filter = Config::parse("t.toml", "[capture]\nfilter = \"udp prot 4791\"\n")
        .expect("parses")
        .check()
        .unwrap_err();
    assert!(matches!(filter.kind(), ErrorKind::Filter { at: a, .. } if *a == at(2, 10)));
}

#[test]
fn unreadable_and_non_utf8_files_say_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.toml");
    let e = Config::load(&missing).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Read { .. }));
    assert!(
        e.to_string()
            .starts_with(&format!("cannot read config `{}`: ", missing.display())),
        "{e}"
    );
    let latin1 = dir.path().join("latin1.toml");
    std::fs::write(&latin1, b"# caf\xe9\n").expect("write");
    let e = Config::load(&latin1).unwrap_err();
    assert!(matches!(
        e.kind(),
        ErrorKind::NotUtf8 { valid_up_to: 5, .. }
    ));
    assert_eq!(
        e.to_string(),
        format!(
            "config `{}` is not UTF-8 (first bad byte at offset 5): save it as UTF-8",
            latin1.display()
        )
    );
}

#[test]
fn a_packet_trigger_named_like_a_pattern_flag_trigger_is_refused_after_the_flags() {
    let mut c = Config::parse(
        "t.toml",
        "[[packet_trigger]]\nname = \"pattern\"\nkind = \"qp_stall\"\n",
    )
    .expect("no clash before the flags");
    assert_eq!(c.packet_triggers[0].name, "pattern");
    c.apply(&QuickFlags {
        patterns: vec!["boom".into()],
        ..Default::default()
    });
    assert_eq!(
        c.trigger_set().unwrap_err().to_string(),
        "t.toml:2:8: packet trigger name `pattern` is taken by the `--pattern` trigger: give the packet trigger another name (captures are named after their trigger)"
    );
}

#[test]
fn packet_trigger_names_of_their_own_pass() {
    let c = Config::parse(
        "t.toml",
        "packs = [\"nccl\"]\n[[trigger]]\nname = \"wd\"\npattern = \"x\"\n[[packet_trigger]]\nname = \"stall\"\nkind = \"qp_stall\"\n[[packet_trigger]]\nname = \"gbn\"\nkind = \"retransmit\"\n",
    )
    .expect("parses");
    let names: Vec<&str> = c.packet_triggers.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["stall", "gbn"]);
}

#[test]
fn reserved_names_are_those_the_agent_uses() {
    let names: Vec<&str> = validate::RESERVED_NAMES.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            crate::agent::MANUAL_TRIGGER,
            crate::matcher::PERFTEST_THRESHOLD_TRIGGER
        ]
    );
}

#[test]
fn fleet_takes_one_url_or_a_list_and_flags_win() {
    let c = Config::parse(
        "t.toml",
        "host = \"n1\"\n[fleet]\nnats = [\"nats://a:4222\", \"nats://b:4222\"]\njob = \"7\"\npeers = \"both\"\n",
    )
    .expect("parses");
    let f = c.fleet.as_ref().expect("fleet");
    assert_eq!(f.nats, ["nats://a:4222", "nats://b:4222"]);
    assert_eq!(f.peers, crate::fleet::Peers::Both);
    assert_eq!(c.fleet_job().expect("job"), Some("7".to_string()));
    assert_eq!(c.host.as_deref(), Some("n1"));
    let mut c = Config::parse("t.toml", "").expect("parses");
    c.apply(&QuickFlags {
        nats: Some("nats://c:4222".into()),
        job: Some("9".into()),
        host: Some("n2".into()),
        ..Default::default()
    });
    assert_eq!(c.fleet_job().expect("job"), Some("9".to_string()));
    assert_eq!(
        c.fleet.as_ref().map(|f| f.nats.clone()),
        Some(vec!["nats://c:4222".to_string()])
    );
    assert_eq!(c.host.as_deref(), Some("n2"));
}

#[test]
fn baseline_section_and_deviation_triggers_are_checked_where_written() {
    let c = Config::parse(
        "t.toml",
        r#"
[output]
dir = "/tmp/out"
[baseline]
interval = "30s"
max_bytes = "1MiB"
keep = "2d"
[[packet_trigger]]
name = "cnp-jump"
kind = "deviation"
metric = "cnp_per_s"
factor = 3.0
for = "20s"
min_age = "2h"
"#,
    )
    .expect("parses");
    assert!(c.baseline.enabled);
    assert_eq!(c.baseline.interval, Duration::from_secs(30));
    assert_eq!(c.baseline.max_bytes, 1 << 20);
    assert_eq!(c.baseline.keep, Duration::from_secs(2 * 86_400));
    assert_eq!(
        c.baseline.dir(&c.output.dir),
        Path::new("/tmp/out/baseline")
    );
    let d = &c.packet_triggers[0];
    assert_eq!(
        (d.factor(), d.sustain(), d.min_age()),
        (3.0, Duration::from_secs(20), Duration::from_secs(7200))
    );
    assert_eq!(Config::default().baseline.interval, Duration::from_secs(60));

    assert_eq!(
        err("[baseline]\ninterval = \"10ms\"\n"),
        "t.toml:2:12: `interval` must be at least 1s (1m is the default)"
    );
    assert_eq!(
        err("[baseline]\nkeep = \"7\"\n"),
        "t.toml:2:8: `keep`: \"7\" has no unit: write \"7s\" (or \"7ms\", \"7m\")"
    );
    let unknown =
        err("[[packet_trigger]]\nname = \"d\"\nkind = \"deviation\"\nmetric = \"cnps\"\n");
    assert!(
        unknown.starts_with(
            "t.toml:2:8: deviation trigger `d`: unknown metric `cnps`: use one of packets_per_s,"
        ),
        "{unknown}"
    );
    let missing = err("[[packet_trigger]]\nname = \"d\"\nkind = \"deviation\"\n");
    assert!(
        missing.starts_with("t.toml:2:8: deviation trigger `d` has no `metric`"),
        "{missing}"
    );
    let off = err("[baseline]\nenabled = false\n[[packet_trigger]]\nname = \"d\"\nkind = \"deviation\"\nmetric = \"cnp_per_s\"\n");
    assert!(off.contains("needs the baseline"), "{off}");
}

#[test]
fn snaplen_headers_keeps_the_headers_only() {
    let c = Config::parse("t.toml", "[capture]\nsnaplen = \"headers\"\n").expect("parses");
    assert!(c.capture.headers_only);
    assert_eq!(c.capture.snaplen, crate::units::HEADERS_MAX);
    assert_eq!(c.capture.snaplen_text(), "headers");
    let c = Config::parse("t.toml", "[capture]\nsnaplen = 256\n").expect("parses");
    assert!(!c.capture.headers_only);
    assert_eq!(
        err("[capture]\nsnaplen = \"head\"\n"),
        "t.toml:2:11: snaplen \"head\" is not a number of bytes: write e.g. 128, \"full\" or \"headers\""
    );
}

#[test]
fn expected_rate_reads_rates_and_check_estimates_history_from_it() {
    let c = Config::parse(
        "t.toml",
        "[ring]\nexpected_rate = \"500k\"\nmemory_limit = \"2GiB\"\n",
    )
    .expect("config");
    assert_eq!(c.ring.expected_rate, 500_000);
    assert!(c.capture.headers_only, "headers is the default snaplen");
    let (packed, _) = c.seconds_per_gib();
    let mut raw = c.clone();
    raw.ring.compress = false;
    let (plain, per_packet) = raw.seconds_per_gib();
    assert_eq!(per_packet, 92.0);
    assert!(packed > 10.0 * plain, "{packed} vs {plain}");
    assert!((plain - (1u64 << 30) as f64 / 92.0 / 500_000.0).abs() < 1e-9);
    assert!(
        c.history_line().contains("in this ring (2048 MiB)"),
        "{}",
        c.history_line()
    );
    assert_eq!(
        err("[ring]\nexpected_rate = \"fast\"\n"),
        "t.toml:2:17: `expected_rate`: \"fast\" is not a packet rate: write e.g. \"2M\", \"500k\" or 2000000 (packets per second)"
    );
    assert_eq!(crate::units::parse_rate("2Mpps"), Ok(2_000_000));
    assert_eq!(
        err("[ring]\ncompress_threads = 0\n"),
        "t.toml:2:20: `compress_threads` = 0 must be 1 to 64 (set `compress = false` to compress nothing)"
    );
    assert_eq!(crate::units::parse_rate("1500000"), Ok(1_500_000));
}
