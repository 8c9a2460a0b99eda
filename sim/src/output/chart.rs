//! PNG line charts of the simulator's time series.
//!
//! plotters draws into an RGB buffer that `png` encodes. Text is DejaVu Sans, embedded by the `dejavu` crate and
//! rasterised by ab_glyph, so charts render the same on a machine with no fonts and no fontconfig, and identical
//! input gives identical bytes, which the simulator's byte-identical reports rely on.

use std::{error::Error, fmt, fs, path::Path, sync::OnceLock};

use plotters::{
    coord::Shift,
    prelude::*,
    style::{register_font, FontStyle},
};

/// Size of one panel in pixels: wide enough for ~120 samples per line, low enough for a 2x4 grid on a screen.
const PANEL_SIZE: (u32, u32) = (640, 300);
/// Height of the band holding the grid's shared title.
const TITLE_HEIGHT: u32 = 40;
/// Width of the legend column on each panel's right: beside the plot, it never hides a line.
const LEGEND_WIDTH: u32 = 130;
/// The family name plotters asks for by default; the embedded font is registered under it.
const FONT: &str = "sans-serif";
/// Line colours, distinct for up to 12 servers (matplotlib's tab10, then black and olive); more series cycle.
const PALETTE: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 0),
    RGBColor(107, 110, 207),
];

/// One line of a panel: a server's samples over simulated time.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Shown in the panel's legend; the server's name.
    pub label: String,
    /// `(seconds, value)` samples in drawing order; points with a non-finite coordinate are skipped.
    pub points: Vec<(f64, f64)>,
}

/// One chart of the grid: a metric of every server under one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Drawn above the panel, e.g. "weir Cascade (default): requests/s per server".
    pub title: String,
    /// The y axis' description, e.g. "requests/s".
    pub y_label: String,
    /// Fixed y range, so panels of one metric compare at a glance (values outside are drawn at its edge);
    /// `None` spans 0 (or the minimum, if negative) to the data's maximum plus 5 % headroom.
    pub y_range: Option<(f64, f64)>,
    /// The lines, one per server.
    pub series: Vec<Series>,
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

/// Renders `panels` in a grid of `columns` columns (rows as needed), one shared title on top, x axis labelled
/// `x_label` (seconds of simulated time), each panel with its own legend (series labels = server names, up to ~12
/// lines; distinct colours). Writes a PNG file at `path`.
///
/// All panels share the x range of all the data, so that one moment of the run lines up down a column. A grid
/// with fewer panels than `columns` is only as wide as its panels.
///
/// # Errors
///
/// When `columns` is 0, `panels` is empty, a `y_range` is not a finite increasing pair, the image would be too
/// large, or drawing, encoding or writing the file fails.
pub fn render_grid(
    path: &Path,
    title: &str,
    x_label: &str,
    columns: usize,
    panels: &[Panel],
) -> Result<(), ChartError> {
    if columns == 0 {
        return Err(fail("a grid needs at least one column"));
    }
    if panels.is_empty() {
        return Err(fail("no panels to draw"));
    }
    register_fonts()?;
    let columns = columns.min(panels.len());
    let rows = panels.len().div_ceil(columns);
    let too_large = || fail(format!("a grid of {rows}x{columns} panels is too large"));
    let width = u32::try_from(columns)
        .ok()
        .and_then(|c| c.checked_mul(PANEL_SIZE.0))
        .ok_or_else(too_large)?;
    let height = u32::try_from(rows)
        .ok()
        .and_then(|r| r.checked_mul(PANEL_SIZE.1)?.checked_add(TITLE_HEIGHT))
        .ok_or_else(too_large)?;
    let x_range = x_range(panels);

    let mut pixels = vec![0; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let (header, grid) = root.split_vertically(TITLE_HEIGHT);
        header
            .titled(title, (FONT, 24, FontStyle::Bold))
            .map_err(fail)?;
        for (area, panel) in grid.split_evenly((rows, columns)).iter().zip(panels) {
            draw_panel(area, panel, x_label, x_range.clone())?;
        }
        root.present().map_err(fail)?;
    }

    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(fail)?;
    writer.write_image_data(&pixels).map_err(fail)?;
    writer.finish().map_err(fail)?;
    fs::write(path, png).map_err(|e| fail(format!("writing {}: {e}", path.display())))
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

/// The finite points of a series, in order.
fn finite_points(series: &Series) -> impl Iterator<Item = (f64, f64)> + '_ {
    series
        .points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
}

/// The span of an axis over `values`, or `None` when there are none.
fn span(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |span, v| match span {
        None => Some((v, v)),
        Some((lo, hi)) => Some((f64::min(lo, v), f64::max(hi, v))),
    })
}

/// The x range shared by all panels: the data's, widened to a unit when it is empty or a single instant.
fn x_range(panels: &[Panel]) -> std::ops::Range<f64> {
    let xs = panels
        .iter()
        .flat_map(|p| &p.series)
        .flat_map(finite_points)
        .map(|(x, _)| x);
    match span(xs) {
        Some((lo, hi)) if hi > lo => lo..hi,
        Some((lo, _)) => lo..lo + 1.0,
        None => 0.0..1.0,
    }
}

/// The panel's fixed y range if it has a valid one, else 0 (or the negative minimum) to the maximum plus 5 %.
fn y_range(panel: &Panel) -> Result<std::ops::Range<f64>, ChartError> {
    if let Some((lo, hi)) = panel.y_range {
        return if lo.is_finite() && hi.is_finite() && lo < hi {
            Ok(lo..hi)
        } else {
            Err(fail(format!(
                "panel {:?}: y range {lo}..{hi} is not a finite increasing pair",
                panel.title
            )))
        };
    }
    let ys = panel.series.iter().flat_map(finite_points).map(|(_, y)| y);
    let (lo, hi) = span(ys).map_or((0.0, 0.0), |(lo, hi)| (lo.min(0.0), hi.max(0.0)));
    Ok(if hi > lo {
        lo..hi + (hi - lo) * 0.05
    } else {
        lo..lo + 1.0
    })
}

/// Decimals enough to tell apart the ticks of an axis spanning `range`: none for 0..250, two for 0..0.3.
fn decimals(range: &std::ops::Range<f64>) -> usize {
    (-((range.end - range.start) / 10.0).log10().floor()).max(0.0) as usize
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

/// Draws one panel: the plot with its axes and lines on the left, the legend in its own column on the right.
fn draw_panel(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    panel: &Panel,
    x_label: &str,
    x_range: std::ops::Range<f64>,
) -> Result<(), ChartError> {
    let (plot, legend) = area.split_horizontally(PANEL_SIZE.0 - LEGEND_WIDTH);
    let y_range = y_range(panel)?;
    let (x_decimals, y_decimals) = (decimals(&x_range), decimals(&y_range));
    let mut chart = ChartBuilder::on(&plot)
        .caption(&panel.title, (FONT, 15, FontStyle::Bold))
        .margin(6)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x_range, y_range)
        .map_err(fail)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(&panel.y_label)
        .x_labels(8)
        .y_labels(6)
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .x_label_formatter(&|&x| tick(x, x_decimals))
        .y_label_formatter(&|&y| tick(y, y_decimals))
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(fail)?;

    for (index, series) in panel.series.iter().enumerate() {
        let color = PALETTE[index % PALETTE.len()];
        let points: Vec<_> = finite_points(series).collect();
        if let [point] = points[..] {
            // A lone sample draws no line; a dot keeps it visible.
            chart
                .draw_series([Circle::new(point, 3, color.filled())])
                .map_err(fail)?;
        } else {
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(fail)?;
        }
        let y = 32 + 18 * index as i32;
        legend
            .draw(&PathElement::new([(4, y), (28, y)], color.stroke_width(3)))
            .map_err(fail)?;
        legend
            .draw(&Text::new(series.label.as_str(), (34, y - 7), (FONT, 13)))
            .map_err(fail)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` panels of `servers` sine-ish lines with `samples` points each; deterministic.
    fn panels(count: usize, servers: usize, samples: usize) -> Vec<Panel> {
        (0..count)
            .map(|p| Panel {
                title: format!("policy {p}: requests/s per server"),
                y_label: "requests/s".into(),
                y_range: (p % 2 == 1).then_some((0.0, 250.0)),
                series: (0..servers)
                    .map(|s| Series {
                        label: format!("server-{s}"),
                        points: (0..samples)
                            .map(|i| {
                                let t = i as f64 * 0.5;
                                (t, 100.0 + 60.0 * (t / 7.0 + (p + s) as f64).sin())
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect()
    }

    /// Renders into a file unique to this process and test, and returns its bytes.
    fn render(name: &str, columns: usize, panels: &[Panel]) -> Result<Vec<u8>, ChartError> {
        let path =
            std::env::temp_dir().join(format!("weir-chart-{}-{name}.png", std::process::id()));
        let result = render_grid(
            &path,
            "scenario: cascade",
            "simulated time (s)",
            columns,
            panels,
        );
        let bytes = result.map(|()| fs::read(&path).expect("the chart was written"));
        let _ = fs::remove_file(&path);
        bytes
    }

    /// The (width, height) in a PNG's IHDR chunk.
    fn png_size(bytes: &[u8]) -> (u32, u32) {
        let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        (word(16), word(20))
    }

    #[test]
    fn tick_labels_drop_needless_zeros() {
        assert_eq!(decimals(&(0.0..250.0)), 0);
        assert_eq!(decimals(&(0.0..1.0)), 1);
        assert_eq!(decimals(&(0.0..0.3)), 2);
        assert_eq!(tick(150.0, 0), "150");
        assert_eq!(tick(4.0, 1), "4");
        assert_eq!(tick(0.30000000000000004, 2), "0.3");
        assert_eq!(tick(0.15, 2), "0.15");
    }

    #[test]
    fn identical_input_renders_identical_png() {
        let panels = panels(8, 3, 120);
        let first = render("same-a", 4, &panels).unwrap();
        let second = render("same-b", 4, &panels).unwrap();
        assert!(first == second, "two renders of the same grid differ");
        assert_eq!(&first[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(png_size(&first), (4 * 640, 2 * 300 + 40));
        assert!(first.len() < 400_000, "{} bytes", first.len());
    }

    #[test]
    fn partial_last_row_and_narrow_grid() {
        assert_eq!(
            png_size(&render("partial", 2, &panels(3, 2, 10)).unwrap()),
            (1280, 640)
        );
        assert_eq!(
            png_size(&render("narrow", 5, &panels(2, 2, 10)).unwrap()),
            (1280, 340)
        );
    }

    #[test]
    fn degenerate_data_renders() {
        let series = |label: &str, points: Vec<(f64, f64)>| Series {
            label: label.into(),
            points,
        };
        let mut panels = panels(1, 0, 0);
        panels[0].series = vec![
            series("empty", vec![]),
            series(
                "nan",
                vec![(f64::NAN, 1.0), (1.0, f64::NAN), (2.0, f64::INFINITY)],
            ),
            series("single", vec![(3.0, 5.0)]),
            series("zero", vec![(0.0, 0.0), (1.0, 0.0)]),
        ];
        let no_series = Panel {
            series: vec![],
            ..panels[0].clone()
        };
        let all_zero = Panel {
            series: vec![series("zero", vec![(0.0, 0.0), (9.0, 0.0)])],
            ..no_series.clone()
        };
        let many = Panel {
            series: (0..15)
                .map(|s| series(&format!("s{s}"), vec![(0.0, s as f64)]))
                .collect(),
            ..no_series.clone()
        };
        for (name, panel) in [
            ("mixed", &panels[0]),
            ("none", &no_series),
            ("zero", &all_zero),
            ("many", &many),
        ] {
            render(name, 1, std::slice::from_ref(panel)).unwrap();
        }
    }

    #[test]
    fn invalid_requests_are_errors() {
        let error =
            |columns, panels: &[Panel]| render("error", columns, panels).unwrap_err().to_string();
        let one = panels(1, 1, 5);
        assert!(error(0, &one).contains("column"));
        assert!(error(1, &[]).contains("no panels"));
        for range in [
            (1.0, 1.0),
            (2.0, 1.0),
            (0.0, f64::NAN),
            (f64::NEG_INFINITY, 0.0),
        ] {
            let bad = Panel {
                y_range: Some(range),
                ..one[0].clone()
            };
            assert!(error(1, &[bad]).contains("y range"));
        }
        let unwritable = Path::new("/nonexistent-weir-dir/chart.png");
        let error = render_grid(unwritable, "t", "s", 1, &one).unwrap_err();
        assert!(error.to_string().contains("writing"));
    }
}
