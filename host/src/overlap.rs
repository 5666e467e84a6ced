//! `cohort overlap`: NVIDIA's "How to Overlap Data Transfers in CUDA C/C++" experiment through
//! Cohort's streams, pinned memory and asynchronous copies — the same array moved through the
//! article's kernel three ways, each checked against the CPU, with an optional engine diagram.
//!
//! The three ways, as the article runs them (pinned host memory, blocking streams, events on
//! the legacy default stream, which waits for every blocking stream):
//!
//! - **sequential**: one host → device copy of the whole array, one kernel, one copy back;
//! - **V1**: per stream, its chunk's upload, kernel and download;
//! - **V2**: every chunk's upload, then every chunk's kernel, then every chunk's download.
//!
//! The ideal for the overlapped ways is the longest of the three operations done alone on the
//! whole array, `max(H2D, kernel, D2H)`; the overlap achieved is that bound over the time taken.
//! [`Experiment`] is shared with `cohort bench overlap`.

use cohort_kernels::PTX;
use cohort_kernels::overlap::overlap_add;
use cohort_runtime::{DeviceBuffer, Event, Gpu, LaunchConfig, PinnedBuffer, Stream};

use crate::util::{self, CliError, CliResult};

/// Threads per block, as in the article.
pub const BLOCK: u32 = 256;
/// The largest error a way may leave: `|a[i] - (a₀[i] + 1)|` (1 ulp of 1 is 1.2e-7).
pub const TOLERANCE: f32 = 1e-5;

/// Whether a max error is below [`TOLERANCE`] (false for NaN).
pub fn within_tolerance(err: f64) -> bool {
    err < f64::from(TOLERANCE)
}

/// One of the article's three ways of moving the array through the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// One upload, one kernel, one download, on the legacy default stream.
    Sequential,
    /// Per stream: upload, kernel, download of its chunk.
    V1,
    /// All uploads, then all kernels, then all downloads.
    V2,
}

impl Way {
    /// The short name (`seq`, `v1`, `v2`: the C++ twin's keys too).
    pub fn key(self) -> &'static str {
        match self {
            Way::Sequential => "seq",
            Way::V1 => "v1",
            Way::V2 => "v2",
        }
    }
    /// The name in tables.
    pub fn label(self) -> &'static str {
        match self {
            Way::Sequential => "sequential",
            Way::V1 => "V1 (per stream: H2D, kernel, D2H)",
            Way::V2 => "V2 (all H2D, all kernels, all D2H)",
        }
    }
}

/// What an operation of the timeline is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Host → device copy.
    H2d,
    /// The kernel.
    Kernel,
    /// Device → host copy.
    D2h,
}

/// The array's contents before each run: `(i % 1024) / 1024`, exact in `f32`, different in
/// neighbouring elements (a chunk copied to the wrong place shows).
pub fn initial(i: usize) -> f32 {
    (i % 1024) as f32 / 1024.0
}

/// Events recorded around each operation, for the engine diagram.
pub struct Timeline {
    gpu: Gpu,
    /// Added to the stream index to make the row of a mark.
    row_base: usize,
    marks: Vec<(usize, Op, Event, Event)>,
}

/// One operation's span on the diagram, in milliseconds from its way's start.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    /// The diagram's row.
    pub row: usize,
    /// What ran.
    pub op: Op,
    /// Start, ms.
    pub start: f64,
    /// End, ms.
    pub end: f64,
}

/// The element range of chunk `i` of `count` over `n` elements (the last may be shorter).
fn chunk(n: usize, i: usize, count: usize) -> std::ops::Range<usize> {
    let len = n.div_ceil(count);
    (i * len).min(n)..((i + 1) * len).min(n)
}

/// Runs `f` (which enqueues one operation on `s`) between two events when `timeline` is given.
fn mark(
    timeline: Option<&mut Timeline>,
    stream: usize,
    op: Op,
    s: &Stream,
    f: impl FnOnce() -> cohort_runtime::Result<()>,
) -> cohort_runtime::Result<()> {
    let Some(t) = timeline else { return f() };
    let (a, b) = (Event::new(&t.gpu)?, Event::new(&t.gpu)?);
    a.record(s)?;
    f()?;
    b.record(s)?;
    t.marks.push((t.row_base + stream, op, a, b));
    Ok(())
}

/// Whole-array operations timed alone, ms (medians).
#[derive(Clone, Copy, Debug, Default)]
pub struct Alone {
    /// Pinned host → device copy of the array.
    pub h2d: f64,
    /// Device → pinned host copy of the array.
    pub d2h: f64,
    /// The kernel over the array, device-resident.
    pub kernel: f64,
}

impl Alone {
    /// The ideal time of an overlapped way: the longest of the three.
    pub fn bound(&self) -> f64 {
        self.h2d.max(self.d2h).max(self.kernel)
    }
}

/// The pinned array, its device copy, the kernel, the streams and the timing events.
pub struct Experiment {
    gpu: Gpu,
    kernel: overlap_add,
    /// The legacy default stream (made once: each `legacy_stream()` is a new handle).
    legacy: Stream,
    streams: Vec<Stream>,
    host: PinnedBuffer<f32>,
    dev: DeviceBuffer<f32>,
    start: Event,
    stop: Event,
}

impl Experiment {
    /// `n` floats, pinned and on the device, and `max_streams` blocking streams.
    pub fn new(gpu: &Gpu, n: usize, max_streams: usize) -> cohort_runtime::Result<Self> {
        let module = gpu.load(&PTX)?;
        Ok(Self {
            gpu: gpu.clone(),
            kernel: overlap_add::load(&module)?,
            legacy: gpu.legacy_stream(),
            streams: (0..max_streams).map(|_| gpu.new_stream()).collect::<cohort_runtime::Result<_>>()?,
            host: gpu.pinned(n)?,
            dev: gpu.zeroed(n)?,
            start: Event::new(gpu)?,
            stop: Event::new(gpu)?,
        })
    }

    /// Elements.
    pub fn n(&self) -> usize {
        self.host.len()
    }

    /// Bytes of the array.
    pub fn bytes(&self) -> usize {
        self.host.len() * 4
    }

    /// Re-initializes the pinned array, then waits for every stream, so that no operation of a
    /// timed run has to wait for an older one.
    pub fn reset(&mut self) -> cohort_runtime::Result<()> {
        par_fill(self.host.as_mut_slice()?, initial);
        self.settle()
    }

    fn settle(&self) -> cohort_runtime::Result<()> {
        for s in &self.streams {
            s.synchronize()?;
        }
        self.legacy.synchronize()
    }

    /// Enqueues one run of `way` with `count` streams (1 for the sequential way).
    fn enqueue(&mut self, way: Way, count: usize, mut tl: Option<&mut Timeline>) -> cohort_runtime::Result<()> {
        let n = self.n();
        let (host, dev, kernel) = (&mut self.host, &mut self.dev, &self.kernel);
        match way {
            Way::Sequential => {
                let s = &self.legacy;
                mark(tl.as_deref_mut(), 0, Op::H2d, s, || s.copy(&*host, &mut *dev))?;
                let cfg = LaunchConfig::for_elements(n, BLOCK);
                mark(tl.as_deref_mut(), 0, Op::Kernel, s, || kernel.launch(s, cfg, &mut *dev, 0))?;
                mark(tl.as_deref_mut(), 0, Op::D2h, s, || s.copy(&*dev, &mut *host))?;
            }
            Way::V1 => {
                for (i, s) in self.streams[..count].iter().enumerate() {
                    let r = chunk(n, i, count);
                    let cfg = LaunchConfig::for_elements(r.len(), BLOCK);
                    mark(tl.as_deref_mut(), i, Op::H2d, s, || s.copy(host.slice(r.clone()), dev.slice_mut(r.clone())))?;
                    mark(tl.as_deref_mut(), i, Op::Kernel, s, || {
                        kernel.launch(s, cfg, dev.slice_mut(r.clone()), r.start as u32)
                    })?;
                    mark(tl.as_deref_mut(), i, Op::D2h, s, || s.copy(dev.slice(r.clone()), host.slice_mut(r.clone())))?;
                }
            }
            Way::V2 => {
                for (i, s) in self.streams[..count].iter().enumerate() {
                    let r = chunk(n, i, count);
                    mark(tl.as_deref_mut(), i, Op::H2d, s, || s.copy(host.slice(r.clone()), dev.slice_mut(r.clone())))?;
                }
                for (i, s) in self.streams[..count].iter().enumerate() {
                    let r = chunk(n, i, count);
                    let cfg = LaunchConfig::for_elements(r.len(), BLOCK);
                    mark(tl.as_deref_mut(), i, Op::Kernel, s, || {
                        kernel.launch(s, cfg, dev.slice_mut(r.clone()), r.start as u32)
                    })?;
                }
                for (i, s) in self.streams[..count].iter().enumerate() {
                    let r = chunk(n, i, count);
                    mark(tl.as_deref_mut(), i, Op::D2h, s, || s.copy(dev.slice(r.clone()), host.slice_mut(r.clone())))?;
                }
            }
        }
        Ok(())
    }

    /// Milliseconds of `f`'s work, between events on the legacy default stream.
    fn timed(&mut self, f: impl FnOnce(&mut Self) -> cohort_runtime::Result<()>) -> cohort_runtime::Result<f64> {
        self.start.record(&self.legacy)?;
        f(self)?;
        self.stop.record(&self.legacy)?;
        self.stop.synchronize()?;
        Ok(f64::from(self.stop.elapsed_ms_since(&self.start)?))
    }

    /// One run of `way` with `count` streams from a freshly reset array, timed; with a
    /// timeline, events around every operation (their spans come from [`Experiment::spans`]).
    pub fn run_once(&mut self, way: Way, count: usize, tl: Option<&mut Timeline>) -> cohort_runtime::Result<f64> {
        self.reset()?;
        self.timed(|ex| ex.enqueue(way, count, tl))
    }

    /// Per-run milliseconds of `reps` runs of `way` after `warmup` untimed ones.
    pub fn runs(&mut self, way: Way, count: usize, warmup: usize, reps: usize) -> cohort_runtime::Result<Vec<f64>> {
        for _ in 0..warmup {
            self.run_once(way, count, None)?;
        }
        (0..reps).map(|_| self.run_once(way, count, None)).collect()
    }

    /// Median milliseconds of the whole-array upload, download and kernel alone.
    pub fn alone(&mut self, warmup: usize, reps: usize) -> cohort_runtime::Result<Alone> {
        self.reset()?;
        let n = self.n();
        let mut each = |f: &dyn Fn(&mut Self) -> cohort_runtime::Result<()>| -> cohort_runtime::Result<f64> {
            let mut t = Vec::with_capacity(reps);
            for r in 0..warmup + reps {
                self.settle()?;
                let ms = self.timed(|ex| f(ex))?;
                if r >= warmup {
                    t.push(ms);
                }
            }
            Ok(util::median(&mut t))
        };
        let h2d = each(&|ex| ex.legacy.copy(&ex.host, &mut ex.dev))?;
        let d2h = each(&|ex| ex.legacy.copy(&ex.dev, &mut ex.host))?;
        let kernel = each(&|ex| ex.kernel.launch(&ex.legacy, LaunchConfig::for_elements(n, BLOCK), &mut ex.dev, 0))?;
        Ok(Alone { h2d, d2h, kernel })
    }

    /// `max |a[i] - (a₀[i] + 1)|` over the pinned array (NaN if any element is NaN).
    pub fn max_error(&self) -> cohort_runtime::Result<f32> {
        let a = self.host.as_slice()?;
        Ok(par_max(a.len(), |i| a[i] - (initial(i) + 1.0)))
    }

    /// `max |a[i] - cpu[i]|` against the CPU's own evaluation of the kernel:
    /// `a₀[i] + √(sin²x + cos²x)`, `x = i` (NaN if any element is NaN).
    pub fn max_error_vs_cpu(&self) -> cohort_runtime::Result<f32> {
        let a = self.host.as_slice()?;
        Ok(par_max(a.len(), |i| {
            let x = i as u32 as f32;
            let (s, c) = x.sin_cos();
            a[i] - (initial(i) + s.mul_add(s, c * c).sqrt())
        }))
    }

    /// A timeline whose marks go to rows from `row_base` on.
    pub fn timeline(&self, row_base: usize) -> Timeline {
        Timeline { gpu: self.gpu.clone(), row_base, marks: Vec::new() }
    }

    /// The spans of `tl`'s marks, in ms from the start of the last timed run (call after it).
    pub fn spans(&self, tl: &Timeline) -> cohort_runtime::Result<Vec<Span>> {
        tl.marks
            .iter()
            .map(|(row, op, a, b)| {
                Ok(Span {
                    row: *row,
                    op: *op,
                    start: f64::from(a.elapsed_ms_since(&self.start)?),
                    end: f64::from(b.elapsed_ms_since(&self.start)?),
                })
            })
            .collect()
    }
}

/// `a[i] = f(i)` for every element, on every core.
pub fn par_fill(a: &mut [f32], f: impl Fn(usize) -> f32 + Sync) {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(32);
    let part = a.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (k, piece) in a.chunks_mut(part).enumerate() {
            let f = &f;
            scope.spawn(move || {
                for (j, x) in piece.iter_mut().enumerate() {
                    *x = f(k * part + j);
                }
            });
        }
    });
}

/// `max |f(i)|` over `0..n` on every core (NaN if any is NaN).
pub fn par_max(n: usize, f: impl Fn(usize) -> f32 + Sync) -> f32 {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(32);
    let part = n.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .step_by(part)
            .map(|lo| {
                let f = &f;
                scope.spawn(move || {
                    let mut m = 0.0f32;
                    for i in lo..(lo + part).min(n) {
                        let e = f(i).abs();
                        if e.is_nan() {
                            return f32::NAN;
                        }
                        m = m.max(e);
                    }
                    m
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(f32::NAN))
            .fold(0.0f32, |m, e| if e.is_nan() || m.is_nan() { f32::NAN } else { m.max(e) })
    })
}

/// Checks `--n` for the experiment: at least one element per stream, and offsets that fit the
/// article's `int` (at most 2³¹ elements).
pub fn check_n(n: usize, counts: &[usize]) -> CliResult {
    let most = counts.iter().copied().max().unwrap_or(1);
    if n < most || n > 1 << 31 {
        return Err(CliError::Usage(format!("--n must be between {most} (the most streams) and 2^31 (got {n})")));
    }
    Ok(())
}

/// `cohort overlap`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Streams for V1 and V2
    #[arg(long, default_value = "4", value_parser = util::parse_positive)]
    pub streams: usize,
    /// Floats in the array (k, M, G suffixes; at least --streams, at most 2^31)
    #[arg(long, default_value = "128M", value_parser = util::parse_usize)]
    pub n: usize,
    /// Draw each stream's copies and kernels (events around each) into this SVG file
    #[arg(long, value_name = "FILE.svg")]
    pub timeline: Option<String>,
}

pub fn run(args: Args) -> CliResult {
    let Args { streams: count, n, timeline } = args;
    check_n(n, &[count])?;
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let mut ex = Experiment::new(&gpu, n, count)?;
    println!(
        "{n} floats ({:.0} MiB) through the overlap article's kernel, {count} streams, pinned host memory\n",
        ex.bytes() as f64 / (1 << 20) as f64
    );
    // Warm up (module, copy engines, clocks) untimed.
    for way in [Way::Sequential, Way::V1, Way::V2] {
        ex.run_once(way, count, None)?;
    }
    let alone = ex.alone(1, 5)?;
    let mut table = util::Table::new(&["way", "streams", "time ms", "overlap", "max |GPU - CPU|"]).numeric(1..5);
    let mut rows = Vec::new();
    let mut spans = Vec::new();
    let mut worst = 0.0f32;
    for (way, streams, base) in [(Way::Sequential, 1, 0), (Way::V1, count, 1), (Way::V2, count, 1 + count)] {
        let mut tl = timeline.as_ref().map(|_| ex.timeline(base));
        let ms = ex.run_once(way, streams, tl.as_mut())?;
        let err = ex.max_error_vs_cpu()?;
        worst = if err.is_nan() || worst.is_nan() { f32::NAN } else { worst.max(err) };
        if let Some(tl) = &tl {
            spans.extend(ex.spans(tl)?);
        }
        for s in 0..streams {
            rows.push(match way {
                Way::Sequential => "sequential".to_string(),
                _ => format!("{} stream {s}", way.key().to_uppercase()),
            });
        }
        table.row(vec![
            way.label().into(),
            streams.to_string(),
            format!("{ms:.3}"),
            format!("{:.0}%", 100.0 * alone.bound() / ms),
            format!("{err:.2e}"),
        ]);
    }
    table.print();
    println!(
        "\nalone on the whole array: H2D {:.3} ms ({:.1} GB/s), kernel {:.3} ms, D2H {:.3} ms ({:.1} GB/s)",
        alone.h2d,
        ex.bytes() as f64 / alone.h2d / 1e6,
        alone.kernel,
        alone.d2h,
        ex.bytes() as f64 / alone.d2h / 1e6
    );
    println!("ideal for an overlapped way: max(H2D, kernel, D2H) = {:.3} ms; overlap = ideal / time", alone.bound());
    if let Some(path) = &timeline {
        draw_timeline(path, &rows, &spans, &gpu.info().name, n, count)?;
        println!("engine diagram: {path}");
    }
    if !within_tolerance(f64::from(worst)) {
        return Err(CliError::Failed(format!("max error {worst:e} against the CPU, above {TOLERANCE:e}")));
    }
    Ok(())
}

/// Draws the article-style engine diagram: one row per stream per way, each operation a bar
/// coloured by what it is (upload, kernel, download), x in ms from the way's start.
fn draw_timeline(path: &str, rows: &[String], spans: &[Span], device: &str, n: usize, count: usize) -> CliResult {
    use plotters::prelude::*;

    let fail = |e: &dyn std::fmt::Display| CliError::Failed(format!("{path}: {e}"));
    let end = spans.iter().map(|s| s.end).fold(0.0f64, f64::max).max(1e-3);
    let height = 120 + 26 * rows.len() as u32;
    let root = SVGBackend::new(path, (1100, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let last = rows.len() as f64 - 0.5;
    // Rows are centred on integers so that the axis's integer ticks label them; row 0 on top.
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{device}: {n} floats, {count} streams (events around each operation)"), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(110)
        .build_cartesian_2d(0.0..end * 1.15, -0.5..last)
        .map_err(|e| fail(&e))?;
    let label = |y: &f64| -> String {
        let r = y.round();
        if (y - r).abs() > 1e-6 || r < 0.0 {
            return String::new();
        }
        rows.len().checked_sub(1 + r as usize).and_then(|i| rows.get(i)).cloned().unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(rows.len())
        .y_label_formatter(&label)
        .x_desc("ms from the way's start")
        .draw()
        .map_err(|e| fail(&e))?;
    let ops = [
        (Op::H2d, "H2D copy", RGBColor(31, 119, 180)),
        (Op::Kernel, "kernel", RGBColor(44, 160, 44)),
        (Op::D2h, "D2H copy", RGBColor(214, 39, 40)),
    ];
    let top = rows.len() as f64 - 1.0;
    for (op, name, colour) in ops {
        chart
            .draw_series(spans.iter().filter(|s| s.op == op).map(|s| {
                let y = top - s.row as f64;
                Rectangle::new([(s.start, y - 0.35), (s.end, y + 0.35)], colour.filled())
            }))
            .map_err(|e| fail(&e))?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Op, Span, draw_timeline};

    #[test]
    fn timeline_draws_one_bar_per_span() {
        let rows: Vec<String> =
            std::iter::once("sequential".to_string()).chain((0..4).map(|s| format!("V1 stream {s}"))).collect();
        let mut spans = vec![
            Span { row: 0, op: Op::H2d, start: 0.0, end: 4.0 },
            Span { row: 0, op: Op::Kernel, start: 4.0, end: 6.0 },
            Span { row: 0, op: Op::D2h, start: 6.0, end: 10.0 },
        ];
        for s in 0..4 {
            let t = s as f64;
            spans.push(Span { row: 1 + s, op: Op::H2d, start: t, end: t + 1.0 });
            spans.push(Span { row: 1 + s, op: Op::Kernel, start: t + 1.0, end: t + 1.5 });
            spans.push(Span { row: 1 + s, op: Op::D2h, start: t + 1.5, end: t + 2.5 });
        }
        let path = std::env::temp_dir().join(format!("cohort-timeline-{}.svg", std::process::id()));
        let p = path.to_str().unwrap();
        assert!(draw_timeline(p, &rows, &spans, "test GPU", 1 << 20, 4).is_ok());
        let svg = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(svg.contains("V1 stream 3") && svg.contains("sequential") && svg.contains("kernel"));
        // 15 bars, 3 legend swatches (and the background and legend box).
        assert!(svg.matches("<rect").count() >= 18, "{svg}");
    }
}
