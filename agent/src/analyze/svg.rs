//! The picture of a capture (`tripcap analyze FILE --svg OUT`, and `<stem>.svg` beside every
//! capture the agent writes): one SVG that reads at a glance in a browser.
//!
//! From top to bottom, on one time axis (seconds relative to the trigger, or to the first
//! packet when there is none):
//! 1. throughput in Gbit/s per timeline bin, with the trigger instant (red) and the
//!    back-dated onset (orange) as vertical lines;
//! 2. one row of markers per event kind: retransmissions (go-back-N and re-sent requests),
//!    NAKs, CNPs, PFC/PAUSE XOFF frames, ARP packets;
//! 3. one lane per busy queue pair (worst first, at most [`MAX_LANES`], the caption saying
//!    how many were left out): a bar from its first to its last packet, its silences cut out
//!    of it (red when requests were outstanding: a stall; grey when idle), and its own
//!    retransmission/NAK/CNP markers.
//!
//! 4. with a baseline (`--baseline`, or the agent's), lines of text: where it came from
//!    and the worst [`MAX_DEVIATIONS`] metrics that left their band.
//!
//! Drawn with `plotters`' SVG backend without font libraries: text goes into the SVG as
//! plain `<text>` elements that the browser renders, so no system fonts are needed here.
//! Large captures stay small: the throughput line is averaged down to at most
//! [`MAX_POINTS`] points and at most one marker is drawn per pixel column and row.

use plotters::coord::{types::RangedCoordf64, Shift};
use plotters::prelude::*;

use super::connections::{EventKind, Report};
use super::context::Reference;

/// Width of the picture in pixels.
pub const WIDTH: u32 = 1400;
/// Queue pairs drawn as lanes at most.
pub const MAX_LANES: usize = 16;
/// Points of the throughput line at most.
pub const MAX_POINTS: usize = 2000;
/// Metrics that left their baseline band written under the picture at most.
pub const MAX_DEVIATIONS: usize = 5;

const LEFT: u32 = 260;
const TOP_H: u32 = 330;
const ROW_H: u32 = 24;

const KINDS: [(EventKind, &str, RGBColor); 5] = [
    (
        EventKind::Retransmit,
        "retransmission",
        RGBColor(200, 30, 30),
    ),
    (EventKind::Nak, "NAK", RGBColor(150, 0, 150)),
    (EventKind::Cnp, "CNP", RGBColor(230, 130, 0)),
    (EventKind::Pause, "PFC/PAUSE", RGBColor(0, 110, 200)),
    (EventKind::Arp, "ARP", RGBColor(0, 150, 80)),
];
const TRIGGER: RGBColor = RGBColor(220, 0, 0);
const ONSET: RGBColor = RGBColor(255, 140, 0);
const LANE: RGBColor = RGBColor(120, 170, 230);
const STALL: RGBColor = RGBColor(230, 40, 40);
const IDLE: RGBColor = RGBColor(225, 225, 225);

/// Draws the report; returns the SVG document.
pub fn render(r: &Report) -> Result<String, String> {
    let mut buf = String::new();
    draw(r, &mut buf).map_err(|e| e.to_string())?;
    Ok(buf)
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;
type Area<'b> = DrawingArea<SVGBackend<'b>, Shift>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The shared time axis: seconds from `t0` (the trigger, else the first packet), drawn
/// from `x0` to `x1`.
struct Axis<'r> {
    reference: Option<&'r Reference>,
    t0: i64,
    x0: f64,
    x1: f64,
    is_trigger: bool,
}

impl<'r> Axis<'r> {
    /// The capture's span (and the trigger and onset, when there is one), padded by 1%.
    fn of(r: &'r Report) -> Axis<'r> {
        let reference = r.reference.as_ref();
        let mut axis = Axis {
            reference,
            t0: reference.map_or(r.first_ns, |x| x.at_ns),
            x0: 0.0,
            x1: 0.0,
            is_trigger: reference.is_some_and(|x| x.kind == "trigger"),
        };
        let mut x0 = axis.sec(r.first_ns);
        let mut x1 = axis.sec(r.last_ns);
        if axis.is_trigger {
            x0 = x0.min(0.0);
            x1 = x1.max(0.0);
            if let Some(o) = reference.and_then(|x| x.onset_ns) {
                x0 = x0.min(axis.sec(o));
            }
        }
        if x1 - x0 < 1e-3 {
            x1 = x0 + 1e-3;
        }
        let pad = (x1 - x0) * 0.01;
        (axis.x0, axis.x1) = (x0 - pad, x1 + pad);
        axis
    }

    /// Seconds from `t0`.
    fn sec(&self, ts: i64) -> f64 {
        (ts - self.t0) as f64 / 1e9
    }

    /// The trigger, when times are relative to one.
    fn trigger(&self) -> Option<&'r Reference> {
        self.reference.filter(|x| x.kind == "trigger")
    }

    fn x_desc(&self) -> &'static str {
        if self.is_trigger {
            "seconds from the trigger"
        } else {
            "seconds"
        }
    }
}

fn draw(r: &Report, buf: &mut String) -> DrawResult {
    let axis = Axis::of(r);
    let busy: Vec<usize> = (0..r.connections.len())
        .filter(|&i| r.connections[i].packets >= 2)
        .collect();
    let lanes = &busy[..busy.len().min(MAX_LANES)];
    let rows = KINDS.len() + lanes.len();
    let bottom_h = 50 + ROW_H * rows as u32 + 40;
    let mut lines = verdict_lines(r);
    lines.extend(baseline_lines(r));
    let base_h = if lines.is_empty() {
        0
    } else {
        10 + LINE_H * lines.len() as u32
    };
    let height = TOP_H + bottom_h + base_h;
    {
        let root = SVGBackend::with_string(buf, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, rest) = root.split_vertically(TOP_H);
        draw_throughput(&top, r, &axis)?;
        let (bottom, below) = rest.split_vertically(bottom_h);
        draw_rows(&bottom, r, &axis, lanes, busy.len())?;
        for (i, (text, bad)) in lines.iter().enumerate() {
            let color = if *bad { TRIGGER } else { BLACK };
            below.draw(&Text::new(
                text.clone(),
                (10, (LINE_H * i as u32) as i32 + 4),
                ("sans-serif", 15).into_font().color(&color),
            ))?;
        }
        root.present()?;
    }
    Ok(())
}

/// Height of a line of text under the picture.
const LINE_H: u32 = 20;

/// Characters of a line under the picture before it wraps.
const LINE_CHARS: usize = 150;

/// "Why slow": the verdict's limiter and evidence under the picture (flagged when
/// something limits), wrapped at word boundaries; nothing without RoCE data.
fn verdict_lines(r: &Report) -> Vec<(String, bool)> {
    let v = &r.throughput.verdict;
    if r.throughput.link.is_none() || r.throughput.directions.is_empty() {
        return Vec::new();
    }
    let text = format!("Why slow: {}: {}", v.limiter.replace('_', " "), v.evidence);
    let bad = v.limiter != "none";
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > LINE_CHARS {
            lines.push((std::mem::take(&mut line), bad));
            line.push_str("   ");
        } else if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push((line, bad));
    lines
}

/// The lines under the picture when the report has a baseline: where it came from,
/// then the worst [`MAX_DEVIATIONS`] metrics that left their band (flagged `true`), or
/// that none did.
fn baseline_lines(r: &Report) -> Vec<(String, bool)> {
    let Some(b) = &r.baseline else {
        return Vec::new();
    };
    let mut lines = vec![(format!("Against the baseline ({})", b.source_text()), false)];
    if let Some(note) = &b.note {
        lines.push((format!("  {note}"), false));
    }
    if b.deviations.is_empty() {
        lines.push((
            format!(
                "  every metric within its band ({} compared)",
                b.metrics.len()
            ),
            false,
        ));
    }
    for d in b.deviations.iter().take(MAX_DEVIATIONS) {
        lines.push((format!("  {}", d.text), true));
    }
    if b.deviations.len() > MAX_DEVIATIONS {
        lines.push((
            format!(
                "  and {} more (see the summary)",
                b.deviations.len() - MAX_DEVIATIONS
            ),
            false,
        ));
    }
    lines
}

/// The top part (1): throughput, averaged down to at most [`MAX_POINTS`] points, with
/// the trigger and onset lines.
fn draw_throughput(area: &Area<'_>, r: &Report, axis: &Axis<'_>) -> DrawResult {
    let t = &r.timeline;
    let n = t.packets.len();
    let group = n.div_ceil(MAX_POINTS).max(1);
    let bin_s = t.bin_ns() as f64 / 1e9;
    let points: Vec<(f64, f64)> = (0..n)
        .step_by(group)
        .map(|i| {
            let end = (i + group).min(n);
            let gbps = (i..end).map(|j| t.gbps(j)).sum::<f64>() / (end - i) as f64;
            (
                axis.sec(t.start_ns) + (i as f64 + (end - i) as f64 / 2.0) * bin_s,
                gbps,
            )
        })
        .collect();
    let ymax = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-6) * 1.1;
    let title = match axis.reference {
        Some(x) if x.kind == "trigger" => format!(
            "throughput ({} ms bins); trigger `{}` at T=0",
            t.bin_ms, x.name
        ),
        _ => format!(
            "throughput ({} ms bins); no trigger, t=0 is the first packet",
            t.bin_ms
        ),
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(LEFT - 10)
        .build_cartesian_2d(axis.x0..axis.x1, 0f64..ymax)?;
    chart
        .configure_mesh()
        .x_desc(axis.x_desc())
        .y_desc("Gbit/s")
        .light_line_style(RGBColor(240, 240, 240))
        .draw()?;
    chart.draw_series(LineSeries::new(points, BLUE.stroke_width(2)))?;
    if let Some(x) = axis.trigger() {
        let mut mark = |at: f64, color: RGBColor, label: &str| -> DrawResult {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(at, 0.0), (at, ymax)],
                color.stroke_width(2),
            )))?;
            chart.draw_series(std::iter::once(Text::new(
                label.to_owned(),
                (at, ymax * 0.97),
                ("sans-serif", 14).into_font().color(&color),
            )))?;
            Ok(())
        };
        if let Some(o) = x.onset_ns {
            mark(axis.sec(o), ONSET, " onset")?;
        }
        mark(0.0, TRIGGER, " trigger")?;
    }
    Ok(())
}

/// The bottom part (2 and 3): event rows and queue-pair lanes (connections `lanes` of
/// `busy`) on one categorical y axis.
fn draw_rows(
    area: &Area<'_>,
    r: &Report,
    axis: &Axis<'_>,
    lanes: &[usize],
    busy: usize,
) -> DrawResult {
    let rows = KINDS.len() + lanes.len();
    let labels: Vec<String> = KINDS
        .iter()
        .map(|k| k.1.to_owned())
        .chain(lanes.iter().map(|&i| {
            let c = &r.connections[i];
            format!("{}>{} {}", c.src, c.dst, c.dest_qp)
        }))
        .collect();
    let rows_f = rows as f64;
    let mut caption = String::from(
        "events, and queue pairs (blue: active, red: stalled with requests outstanding, grey: idle)",
    );
    if busy > lanes.len() {
        caption.push_str(&format!(
            "; {} of {} queue pairs drawn, the worst first: all are in the JSON report",
            lanes.len(),
            busy
        ));
    }
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 15))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(LEFT - 10)
        .build_cartesian_2d(axis.x0..axis.x1, 0f64..rows_f)?;
    let label_of = |y: &f64| {
        let row = (rows_f - y - 0.5).round();
        if (rows_f - y - 0.5 - row).abs() < 1e-6 && row >= 0.0 {
            labels.get(row as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(rows * 2 + 1)
        .y_label_formatter(&label_of)
        .x_desc(axis.x_desc())
        .light_line_style(RGBColor(245, 245, 245))
        .draw()?;
    draw_lanes(&mut chart, r, axis, lanes, rows_f)?;
    draw_markers(&mut chart, r, axis, lanes, rows_f)?;
    if let Some(x) = axis.trigger() {
        let line = |at: f64, color: RGBColor| {
            PathElement::new(vec![(at, 0.0), (at, rows_f)], color.stroke_width(1))
        };
        if let Some(o) = x.onset_ns {
            chart.draw_series(std::iter::once(line(axis.sec(o), ONSET)))?;
        }
        chart.draw_series(std::iter::once(line(0.0, TRIGGER)))?;
    }
    Ok(())
}

/// Row centre of row `k` (0 = top) of `rows_f` rows.
fn y_of(rows_f: f64, k: usize) -> f64 {
    rows_f - k as f64 - 0.5
}

/// The lanes (3): a bar from a connection's first to its last packet, its silences cut
/// out of it, and the length of its first stall.
fn draw_lanes(
    chart: &mut Chart<'_, '_>,
    r: &Report,
    axis: &Axis<'_>,
    lanes: &[usize],
    rows_f: f64,
) -> DrawResult {
    for (k, &i) in lanes.iter().enumerate() {
        let c = &r.connections[i];
        let y = y_of(rows_f, KINDS.len() + k);
        chart.draw_series(std::iter::once(Rectangle::new(
            [
                (axis.sec(c.first_ns), y - 0.3),
                (axis.sec(c.last_ns), y + 0.3),
            ],
            LANE.filled(),
        )))?;
        chart.draw_series(c.silences.iter().map(|s| {
            Rectangle::new(
                [
                    (axis.sec(s.start_ns), y - 0.3),
                    (axis.sec(s.end_ns), y + 0.3),
                ],
                if s.outstanding {
                    STALL.filled()
                } else {
                    IDLE.filled()
                },
            )
        }))?;
        if let Some(s) = c.silences.iter().find(|s| s.outstanding) {
            chart.draw_series(std::iter::once(Text::new(
                format!(" {:.0} ms", s.ms),
                (axis.sec(s.start_ns), y + 0.45),
                ("sans-serif", 11).into_font().color(&STALL),
            )))?;
        }
    }
    Ok(())
}

/// The event markers (2), in their kind's row and in their lane: at most one per pixel
/// column and row.
fn draw_markers(
    chart: &mut Chart<'_, '_>,
    r: &Report,
    axis: &Axis<'_>,
    lanes: &[usize],
    rows_f: f64,
) -> DrawResult {
    let width_px = f64::from(WIDTH - LEFT - 20);
    let px = |x: f64| ((x - axis.x0) / (axis.x1 - axis.x0) * width_px) as i64;
    for (k, (kind, _, color)) in KINDS.iter().enumerate() {
        let mut last_px = i64::MIN;
        let mut lane_px = vec![i64::MIN; lanes.len()];
        let mut marks = Vec::new();
        for e in r.events.iter().filter(|e| e.kind == *kind) {
            let x = axis.sec(e.ts);
            let p = px(x);
            if p != last_px {
                last_px = p;
                marks.push((x, y_of(rows_f, k)));
            }
            if let Some(lane) = e.conn.and_then(|c| lanes.iter().position(|&l| l == c)) {
                if lane_px[lane] != p {
                    lane_px[lane] = p;
                    marks.push((x, y_of(rows_f, KINDS.len() + lane)));
                }
            }
        }
        chart.draw_series(
            marks
                .into_iter()
                .map(|(x, y)| TriangleMarker::new((x, y), 5, color.filled())),
        )?;
    }
    Ok(())
}
