//! `tripcap wireshark-profile`, checked by tshark 4.0 reading captures with the
//! profile (`tshark -C tripcap`): the columns print what tshark's own fields
//! say, every colouring rule compiles and colours the packets the fields say it
//! should, the I/O graphs parse as a UAT and count the right packets, the
//! decode-as entry makes another UDP port RoCE, and `--install` lands where
//! Wireshark looks.
//!
//! Every tshark here runs with HOME and XDG_CONFIG_HOME in a temporary
//! directory, so the machine's own Wireshark configuration never counts.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// tshark with its configuration directory in `config_home` (XDG_CONFIG_HOME;
/// HOME too, unless `home` says otherwise).
fn tshark_in(config_home: Option<&Path>, home: &Path, args: &[&str]) -> Output {
    let mut c = Command::new("tshark");
    c.args(args).env("HOME", home);
    match config_home {
        Some(x) => c.env("XDG_CONFIG_HOME", x),
        None => c.env_remove("XDG_CONFIG_HOME"),
    };
    c.output()
        .expect("tshark runs (install it: apt-get install tshark)")
}

fn ok(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A config home with the profile written into `<home>/wireshark/profiles/`
/// by `tripcap wireshark-profile -o`.
struct Profile {
    _dir: tempfile::TempDir,
    home: PathBuf,
    stdout: String,
}

impl Profile {
    fn new(extra: &[&str]) -> Profile {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().to_path_buf();
        let profiles = home.join("wireshark/profiles");
        let o = run(tripcap()
            .arg("wireshark-profile")
            .arg("-o")
            .arg(&profiles)
            .args(extra));
        let stdout = ok(&o, "tripcap wireshark-profile -o");
        Profile {
            _dir: dir,
            home,
            stdout,
        }
    }

    fn dir(&self) -> PathBuf {
        self.home.join("wireshark/profiles/tripcap")
    }

    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir().join(name)).expect("profile file")
    }

    /// tshark with this profile.
    fn tshark(&self, args: &[&str]) -> Output {
        let mut all = vec!["-C", "tripcap"];
        all.extend_from_slice(args);
        tshark_in(Some(&self.home), &self.home, &all)
    }
}

/// tshark with no profile and an empty configuration: the oracle.
fn plain_tshark(args: &[&str]) -> Output {
    let empty = tempfile::tempdir().expect("tempdir");
    tshark_in(Some(empty.path()), empty.path(), args)
}

fn generated(dir: &Path, packets: &str) -> PathBuf {
    let f = dir.join("g.pcap");
    let o = run(tripcap()
        .args(["generate", "--packets", packets, "--flows", "3"])
        .args(["--start", "1796000000", "-o"])
        .arg(&f));
    ok(&o, "tripcap generate");
    f
}

fn sample(name: &str) -> PathBuf {
    let f = data_dir().join("pcaps").join(name);
    assert!(f.is_file(), "missing test capture {}", f.display());
    f
}

/// Per frame number, the named fields as tshark prints them (no profile).
fn fields(file: &Path, names: &[&str]) -> BTreeMap<u32, Vec<String>> {
    let f = file.to_string_lossy();
    let mut args = vec![
        "-r",
        &f,
        "-T",
        "fields",
        "-E",
        "separator=/t",
        "-e",
        "frame.number",
    ];
    for n in names {
        args.extend(["-e", n]);
    }
    let text = ok(&plain_tshark(&args), "tshark -T fields");
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut cols = l.split('\t').map(str::to_string);
            let n = cols.next().and_then(|s| s.parse().ok()).expect("frame no.");
            let mut v: Vec<String> = cols.collect();
            v.resize(names.len(), String::new());
            (n, v)
        })
        .collect()
}

#[test]
fn columns_print_what_tsharks_own_fields_say() {
    let p = Profile::new(&[]);
    assert_eq!(
        p.stdout.lines().filter(|l| l.starts_with("wrote ")).count(),
        4,
        "{}",
        p.stdout
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    for file in [
        generated(tmp.path(), "400"),
        sample("synthetic_roce_default.pcap"),
    ] {
        let f = file.to_string_lossy();
        let oracle = fields(
            &file,
            &[
                "infiniband.bth.destqp",
                "infiniband.bth.psn",
                "infiniband.bth.a",
                "infiniband.aeth.syndrome",
                "infiniband.bth.opcode",
            ],
        );
        let roce: Vec<_> = oracle.iter().filter(|(_, v)| !v[1].is_empty()).collect();
        assert!(roce.len() > 100, "{f}: {} RoCE frames", roce.len());

        // The packet list as tshark prints it with the profile: each RoCE
        // frame's line holds its opcode, dest QP, PSN and AckReq, side by side.
        let text = ok(&p.tshark(&["-r", &f]), "tshark -C tripcap");
        let lines: BTreeMap<u32, Vec<&str>> = text
            .lines()
            .filter_map(|l| {
                let t: Vec<&str> = l.split_whitespace().collect();
                Some((t.first()?.parse().ok()?, t))
            })
            .collect();
        assert_eq!(lines.len(), oracle.len(), "{f}: one line a frame");
        for (n, v) in &roce {
            let want = [
                v[4].as_str(),
                v[0].as_str(),
                v[1].as_str(),
                if v[2] == "1" { "True" } else { "False" },
            ];
            let line = &lines[n];
            assert!(
                line.windows(4).any(|w| w == want),
                "{f} frame {n}: {want:?} not in {line:?}"
            );
        }
        // Without the profile those columns are not there.
        let plain = ok(&plain_tshark(&["-r", &f]), "tshark");
        let (n, v) = roce[roce.len() / 2];
        let line = plain
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&n.to_string()))
            .expect("frame line");
        let tokens: Vec<&str> = line.split_whitespace().collect();
        assert!(
            !tokens
                .windows(2)
                .any(|w| w == [v[0].as_str(), v[1].as_str()]),
            "{line}"
        );

        // The columns by title, against the fields (the syndrome too).
        let cols = ok(
            &p.tshark(&[
                "-r",
                &f,
                "-T",
                "fields",
                "-e",
                "frame.number",
                "-e",
                "_ws.col.Dest QP",
                "-e",
                "_ws.col.PSN",
                "-e",
                "_ws.col.AckReq",
                "-e",
                "_ws.col.Syndrome",
            ]),
            "tshark -T fields _ws.col",
        );
        let mut checked = 0;
        for l in cols.lines().filter(|l| !l.is_empty()) {
            let c: Vec<&str> = l.split('\t').collect();
            let n: u32 = c[0].parse().expect("frame no.");
            let v = &oracle[&n];
            assert_eq!(c[1], v[0], "{f} frame {n}: dest QP");
            assert_eq!(c[2], v[1], "{f} frame {n}: PSN");
            assert_eq!(
                c.get(4).copied().unwrap_or(""),
                v[3],
                "{f} frame {n}: syndrome"
            );
            checked += 1;
        }
        assert_eq!(checked, oracle.len(), "{f}");
    }
}

/// The colouring rules as written: (name, filter).
fn color_rules(p: &Profile) -> Vec<(String, String)> {
    let text = p.file("colorfilters");
    text.lines()
        .filter(|l| l.starts_with('@'))
        .map(|l| {
            let parts: Vec<&str> = l.splitn(4, '@').collect();
            assert_eq!(parts.len(), 4, "{l}");
            let colours = parts[3];
            assert!(
                colours.starts_with('[') && colours.matches(',').count() == 4,
                "{l}"
            );
            for v in colours
                .split(|c| "[],".contains(c))
                .filter(|s| !s.is_empty())
            {
                v.parse::<u16>().expect("16-bit colour value");
            }
            (parts[1].to_string(), parts[2].to_string())
        })
        .collect()
}

/// The rule the fields say should colour a frame, first match first.
fn expected_rule(v: &[String]) -> &'static str {
    let num = |s: &str| -> Option<u32> {
        let s = s.split(',').next()?;
        match s.strip_prefix("0x") {
            Some(h) => u32::from_str_radix(h, 16).ok(),
            None => s.parse().ok(),
        }
    };
    let (syndrome, opcode, ecn, macc, enbv, protocols) = (
        num(&v[0]),
        num(&v[1]),
        num(&v[2]),
        num(&v[3]),
        num(&v[4]),
        v[5].as_str(),
    );
    let times: Vec<u32> = v[6..14].iter().map(|t| num(t).unwrap_or(0)).collect();
    if let Some(s) = syndrome {
        match (s >> 5) & 3 {
            3 if s & 0x1f == 0 => {
                return "RoCE retransmission requested (NAK: PSN sequence error, go-back-N)"
            }
            3 => return "RoCE NAK",
            1 => return "RoCE RNR NAK",
            _ => {}
        }
    }
    if opcode == Some(129) {
        return "RoCE CNP";
    }
    if opcode.is_some() && ecn == Some(3) {
        return "RoCE ECN CE";
    }
    if macc == Some(0x0101) {
        let enbv = enbv.unwrap_or(0);
        let paused = (0..8).any(|c| enbv & (1 << c) != 0 && times[c] > 0);
        return if paused { "PFC pause" } else { "PFC resume" };
    }
    if protocols.contains("udp:infiniband") || protocols.contains("ethertype:infiniband") {
        return "RoCE";
    }
    ""
}

#[test]
fn every_colouring_rule_compiles_and_colours_what_the_fields_say() {
    let p = Profile::new(&[]);
    let rules = color_rules(&p);
    let names: Vec<&str> = rules.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "RoCE",
        "RoCE NAK",
        "RoCE RNR NAK",
        "RoCE CNP",
        "PFC pause",
        "RoCE retransmission requested (NAK: PSN sequence error, go-back-N)",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let default = sample("synthetic_roce_default.pcap");
    let files = [
        default.clone(),
        generated(tmp.path(), "300"),
        sample("synthetic_rocev1.pcap"),
        sample("synthetic_roce_rxvantage_vlan_nsec.pcap"),
        sample("public-hexdumps_roce_snippets.pcap"),
        sample("wireshark-wiki_infiniband_erf.pcap"),
    ];
    // Each filter compiles on its own, as a display filter.
    for (name, filter) in &rules {
        let f = default.to_string_lossy();
        let o = plain_tshark(&["-r", &f, "-Y", filter, "-T", "fields", "-e", "frame.number"]);
        ok(&o, &format!("rule `{name}`: filter `{filter}`"));
    }
    let mut pfc = Vec::new();
    for file in &files {
        let f = file.to_string_lossy();
        let mut names = vec![
            "infiniband.aeth.syndrome",
            "infiniband.bth.opcode",
            "ip.dsfield.ecn",
            "macc.opcode",
            "macc.cbfc.enbv",
            "frame.protocols",
        ];
        let times: Vec<String> = (0..8)
            .map(|c| format!("macc.cbfc.pause_time.c{c}"))
            .collect();
        names.extend(times.iter().map(String::as_str));
        let oracle = fields(file, &names);
        // tshark applies the profile's rules with --color; a rule it cannot
        // compile is disabled with a warning on stderr.
        let o = p.tshark(&[
            "--color",
            "-r",
            &f,
            "-Y",
            "frame",
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "frame.coloring_rule.name",
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!stderr.contains("Could not compile"), "{f}: {stderr}");
        let got = ok(&o, "tshark --color");
        let mut seen = 0;
        for l in got.lines().filter(|l| !l.is_empty()) {
            let (n, rule) = l.split_once('\t').unwrap_or((l, ""));
            let n: u32 = n.parse().expect("frame no.");
            assert_eq!(
                rule,
                expected_rule(&oracle[&n]),
                "{f} frame {n}: {:?}",
                oracle[&n]
            );
            if file == &default {
                if rule.starts_with("PFC") {
                    pfc.push((n, rule.to_string()));
                }
                if !rule.is_empty() {
                    seen += 1;
                }
            }
        }
        if file == &default {
            assert_eq!(seen, oracle.len(), "every frame of {f} is RoCE or PFC");
        }
    }
    // On the capture that has every kind, the generator's own truth agrees.
    let truth =
        std::fs::read_to_string(data_dir().join("pcaps/synthetic_roce_default.pcap.truth.tsv"))
            .expect("truth TSV");
    let labelled = |label: &str| -> Vec<u32> {
        truth
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("frame"))
            .map(|l| l.split('\t').collect::<Vec<_>>())
            .filter(|c| {
                c.get(2) == Some(&"yes")
                    && c.get(16).is_some_and(|x| x.split(',').any(|x| x == label))
            })
            .filter_map(|c| c[0].parse().ok())
            .collect()
    };
    let f = default.to_string_lossy();
    for (filter_of, label) in [
        ("RoCE CNP", "cnp"),
        ("RoCE RNR NAK", "rnr_nak"),
        (
            "RoCE retransmission requested (NAK: PSN sequence error, go-back-N)",
            "nak_seq_err",
        ),
        ("RoCE NAK", "nak_seq_err"),
        ("PFC pause", "pfc_pause"),
        ("PFC resume", "pfc_resume"),
    ] {
        let filter = &rules.iter().find(|(n, _)| n == filter_of).expect("rule").1;
        let got: Vec<u32> = ok(
            &plain_tshark(&["-r", &f, "-Y", filter, "-T", "fields", "-e", "frame.number"]),
            filter,
        )
        .lines()
        .filter_map(|l| l.parse().ok())
        .collect();
        let want = labelled(label);
        assert!(!want.is_empty(), "{label}");
        assert_eq!(
            got, want,
            "rule `{filter_of}` against the truth's `{label}`"
        );
    }
    assert_eq!(pfc.len(), 11, "{pfc:?}");
}

/// A UAT line: quoted fields separated by commas, `\xNN` escapes decoded;
/// also the raw (still escaped) text of each field.
fn uat_fields(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = line;
    loop {
        let body = rest.strip_prefix('"').expect("a field starts with a quote");
        let end = body.find('"').expect("a field ends with a quote");
        let raw = &body[..end];
        let mut decoded = String::new();
        let mut chars = raw.char_indices();
        while let Some((i, c)) = chars.next() {
            if c == '\\' {
                let hex = raw.get(i + 2..i + 4).expect("\\xNN");
                assert_eq!(raw.get(i + 1..i + 2), Some("x"), "{raw}");
                decoded.push(u8::from_str_radix(hex, 16).expect("hex") as char);
                chars.nth(2);
            } else {
                decoded.push(c);
            }
        }
        out.push((decoded, format!("\"{raw}\"")));
        rest = &body[end + 1..];
        match rest.strip_prefix(',') {
            Some(r) => rest = r,
            None => {
                assert!(rest.is_empty(), "trailing text in {line}");
                return out;
            }
        }
    }
}

#[test]
fn io_graphs_parse_as_a_uat_and_count_what_the_fields_say() {
    let p = Profile::new(&[]);
    let text = p.file("io_graphs");
    let rows: Vec<Vec<(String, String)>> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(uat_fields)
        .collect();
    // Wireshark 4.0's fields and values (ui/qt/io_graph_dialog.cpp).
    const STYLES: &[&str] = &[
        "Line",
        "Impulse",
        "Bar",
        "Stacked Bar",
        "Dot",
        "Square",
        "Diamond",
        "Cross",
        "Circle",
        "Plus",
    ];
    for r in &rows {
        assert_eq!(r.len(), 9, "{r:?}");
        assert!(["Enabled", "Disabled"].contains(&r[0].0.as_str()), "{r:?}");
        let color = &r[3].0;
        assert!(
            color.len() == 7
                && color.starts_with('#')
                && color[1..].chars().all(|c| c.is_ascii_hexdigit()),
            "{color}"
        );
        assert!(STYLES.contains(&r[4].0.as_str()), "{r:?}");
        assert_eq!(r[5].0, "Packets");
        assert_eq!(r[7].0, "None");
        r[8].0.parse::<u32>().expect("Y Axis Factor");
    }
    let names: Vec<&str> = rows.iter().map(|r| r[1].0.as_str()).collect();
    assert_eq!(names, ["RoCE packets", "CNPs", "PFC pauses"]);

    // tshark has no I/O graph dialog, but it reads display filter macros, a
    // UAT of the same grammar: each graph's filter field, exactly as written,
    // becomes a macro, and tshark counts the packets it selects.
    let macros: String = rows
        .iter()
        .enumerate()
        .map(|(i, r)| format!("\"g{i}\",{}\n", r[2].1))
        .collect();
    std::fs::write(p.dir().join("dfilter_macros"), macros).expect("write macros");
    let tmp = tempfile::tempdir().expect("tempdir");
    for file in [
        sample("synthetic_roce_default.pcap"),
        generated(tmp.path(), "500"),
        sample("public-hexdumps_roce_snippets.pcap"),
    ] {
        let f = file.to_string_lossy();
        let mut names = vec!["infiniband.bth.opcode", "macc.opcode", "macc.cbfc.enbv"];
        let times: Vec<String> = (0..8)
            .map(|c| format!("macc.cbfc.pause_time.c{c}"))
            .collect();
        names.extend(times.iter().map(String::as_str));
        let oracle = fields(&file, &names);
        let roce = oracle.values().filter(|v| !v[0].is_empty()).count();
        let cnps = oracle.values().filter(|v| v[0] == "129").count();
        let pauses = oracle
            .values()
            .filter(|v| v[1] == "0x0101")
            .filter(|v| {
                let enbv = u32::from_str_radix(v[2].trim_start_matches("0x"), 16).unwrap_or(0);
                (0..8).any(|c| enbv & (1 << c) != 0 && v[3 + c].parse::<u32>().unwrap_or(0) > 0)
            })
            .count();
        for (i, want) in [roce, cnps, pauses].into_iter().enumerate() {
            let macro_ref = format!("${{g{i}}}");
            let got = ok(
                &p.tshark(&[
                    "-r",
                    &f,
                    "-Y",
                    &macro_ref,
                    "-T",
                    "fields",
                    "-e",
                    "frame.number",
                ]),
                &format!("graph {}", names_of(&rows, i)),
            )
            .lines()
            .filter(|l| !l.is_empty())
            .count();
            assert_eq!(got, want, "{f}: graph `{}`", names_of(&rows, i));
        }
        if file.ends_with("synthetic_roce_default.pcap") {
            assert_eq!((cnps, pauses), (2, 10), "the capture's CNPs and pauses");
        }
    }
}

fn names_of(rows: &[Vec<(String, String)>], i: usize) -> &str {
    &rows[i][1].0
}

/// A copy of a classic pcap (Ethernet, IPv4, UDP) with UDP destination port
/// 4791 rewritten to `port`; nothing else changes (the generator's UDP
/// checksums are 0, which IPv4 allows).
fn with_roce_port(src: &Path, dst: &Path, port: u16) -> usize {
    let mut d = std::fs::read(src).expect("read capture");
    assert!(d.len() >= 24, "pcap header");
    let le = matches!(&d[..4], [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1]);
    let mut i = 24;
    let mut rewritten = 0;
    while i + 16 <= d.len() {
        let b = [d[i + 8], d[i + 9], d[i + 10], d[i + 11]];
        let incl = if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        } as usize;
        let pkt = i + 16;
        let f = &mut d[pkt..pkt + incl];
        if f.len() >= 42
            && f[12..14] == [0x08, 0x00]
            && f[23] == 17
            && f[36..38] == 4791u16.to_be_bytes()
        {
            assert_eq!(f[40..42], [0, 0], "UDP checksum 0");
            f[36..38].copy_from_slice(&port.to_be_bytes());
            rewritten += 1;
        }
        i = pkt + incl;
    }
    std::fs::write(dst, d).expect("write capture");
    rewritten
}

#[test]
fn decode_as_entry_makes_another_port_roce() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let orig = generated(tmp.path(), "300");
    let moved = tmp.path().join("4792.pcap");
    assert_eq!(with_roce_port(&orig, &moved, 4792), 300);
    let m = moved.to_string_lossy();
    let psns = |o: Output| -> Vec<String> {
        ok(&o, "tshark")
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    };
    let want = psns(plain_tshark(&[
        "-r",
        &orig.to_string_lossy(),
        "-T",
        "fields",
        "-e",
        "infiniband.bth.psn",
    ]));
    assert_eq!(want.len(), 300);
    let args = [
        "-r",
        &m,
        "-Y",
        "infiniband",
        "-T",
        "fields",
        "-e",
        "infiniband.bth.psn",
    ];

    let with = Profile::new(&["--roce-port", "4792", "--roce-port", "4791"]);
    assert!(
        with.stdout.contains("UDP port 4792 decoded as RoCE v2"),
        "{}",
        with.stdout
    );
    assert_eq!(psns(with.tshark(&args)), want, "decoded with the profile");
    let entries = with.file("decode_as_entries");
    assert_eq!(
        entries
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>(),
        ["decode_as_entry: udp.port,4792,(none),IB"],
        "4791 needs no entry"
    );
    // The colouring sees it as RoCE too.
    let rule = ok(
        &with.tshark(&[
            "--color",
            "-r",
            &m,
            "-Y",
            "frame",
            "-T",
            "fields",
            "-e",
            "frame.coloring_rule.name",
        ]),
        "tshark --color",
    );
    assert_eq!(rule.lines().filter(|l| l.starts_with("RoCE")).count(), 300);

    assert!(psns(plain_tshark(&args)).is_empty(), "not RoCE without it");
    let without = Profile::new(&[]);
    assert!(
        psns(without.tshark(&args)).is_empty(),
        "nor without --roce-port"
    );
}

#[test]
fn install_goes_where_wireshark_looks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let capture = generated(tmp.path(), "50");
    let c = capture.to_string_lossy();
    let psn_line = |o: Output| {
        let text = ok(&o, "tshark -C tripcap");
        // Frame 1's PSN column: a 12-column line with the PSN beside the QP.
        let first = text.lines().next().unwrap_or("").to_string();
        assert!(first.contains(" 0x000100 0 False"), "{first}");
    };

    // XDG_CONFIG_HOME set: there, leaving other files of the profile alone.
    let xdg = tmp.path().join("xdg");
    let home = tmp.path().join("home");
    let profile = xdg.join("wireshark/profiles/tripcap");
    std::fs::create_dir_all(&profile).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    std::fs::write(profile.join("recent"), "# the user's\n").expect("write");
    std::fs::write(
        profile.join("preferences"),
        "gui.column.format: \"x\", \"%m\"\n",
    )
    .expect("write");
    let o = run(tripcap()
        .args(["wireshark-profile", "--install"])
        .env("XDG_CONFIG_HOME", &xdg)
        .env("HOME", &home));
    let out = ok(&o, "--install");
    for name in [
        "preferences",
        "colorfilters",
        "io_graphs",
        "decode_as_entries",
    ] {
        let path = profile.join(name);
        assert!(path.is_file(), "{}", path.display());
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("wrote {}", path.display()))),
            "{out}"
        );
    }
    assert!(
        out.contains(&format!(
            "installed the profile `tripcap` in {}",
            profile.display()
        )),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(profile.join("recent")).expect("recent"),
        "# the user's\n"
    );
    let left: Vec<String> = std::fs::read_dir(&profile)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "temporaries left: {left:?}");
    assert!(!home.join(".config").exists());
    psn_line(tshark_in(Some(&xdg), &home, &["-C", "tripcap", "-r", &c]));

    // No XDG_CONFIG_HOME: ~/.config/wireshark.
    let home2 = tmp.path().join("home2");
    std::fs::create_dir_all(&home2).expect("mkdir");
    let o = run(tripcap()
        .args(["wireshark-profile", "--install"])
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", &home2));
    ok(&o, "--install without XDG_CONFIG_HOME");
    assert!(home2
        .join(".config/wireshark/profiles/tripcap/colorfilters")
        .is_file());
    psn_line(tshark_in(None, &home2, &["-C", "tripcap", "-r", &c]));

    // Only an old ~/.wireshark: Wireshark reads that one, so it goes there.
    let home3 = tmp.path().join("home3");
    std::fs::create_dir_all(home3.join(".wireshark")).expect("mkdir");
    let o = run(tripcap()
        .args(["wireshark-profile", "--install"])
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", &home3));
    ok(&o, "--install with ~/.wireshark");
    assert!(home3
        .join(".wireshark/profiles/tripcap/colorfilters")
        .is_file());
    assert!(!home3.join(".config").exists());
    psn_line(tshark_in(None, &home3, &["-C", "tripcap", "-r", &c]));

    // tshark refuses a profile it cannot find, so the checks above mean it found ours.
    let o = tshark_in(None, &home3, &["-C", "nosuch", "-r", &c]);
    assert!(!o.status.success());
}

#[test]
fn a_directory_that_cannot_be_written_is_one_line_naming_the_fix() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("plain-file");
    std::fs::write(&file, "x").expect("write");

    let o = run(tripcap()
        .args(["wireshark-profile", "-o"])
        .arg(file.join("sub")));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("tripcap: cannot write the Wireshark profile: ")
            && err.contains("give -o a directory you can write"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    let o = run(tripcap()
        .args(["wireshark-profile", "--install"])
        .env("XDG_CONFIG_HOME", &file)
        .env("HOME", tmp.path()));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(&file.display().to_string()) && err.contains("-o DIR"),
        "{err}"
    );

    // Neither --install nor -o: clap says which to give.
    let o = run(tripcap().arg("wireshark-profile"));
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--install") && err.contains("--out"), "{err}");
}
