//! Timing on the device: a closure run between two events, its median over repetitions
//! ([`median_ms`]), and two versions timed in interleaved pairs ([`paired_ms`]). Shared by the
//! commands that report times (`cohort atomics`) and the benchmarks (`cohort bench`).

use std::time::Instant;

use cohort_runtime::{Event, Gpu};

use crate::util::{median, quantile};

/// What a timed closure is asked to do.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reset state before a run (not timed).
    Prep,
    /// The work to time.
    Run,
}

/// Median milliseconds of `reps` timed runs (after `warmup` untimed ones), each bracketed by
/// events on the GPU's stream; `f(Phase::Prep)` runs before each, outside the timing.
pub fn median_ms(
    gpu: &Gpu,
    warmup: usize,
    reps: usize,
    mut f: impl FnMut(Phase) -> cohort_runtime::Result<()>,
) -> cohort_runtime::Result<f64> {
    for _ in 0..warmup {
        f(Phase::Prep)?;
        f(Phase::Run)?;
    }
    let (a, b) = (Event::new(gpu)?, Event::new(gpu)?);
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        f(Phase::Prep)?;
        a.record(gpu.stream())?;
        f(Phase::Run)?;
        b.record(gpu.stream())?;
        b.synchronize()?;
        t.push(b.elapsed_ms_since(&a)? as f64);
    }
    Ok(median(&mut t))
}

/// Two versions timed in pairs by [`paired_ms`].
#[derive(Clone, Copy, Debug)]
pub struct Paired {
    /// Median milliseconds of the first version.
    pub a: f64,
    /// Median milliseconds of the second.
    pub b: f64,
    /// Median over the pairs of `b / a` (the first version's speed relative to the second).
    pub ratio: f64,
    /// The lower and upper quartiles of those per-pair ratios.
    pub quartiles: (f64, f64),
}

impl Paired {
    /// The ratio and its quartiles as the tables print them: `0.981 [0.975–0.986]`.
    #[must_use]
    pub fn ratio_text(&self) -> String {
        format!("{:.3} [{:.3}–{:.3}]", self.ratio, self.quartiles.0, self.quartiles.1)
    }
}

/// Times two versions of one piece of work in `reps` pairs (after `warmup` untimed pairs),
/// interleaved — `a` then `b`, then `b` then `a`, and so on — each run bracketed by its own
/// device events, so that drift in clocks, temperature or the device's state falls on both
/// alike and neither always runs first. Each closure is asked to [`Phase::Prep`] (untimed)
/// before each of its runs.
pub fn paired_ms(
    gpu: &Gpu,
    warmup: usize,
    reps: usize,
    mut a: impl FnMut(Phase) -> cohort_runtime::Result<()>,
    mut b: impl FnMut(Phase) -> cohort_runtime::Result<()>,
) -> cohort_runtime::Result<Paired> {
    let (start, end) = (Event::new(gpu)?, Event::new(gpu)?);
    let time = |f: &mut dyn FnMut(Phase) -> cohort_runtime::Result<()>| -> cohort_runtime::Result<f64> {
        f(Phase::Prep)?;
        start.record(gpu.stream())?;
        f(Phase::Run)?;
        end.record(gpu.stream())?;
        end.synchronize()?;
        Ok(end.elapsed_ms_since(&start)? as f64)
    };
    for _ in 0..warmup {
        time(&mut a)?;
        time(&mut b)?;
    }
    let (mut ta, mut tb, mut ratios) = (Vec::with_capacity(reps), Vec::with_capacity(reps), Vec::with_capacity(reps));
    for rep in 0..reps {
        let (x, y) = if rep % 2 == 0 {
            let x = time(&mut a)?;
            (x, time(&mut b)?)
        } else {
            let y = time(&mut b)?;
            (time(&mut a)?, y)
        };
        ta.push(x);
        tb.push(y);
        ratios.push(y / x);
    }
    // `median` sorts: the quartiles are read from the sorted ratios.
    let ratio = median(&mut ratios);
    let quartiles = (quantile(&ratios, 0.25), quantile(&ratios, 0.75));
    Ok(Paired { a: median(&mut ta), b: median(&mut tb), ratio, quartiles })
}

/// The launches [`per_launch_ns`] times between two drains of the stream.
pub const LAUNCH_BATCH: usize = 256;

/// Host nanoseconds of each of `iters` calls of `launch`, one `Instant` pair per call; `sync`
/// drains the stream every [`LAUNCH_BATCH`] launches, outside the timed region, so that the
/// launch queue never fills.
pub fn per_launch_ns<E>(
    iters: usize,
    sync: &dyn Fn() -> Result<(), E>,
    mut launch: impl FnMut() -> Result<(), E>,
) -> Result<Vec<f64>, E> {
    let mut t = Vec::with_capacity(iters);
    while t.len() < iters {
        for _ in 0..LAUNCH_BATCH.min(iters - t.len()) {
            let s = Instant::now();
            launch()?;
            t.push(s.elapsed().as_nanos() as f64);
        }
        sync()?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::{Phase, paired_ms};

    /// The pairs alternate which side runs first (A B, B A, …), every run follows its own
    /// preparation, warm-up pairs come first, and the ratio is of the second side to the first.
    #[test]
    fn paired_runs_alternate_and_prepare_each_run() {
        let gpu = cohort_runtime::Gpu::cpu().expect("the CPU device");
        let log = RefCell::new(String::new());
        let side = |name: char| {
            let log = &log;
            move |p: Phase| {
                log.borrow_mut().push(if p == Phase::Prep { name.to_ascii_lowercase() } else { name });
                if p == Phase::Run && name == 'B' {
                    // Some host time inside B's bracket (the CPU device's events are host clocks).
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Ok(())
            }
        };
        let t = paired_ms(&gpu, 1, 4, side('A'), side('B')).unwrap();
        assert_eq!(
            log.borrow().as_str(),
            "aAbB" /* warm-up */
                .to_owned()
                + "aAbB"
                + "bBaA"
                + "aAbB"
                + "bBaA"
        );
        assert!(t.b >= 2.0 && t.b > t.a, "{t:?}");
        assert!(t.ratio > 1.0 && t.quartiles.0 <= t.ratio && t.ratio <= t.quartiles.1, "{t:?}");
    }
}
