//! Making communicators: every GPU of this process at once ([`Comm::for_gpus`]), or one rank of
//! a job ([`Comm::from_rank`], [`Comm::from_id_file`]); the bounded wait for a non-blocking
//! communicator ([`settle`]). The CPU-device check is [`check_primary`].

use std::ffi::c_int;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::comm::{Comm, Made};
use super::error::{NcclError, NcclResult, arg};
use super::id::NcclId;
use super::library::{RawConfig, api, check, error_text};
use super::watch::{self, Cell, Poll, Record, TIMEOUT_VAR};
use crate::device::Gpu;

pub(super) fn check_primary(gpu: &Gpu) -> NcclResult<()> {
    if gpu.inner.ctx.is_none() {
        return Err(arg("NCCL needs GPUs: the CPU device has no NCCL communicator".into()));
    }
    if !gpu.inner.ctx.as_ref().is_some_and(|c| c.is_primary()) {
        return Err(arg(format!(
            "NCCL drives device {} through its primary context: open it with Gpu::new or Gpu::from_env, not \
             Gpu::isolated",
            gpu.info().ordinal
        )));
    }
    Ok(())
}

/// Waits, bounded by `timeout` from `since`, until NCCL has finished what it was doing on
/// `cells` (creating them, enqueueing): on a failure or at the deadline, `abort` runs with
/// the reason and the error is returned.
pub(super) fn settle(
    cells: &[Arc<Cell>],
    since: Instant,
    timeout: Duration,
    what: &dyn Fn() -> String,
    aborted_why: &dyn Fn() -> String,
    abort: &dyn Fn(&str),
) -> NcclResult<()> {
    match watch::poll_until(since, timeout, || watch::poll_cells(cells)) {
        Ok(()) => Ok(()),
        Err(Poll::Aborted) => {
            Err(NcclError::Aborted(format!("NCCL: {}: the communicator was aborted: {}", what(), aborted_why())))
        }
        Err(Poll::Failed(rank, code)) => {
            let why = format!("NCCL: {} failed on rank {rank}: {}", what(), error_text(code));
            abort(&why);
            Err(NcclError::Aborted(format!("{why}; the communicator is aborted")))
        }
        Err(_) => {
            let why = format!(
                "NCCL: {} did not finish within {:.1} s ({TIMEOUT_VAR}, Comm::set_timeout): a rank of the communicator \
                 did not take part; the communicator is aborted",
                what(),
                timeout.as_secs_f64()
            );
            abort(&why);
            Err(NcclError::Aborted(why))
        }
    }
}

impl Comm {
    /// One communicator per GPU of this process (`ncclCommInitAll`'s equivalent: a unique id,
    /// then one `ncclCommInitRankConfig` per GPU in a group): rank `i` on `gpus[i]`. From one
    /// thread, run their collectives in a [`Group`](super::Group); from one thread per rank,
    /// each rank's calls are compared with the others' (see "Ranks of one process").
    ///
    /// # Errors
    /// [`NcclError::NotFound`] without NCCL; [`Error::Argument`](crate::Error::Argument) for no
    /// GPU, a GPU twice, or an isolated context; an NCCL failure; [`NcclError::Aborted`] if
    /// creating them did not finish within the [`timeout`](super::timeout()).
    pub fn for_gpus(gpus: &[Gpu]) -> NcclResult<Vec<Comm>> {
        if gpus.is_empty() {
            return Err(arg("Comm::for_gpus: no GPU given".into()));
        }
        let ordinals: Vec<c_int> = gpus.iter().map(|g| g.info().ordinal as c_int).collect();
        for (i, o) in ordinals.iter().enumerate() {
            if ordinals[..i].contains(o) {
                return Err(arg(format!("Comm::for_gpus: device {o} is given twice (NCCL wants one rank per GPU)")));
            }
        }
        for g in gpus {
            check_primary(g)?;
        }
        let api = api()?;
        let size = gpus.len();
        let record = Arc::new(Record::new(size, None));
        record.join_all(0..size);
        let what = || format!("creating communicators on devices {ordinals:?}");
        let mut raws = vec![std::ptr::null_mut(); size];
        let start = Instant::now();
        let cells: Vec<Arc<Cell>> = match api.comm_init_rank_config {
            Some(init_config) => {
                let id = NcclId::new()?;
                let mut config = RawConfig::non_blocking();
                // SAFETY: no arguments; paired with the `group_end` below.
                check(api, unsafe { (api.group_start)() }, std::ptr::null_mut(), || "starting a group".into())?;
                let mut first_err = None;
                for (rank, (g, raw)) in gpus.iter().zip(raws.iter_mut()).enumerate() {
                    let rc = g.inner.bind().map_err(NcclError::from).and_then(|()| {
                        // SAFETY: `raw` receives the communicator; the id is 128 bytes by value;
                        // `config` is a live `ncclConfig_t` (2.14 layout) NCCL copies; the
                        // device is the current context's.
                        let rc = unsafe { init_config(raw, size as c_int, id.raw(), rank as c_int, &mut config) };
                        check(api, rc, std::ptr::null_mut(), what)
                    });
                    if let Err(e) = rc {
                        first_err = Some(e);
                        break;
                    }
                }
                // SAFETY: closes the group opened above.
                let rc = unsafe { (api.group_end)() };
                let ended = check(api, rc, std::ptr::null_mut(), what);
                let cells: Vec<Arc<Cell>> = raws
                    .iter()
                    .zip(gpus)
                    .enumerate()
                    .filter(|(_, (r, _))| !r.is_null())
                    .map(|(rank, (&r, g))| Arc::new(api.cell(rank, g, r)))
                    .collect();
                let settled = match first_err.map_or(ended, Err) {
                    Ok(()) if cells.len() == size => {
                        settle(&cells, start, record.timeout(), &what, &|| String::new(), &|_| {})
                    }
                    Ok(()) => Err(NcclError::Aborted(format!("NCCL: {}: not every communicator was made", what()))),
                    Err(e) => Err(e),
                };
                if let Err(e) = settled {
                    watch::abort_cells(&cells);
                    return Err(e);
                }
                cells
            }
            None => {
                gpus[0].inner.bind()?;
                // SAFETY: `raws` has room for one communicator per device of `ordinals`, all
                // valid devices (their `Gpu`s exist).
                let rc = unsafe { (api.comm_init_all)(raws.as_mut_ptr(), ordinals.len() as c_int, ordinals.as_ptr()) };
                check(api, rc, std::ptr::null_mut(), what)?;
                raws.iter().zip(gpus).enumerate().map(|(rank, (&r, g))| Arc::new(api.cell(rank, g, r))).collect()
            }
        };
        for c in &cells {
            record.add_cell(c.clone());
        }
        let made = Arc::new(Made { record: record.clone(), cells: cells.clone() });
        Ok(cells
            .into_iter()
            .zip(gpus)
            .enumerate()
            .map(|(rank, (cell, g))| Comm {
                cell,
                record: record.clone(),
                gpu: g.clone(),
                rank,
                size,
                _made: made.clone(),
                _not_sync: PhantomData,
            })
            .collect())
    }

    /// Rank `rank` of `size` on `gpu`, in a job whose ranks share `id`
    /// (`ncclCommInitRankConfig`, non-blocking): one process (or thread) per GPU, on one
    /// machine or several. Returns once every rank has joined, or fails at the
    /// [`timeout`](super::timeout()). The ranks of one id made in this process are compared
    /// with one another (see "Ranks of one process").
    ///
    /// # Errors
    /// [`Error::Argument`](crate::Error::Argument) for `rank >= size`, an isolated context, or
    /// a rank of `id` made twice in this process; an NCCL failure; [`NcclError::Aborted`] if
    /// not every rank joined within the [`timeout`](super::timeout()).
    pub fn from_rank(gpu: &Gpu, id: &NcclId, rank: usize, size: usize) -> NcclResult<Comm> {
        if rank >= size {
            return Err(arg(format!("Comm::from_rank: rank {rank} of {size}")));
        }
        check_primary(gpu)?;
        let api = api()?;
        // Joined before NCCL is called: no rank's creation can finish before every rank has
        // called, so by the time any rank of this process makes a call, all of them are known.
        let record = Record::join_id(id, size, rank)?;
        let made = (|| {
            gpu.inner.bind()?;
            let what = || format!("creating rank {rank} of {size} on device {}", gpu.info().ordinal);
            let mut raw = std::ptr::null_mut();
            let start = Instant::now();
            match api.comm_init_rank_config {
                Some(init_config) => {
                    let mut config = RawConfig::non_blocking();
                    // SAFETY: `raw` receives the communicator; the id is 128 bytes by value;
                    // `config` is a live `ncclConfig_t` (2.14 layout) NCCL copies.
                    let rc = unsafe { init_config(&mut raw, size as c_int, id.raw(), rank as c_int, &mut config) };
                    let cell = (!raw.is_null()).then(|| Arc::new(api.cell(rank, gpu, raw)));
                    let r = check(api, rc, std::ptr::null_mut(), what).and_then(|()| match &cell {
                        Some(c) => {
                            settle(std::slice::from_ref(c), start, record.timeout(), &what, &|| String::new(), &|_| {})
                        }
                        None => Ok(()),
                    });
                    if let Err(e) = r {
                        if let Some(c) = &cell {
                            watch::abort_cells([c]);
                        }
                        return Err(e);
                    }
                    cell.ok_or_else(|| NcclError::Aborted(format!("NCCL: {}: no communicator made", what())))
                }
                None => {
                    // SAFETY: `raw` receives the communicator; the id is 128 bytes by value.
                    let rc = unsafe { (api.comm_init_rank)(&mut raw, size as c_int, id.raw(), rank as c_int) };
                    check(api, rc, std::ptr::null_mut(), what)?;
                    Ok(Arc::new(api.cell(rank, gpu, raw)))
                }
            }
        })();
        let cell = match made {
            Ok(c) => c,
            Err(e) => {
                record.unjoin(rank);
                return Err(e);
            }
        };
        record.add_cell(cell.clone());
        let made = Arc::new(Made { record: record.clone(), cells: vec![cell.clone()] });
        Ok(Comm { cell, record, gpu: gpu.clone(), rank, size, _made: made, _not_sync: PhantomData })
    }

    /// [`NcclId::exchange`] through `path`, then [`Comm::from_rank`].
    ///
    /// # Errors
    /// As those two.
    pub fn from_id_file(gpu: &Gpu, path: &Path, rank: usize, size: usize, timeout: Duration) -> NcclResult<Comm> {
        if rank >= size {
            return Err(arg(format!("Comm::from_id_file: rank {rank} of {size}")));
        }
        let id = NcclId::exchange(path, rank, timeout)?;
        Self::from_rank(gpu, &id, rank, size)
    }
}
