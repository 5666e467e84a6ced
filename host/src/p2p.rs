//! `cohort p2p`: the peer-to-peer copy bandwidth matrix between every pair of GPUs (and each
//! GPU to itself), unidirectional and bidirectional, with peer access off and then on, every
//! copy checked.
//!
//! Each cell copies a buffer of `--mib` MiB from GPU `src` to GPU `dst` with
//! [`Stream::copy`](cohort_runtime::Stream::copy) (a peer copy, `cuMemcpyPeerAsync`, between two
//! GPUs; `cuMemcpyAsync` within one), `--reps` times between two events, in `--blocks` blocks:
//! the figure is the median block's GB/s (10⁹ bytes per second). Bidirectional: `src → dst` on a
//! stream of `src` and `dst → src` on a stream of `dst` at once (both bytes counted). The source
//! holds a pattern particular to the pair and direction and the destination starts zeroed; after
//! timing, every destination element is compared on the host.
//!
//! Peer access is off first (a fresh process: the driver stages copies as it likes), then
//! [`Gpu::enable_peer_access`] between every pair that [`Gpu::can_access_peer`] allows.

use cohort_runtime::{DeviceBuffer, Event, Gpu};

use crate::util::{self, CliError, CliResult, Table};

/// `cohort p2p` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// MiB per copy
    #[arg(long, default_value = "256", value_parser = crate::util::parse_positive)]
    pub mib: usize,
    /// Copies per timed block
    #[arg(long, default_value = "10", value_parser = crate::util::parse_positive)]
    pub reps: usize,
    /// Timed blocks (the median is reported)
    #[arg(long, default_value = "5", value_parser = crate::util::parse_positive)]
    pub blocks: usize,
}

/// One pair's figures, GB/s (medians of the blocks).
#[derive(Clone, Copy, Debug)]
pub struct Cell {
    pub src: usize,
    pub dst: usize,
    pub uni: f64,
    pub bidi: f64,
}

/// The element pattern of a copy: differs per pair and direction, so stale data is caught.
pub fn pattern(n: usize, tag: u32) -> Vec<u32> {
    (0..n as u32).map(|e| e.wrapping_mul(2_654_435_761) ^ tag.wrapping_mul(0x9e37_79b9).rotate_left(tag % 31)).collect()
}

fn tag(src: usize, dst: usize, dir: u32) -> u32 {
    (src as u32 * 64 + dst as u32) * 4 + dir + 1
}

/// Checks every element of `got` (copied from `want`).
fn check(what: &str, got: &DeviceBuffer<u32>, want: &[u32]) -> CliResult {
    let got = got.to_vec()?;
    let bad = got.iter().zip(want).filter(|(g, w)| g != w).count();
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(i) => Err(CliError::Failed(format!(
            "{what}: {bad} of {} elements differ; first at {i}: got {:#x}, want {:#x}",
            want.len(),
            got[i],
            want[i]
        ))),
    }
}

/// GB/s of `bytes` moved in `ms`.
fn gbs(bytes: usize, ms: f32) -> f64 {
    bytes as f64 / (f64::from(ms) * 1e-3) / 1e9
}

/// Measures `src → dst` (unidirectional) and both ways at once, `reps` copies of `n` `u32`s
/// per block, `blocks` blocks; checks every copy's data.
pub fn measure_pair(gpus: &[Gpu], src: usize, dst: usize, n: usize, reps: usize, blocks: usize) -> CliResult<Cell> {
    let (gs, gd) = (&gpus[src], &gpus[dst]);
    let bytes = n * 4;
    // Unidirectional, on a stream of the source (as the C++ twin).
    let want_ab = pattern(n, tag(src, dst, 0));
    let a = gs.upload(&want_ab)?;
    let mut b = DeviceBuffer::<u32>::zeroed(gd, n)?;
    let ss = gs.new_stream()?;
    let (e0, e1) = (Event::new(gs)?, Event::new(gs)?);
    ss.copy(&a, &mut b)?; // warm-up
    let mut uni = Vec::with_capacity(blocks);
    for _ in 0..blocks {
        ss.record(&e0)?;
        for _ in 0..reps {
            ss.copy(&a, &mut b)?;
        }
        ss.record(&e1)?;
        e1.synchronize()?;
        uni.push(gbs(bytes * reps, e1.elapsed_ms_since(&e0)?));
    }
    check(&format!("{src} -> {dst}"), &b, &want_ab)?;
    // Bidirectional: src → dst on a stream of src, dst → src on a stream of dst, joined by events.
    let want_ba = pattern(n, tag(src, dst, 1));
    let c = gd.upload(&want_ba)?;
    let mut d = DeviceBuffer::<u32>::zeroed(gs, n)?;
    let mut b2 = DeviceBuffer::<u32>::zeroed(gd, n)?;
    let sd = gd.new_stream()?;
    let join = Event::untimed(gd)?;
    ss.copy(&a, &mut b2)?;
    sd.copy(&c, &mut d)?;
    let mut bidi = Vec::with_capacity(blocks);
    for _ in 0..blocks {
        ss.record(&e0)?;
        sd.wait(&e0)?;
        for _ in 0..reps {
            ss.copy(&a, &mut b2)?;
            sd.copy(&c, &mut d)?;
        }
        sd.record(&join)?;
        ss.wait(&join)?;
        ss.record(&e1)?;
        e1.synchronize()?;
        bidi.push(gbs(2 * bytes * reps, e1.elapsed_ms_since(&e0)?));
    }
    check(&format!("{src} -> {dst} (bidirectional)"), &b2, &want_ab)?;
    check(&format!("{dst} -> {src} (bidirectional)"), &d, &want_ba)?;
    Ok(Cell { src, dst, uni: util::median(&mut uni), bidi: util::median(&mut bidi) })
}

/// Every GPU, or exit status 2 with fewer than two.
pub fn two_or_more() -> CliResult<Vec<Gpu>> {
    let n = Gpu::count()?;
    if n < 2 {
        return Err(CliError::NoGpu(cohort_runtime::Error::NoDevice {
            requested: 1,
            count: n,
            detail: Some(format!("peer copies need 2 GPUs (found {n})")),
        }));
    }
    Ok(Gpu::all()?)
}

/// Enables peer access between every pair that allows it; the pairs that do not.
pub fn enable_all(gpus: &[Gpu]) -> CliResult<Vec<(usize, usize)>> {
    let mut without = Vec::new();
    for (i, a) in gpus.iter().enumerate() {
        for (j, b) in gpus.iter().enumerate() {
            if i != j {
                if a.can_access_peer(b)? {
                    a.enable_peer_access(b)?;
                } else {
                    without.push((i, j));
                }
            }
        }
    }
    Ok(without)
}

/// Every pair (and each GPU to itself).
pub fn measure_all(gpus: &[Gpu], n: usize, reps: usize, blocks: usize) -> CliResult<Vec<Cell>> {
    let mut cells = Vec::new();
    for src in 0..gpus.len() {
        for dst in 0..gpus.len() {
            cells.push(measure_pair(gpus, src, dst, n, reps, blocks)?);
        }
    }
    Ok(cells)
}

fn matrix(title: &str, gpus: usize, cells: &[Cell], pick: fn(&Cell) -> f64) {
    println!("\n{title}");
    let mut head = vec!["src \\ dst".to_string()];
    head.extend((0..gpus).map(|d| d.to_string()));
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(&head).numeric(1..=gpus);
    for s in 0..gpus {
        let mut row = vec![s.to_string()];
        row.extend(cells.iter().filter(|c| c.src == s).map(|c| format!("{:.1}", pick(c))));
        t.row(row);
    }
    t.print();
}

pub fn run(args: Args) -> CliResult {
    let gpus = two_or_more()?;
    let n = args.mib * (1 << 20) / 4;
    for g in &gpus {
        println!("{}", g.info());
    }
    println!(
        "{} MiB per copy, {} copies per block, median of {} blocks; every copy checked",
        args.mib, args.reps, args.blocks
    );
    let off = measure_all(&gpus, n, args.reps, args.blocks)?;
    let without = enable_all(&gpus)?;
    let on = measure_all(&gpus, n, args.reps, args.blocks)?;
    let k = gpus.len();
    matrix("unidirectional GB/s, peer access off", k, &off, |c| c.uni);
    matrix("unidirectional GB/s, peer access on", k, &on, |c| c.uni);
    matrix("bidirectional GB/s, peer access off", k, &off, |c| c.bidi);
    matrix("bidirectional GB/s, peer access on", k, &on, |c| c.bidi);
    for (i, j) in without {
        println!("note: device {i} cannot access device {j} (no peer path): its \"on\" cells are staged copies too");
    }
    println!("\nall {} copies arrived intact", 2 * 3 * k * k);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_differ_per_pair_and_direction() {
        let p = pattern(1000, tag(0, 1, 0));
        assert_ne!(p, pattern(1000, tag(1, 0, 0)));
        assert_ne!(p, pattern(1000, tag(0, 1, 1)));
        assert_ne!(p, pattern(1000, tag(0, 0, 0)));
        assert!((gbs(1_000_000_000, 1000.0) - 1.0).abs() < 1e-9);
    }
}
