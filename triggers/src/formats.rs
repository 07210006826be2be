//! Where the built-in patterns come from: the format strings of the programs that print
//! the lines, as read in their sources (`triggers/formats/*.tsv`, embedded here).
//!
//! Each row is one wording of one message, with the release range that prints it:
//!
//! | column | holds |
//! | --- | --- |
//! | `id` | unique slug, cited by the patterns of [`crate::packs`] (`nccl/net_ib/completion-from-peer`) |
//! | `class` | the failure class (`nccl_ib_error`, …), or `benign` for an `ok` row |
//! | `kind` | `fail`: a failure a built-in trigger must fire on; `ok`: a look-alike from the same source (progress, configuration, a recoverable state) that none may fire on |
//! | `project`, `file`, `versions` | where it was read: `nccl`, `src/transport/net_ib.cc`, `v2.19.3-` (open end: still current) |
//! | `logger` | the header the logging framework puts before the text (`nccl_warn`, `glog_E`, `ucx`, `plain`, …) |
//! | `template` | the text after that header, variable parts as typed placeholders (`{ip}`, `{qpn}`, `{ms}`, …) |
//! | `format` | the format string verbatim from the source, for review |
//!
//! The packs cite row ids for every pattern ([`crate::TriggerDef::sources`] shows them as
//! project, file and versions), and `triggers/tests/formats.rs` instantiates every
//! template with varied values, headers and wrapper prefixes: each `fail` instance must
//! fire one trigger of its class through a pattern that cites the row, and no `ok`
//! instance may fire.

use std::sync::LazyLock;

/// The embedded tables, by file name.
const TABLES: &[(&str, &str)] = &[
    ("nccl.tsv", include_str!("../formats/nccl.tsv")),
    ("pytorch.tsv", include_str!("../formats/pytorch.tsv")),
    ("frameworks.tsv", include_str!("../formats/frameworks.tsv")),
    (
        "ucx_libfabric.tsv",
        include_str!("../formats/ucx_libfabric.tsv"),
    ),
    (
        "verbs_perftest_nvmeof.tsv",
        include_str!("../formats/verbs_perftest_nvmeof.tsv"),
    ),
    ("apps.tsv", include_str!("../formats/apps.tsv")),
    ("nccl_ofi.tsv", include_str!("../formats/nccl_ofi.tsv")),
    (
        "kernel_rdma.tsv",
        include_str!("../formats/kernel_rdma.tsv"),
    ),
    (
        "more_stacks.tsv",
        include_str!("../formats/more_stacks.tsv"),
    ),
    (
        "verbs_status.tsv",
        include_str!("../formats/verbs_status.tsv"),
    ),
    ("generic.tsv", include_str!("../formats/generic.tsv")),
];

/// The header every table starts with.
pub const HEADER: &str = "id\tclass\tkind\tproject\tfile\tversions\tlogger\ttemplate\tformat";

/// One wording of one message, as its program's source prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    /// Unique slug.
    pub id: &'static str,
    /// Failure class, or `benign`.
    pub class: &'static str,
    /// True for a failure (`fail`), false for a look-alike (`ok`).
    pub fails: bool,
    /// Upstream project (`nccl`, `pytorch`, `ucx`, …).
    pub project: &'static str,
    /// File in the project's repository.
    pub file: &'static str,
    /// Release range with this wording (`v2.4.8-v2.18.6`, `v2.19.3-`).
    pub versions: &'static str,
    /// The logging framework's header kind.
    pub logger: &'static str,
    /// The text with typed placeholders.
    pub template: &'static str,
    /// The format string verbatim.
    pub format: &'static str,
    /// `table:line`, for messages about this row.
    pub origin: String,
}

/// A table that does not follow the schema: `table:line: what`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("triggers/formats/{table}:{line}: {message}")]
pub struct FormatError {
    /// File name.
    pub table: &'static str,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

static ALL: LazyLock<Result<Vec<Format>, FormatError>> = LazyLock::new(|| {
    let mut out = Vec::new();
    for (table, text) in TABLES {
        parse(table, text, &mut out)?;
    }
    Ok(out)
});

/// Every row of every table, in table order; the first schema error if any (the unit
/// tests keep the embedded tables valid, so a release never has one).
pub fn all() -> Result<&'static [Format], &'static FormatError> {
    ALL.as_ref().map(Vec::as_slice)
}

/// Whether citation `cite` names row id `id`: equal, or `cite` ends in `*` and `id`
/// starts with what comes before it (`nccl/net_ib/completion-from-peer*`).
pub fn cites(cite: &str, id: &str) -> bool {
    match cite.strip_suffix('*') {
        Some(prefix) => id.starts_with(prefix),
        None => cite == id,
    }
}

/// Every row by id, sorted by id: an exact citation is one binary search, a `*`
/// citation one range (the packs cite a few thousand rows, a fifth of them by prefix,
/// and `tripcap triggers list` turns every citation into sources).
static BY_ID: LazyLock<Vec<(&'static str, usize)>> = LazyLock::new(|| {
    let mut ids: Vec<(&'static str, usize)> = all()
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id, i))
        .collect();
    ids.sort_unstable();
    ids
});

/// The rows citation `cite` names (see [`cites`]), in table order.
pub fn cited(cite: &str) -> impl Iterator<Item = &'static Format> + '_ {
    let rows = all().unwrap_or_default();
    let prefix = cite.strip_suffix('*').unwrap_or(cite);
    let from = BY_ID.partition_point(|(id, _)| *id < prefix);
    let mut found: Vec<usize> = BY_ID[from..]
        .iter()
        .take_while(|(id, _)| id.starts_with(prefix))
        .filter(|(id, _)| cites(cite, id))
        .map(|&(_, i)| i)
        .collect();
    found.sort_unstable();
    found.into_iter().map(move |i| &rows[i])
}

/// "project file (versions, versions…)" for the rows cited by `ids`, grouped by project and file,
/// in first-seen order: what `tripcap triggers list` shows under a pattern.
pub fn describe(ids: &[&str]) -> String {
    let mut groups: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for f in ids.iter().flat_map(|c| cited(c)) {
        match groups
            .iter_mut()
            .find(|(p, file, _)| *p == f.project && *file == f.file)
        {
            Some((_, _, v)) => {
                if !v.contains(&f.versions) {
                    v.push(f.versions);
                }
            }
            None => groups.push((f.project, f.file, vec![f.versions])),
        }
    }
    groups
        .iter()
        .map(|(p, file, v)| {
            if v.is_empty() {
                format!("{p} {file}")
            } else {
                format!("{p} {file} ({})", v.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn parse(
    table: &'static str,
    text: &'static str,
    out: &mut Vec<Format>,
) -> Result<(), FormatError> {
    let err = |line: usize, message: String| FormatError {
        table,
        line,
        message,
    };
    let mut lines = text.split('\n').enumerate();
    match lines.next() {
        Some((_, h)) if h.trim_end_matches('\r') == HEADER => {}
        _ => return Err(err(1, format!("the header must be `{HEADER}`"))),
    }
    for (i, line) in lines {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let cols: Vec<&'static str> = line.split('\t').collect();
        let [id, class, kind, project, file, versions, logger, template, format] = cols[..] else {
            return Err(err(
                i + 1,
                format!("{} columns, the header has 9", cols.len()),
            ));
        };
        let fails = match kind {
            "fail" => true,
            "ok" => false,
            other => return Err(err(i + 1, format!("kind `{other}`: `fail` or `ok`"))),
        };
        if id.is_empty() || template.is_empty() {
            return Err(err(i + 1, "empty id or template".into()));
        }
        if fails == (class == "benign") {
            return Err(err(
                i + 1,
                format!("kind `{kind}` with class `{class}`: `ok` rows are `benign`, `fail` rows are not"),
            ));
        }
        out.push(Format {
            id,
            class,
            fails,
            project,
            file,
            versions,
            logger,
            template,
            format,
            origin: format!("{table}:{}", i + 1),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_tables_parse_and_ids_are_unique() {
        let all = all().unwrap_or_else(|e| panic!("{e}"));
        assert!(all.len() > 100, "only {} rows", all.len());
        let mut ids: Vec<&str> = all.iter().map(|f| f.id).collect();
        ids.sort_unstable();
        for w in ids.windows(2) {
            assert_ne!(w[0], w[1], "duplicate id");
        }
    }

    #[test]
    fn schema_errors_name_table_and_line() {
        let mut out = Vec::new();
        let e = parse("t.tsv", "id\tclass", &mut out).expect_err("bad header");
        assert_eq!(e.line, 1);
        let text = "id\tclass\tkind\tproject\tfile\tversions\tlogger\ttemplate\tformat\na\tbenign\tfail\tp\tf\tv\tplain\tt\tf\n";
        let e = parse("t.tsv", text, &mut out).expect_err("benign fail");
        assert_eq!((e.table, e.line), ("t.tsv", 2));
        assert!(
            e.to_string().starts_with("triggers/formats/t.tsv:2: "),
            "{e}"
        );
    }
}
