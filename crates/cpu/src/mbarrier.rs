//! Asynchronous barriers in shared memory (PTX `mbarrier`, CUDA's `cuda::barrier`): phases,
//! arrival counts and transaction counts, modeled per block beside the shared window.
//!
//! An mbarrier at shared address `a` is created by [`mbarrier_init`] with an expected arrival
//! count; each phase completes when that many arrivals have been made ([`mbarrier_arrive`])
//! *and* its transaction count is back to zero: [`mbarrier_arrive`] with `tx` bytes raises it
//! (`mbarrier.arrive.expect_tx`), [`mbarrier_complete_tx`] lowers it (what a bulk or tensor copy
//! does as its bytes land). [`mbarrier_test_wait`] tells whether phase `n` has completed. The
//! engine keeps the state beside the window (not in its 8 bytes), so it can name misuse: a
//! barrier used before `init` or after `inval`, initialised twice, more arrivals in a phase than
//! it expects, a transaction count that goes past the hardware's range.
//!
//! The race check ([`LaunchSpec::race_check`](crate::LaunchSpec::race_check)) sees a phase as a
//! barrier among its arrivals and its waiters: an arrival releases the thread's accesses so far,
//! a wait that sees the phase complete acquires every arrival's. So a thread that reads an
//! asynchronous copy's destination without waiting for the phase the copy completes on is a
//! [`CpuError::SharedRace`](crate::CpuError::SharedRace) naming the copy and the read.

use core::panic::Location;
use std::collections::HashMap;

use crate::ctx::{self, current};
use crate::shared::block_of;

/// The largest arrival count of an mbarrier (PTX: `count` in 1 ..= 2^20 - 1).
pub const MBARRIER_MAX_COUNT: u32 = (1 << 20) - 1;
/// The largest pending transaction count of an mbarrier phase (PTX: tx-count in
/// -(2^20 - 1) ..= 2^20 - 1).
pub const MBARRIER_MAX_TX: i64 = (1 << 20) - 1;

/// One live mbarrier of a block.
pub(crate) struct Mbar {
    expected: u32,
    pending: u32,
    tx: i64,
    /// The number of the current (incomplete) phase.
    phase: u64,
    init_site: &'static Location<'static>,
    /// The race check's release clock of the current phase (the join of its arrivals' clocks).
    release: Vec<u32>,
    /// The release clocks of the two most recently completed phases, by phase number.
    done: [(u64, Vec<u32>); 2],
}

/// The block's mbarriers, by shared address.
pub(crate) type Mbars = HashMap<u32, Mbar>;

fn with_bar<R>(op: &'static str, addr: u32, site: &'static Location<'static>, f: impl FnOnce(&mut Mbar) -> R) -> R {
    let c = current();
    let block = block_of(&c);
    let mut bars = block.mbar.borrow_mut();
    match bars.get_mut(&addr) {
        Some(b) => f(b),
        None => {
            drop(bars);
            ctx::misuse(
                op,
                site,
                format!(
                    "no initialised mbarrier at shared address {addr:#x} (used before `mbarrier.init` or after `mbarrier.inval`)"
                ),
            )
        }
    }
}

/// `mbarrier.init.shared.b64 [addr], count`: a new mbarrier at phase 0 expecting `count`
/// arrivals per phase. Initialising a live one (not invalidated since its last `init`) or an
/// address not 8-byte aligned, or a count outside 1 ..= 2^20 - 1, ends the launch with a
/// [`CpuError::Misuse`](crate::CpuError::Misuse) naming both `init` sites.
#[track_caller]
pub fn mbarrier_init(addr: u32, count: u32) {
    let site = Location::caller();
    if !addr.is_multiple_of(8) {
        ctx::misuse("mbarrier_init", site, format!("shared address {addr:#x} is not 8-byte aligned"));
    }
    if count == 0 || count > MBARRIER_MAX_COUNT {
        ctx::misuse("mbarrier_init", site, format!("arrival count {count} is not in 1..={MBARRIER_MAX_COUNT}"));
    }
    let c = current();
    let block = block_of(&c);
    let n = block.race.borrow().as_ref().map_or(0, |r| r.threads());
    let mut bars = block.mbar.borrow_mut();
    if let Some(old) = bars.get(&addr) {
        let first = old.init_site;
        drop(bars);
        ctx::misuse(
            "mbarrier_init",
            site,
            format!(
                "the mbarrier at shared address {addr:#x} is initialised again while live (first initialised at {first})"
            ),
        );
    }
    let zero = vec![0; n];
    bars.insert(
        addr,
        Mbar {
            expected: count,
            pending: count,
            tx: 0,
            phase: 0,
            init_site: site,
            release: zero.clone(),
            done: [(u64::MAX, zero.clone()), (u64::MAX, zero)],
        },
    );
}

/// `mbarrier.inval.shared.b64 [addr]`: the mbarrier is gone; its address may be initialised
/// again. A phase still waiting for arrivals or bytes ends the launch with a misuse error (its
/// copies would land on memory that is no longer a barrier).
#[track_caller]
pub fn mbarrier_inval(addr: u32) {
    let site = Location::caller();
    let incomplete = with_bar("mbarrier_inval", addr, site, |b| (b.tx != 0).then_some(b.tx));
    if let Some(tx) = incomplete {
        ctx::misuse(
            "mbarrier_inval",
            site,
            format!("the mbarrier at shared address {addr:#x} is invalidated while {tx} transaction bytes are pending"),
        );
    }
    block_of(&current()).mbar.borrow_mut().remove(&addr);
}

fn complete_if_done(b: &mut Mbar) {
    if b.pending == 0 && b.tx == 0 {
        let slot = (b.phase & 1) as usize;
        b.done[slot] = (b.phase, core::mem::replace(&mut b.release, vec![0; b.done[slot].1.len()]));
        b.phase += 1;
        b.pending = b.expected;
    }
}

/// `mbarrier.arrive[.expect_tx][.drop].shared.b64`: this thread's arrival on the current phase,
/// first raising its transaction count by `tx` bytes; with `drop`, the barrier expects one
/// arrival fewer from the next phase on. Returns the number of the phase arrived on (the token
/// of [`mbarrier_test_wait`]). An arrival on a phase that has all its arrivals already, or a
/// transaction count past 2^20 - 1, ends the launch with a misuse error.
#[track_caller]
pub fn mbarrier_arrive(addr: u32, tx: u32, drop: bool) -> u64 {
    let site = Location::caller();
    let c = current();
    let block = block_of(&c);
    let clock = block.race.borrow_mut().as_mut().map(|r| r.release_row(c.rank));
    let res = with_bar("mbarrier_arrive", addr, site, |b| {
        if b.pending == 0 {
            return Err(format!(
                "an arrival on phase {} of the mbarrier at shared address {addr:#x}, which already has its {} \
                 arrivals (a thread arrived twice in one phase, or the count is smaller than the threads that arrive)",
                b.phase, b.expected
            ));
        }
        b.tx += i64::from(tx);
        if b.tx > MBARRIER_MAX_TX {
            return Err(format!(
                "phase {} of the mbarrier at shared address {addr:#x} expects {} transaction bytes, more than the \
                 {MBARRIER_MAX_TX} an mbarrier can count",
                b.phase, b.tx
            ));
        }
        if let Some(clock) = &clock {
            for (r, v) in b.release.iter_mut().zip(clock) {
                *r = (*r).max(*v);
            }
        }
        let phase = b.phase;
        b.pending -= 1;
        if drop {
            b.expected -= 1;
        }
        complete_if_done(b);
        Ok(phase)
    });
    match res {
        Ok(p) => p,
        Err(e) => ctx::misuse("mbarrier_arrive", site, e),
    }
}

/// `mbarrier.expect_tx` without an arrival: raises the current phase's transaction count.
#[track_caller]
pub fn mbarrier_expect_tx(addr: u32, tx: u32) {
    let site = Location::caller();
    let res = with_bar("mbarrier_expect_tx", addr, site, |b| {
        b.tx += i64::from(tx);
        (b.tx > MBARRIER_MAX_TX).then(|| format!("{} pending transaction bytes exceed {MBARRIER_MAX_TX}", b.tx))
    });
    if let Some(e) = res {
        ctx::misuse("mbarrier_expect_tx", site, e);
    }
}

/// What a bulk or tensor copy does as its `bytes` land (`complete_tx::bytes`): lowers the
/// current phase's transaction count, completing the phase if its arrivals are all in. Called
/// by the thread that issued the copy, after writing its bytes: for the race check, the phase
/// releases them (as an arrival releases the arriving thread's accesses).
#[track_caller]
pub fn mbarrier_complete_tx(addr: u32, bytes: u32) {
    let site = Location::caller();
    let c = current();
    // The copy was made by this thread (the one that issued it): the phase releases its writes.
    let clock = block_of(&c).race.borrow_mut().as_mut().map(|r| r.release_row(c.rank));
    let res = with_bar("mbarrier_complete_tx", addr, site, |b| {
        if let Some(clock) = &clock {
            for (r, v) in b.release.iter_mut().zip(clock) {
                *r = (*r).max(*v);
            }
        }
        b.tx -= i64::from(bytes);
        if b.tx < -MBARRIER_MAX_TX {
            return Some(format!("{} transaction bytes completed beyond what the phase expects", -b.tx));
        }
        complete_if_done(b);
        None
    });
    if let Some(e) = res {
        ctx::misuse("mbarrier_complete_tx", site, e);
    }
}

/// Whether phase `phase` of the mbarrier at `addr` has completed (`mbarrier.test_wait`); when
/// it has, the race check orders this thread after every arrival of that phase. Asking about a
/// phase more than one phase behind the barrier (whose parity a GPU could no longer tell from
/// the current phase's) ends the launch with a misuse error.
#[track_caller]
#[must_use]
pub fn mbarrier_test_wait(addr: u32, phase: u64) -> bool {
    let site = Location::caller();
    let c = current();
    let block = block_of(&c);
    let res = with_bar("mbarrier_test_wait", addr, site, |b| {
        if phase >= b.phase {
            return Ok(None);
        }
        if b.phase - phase > 1 {
            return Err(format!(
                "a wait for phase {phase} of the mbarrier at shared address {addr:#x}, which is at phase {} already \
                 (a wait by phase parity would wait for a later phase)",
                b.phase
            ));
        }
        let slot = &b.done[(phase & 1) as usize];
        Ok(Some(if slot.0 == phase { slot.1.clone() } else { Vec::new() }))
    });
    match res {
        Ok(None) => false,
        Ok(Some(clock)) => {
            if let Some(r) = block.race.borrow_mut().as_mut() {
                r.acquire(c.rank, &clock);
            }
            true
        }
        Err(e) => ctx::misuse("mbarrier_test_wait", site, e),
    }
}
