//! PNG charts of the simulator's time series.
//!
//! A [`Figure`] is a title, a caption that says how to read it, one legend shared by every panel (a colour
//! means the same server, or the same policy, in all of them), and a grid of [`Panel`]s over one x range. A
//! line breaks where a value is missing (a non-finite y) and is never drawn across the gap, so "no data" never
//! looks like a value; a panel's optional lanes, a thin strip per series under the plot, show where each one
//! had data at all, even where the lines lie on top of each other.
//!
//! plotters draws into an RGB buffer that `png` encodes. Text is DejaVu Sans, embedded by the `dejavu` crate and
//! rasterised by ab_glyph, so charts render the same on a machine with no fonts and no fontconfig, and identical
//! input gives identical bytes, which the simulator's byte-identical reports rely on.

use std::{error::Error, fmt, fs, ops::Range, path::Path, sync::OnceLock};

use plotters::{
    coord::{
        ranged1d::{DefaultFormatting, KeyPointHint},
        types::RangedCoordf64,
        Shift,
    },
    element::DashedPathElement,
    prelude::*,
    style::{
        register_font,
        text_anchor::{HPos, Pos, VPos},
        FontStyle,
    },
};

/// Width of every figure in pixels. The README shows charts 800 to 1000 px wide: the font sizes below stay
/// legible (ticks at 11 px or more) when the image is scaled down that far.
pub const WIDTH: u32 = 1100;
/// The family name plotters asks for by default; the embedded font is registered under it.
const FONT: &str = "sans-serif";
/// Font sizes in pixels: the figure's title, its caption and legend, a panel's title, axis descriptions, ticks.
const TITLE_FONT: u32 = 26;
const TEXT_FONT: u32 = 16;
const PANEL_FONT: u32 = 17;
const AXIS_FONT: u32 = 16;
const TICK_FONT: u32 = 15;
/// Left and right margin of the header's text.
const MARGIN: i32 = 16;
/// Height of a caption line and of a legend row.
const LINE_HEIGHT: u32 = 24;
/// Width of a legend key's mark, and the gaps after the mark and after the label.
const MARK_WIDTH: i32 = 30;
const MARK_GAP: i32 = 6;
const KEY_GAP: i32 = 22;
/// Share of a panel's height that its lanes take at most, and the height of one lane at most (both as shares
/// of the plotted range): thin enough to leave the plot most of the panel with ten lanes.
const LANES_SHARE: f64 = 0.3;
const LANE_SHARE: f64 = 0.045;
/// Light grey of the grid lines, and the dark grey of the caption.
const GRID: RGBColor = RGBColor(225, 225, 225);
const CAPTION: RGBColor = RGBColor(70, 70, 70);

/// An RGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// Grey, for legend keys that explain an encoding rather than name a series.
pub const GREY: Rgb = Rgb(110, 110, 110);

/// Line colours, distinct for up to 12 series (matplotlib's tab10, then black and indigo); more cycle.
const PALETTE: [Rgb; 12] = [
    Rgb(31, 119, 180),
    Rgb(255, 127, 14),
    Rgb(44, 160, 44),
    Rgb(214, 39, 40),
    Rgb(148, 103, 189),
    Rgb(140, 86, 75),
    Rgb(227, 119, 194),
    Rgb(127, 127, 127),
    Rgb(188, 189, 34),
    Rgb(23, 190, 207),
    Rgb(0, 0, 0),
    Rgb(107, 110, 207),
];

/// The `index`th colour of the palette (cycling).
pub fn color(index: usize) -> Rgb {
    PALETTE[index % PALETTE.len()]
}

impl From<Rgb> for RGBColor {
    fn from(Rgb(r, g, b): Rgb) -> RGBColor {
        RGBColor(r, g, b)
    }
}

/// How a series' line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stroke {
    /// A solid line; a lone point is a dot.
    Solid,
    /// A dashed line; a lone point draws nothing, so give a dashed stretch its two ends.
    Dashed,
}

/// One line of a panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The line's colour; the figure's legend says what it stands for.
    pub color: Rgb,
    /// Solid or dashed.
    pub stroke: Stroke,
    /// Line width in pixels.
    pub width: u32,
    /// `(x, y)` samples in drawing order. A point with a non-finite coordinate is a gap: the line stops before
    /// it and starts again after it ([`segments`]).
    pub points: Vec<(f64, f64)>,
}

/// One lane of a panel: a thin strip under the plot, filled in its colour over `spans` and blank elsewhere.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// The strip's colour, that of the series it belongs to.
    pub color: Rgb,
    /// `(from, to)` x spans to fill.
    pub spans: Vec<(f64, f64)>,
}

/// A panel's y scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Logarithmic: values at or below zero are gaps.
    Log,
}

/// One chart of the grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Drawn above the panel, e.g. "weir-lowest-score (default): requests/s".
    pub title: String,
    /// The y axis' description, with its unit, e.g. "success %".
    pub y_label: String,
    /// Fixed y range, so panels of one metric compare at a glance (values outside are drawn at its edge);
    /// `None` spans 0 (or the minimum, if negative) to the data's maximum plus 5 % on a linear scale, and the
    /// data's positive values with a margin on a log scale.
    pub y_range: Option<(f64, f64)>,
    /// Linear or log.
    pub scale: Scale,
    /// The lines, drawn in order (the last on top).
    pub series: Vec<Series>,
    /// The lanes under the plot, top to bottom; none leaves the plot the whole panel.
    pub lanes: Vec<Lane>,
}

/// What a legend key shows beside its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// A solid line of this colour and width.
    Line(Rgb, u32),
    /// A dashed line.
    Dashed(Rgb),
    /// A filled box, as a lane is filled.
    Filled(Rgb),
    /// An empty box, as a lane is blank.
    Empty,
}

/// One entry of a figure's legend.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// The mark.
    pub mark: Mark,
    /// What it stands for.
    pub label: String,
}

/// A whole image: title, caption, legend and panels.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// The title, e.g. the scenario's name and what the figure shows.
    pub title: String,
    /// How to read the figure, wrapped to the figure's width.
    pub caption: String,
    /// The x axis' description, with its unit.
    pub x_label: String,
    /// The x range of every panel; `None` spans the data.
    pub x_range: Option<(f64, f64)>,
    /// Panels per row (rows as needed); the figure is [`WIDTH`] wide whatever the count.
    pub columns: usize,
    /// Height of one panel in pixels.
    pub panel_height: u32,
    /// The legend shared by every panel, drawn under the caption, wrapped to the width.
    pub legend: Vec<Key>,
    /// The panels, row by row.
    pub panels: Vec<Panel>,
}

/// Why a chart could not be rendered or written.
#[derive(Debug)]
pub struct ChartError(String);

impl fmt::Display for ChartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chart: {}", self.0)
    }
}

impl Error for ChartError {}

/// Wraps a plotters, png or io error; their types differ but all the report needs is the message.
fn fail(error: impl fmt::Display) -> ChartError {
    ChartError(error.to_string())
}

/// Renders `figure` and writes it as a PNG file at `path`.
///
/// # Errors
///
/// As [`encode`], and when writing the file fails.
pub fn render(path: &Path, figure: &Figure) -> Result<(), ChartError> {
    let png = encode(figure)?;
    fs::write(path, png).map_err(|e| fail(format!("writing {}: {e}", path.display())))
}

/// Renders `figure` into PNG bytes. All panels share the x range of all the data, so that one moment of the
/// run lines up down a column.
///
/// # Errors
///
/// When `columns` is 0, `panels` is empty, a `y_range` is not a finite increasing pair (positive on a log
/// scale), the image would be too large, or drawing or encoding fails.
pub fn encode(figure: &Figure) -> Result<Vec<u8>, ChartError> {
    if figure.columns == 0 {
        return Err(fail("a grid needs at least one column"));
    }
    if figure.panels.is_empty() {
        return Err(fail("no panels to draw"));
    }
    let axes = figure
        .panels
        .iter()
        .map(YAxis::of)
        .collect::<Result<Vec<_>, _>>()?;
    register_fonts()?;
    let columns = figure.columns.min(figure.panels.len());
    let rows = figure.panels.len().div_ceil(columns);
    let caption = wrap(&figure.caption, WIDTH as i32 - 2 * MARGIN)?;
    let legend = legend_rows(&figure.legend)?;
    let header = 12 + TITLE_FONT + 12 + LINE_HEIGHT * (caption.len() + legend.len()) as u32 + 8;
    let height = u32::try_from(rows)
        .ok()
        .and_then(|r| r.checked_mul(figure.panel_height)?.checked_add(header))
        .filter(|&h| h <= 16 * WIDTH)
        .ok_or_else(|| fail(format!("a grid of {rows} rows is too tall")))?;
    let x_range = match figure.x_range {
        Some((lo, hi)) if lo.is_finite() && hi.is_finite() && lo < hi => lo..hi,
        Some((lo, hi)) => {
            return Err(fail(format!(
                "x range {lo}..{hi} is not a finite increasing pair"
            )))
        }
        None => x_range(&figure.panels),
    };

    let mut pixels = vec![0; WIDTH as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let (top, grid) = root.split_vertically(header);
        draw_header(&top, &figure.title, &caption, &legend)?;
        for ((area, panel), axis) in grid
            .split_evenly((rows, columns))
            .iter()
            .zip(&figure.panels)
            .zip(axes)
        {
            draw_panel(area, panel, axis, &figure.x_label, x_range.clone())?;
        }
        root.present().map_err(fail)?;
    }

    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, WIDTH, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(fail)?;
    writer.write_image_data(&pixels).map_err(fail)?;
    writer.finish().map_err(fail)?;
    Ok(png)
}

/// Registers the embedded fonts with plotters once per process; plotters keeps them in a global table.
fn register_fonts() -> Result<(), ChartError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let registered = *REGISTERED.get_or_init(|| {
        register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok()
            && register_font(FONT, FontStyle::Bold, dejavu::sans::bold()).is_ok()
    });
    registered
        .then_some(())
        .ok_or_else(|| fail("the embedded DejaVu Sans font did not load"))
}

/// The pieces of a line between gaps: the runs of points whose coordinates are both finite, in order, each
/// with at least one point. A line is drawn per piece, so nothing is ever drawn across a gap.
pub fn segments(points: &[(f64, f64)]) -> impl Iterator<Item = &[(f64, f64)]> {
    points
        .split(|(x, y)| !(x.is_finite() && y.is_finite()))
        .filter(|piece| !piece.is_empty())
}

/// Width in pixels of `text` in the normal font of `size`.
fn text_width(text: &str, size: u32) -> Result<i32, ChartError> {
    let (w, _) = (FONT, size).into_font().box_size(text).map_err(fail)?;
    Ok(i32::try_from(w).unwrap_or(i32::MAX))
}

/// `text` broken into lines at most `width` pixels wide (a word wider than that gets a line of its own).
fn wrap(text: &str, width: i32) -> Result<Vec<String>, ChartError> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if text_width(&format!("{line} {word}"), TEXT_FONT)? <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    Ok(lines)
}

/// The legend's keys in rows that fit the figure's width, each key with its x offset.
fn legend_rows(keys: &[Key]) -> Result<Vec<Vec<(i32, &Key)>>, ChartError> {
    let mut rows: Vec<Vec<(i32, &Key)>> = Vec::new();
    let mut x = MARGIN;
    for key in keys {
        let width = MARK_WIDTH + MARK_GAP + text_width(&key.label, TEXT_FONT)?;
        match rows.last_mut() {
            Some(row) if x + width <= WIDTH as i32 - MARGIN => row.push((x, key)),
            _ => {
                x = MARGIN;
                rows.push(vec![(x, key)]);
            }
        }
        x += width + KEY_GAP;
    }
    Ok(rows)
}

/// Draws the title, the caption's lines and the legend's rows, top to bottom.
fn draw_header(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    title: &str,
    caption: &[String],
    legend: &[Vec<(i32, &Key)>],
) -> Result<(), ChartError> {
    let bold = (FONT, TITLE_FONT, FontStyle::Bold).into_font();
    area.draw(&Text::new(title, (MARGIN, 12), bold))
        .map_err(fail)?;
    let mut y = 12 + TITLE_FONT as i32 + 12;
    let text = (FONT, TEXT_FONT).into_font();
    for line in caption {
        area.draw(&Text::new(line.as_str(), (MARGIN, y), text.color(&CAPTION)))
            .map_err(fail)?;
        y += LINE_HEIGHT as i32;
    }
    for row in legend {
        for &(x, key) in row {
            let mid = y + TEXT_FONT as i32 / 2 + 1;
            let (left, right) = (x + 2, x + MARK_WIDTH - 2);
            match key.mark {
                Mark::Line(c, width) => area.draw(&PathElement::new(
                    [(left, mid), (right, mid)],
                    RGBColor::from(c).stroke_width(width.max(3)),
                )),
                Mark::Dashed(c) => area.draw(&DashedPathElement::new(
                    [(left, mid), (right, mid)],
                    6,
                    4,
                    RGBColor::from(c).stroke_width(3),
                )),
                Mark::Filled(c) => area.draw(&Rectangle::new(
                    [(left, mid - 4), (right, mid + 4)],
                    RGBColor::from(c).filled(),
                )),
                Mark::Empty => area.draw(&Rectangle::new(
                    [(left, mid - 4), (right, mid + 4)],
                    RGBColor::from(GREY).stroke_width(1),
                )),
            }
            .map_err(fail)?;
            area.draw(&Text::new(
                key.label.as_str(),
                (x + MARK_WIDTH + MARK_GAP, y),
                text.clone(),
            ))
            .map_err(fail)?;
        }
        y += LINE_HEIGHT as i32;
    }
    Ok(())
}

/// The span of an axis over `values`, or `None` when there are none.
fn span(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |span, v| match span {
        None => Some((v, v)),
        Some((lo, hi)) => Some((f64::min(lo, v), f64::max(hi, v))),
    })
}

/// The finite points of a panel's series, lanes' spans included (as points at y = NaN would be skipped, they
/// carry no y).
fn finite_xs(panel: &Panel) -> impl Iterator<Item = f64> + '_ {
    let lines = panel
        .series
        .iter()
        .flat_map(|s| segments(&s.points))
        .flatten();
    let lanes = panel
        .lanes
        .iter()
        .flat_map(|l| &l.spans)
        .flat_map(|&(a, b)| [a, b]);
    lines
        .map(|&(x, _)| x)
        .chain(lanes)
        .filter(|x| x.is_finite())
}

/// The x range shared by all panels: the data's, widened to a unit when it is empty or a single instant.
fn x_range(panels: &[Panel]) -> Range<f64> {
    match span(panels.iter().flat_map(finite_xs)) {
        Some((lo, hi)) if hi > lo => lo..hi,
        Some((lo, _)) => lo..lo + 1.0,
        None => 0.0..1.0,
    }
}

/// Ticks at multiples of a 1-2-5 step, about `count` of them over `range`, and the decimals their labels
/// need. The step is found by multiplying and dividing by ten only, so 0.1 is the same double everywhere.
fn linear_ticks(range: &Range<f64>, count: f64) -> (Vec<f64>, usize) {
    let raw = (range.end - range.start) / count;
    if !(raw.is_finite() && raw > 0.0) {
        return (Vec::new(), 0);
    }
    let (mut unit, mut exponent) = (1.0_f64, 0_i32);
    while unit > raw && exponent > -300 {
        unit /= 10.0;
        exponent -= 1;
    }
    while unit * 10.0 <= raw && exponent < 300 {
        unit *= 10.0;
        exponent += 1;
    }
    // A step a little under the raw one is closer to `count` ticks than the next one up (52.5 → 50, not 100).
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * unit)
        .find(|&s| s >= raw * 0.75)
        .unwrap_or(10.0 * unit);
    let decimals = if step >= 1.0 {
        0
    } else {
        exponent.unsigned_abs() as usize
    };
    let first = (range.start / step).ceil() as i64;
    let last = (range.end / step).floor() as i64;
    let ticks = (first..=last.min(first + 100))
        .map(|k| k as f64 * step)
        .collect();
    (ticks, decimals)
}

/// Ticks over a positive `range` on a log scale: 1, 2 and 5 times the powers of ten inside it (ends
/// included), or the powers alone when that makes more than ten (three decades); each with the decimals its
/// label needs.
fn log_ticks(range: &Range<f64>) -> Vec<(f64, usize)> {
    let dense = ladder(range, &[1.0, 2.0, 5.0]);
    if dense.len() <= 10 {
        dense
    } else {
        ladder(range, &[1.0])
    }
}

/// `multiples` of the powers of ten within a positive `range` (ends included), ascending, each with the
/// decimals its label needs. The powers are found by multiplying and dividing by ten only.
fn ladder(range: &Range<f64>, multiples: &[f64]) -> Vec<(f64, usize)> {
    let (mut power, mut exponent) = (1.0_f64, 0_i32);
    while power > range.start && exponent > -300 {
        power /= 10.0;
        exponent -= 1;
    }
    while power * 10.0 <= range.start && exponent < 300 {
        power *= 10.0;
        exponent += 1;
    }
    let mut ticks = Vec::new();
    while power <= range.end && ticks.len() < 100 {
        for &m in multiples {
            let v = m * power;
            if range.start <= v && v <= range.end {
                ticks.push((v, exponent.min(0).unsigned_abs() as usize));
            }
        }
        power *= 10.0;
        exponent += 1;
    }
    ticks
}

/// A tick label: `value` to at most `decimals` places without trailing zeros, so 0..5 reads "1", not "1.0".
fn tick(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// A panel's y axis as drawn: the plotted range and the ticks in drawn units (log10 of the value on a log
/// scale) with their labels.
struct YAxis {
    scale: Scale,
    range: Range<f64>,
    ticks: Vec<(f64, String)>,
}

impl YAxis {
    fn of(panel: &Panel) -> Result<YAxis, ChartError> {
        let invalid = |lo: f64, hi: f64| {
            fail(format!(
                "panel {:?}: y range {lo}..{hi} is not a finite increasing pair{}",
                panel.title,
                if panel.scale == Scale::Log {
                    " above 0"
                } else {
                    ""
                }
            ))
        };
        let ys = || {
            panel
                .series
                .iter()
                .flat_map(|s| segments(&s.points))
                .flatten()
                .map(|&(_, y)| y)
        };
        match panel.scale {
            Scale::Linear => {
                let range = match panel.y_range {
                    Some((lo, hi)) if lo.is_finite() && hi.is_finite() && lo < hi => lo..hi,
                    Some((lo, hi)) => return Err(invalid(lo, hi)),
                    None => {
                        let (lo, hi) =
                            span(ys()).map_or((0.0, 0.0), |(lo, hi)| (lo.min(0.0), hi.max(0.0)));
                        if hi > lo {
                            lo..hi + (hi - lo) * 0.05
                        } else {
                            lo..lo + 1.0
                        }
                    }
                };
                let (ticks, decimals) = linear_ticks(&range, 5.0);
                Ok(YAxis {
                    scale: Scale::Linear,
                    ticks: ticks.into_iter().map(|v| (v, tick(v, decimals))).collect(),
                    range,
                })
            }
            Scale::Log => {
                let range = match panel.y_range {
                    Some((lo, hi)) if lo > 0.0 && hi.is_finite() && lo < hi => lo..hi,
                    Some((lo, hi)) => return Err(invalid(lo, hi)),
                    // Out to the 1-2-5 ticks beyond the data, so both ends are labelled.
                    None => match span(ys().filter(|&y| y > 0.0)) {
                        Some((lo, hi)) => {
                            let ladder = ladder(&(lo / 10.0..hi * 10.0), &[1.0, 2.0, 5.0]);
                            let below = ladder.iter().rev().find(|&&(v, _)| v <= lo / 1.1);
                            let above = ladder.iter().find(|&&(v, _)| v >= hi * 1.1);
                            below.map_or(lo / 1.1, |t| t.0)..above.map_or(hi * 1.1, |t| t.0)
                        }
                        None => 1.0..10.0,
                    },
                };
                Ok(YAxis {
                    scale: Scale::Log,
                    ticks: log_ticks(&range)
                        .into_iter()
                        .map(|(v, decimals)| (v.log10(), tick(v, decimals)))
                        .collect(),
                    range: range.start.log10()..range.end.log10(),
                })
            }
        }
    }

    /// Where `y` is drawn: itself, or its log10 on a log scale (NaN, a gap, for a value at or below 0).
    fn place(&self, y: f64) -> f64 {
        match self.scale {
            Scale::Linear => y,
            Scale::Log if y > 0.0 => y.log10(),
            Scale::Log => f64::NAN,
        }
    }

    /// The label of the tick nearest `y` (the mesh asks for exactly the ticks' positions).
    fn label(&self, y: f64) -> String {
        self.ticks
            .iter()
            .min_by(|a, b| (a.0 - y).abs().total_cmp(&(b.0 - y).abs()))
            .map_or_else(String::new, |(_, label)| label.clone())
    }
}

/// A linear axis with the ticks (and grid lines) given, rather than chosen by plotters: round numbers on every
/// panel, and none in the part of the axis that holds the lanes.
struct Ticked {
    linear: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn new(range: Range<f64>, ticks: Vec<f64>) -> Ticked {
        Ticked {
            linear: range.into(),
            ticks,
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.linear.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Only the bold points: the mesh asks again allowing light points, for light grid lines it has none.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.linear.range()
    }
}

/// Draws one panel: its title, axes, grid, lines and, under the plot, its lanes.
fn draw_panel(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    panel: &Panel,
    axis: YAxis,
    x_label: &str,
    x_range: Range<f64>,
) -> Result<(), ChartError> {
    let height = axis.range.end - axis.range.start;
    let lanes = panel.lanes.len() as f64;
    let lane = height * LANE_SHARE.min(LANES_SHARE / lanes.max(1.0));
    // The lanes sit below the plotted range, under a gap of half a lane, in a part of the axis with no ticks.
    let bottom = if panel.lanes.is_empty() {
        axis.range.start
    } else {
        axis.range.start - lane * (lanes + 0.5)
    };
    let x_range_start = x_range.start;
    let (x_ticks, x_decimals) = linear_ticks(&x_range, 8.0);
    let y_ticks = axis.ticks.iter().map(|&(v, _)| v).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, PANEL_FONT, FontStyle::Bold))
        .margin_top(4)
        .margin_bottom(4)
        .margin_left(4)
        .margin_right(20)
        .x_label_area_size(48)
        .y_label_area_size(68)
        .build_cartesian_2d(
            Ticked::new(x_range, x_ticks),
            Ticked::new(bottom..axis.range.end, y_ticks),
        )
        .map_err(fail)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(&panel.y_label)
        .label_style((FONT, TICK_FONT))
        .axis_desc_style((FONT, AXIS_FONT))
        .x_label_formatter(&|&x| tick(x, x_decimals))
        .y_label_formatter(&|&y| axis.label(y))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(fail)?;

    if !panel.lanes.is_empty() {
        // Named on the y axis' side, where the plot's ticks are.
        let (x, y) = chart.backend_coord(&(x_range_start, bottom + lane * lanes / 2.0));
        let (left, top) = area.get_base_pixel();
        let style = (FONT, TICK_FONT)
            .into_font()
            .color(&CAPTION)
            .pos(Pos::new(HPos::Right, VPos::Center));
        area.draw(&Text::new("lanes", (x - left - 6, y - top), style))
            .map_err(fail)?;
    }
    for (i, l) in panel.lanes.iter().enumerate() {
        let top = axis.range.start - lane * (i as f64 + 0.5);
        let color = RGBColor::from(l.color).filled();
        chart
            .draw_series(
                l.spans
                    .iter()
                    .filter(|(a, b)| a < b)
                    .map(|&(a, b)| Rectangle::new([(a, top), (b, top - lane * 0.8)], color)),
            )
            .map_err(fail)?;
    }
    for series in &panel.series {
        let style = RGBColor::from(series.color).stroke_width(series.width);
        let placed: Vec<_> = series
            .points
            .iter()
            .map(|&(x, y)| (x, axis.place(y)))
            .collect();
        for piece in segments(&placed) {
            match (series.stroke, piece) {
                (Stroke::Solid, [point]) => chart.draw_series([Circle::new(
                    *point,
                    series.width + 1,
                    RGBColor::from(series.color).filled(),
                )]),
                (Stroke::Solid, _) => chart.draw_series(LineSeries::new(piece.to_vec(), style)),
                (Stroke::Dashed, _) => {
                    chart.draw_series(DashedLineSeries::new(piece.to_vec(), 7, 5, style))
                }
            }
            .map_err(fail)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A solid line of colour `c` through `points`.
    fn line(c: usize, points: Vec<(f64, f64)>) -> Series {
        Series {
            color: color(c),
            stroke: Stroke::Solid,
            width: 2,
            points,
        }
    }

    /// `count` panels of `servers` sine-ish lines with `samples` points each, every third sample of the first
    /// line a gap, with a lane per line; deterministic.
    fn panels(count: usize, servers: usize, samples: usize) -> Vec<Panel> {
        (0..count)
            .map(|p| Panel {
                title: format!("policy {p}: requests/s"),
                y_label: "requests/s".into(),
                y_range: (p % 2 == 1).then_some((if p % 3 == 2 { 1.0 } else { 0.0 }, 250.0)),
                scale: if p % 3 == 2 {
                    Scale::Log
                } else {
                    Scale::Linear
                },
                series: (0..servers)
                    .map(|s| {
                        line(
                            s,
                            (0..samples)
                                .map(|i| {
                                    let t = i as f64 * 0.5;
                                    let y = 100.0 + 60.0 * (t / 7.0 + (p + s) as f64).sin();
                                    (t, if s == 0 && i % 3 == 2 { f64::NAN } else { y })
                                })
                                .collect(),
                        )
                    })
                    .collect(),
                lanes: (0..servers)
                    .map(|s| Lane {
                        color: color(s),
                        spans: vec![(0.0, samples as f64 * 0.2), (samples as f64 * 0.3, 60.0)],
                    })
                    .collect(),
            })
            .collect()
    }

    fn figure(columns: usize, panels: Vec<Panel>) -> Figure {
        Figure {
            title: "cascade: requests/s and success % per server".into(),
            caption: "A caption long enough to wrap onto a second line at the figure's width, which is what \
                      it says on the tin: a line breaks at a gap and never bridges it, and lanes show traffic."
                .into(),
            x_label: "simulated time (s)".into(),
            x_range: None,
            columns,
            panel_height: 260,
            legend: (0..9)
                .map(|i| Key {
                    mark: match i % 4 {
                        0 => Mark::Line(color(i), 2),
                        1 => Mark::Dashed(GREY),
                        2 => Mark::Filled(GREY),
                        _ => Mark::Empty,
                    },
                    label: format!("server-{i}"),
                })
                .collect(),
            panels,
        }
    }

    /// The (width, height) in a PNG's IHDR chunk.
    fn png_size(bytes: &[u8]) -> (u32, u32) {
        let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        (word(16), word(20))
    }

    #[test]
    fn segments_split_at_gaps_and_drop_empty_pieces() {
        let nan = f64::NAN;
        let points = [
            (0.0, nan),
            (1.0, 1.0),
            (2.0, 2.0),
            (3.0, nan),
            (4.0, f64::INFINITY),
            (5.0, 5.0),
            (nan, 6.0),
            (7.0, 7.0),
            (8.0, 8.0),
        ];
        let pieces: Vec<Vec<f64>> = segments(&points)
            .map(|p| p.iter().map(|&(x, _)| x).collect())
            .collect();
        assert_eq!(pieces, [vec![1.0, 2.0], vec![5.0], vec![7.0, 8.0]]);
        assert_eq!(segments(&[]).count(), 0);
        assert_eq!(segments(&[(0.0, nan), (1.0, nan)]).count(), 0);
    }

    #[test]
    fn ticks_are_round_numbers_and_labels_drop_needless_zeros() {
        assert_eq!(
            linear_ticks(&(0.0..100.0), 5.0),
            (vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0], 0)
        );
        assert_eq!(
            linear_ticks(&(0.0..262.5), 5.0),
            (vec![0.0, 50.0, 100.0, 150.0, 200.0, 250.0], 0)
        );
        assert_eq!(linear_ticks(&(0.0..1.0), 5.0).1, 1);
        assert_eq!(linear_ticks(&(0.0..0.3), 5.0).1, 2);
        assert_eq!(linear_ticks(&(1.0..1.0), 5.0), (vec![], 0));
        let log: Vec<String> = log_ticks(&(0.8..130.0))
            .into_iter()
            .map(|(v, d)| tick(v, d))
            .collect();
        assert_eq!(log, ["1", "2", "5", "10", "20", "50", "100"]);
        let log: Vec<String> = log_ticks(&(0.004..30_000.0))
            .into_iter()
            .map(|(v, d)| tick(v, d))
            .collect();
        assert_eq!(log, ["0.01", "0.1", "1", "10", "100", "1000", "10000"]);
        assert_eq!(tick(150.0, 0), "150");
        assert_eq!(tick(4.0, 1), "4");
        assert_eq!(tick(0.30000000000000004, 2), "0.3");
        assert_eq!(tick(0.15, 2), "0.15");
    }

    #[test]
    fn identical_input_renders_identical_png() {
        let figure = figure(2, panels(8, 3, 120));
        let first = encode(&figure).unwrap();
        let second = encode(&figure.clone()).unwrap();
        assert!(first == second, "two renders of the same figure differ");
        assert_eq!(&first[..8], b"\x89PNG\r\n\x1a\n");
        let (width, height) = png_size(&first);
        assert_eq!(width, WIDTH);
        // 4 rows of 260 px under a header of the title, a wrapped caption and the legend.
        assert!((4 * 260 + 100..4 * 260 + 250).contains(&height), "{height}");
        assert!(first.len() < 400_000, "{} bytes", first.len());
    }

    #[test]
    fn gaps_change_the_picture() {
        let mut figure = figure(1, panels(1, 1, 40));
        figure.panels[0].series[0].points = (0..40).map(|i| (i as f64, 50.0)).collect();
        let whole = encode(&figure).unwrap();
        figure.panels[0].series[0].points[20].1 = f64::NAN;
        let broken = encode(&figure).unwrap();
        assert!(
            whole != broken,
            "a gap in the middle of a line drew nothing different"
        );
    }

    #[test]
    fn partial_last_row_and_narrow_grid() {
        let three = encode(&figure(2, panels(3, 2, 10))).unwrap();
        let two = encode(&figure(5, panels(2, 2, 10))).unwrap();
        let one_row = png_size(&two).1;
        assert_eq!(png_size(&three).1, one_row + 260);
        assert_eq!(png_size(&three).0, WIDTH);
    }

    #[test]
    fn degenerate_data_renders() {
        let mut degenerate = panels(1, 0, 0);
        degenerate[0].series = vec![
            line(0, vec![]),
            line(
                1,
                vec![(f64::NAN, 1.0), (1.0, f64::NAN), (2.0, f64::INFINITY)],
            ),
            line(2, vec![(3.0, 5.0)]),
            line(3, vec![(0.0, 0.0), (1.0, 0.0)]),
            Series {
                stroke: Stroke::Dashed,
                ..line(4, vec![(5.0, 0.0)])
            },
        ];
        degenerate[0].lanes = vec![Lane {
            color: GREY,
            spans: vec![(2.0, 1.0), (f64::NAN, 3.0)],
        }];
        let no_series = Panel {
            series: vec![],
            lanes: vec![],
            ..degenerate[0].clone()
        };
        let all_zero = Panel {
            series: vec![line(0, vec![(0.0, 0.0), (9.0, 0.0)])],
            ..no_series.clone()
        };
        let log_of_nothing = Panel {
            scale: Scale::Log,
            ..all_zero.clone()
        };
        let many = Panel {
            series: (0..15).map(|s| line(s, vec![(0.0, s as f64)])).collect(),
            lanes: (0..15)
                .map(|s| Lane {
                    color: color(s),
                    spans: vec![(0.0, 1.0)],
                })
                .collect(),
            ..no_series.clone()
        };
        for panel in [
            degenerate[0].clone(),
            no_series,
            all_zero,
            log_of_nothing,
            many,
        ] {
            let mut figure = figure(1, vec![panel]);
            figure.legend.clear();
            figure.caption.clear();
            encode(&figure).unwrap();
        }
    }

    #[test]
    fn invalid_requests_are_errors() {
        let error =
            |columns, panels: Vec<Panel>| encode(&figure(columns, panels)).unwrap_err().to_string();
        let one = panels(1, 1, 5);
        assert!(error(0, one.clone()).contains("column"));
        assert!(error(1, vec![]).contains("no panels"));
        for (scale, range) in [
            (Scale::Linear, (1.0, 1.0)),
            (Scale::Linear, (2.0, 1.0)),
            (Scale::Linear, (0.0, f64::NAN)),
            (Scale::Linear, (f64::NEG_INFINITY, 0.0)),
            (Scale::Log, (0.0, 10.0)),
            (Scale::Log, (1.0, f64::INFINITY)),
        ] {
            let bad = Panel {
                y_range: Some(range),
                scale,
                ..one[0].clone()
            };
            assert!(error(1, vec![bad]).contains("y range"));
        }
        let mut bad_x = figure(1, one.clone());
        bad_x.x_range = Some((3.0, 3.0));
        assert!(encode(&bad_x).unwrap_err().to_string().contains("x range"));
        let unwritable = Path::new("/nonexistent-weir-dir/chart.png");
        let error = render(unwritable, &figure(1, one)).unwrap_err();
        assert!(error.to_string().contains("writing"));
    }
}
