//! `tripcap wireshark-profile`: a Wireshark configuration profile named
//! `tripcap` for reading RoCE captures, in the formats of Wireshark 4.0.
//!
//! The profile is a directory `tripcap/` of four files:
//! - `preferences`: the packet list's columns, with the BTH opcode, dest QP,
//!   PSN, AckReq and AETH syndrome as custom columns;
//! - `colorfilters`: one colouring rule a line, `@name@filter@[bg][fg]` with
//!   16-bit RGB values; the first rule that matches a packet colours it;
//! - `io_graphs`: the I/O graph dialog's table (a UAT: every field quoted,
//!   `"` and `\` written as `\x22` and `\x5c`);
//! - `decode_as_entries`: `udp.port` entries decoding RoCE v2 on other ports
//!   (the protocol must be named `IB`; `InfiniBand` is silently ignored).
//!
//! The text of each file comes from a pure function; [`write`] puts them in a
//! directory, each temp-then-rename ([`crate::private_file`]), and leaves any
//! other file of the profile (`recent`, a user's `dfilter_buttons`) alone.
//!
//! Wireshark has no RoCE retransmission analysis and a display filter sees
//! one packet at a time, so the "retransmission" rule marks what asks for
//! one: a NAK with the PSN sequence error code, after which the requester
//! goes back to the PSN the NAK names (go-back-N). `tripcap analyze` finds
//! the retransmitted packets themselves.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use crate::private_file::write_private_atomically;

/// The profile's name: the directory Wireshark lists and `-C` selects.
pub const PROFILE_NAME: &str = "tripcap";

/// The UDP port Wireshark decodes as RoCE v2 without being told.
pub const DEFAULT_ROCE_PORT: u16 = 4791;

/// The packet list's columns: title and Wireshark column format.
pub const COLUMNS: &[(&str, &str)] = &[
    ("No.", "%m"),
    ("Time", "%t"),
    ("Source", "%s"),
    ("Destination", "%d"),
    ("Protocol", "%p"),
    ("Length", "%L"),
    // Unresolved: the opcode as a number (Info names it; a CNP is 129).
    ("Opcode", "%Cus:infiniband.bth.opcode:0:U"),
    ("Dest QP", "%Cus:infiniband.bth.destqp:0:R"),
    ("PSN", "%Cus:infiniband.bth.psn:0:R"),
    ("AckReq", "%Cus:infiniband.bth.a:0:R"),
    ("Syndrome", "%Cus:infiniband.aeth.syndrome:0:R"),
    ("Info", "%i"),
];

/// RoCE: InfiniBand carried in UDP (v2, on any port decoded as IB) or
/// straight in Ethernet (v1, ethertype 0x8915, tagged or not); not native
/// InfiniBand, nor IP over InfiniBand.
pub const ROCE_FILTER: &str = r#"frame.protocols matches "(^|:)(udp|ethertype):infiniband(:|$)""#;

/// A CNP: BTH opcode 0x81.
pub const CNP_FILTER: &str = "infiniband.bth.opcode == 129";

/// The AETH syndrome's bits 6-5 (Wireshark's `infiniband.aeth.syndrome.opcode`)
/// say ACK (0), RNR NAK (1) or NAK (3); a NAK's low five bits are its code,
/// 0 being PSN sequence error.
pub const NAK_FILTER: &str = "infiniband.aeth.syndrome.opcode == 3";
/// An RNR NAK.
pub const RNR_NAK_FILTER: &str = "infiniband.aeth.syndrome.opcode == 1";
/// A NAK for a PSN sequence error: the requester retransmits from its PSN.
pub const GO_BACK_N_FILTER: &str =
    "infiniband.aeth.syndrome.opcode == 3 && infiniband.aeth.syndrome.error_code == 0";
/// A packet marked Congestion Experienced, IPv4 or IPv6.
pub const ECN_CE_FILTER: &str = "infiniband && (ip.dsfield.ecn == 3 || ipv6.tclass.ecn == 3)";

/// A PFC frame (MAC Control opcode 0x0101) that pauses at least one priority:
/// a class enabled with a nonzero time. A bare boolean field in a display
/// filter tests presence, not value, hence the `== 1`.
pub fn pfc_pause_filter() -> String {
    format!("macc.opcode == 0x0101 && ({})", pfc_classes_paused())
}

/// A PFC frame that pauses no priority: XON, the end of a pause.
pub fn pfc_resume_filter() -> String {
    format!("macc.opcode == 0x0101 && !({})", pfc_classes_paused())
}

fn pfc_classes_paused() -> String {
    (0..8)
        .map(|c| format!("(macc.cbfc.enbv.c{c} == 1 && macc.cbfc.pause_time.c{c} > 0)"))
        .collect::<Vec<_>>()
        .join(" || ")
}

/// One colouring rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColorRule {
    /// Its name in Wireshark's colouring rules dialog.
    pub name: &'static str,
    /// The display filter.
    pub filter: String,
    /// Background, 16-bit RGB.
    pub background: [u16; 3],
    /// Foreground, 16-bit RGB.
    pub foreground: [u16; 3],
}

const BLACK: [u16; 3] = [0, 0, 0];
const WHITE: [u16; 3] = [65535, 65535, 65535];

/// 8-bit RGB to Wireshark's 16-bit values.
const fn rgb(r: u8, g: u8, b: u8) -> [u16; 3] {
    [r as u16 * 257, g as u16 * 257, b as u16 * 257]
}

/// The colouring rules, in the order Wireshark tries them (first match wins):
/// the rarest and most telling first, RoCE as the catch-all last.
pub fn color_rules() -> Vec<ColorRule> {
    let rule = |name, filter: &str, background, foreground| ColorRule {
        name,
        filter: filter.to_string(),
        background,
        foreground,
    };
    vec![
        rule(
            "RoCE retransmission requested (NAK: PSN sequence error, go-back-N)",
            GO_BACK_N_FILTER,
            rgb(0xa4, 0x00, 0x00),
            WHITE,
        ),
        rule("RoCE NAK", NAK_FILTER, rgb(0xff, 0x8a, 0x80), BLACK),
        rule("RoCE RNR NAK", RNR_NAK_FILTER, rgb(0xe1, 0xbe, 0xe7), BLACK),
        rule("RoCE CNP", CNP_FILTER, rgb(0xff, 0xb7, 0x4d), BLACK),
        rule("RoCE ECN CE", ECN_CE_FILTER, rgb(0xff, 0xf5, 0x9d), BLACK),
        ColorRule {
            name: "PFC pause",
            filter: pfc_pause_filter(),
            background: rgb(0x1a, 0x23, 0x7e),
            foreground: WHITE,
        },
        ColorRule {
            name: "PFC resume",
            filter: pfc_resume_filter(),
            background: rgb(0xbb, 0xde, 0xfb),
            foreground: BLACK,
        },
        rule("RoCE", ROCE_FILTER, rgb(0xe8, 0xf5, 0xe9), BLACK),
    ]
}

/// One I/O graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoGraph {
    /// Its name in the legend.
    pub name: &'static str,
    /// The display filter of the packets it counts.
    pub filter: String,
    /// `#RRGGBB`.
    pub color: &'static str,
    /// A style of Wireshark 4.0's list (`Line`, `Bar`, `Dot`…).
    pub style: &'static str,
}

/// The I/O graphs: packets per interval of each kind.
pub fn io_graphs() -> Vec<IoGraph> {
    vec![
        IoGraph {
            name: "RoCE packets",
            filter: ROCE_FILTER.to_string(),
            color: "#2E7D32",
            style: "Line",
        },
        IoGraph {
            name: "CNPs",
            filter: CNP_FILTER.to_string(),
            color: "#EF6C00",
            style: "Bar",
        },
        IoGraph {
            name: "PFC pauses",
            filter: pfc_pause_filter(),
            color: "#1A237E",
            style: "Bar",
        },
    ]
}

fn header(what: &str) -> String {
    format!(
        "# {what} of the Wireshark profile `{PROFILE_NAME}`, written by tripcap {} \
         (`tripcap wireshark-profile`).\n\
         # Running it again overwrites this file.\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The `preferences` file: the columns.
pub fn preferences() -> String {
    let mut s = header("Preferences");
    s.push_str("# Columns: the BTH opcode, dest QP, PSN, AckReq and the AETH syndrome.\n");
    s.push_str("gui.column.format:\n");
    for (i, (title, format)) in COLUMNS.iter().enumerate() {
        let sep = if i + 1 < COLUMNS.len() { "," } else { "" };
        let _ = writeln!(s, "\t\"{title}\", \"{format}\"{sep}");
    }
    s
}

/// The `colorfilters` file.
pub fn colorfilters() -> String {
    let mut s = header("Colouring rules");
    s.push_str(
        "# First match wins. Wireshark has no RoCE retransmission analysis: the\n\
         # retransmission rule marks the NAK (PSN sequence error) that makes the\n\
         # requester go back N; `tripcap analyze` finds the retransmitted packets.\n",
    );
    for r in color_rules() {
        let [br, bg, bb] = r.background;
        let [fr, fg, fb] = r.foreground;
        let _ = writeln!(
            s,
            "@{}@{}@[{br},{bg},{bb}][{fr},{fg},{fb}]",
            r.name, r.filter
        );
    }
    s
}

/// A UAT string field: quoted, with `"`, `\` and anything not printable
/// ASCII written `\xNN`, as Wireshark's `uat_esc` does.
fn uat_field(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for b in text.bytes() {
        if b == b'"' || b == b'\\' || !(0x20..0x7f).contains(&b) {
            let _ = write!(s, "\\x{b:02x}");
        } else {
            s.push(b as char);
        }
    }
    s.push('"');
    s
}

/// The `io_graphs` file: Enabled, Graph Name, Display Filter, Color, Style,
/// Y Axis, Y Field, SMA Period, Y Axis Factor.
pub fn io_graphs_file() -> String {
    let mut s = header("I/O graphs");
    for g in io_graphs() {
        let fields = [
            "Enabled", g.name, &g.filter, g.color, g.style, "Packets", "", "None", "1",
        ];
        let line: Vec<String> = fields.iter().map(|f| uat_field(f)).collect();
        s.push_str(&line.join(","));
        s.push('\n');
    }
    s
}

/// The RoCE ports that need a decode-as entry: `ports` without 4791,
/// deduplicated, sorted.
pub fn decode_as_ports(ports: &[u16]) -> Vec<u16> {
    let mut v: Vec<u16> = ports
        .iter()
        .copied()
        .filter(|&p| p != DEFAULT_ROCE_PORT)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The `decode_as_entries` file: UDP `ports` decoded as RoCE v2.
pub fn decode_as_entries(ports: &[u16]) -> String {
    let mut s = header("\"Decode As\" entries");
    s.push_str("# UDP 4791 is RoCE v2 without an entry; these are other RoCE ports.\n");
    for p in decode_as_ports(ports) {
        let _ = writeln!(s, "decode_as_entry: udp.port,{p},(none),IB");
    }
    s
}

/// One file of the profile: its name, text, and a few words on what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileFile {
    /// File name inside the profile directory.
    pub name: &'static str,
    /// Its text.
    pub text: String,
    /// What it holds, for the line printed when it is written.
    pub what: String,
}

/// The profile's files, with decode-as entries for `roce_ports`.
pub fn files(roce_ports: &[u16]) -> Vec<ProfileFile> {
    let extra = decode_as_ports(roce_ports);
    let decode_what = if extra.is_empty() {
        "no entries (UDP 4791 is RoCE v2 by default)".to_string()
    } else {
        let list: Vec<String> = extra.iter().map(u16::to_string).collect();
        format!("UDP port {} decoded as RoCE v2", list.join(", "))
    };
    vec![
        ProfileFile {
            name: "preferences",
            text: preferences(),
            what: format!("{} columns", COLUMNS.len()),
        },
        ProfileFile {
            name: "colorfilters",
            text: colorfilters(),
            what: format!("{} colouring rules", color_rules().len()),
        },
        ProfileFile {
            name: "io_graphs",
            text: io_graphs_file(),
            what: format!("{} I/O graphs", io_graphs().len()),
        },
        ProfileFile {
            name: "decode_as_entries",
            text: decode_as_entries(roce_ports),
            what: decode_what,
        },
    ]
}

/// A profile that could not be written, or a place that could not be found.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// A directory or file could not be made.
    // The io::Error is in the message, not a `source` (main prints the chain).
    #[error("cannot write the Wireshark profile: `{path}`: {error}; {fix}")]
    Write {
        /// What could not be written.
        path: PathBuf,
        /// Why.
        error: io::Error,
        /// What to do instead.
        fix: &'static str,
    },
    /// `--install` without a home directory.
    #[error("cannot find Wireshark's configuration directory: neither XDG_CONFIG_HOME nor HOME is set; set HOME, or give -o DIR")]
    NoHome,
}

/// Wireshark's personal configuration directory on Unix, as Wireshark 4.0
/// chooses it: `$XDG_CONFIG_HOME/wireshark` (`$HOME/.config/wireshark` when
/// XDG_CONFIG_HOME is unset or empty) if it is a directory, else
/// `$HOME/.wireshark` if that one is, else the first.
pub fn config_dir(xdg_config_home: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
    let home = home.filter(|h| !h.is_empty()).map(PathBuf::from);
    let xdg = match xdg_config_home.filter(|x| !x.is_empty()) {
        Some(x) => PathBuf::from(x).join("wireshark"),
        None => home.as_ref()?.join(".config").join("wireshark"),
    };
    if xdg.is_dir() {
        return Some(xdg);
    }
    if let Some(old) = home.map(|h| h.join(".wireshark")).filter(|o| o.is_dir()) {
        return Some(old);
    }
    Some(xdg)
}

/// Where `--install` writes: `<config dir>/profiles`, the profile in it.
pub fn install_parent() -> Result<PathBuf, ProfileError> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME");
    let home = std::env::var_os("HOME");
    config_dir(xdg.as_deref(), home.as_deref())
        .map(|d| d.join("profiles"))
        .ok_or(ProfileError::NoHome)
}

/// Write the profile as `parent/tripcap/`, creating directories as needed;
/// our four files are replaced, any other file there is left alone.
/// Returns each file written with what it holds.
pub fn write(
    parent: &Path,
    roce_ports: &[u16],
    fix: &'static str,
) -> Result<Vec<(PathBuf, String)>, ProfileError> {
    let dir = parent.join(PROFILE_NAME);
    let fail = |path: &Path| {
        let path = path.to_path_buf();
        move |error| ProfileError::Write { path, error, fix }
    };
    std::fs::create_dir_all(&dir).map_err(fail(&dir))?;
    let mut written = Vec::new();
    for f in files(roce_ports) {
        let path = dir.join(f.name);
        write_private_atomically(&path, f.text.as_bytes()).map_err(fail(&path))?;
        written.push((path, f.what));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uat_fields_escape_quotes_and_backslashes() {
        assert_eq!(uat_field(r#"a "b" \c"#), r#""a \x22b\x22 \x5cc""#);
        assert_eq!(uat_field(""), r#""""#);
    }

    #[test]
    fn decode_as_skips_the_default_port_and_repeats() {
        assert_eq!(decode_as_ports(&[4792, 4791, 4792, 1000]), vec![1000, 4792]);
        let text = decode_as_entries(&[4791]);
        assert!(!text.contains("decode_as_entry"), "{text}");
        let text = decode_as_entries(&[4792]);
        assert!(
            text.ends_with("decode_as_entry: udp.port,4792,(none),IB\n"),
            "{text}"
        );
    }

    #[test]
    fn every_io_graph_row_has_nine_fields() {
        for line in io_graphs_file().lines().filter(|l| !l.starts_with('#')) {
            assert_eq!(line.matches("\",\"").count(), 8, "{line}");
        }
    }

    #[test]
    fn color_rules_never_hold_the_separator() {
        for r in color_rules() {
            assert!(!r.name.contains('@') && !r.filter.contains('@'), "{r:?}");
            assert!(!r.filter.contains('\n'), "{r:?}");
        }
    }

    #[test]
    fn config_dir_follows_wireshark() {
        let t = tempfile::tempdir().expect("tempdir");
        let home = t.path().join("home");
        let xdg = t.path().join("xdg");
        std::fs::create_dir_all(&home).expect("mkdir");
        // Nothing exists yet: the XDG place.
        assert_eq!(
            config_dir(Some(xdg.as_os_str()), Some(home.as_os_str())),
            Some(xdg.join("wireshark"))
        );
        assert_eq!(
            config_dir(Some(OsStr::new("")), Some(home.as_os_str())),
            Some(home.join(".config/wireshark"))
        );
        // An old ~/.wireshark wins over a missing XDG directory, not over one that exists.
        std::fs::create_dir_all(home.join(".wireshark")).expect("mkdir");
        assert_eq!(
            config_dir(Some(xdg.as_os_str()), Some(home.as_os_str())),
            Some(home.join(".wireshark"))
        );
        std::fs::create_dir_all(xdg.join("wireshark")).expect("mkdir");
        assert_eq!(
            config_dir(Some(xdg.as_os_str()), Some(home.as_os_str())),
            Some(xdg.join("wireshark"))
        );
        assert_eq!(config_dir(None, None), None);
    }
}
