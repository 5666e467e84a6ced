//! Communicators that can be aborted at any time, the operations enqueued on them, and the
//! watchdog that turns a collective that never completes into an error (see the parent
//! module's docs, "Hangs").
//!
//! `cell.rs` holds a communicator's handle (locked, aborted once), `record.rs` the ranks of one
//! communicator in this process and their pending operations; this file the deadline, the
//! bounded waits and the watchdog thread.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

mod cell;
mod record;
#[cfg(test)]
mod tests;

pub(crate) use cell::{AbortFn, Cell, QueryFn, State, abort_cells};
pub(crate) use record::{OpState, Record};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The environment variable that sets the default [`timeout`], in seconds.
pub const TIMEOUT_VAR: &str = "COHORT_NCCL_TIMEOUT";

/// The default deadline when [`TIMEOUT_VAR`] is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long an NCCL operation may take before its communicator is aborted: the value of
/// [`TIMEOUT_VAR`] (seconds, fractions allowed) if set, else [`DEFAULT_TIMEOUT`]. Each
/// communicator starts with it; [`Comm::set_timeout`](super::Comm::set_timeout) changes one.
#[must_use]
pub fn timeout() -> Duration {
    static T: OnceLock<Duration> = OnceLock::new();
    *T.get_or_init(|| parse_timeout(std::env::var(TIMEOUT_VAR).ok().as_deref()))
}

/// [`TIMEOUT_VAR`]'s value as a deadline: positive seconds (up to a year), else the default.
fn parse_timeout(v: Option<&str>) -> Duration {
    v.and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 365.0 * 86400.0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64)
}

/// What to do with an operation that has not finished.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Wait,
    /// Abort its communicators, for this reason (completing "NCCL: <operation> …").
    Abort(String),
}

/// The watchdog's rule: abort when NCCL reports an error on one of the communicators
/// (`failed`: the rank and the code), or when the operation began on the GPU (`started`) more
/// than `timeout` ago.
pub(crate) fn judge(
    now: Instant,
    started: Option<Instant>,
    timeout: Duration,
    failed: Option<(usize, i32)>,
) -> Verdict {
    if let Some((rank, code)) = failed {
        return Verdict::Abort(format!(
            "failed: NCCL reported error {code} on rank {rank}'s communicator; the communicator is aborted"
        ));
    }
    match started {
        Some(t) if now.duration_since(t) > timeout => Verdict::Abort(format!(
            "did not complete within {:.1} s of starting on the GPU ({TIMEOUT_VAR}, Comm::set_timeout): a rank of the \
             communicator did not make it, or made a different call (ranks in other processes are not compared); the \
             communicator is aborted",
            timeout.as_secs_f64()
        )),
        _ => Verdict::Wait,
    }
}

/// What a poll of the communicators being enqueued on found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Poll {
    /// All ready.
    Ready,
    /// Some still in progress.
    InProgress,
    /// A failure: the rank and the code.
    Failed(usize, i32),
    /// A communicator was aborted.
    Aborted,
}

/// Polls `poll` until it is no longer [`Poll::InProgress`] or `timeout` has passed since
/// `since`: the enqueueing of a non-blocking communicator's operations, bounded.
pub(crate) fn poll_until(since: Instant, timeout: Duration, mut poll: impl FnMut() -> Poll) -> Result<(), Poll> {
    let mut spins = 0u32;
    loop {
        match poll() {
            Poll::Ready => return Ok(()),
            Poll::InProgress if since.elapsed() > timeout => return Err(Poll::InProgress),
            Poll::InProgress => {}
            other => return Err(other),
        }
        spins += 1;
        if spins < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(if spins < 1024 { 20 } else { 1000 }));
        }
    }
}

/// The state of `cells` for [`poll_until`].
pub(crate) fn poll_cells(cells: &[Arc<Cell>]) -> Poll {
    let mut all = Poll::Ready;
    for c in cells {
        match c.state() {
            State::Ready => {}
            State::InProgress => all = Poll::InProgress,
            State::Failed(code) => return Poll::Failed(c.rank, code),
            State::Aborted => return Poll::Aborted,
        }
    }
    all
}

/// The watchdog: a thread that looks at every pending operation every few milliseconds.
struct Watchdog {
    ops: Mutex<Vec<Arc<OpState>>>,
    wake: Condvar,
}

/// How often the watchdog looks.
const PERIOD: Duration = Duration::from_millis(5);

fn watchdog() -> &'static Watchdog {
    static W: OnceLock<Watchdog> = OnceLock::new();
    static START: std::sync::Once = std::sync::Once::new();
    let w = W.get_or_init(|| Watchdog { ops: Mutex::new(Vec::new()), wake: Condvar::new() });
    START.call_once(|| {
        let spawned = std::thread::Builder::new().name("cohort-nccl-watchdog".into()).spawn(move || {
            loop {
                let ops: Vec<Arc<OpState>> = {
                    let mut g = lock(&w.ops);
                    while g.is_empty() {
                        g = w.wake.wait(g).unwrap_or_else(|p| p.into_inner());
                    }
                    g.clone()
                };
                let now = Instant::now();
                let finished: Vec<*const OpState> = ops.iter().filter(|o| !o.watch(now)).map(Arc::as_ptr).collect();
                if !finished.is_empty() {
                    lock(&w.ops).retain(|o| !finished.contains(&Arc::as_ptr(o)));
                }
                drop(ops);
                std::thread::sleep(PERIOD);
            }
        });
        // Without a watchdog, waits are unbounded again: say so once.
        if let Err(e) = spawned {
            eprintln!("cohort: the NCCL watchdog thread could not start ({e}): stuck collectives will hang");
        }
    });
    w
}

/// Has the watchdog watch `op` until it finishes or fails.
pub(crate) fn watch(op: Arc<OpState>) {
    let w = watchdog();
    lock(&w.ops).push(op);
    w.wake.notify_one();
}
