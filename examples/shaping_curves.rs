//! Draws how each control behaviour admits the same offered load, as a PNG:
//! `cargo run -p sentinel-benches --features charts --example shaping_curves` writes `docs/shaping_curves.png` (or the path given as
//! the first argument).
//!
//! The runtime's own code decides every call, driven by the MockClock in 1 ms steps together
//! with a paused tokio clock (throttled callers await their turn), so the run is deterministic
//! and takes a second or two, not the 70 simulated seconds.

use std::sync::Mutex;
use std::time::Duration;

use plotters::prelude::*;
use sentinel_runtime::clock::{now_nanos, MockClock};
use sentinel_runtime::{sentinel, BlockError};

const SECONDS: usize = 70;
/// The close-up panel: these seconds, per 100 ms.
const ZOOM: std::ops::Range<usize> = 20..23;
const SERIES: [&str; 4] = ["offered", "reject", "warm-up", "throttling"];

/// Calls offered per second: quiet (the system cools down), then a surge, twice.
fn offered_per_second(second: usize) -> u32 {
    match second {
        0..=9 => 20,
        10..=34 => 250,
        35..=44 => 20,
        _ => 250,
    }
}

/// Admitted calls per 100 ms, per series.
static ADMITTED: Mutex<Vec<[u32; 4]>> = Mutex::new(Vec::new());
static START: Mutex<u64> = Mutex::new(0);

fn count(series: usize) {
    let start = *START.lock().unwrap_or_else(|e| e.into_inner());
    let tenth = ((now_nanos() - start) / 100_000_000) as usize;
    let mut admitted = ADMITTED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(row) = admitted.get_mut(tenth) {
        row[series] += 1;
    }
}

#[sentinel(resource = "curve-reject", qps = 100, fallback = busy)]
async fn reject() {
    count(1);
}

#[sentinel(resource = "curve-warm-up", qps = 100, warm_up = "10s", cold_factor = 3, fallback = busy)]
async fn warm_up() {
    count(2);
}

#[sentinel(resource = "curve-throttle", qps = 100, max_wait = "500ms", fallback = busy)]
async fn throttle() {
    count(3);
}

fn busy(_: BlockError) {}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "docs/shaping_curves.png".to_owned());
    let clock = MockClock::install();
    *START.lock().unwrap_or_else(|e| e.into_inner()) = now_nanos();
    *ADMITTED.lock().unwrap_or_else(|e| e.into_inner()) = vec![[0; 4]; SECONDS * 10];

    let step = Duration::from_millis(1);
    for ms in 0..(SECONDS as u64 * 1_000) {
        let rate = u64::from(offered_per_second((ms / 1_000) as usize));
        // Calls due in this millisecond, evenly spread over the second.
        let due = (ms % 1_000 + 1) * rate / 1_000 - (ms % 1_000) * rate / 1_000;
        for _ in 0..due {
            count(0);
            tokio::spawn(reject());
            tokio::spawn(warm_up());
            tokio::spawn(throttle());
        }
        for _ in 0..4 {
            tokio::task::yield_now().await; // let every runnable task run at this instant
        }
        clock.advance(step);
        tokio::time::advance(step).await;
    }

    let tenths = ADMITTED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let seconds: Vec<[u32; 4]> = tenths
        .chunks(10)
        .map(|c| {
            c.iter()
                .fold([0; 4], |a, r| std::array::from_fn(|i| a[i] + r[i]))
        })
        .collect();
    println!(
        "second  {:>8} {:>8} {:>8} {:>10}",
        SERIES[0], SERIES[1], SERIES[2], SERIES[3]
    );
    for (s, row) in seconds.iter().enumerate() {
        println!(
            "{s:>6}  {:>8} {:>8} {:>8} {:>10}",
            row[0], row[1], row[2], row[3]
        );
    }
    draw(&out, &seconds, &tenths)?;
    println!("\nwrote {out}");
    Ok(())
}

fn draw(
    path: &str,
    seconds: &[[u32; 4]],
    tenths: &[[u32; 4]],
) -> Result<(), Box<dyn std::error::Error>> {
    let labels = load_font();
    let root = BitMapBackend::new(path, (1000, 820)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(500);
    let per_second: Vec<Vec<(u32, u32)>> = (0..4)
        .map(|i| {
            seconds
                .iter()
                .enumerate()
                .map(|(s, r)| (s as u32, r[i]))
                .collect()
        })
        .collect();
    panel(
        &top,
        labels,
        "Admitted calls per second, qps = 100, same offered load",
        ("seconds", 0..SECONDS as u32, 260),
        &per_second,
    )?;
    let close_up: Vec<Vec<(u32, u32)>> = (0..4)
        .map(|i| {
            (ZOOM.start * 10..ZOOM.end * 10)
                .map(|t| (t as u32, tenths[t][i]))
                .collect()
        })
        .collect();
    panel(
        &bottom,
        labels,
        "Close-up, per 100 ms: reject admits in bursts as the window slides, throttling paces evenly",
        ("tenths of a second", (ZOOM.start * 10) as u32..(ZOOM.end * 10) as u32, 30),
        &close_up,
    )?;
    root.present()?;
    Ok(())
}

/// One chart of the four series.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    labels: bool,
    title: &str,
    (x_desc, x_range, y_max): (&str, std::ops::Range<u32>, u32),
    series: &[Vec<(u32, u32)>],
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    // Reject is drawn wide underneath, so it shows where throttling follows the same counts.
    let styles = [
        RGBColor(170, 170, 170).stroke_width(3),
        RED.stroke_width(8),
        BLUE.stroke_width(3),
        RGBColor(0, 140, 60).stroke_width(3),
    ];
    let mut chart = ChartBuilder::on(area)
        .margin(20)
        .x_label_area_size(if labels { 40 } else { 0 })
        .y_label_area_size(if labels { 50 } else { 0 })
        .caption_if(labels, title)
        .build_cartesian_2d(x_range, 0..y_max)?;
    let mut mesh = chart.configure_mesh();
    mesh.light_line_style(RGBColor(235, 235, 235));
    if labels {
        mesh.x_desc(x_desc).y_desc("calls admitted");
    } else {
        mesh.disable_x_axis().disable_y_axis();
    }
    mesh.draw()?;
    for (i, points) in series.iter().enumerate() {
        let style = styles[i];
        let drawn = chart.draw_series(LineSeries::new(points.iter().copied(), style))?;
        if labels {
            drawn
                .label(SERIES[i])
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
    }
    if labels {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
    }
    Ok(())
}

/// Registers a system font for the labels; without one the chart is drawn unlabelled.
fn load_font() -> bool {
    let candidates = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/Library/Fonts/Arial.ttf",
        "C:\\Windows\\Fonts\\arial.ttf",
    ];
    for path in candidates {
        if let Ok(bytes) = std::fs::read(path) {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return true;
            }
        }
    }
    eprintln!("no font found: drawing the chart without labels");
    false
}

/// `caption` only when there is a font to draw it with.
trait CaptionIf {
    fn caption_if(&mut self, yes: bool, text: &str) -> &mut Self;
}

impl<DB: DrawingBackend> CaptionIf for ChartBuilder<'_, '_, DB> {
    fn caption_if(&mut self, yes: bool, text: &str) -> &mut Self {
        if yes {
            self.caption(text, ("sans-serif", 20));
        }
        self
    }
}
