//! Captured graphs ([`Graph`]) and their executable instances ([`GraphExec`]), replayed in
//! stream order like any other operation.

use std::fmt;
use std::sync::{Arc, Mutex};

use super::{Captured, Stream};
use crate::backend::{GraphExecH, GraphH};
use crate::device::GpuInner;
use crate::error::Result;
use crate::track::{Use, run_tracked};

/// A captured sequence of operations ([`Stream::capture`]), to instantiate and replay.
///
/// Shareable between threads: CUDA graph objects are not internally synchronized ("Graph
/// object thread safety": no two calls on one graph may run at once, even ones that look
/// read-only, such as instantiating), so every call on it takes its turn.
pub struct Graph {
    pub(super) raw: GraphH,
    pub(super) gpu: Arc<GpuInner>,
    pub(super) used: Arc<Vec<Captured>>,
    /// Held by every driver call on `raw`.
    pub(super) serial: Mutex<()>,
}

// SAFETY: a CUgraph may be used from any thread, one call at a time: every call on `raw` holds
// `serial` (and `drop` has `&mut self`); the rest is shared immutable data.
unsafe impl Send for Graph {}
// SAFETY: as above.
unsafe impl Sync for Graph {}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Each allocation (and each loaded module's record) once, however many nodes use it.
        let mut seen: Vec<*const crate::track::Alloc> = Vec::new();
        let (mut memory, mut modules) = (0usize, 0usize);
        for c in self.used.iter() {
            if !seen.contains(&Arc::as_ptr(&c.alloc)) {
                seen.push(Arc::as_ptr(&c.alloc));
                if c.alloc.is_keeper() { modules += 1 } else { memory += 1 }
            }
        }
        f.debug_struct("Graph")
            .field("raw", &std::ptr::without_provenance::<()>(self.raw.0))
            .field("allocations", &memory)
            .field("modules", &modules)
            .finish()
    }
}

impl Graph {
    /// Number of nodes (kernels, copies, fills) in the graph.
    ///
    /// # Errors
    /// A driver failure.
    pub fn node_count(&self) -> Result<usize> {
        self.gpu.bind()?;
        let _turn = self.serial.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: live graph, no other call on it meanwhile (`serial`).
        unsafe { self.gpu.backend.graph_nodes(self.raw) }.map_err(self.gpu.failed("counting graph nodes"))
    }

    /// An executable instance (`cuGraphInstantiate`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn instantiate(&self) -> Result<GraphExec> {
        self.gpu.bind()?;
        let turn = self.serial.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: live graph, no other call on it meanwhile (`serial`).
        let raw = unsafe { self.gpu.backend.instantiate_graph(self.raw) }
            .map_err(self.gpu.failed("instantiating a graph"))?;
        drop(turn);
        Ok(GraphExec { raw, gpu: self.gpu.clone(), used: self.used.clone(), serial: Mutex::new(()) })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: ours, not used after.
            unsafe {
                let _ = self.gpu.backend.destroy_graph(self.raw);
            }
        }
    }
}

/// An instantiated [`Graph`]: [`GraphExec::launch`] replays it on a stream. Shareable between
/// threads: replays from several threads take turns (`cuGraphLaunch` is under CUDA's graph
/// thread-safety rule too).
pub struct GraphExec {
    raw: GraphExecH,
    gpu: Arc<GpuInner>,
    used: Arc<Vec<Captured>>,
    /// Held by every driver call on `raw`.
    serial: Mutex<()>,
}

// SAFETY: as for `Graph`: every call on `raw` holds `serial` (`drop` has `&mut self`).
unsafe impl Send for GraphExec {}
// SAFETY: as for `Graph`.
unsafe impl Sync for GraphExec {}

impl fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphExec").field("raw", &std::ptr::without_provenance::<()>(self.raw.0)).finish()
    }
}

impl GraphExec {
    /// Replays the graph on `stream` (`cuGraphLaunch`), ordered like any other operation
    /// against other streams' work on the memory it uses.
    ///
    /// # Errors
    /// [`Error::CrossDevice`](crate::Error::CrossDevice) for a stream of another context than the one the graph was
    /// captured in; a driver failure (a kernel that failed in an earlier replay included).
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        crate::peer::require_same(
            || "a graph replay".into(),
            &self.gpu,
            &stream.inner.gpu,
            "a graph runs only on streams of the context it was captured in (its kernels and memory are that \
             context's); capture it again on the other GPU",
        )?;
        let uses: Vec<Use<'_>> = self.used.iter().map(Use::captured).collect();
        self.gpu.bind()?;
        run_tracked(&stream.inner, &uses, || {
            // Taken last (nothing is locked under it): replays of this instance from other
            // threads wait here.
            let _turn = self.serial.lock().unwrap_or_else(|p| p.into_inner());
            // SAFETY: live instance and stream of one context (checked above), no other call
            // on the instance meanwhile (`serial`); the memory it uses is kept alive by `used`,
            // and the tracker ordered the replay after conflicting work.
            unsafe { self.gpu.backend.launch_graph(self.raw, stream.inner.raw) }
                .map_err(self.gpu.failed("launching a graph"))
        })
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: ours; a replay still running keeps its resources until it finishes.
            unsafe {
                let _ = self.gpu.backend.destroy_graph_exec(self.raw);
            }
        }
    }
}
