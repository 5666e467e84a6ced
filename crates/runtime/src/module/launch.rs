//! Launching a [`Function`]: one path under every launch.
//!
//! The public launch functions (plain, tracked, programmatic, cooperative, and their raw
//! variants, in `function.rs`) each name a [`Launch`] and call [`Function::launch_with`], which
//! takes the steps once, in this order:
//!
//! 1. **the launch is possible** ([`Function::prepare`]): a programmatic launch of a kernel
//!    loaded as `#[kernel(dependent)]`, a cooperative kernel only cooperatively, the
//!    configuration within the device's and the kernel's limits, a cooperative grid
//!    co-resident;
//! 2. **the handles meet** (`peer::check_launch`): the stream is of the module's context, every
//!    operand of a context the kernel can reach;
//! 3. **the stream's gate and the capture check** ([`Function::gate`]): another thread's capture
//!    is refused, and so is capturing a kernel that launches kernels;
//! 4. **the tracker** (tracked launches only): the launch is ordered after other streams' work
//!    on its operands, on the module's code and on the variables the kernel uses, and recorded
//!    on them;
//! 5. **the enqueue** ([`Function::enqueue`]): under the kernel's launch budget if it launches
//!    kernels, through the backend, and a refusal mapped to its error.
//!
//! (An untracked launch takes the gate before making the context current, a tracked one after:
//! the order each had before there was one path, which only decides which error a launch that
//! fails twice reports.)
//!
//! A multi-grid launch ([`crate::MultiGrid`]) takes steps 1, 2 and 5 per grid
//! ([`Function::prepare`], [`Function::enqueue`]); its gates and tracker span all its streams.
//!
//! The public functions are thin and [`Function::launch_with`] is `#[inline(always)]`: each
//! public function compiles to its own straight path, the [`Launch`] a constant, with no `dyn`
//! call and no allocation beyond the tracker's own (a typed launch of a kernel that uses no
//! module variables and has fewer than [`INLINE_USES`] operands allocates nothing here).

use crate::backend::{Fault, HostKernel, LaunchMode};
use crate::error::{Error, Result};
use crate::launch::LaunchConfig;
use crate::stream::{Gate, Stream};
use crate::track::{Use, run_tracked_in};

use super::{CODE, Function};

/// Which launch a public launch function makes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Launch {
    /// `launch_raw`, `launch_tracked`: `cuLaunchKernel`.
    Plain,
    /// `launch_programmatic_tracked`: `cuLaunchKernelEx` with programmatic stream
    /// serialization where the loaded entry waits ([`crate::pdl`]), else plain.
    Programmatic,
    /// `launch_cooperative_*` and each grid of a multi-grid launch: `cuLaunchCooperativeKernel`
    /// after the co-residency check.
    Cooperative,
}

/// Operands (with the module's code) that a typed launch passes to the tracker from the stack;
/// more go through a `Vec`.
const INLINE_USES: usize = 8;

impl Function {
    /// The one launch path (see the [module docs](self)): `launch` of this kernel on `stream`,
    /// tracked on `uses` (with the module's code and variables) or, with `None`, untracked.
    ///
    /// # Safety
    /// As [`Function::launch_raw`]; with `Some(uses)`, `uses` covers the memory the kernel
    /// accesses through `params`.
    #[inline(always)]
    pub(super) unsafe fn launch_with(
        &self,
        launch: Launch,
        stream: &Stream,
        config: LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
        uses: Option<&[Use<'_>]>,
    ) -> Result<()> {
        let mode = self.prepare(launch, stream, &config, uses.unwrap_or(&[]))?;
        match uses {
            None => {
                let _gate = self.gate(stream)?;
                self.module.gpu.bind()?;
                // SAFETY: the caller's contract; the configuration was checked, the context is
                // current, and the gate is held to the enqueue.
                unsafe { self.enqueue(stream, config, params, mode) }
            }
            Some(uses) => {
                self.module.gpu.bind()?;
                let gate = self.gate(stream)?;
                // SAFETY: as above; the tracker orders the launch after other streams' work
                // on `uses`.
                self.tracked(stream, &gate, uses, || unsafe { self.enqueue(stream, config, params, mode) })
            }
        }
    }

    /// Steps 1 and 2 of every launch (the [module docs](self)): whether `launch` of this kernel
    /// with `config` is possible (its configuration, and co-residency for a cooperative one),
    /// and whether `stream` and `uses` are of contexts the kernel can reach. Returns how the
    /// backend launches it.
    #[inline]
    pub(crate) fn prepare(
        &self,
        launch: Launch,
        stream: &Stream,
        config: &LaunchConfig,
        uses: &[Use<'_>],
    ) -> Result<LaunchMode> {
        let mode = match launch {
            Launch::Plain => {
                self.check_plain(config)?;
                self.check_cluster(config)?;
                if self.cluster { LaunchMode::Cluster { cooperative: false } } else { LaunchMode::Plain }
            }
            Launch::Programmatic => {
                let mode = self.programmatic_mode()?;
                self.check_plain(config)?;
                self.check_cluster(config)?;
                mode
            }
            Launch::Cooperative => {
                self.check_cooperative(config)?;
                self.check_cluster(config)?;
                if self.cluster { LaunchMode::Cluster { cooperative: true } } else { LaunchMode::Cooperative }
            }
        };
        crate::peer::check_launch(&self.name, &self.module.gpu, &stream.inner.gpu, uses)?;
        Ok(mode)
    }

    /// How a programmatic launch of this kernel is made: overlapped where its loaded entry
    /// waits, in plain stream order where it has no wait or launches kernels (whose launch
    /// budget is reset in stream order before it: [`Function::enqueue`]).
    fn programmatic_mode(&self) -> Result<LaunchMode> {
        use crate::pdl::Programmatic;
        match self.programmatic {
            Programmatic::No => Err(Error::Argument(format!(
                "kernel `{}` cannot be launched programmatically: it was not loaded as a #[kernel(dependent)] \
                 kernel, so its entry does not wait for the kernel before it; declare it `dependent`, or use `launch`",
                self.name
            ))),
            Programmatic::StreamOrder => Ok(LaunchMode::Plain),
            Programmatic::Overlap if self.device_launches => Ok(LaunchMode::Plain),
            Programmatic::Overlap => Ok(LaunchMode::Programmatic),
        }
    }

    /// Step 3: the stream's gate (another thread's capture is refused), held by the caller to
    /// the enqueue, and the capture check: a kernel that launches kernels from the device
    /// cannot be captured into a graph.
    #[inline]
    fn gate<'s>(&self, stream: &'s Stream) -> Result<Gate<'s>> {
        let gate = stream.inner.gate_with(|| format!("launching kernel `{}`", self.name))?;
        if self.device_launches && self.module.launch_budget.is_some() && gate.capture().is_some() {
            return Err(Error::Argument(format!(
                "kernel `{}` launches kernels from the device, so it cannot be captured into a graph: each host \
                 launch gets its own launch budget, which a replay would not reset in order",
                self.name
            )));
        }
        Ok(gate)
    }

    /// Step 4: [`run_tracked_in`] of `launch` under `gate`, with operands `uses`, the module's
    /// code (which keeps the module loaded until the kernel has finished, and in a graph for as
    /// long as the graph lives) and the module variables the kernel uses.
    #[inline]
    fn tracked(
        &self,
        stream: &Stream,
        gate: &Gate<'_>,
        uses: &[Use<'_>],
        launch: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let code = Use::new(&self.module.record, CODE, false);
        match &self.vars {
            None if uses.len() < INLINE_USES => {
                // On the stack: a typed launch allocates nothing here.
                let mut all = [code; INLINE_USES];
                all[..uses.len()].copy_from_slice(uses);
                run_tracked_in(&stream.inner, gate, &all[..=uses.len()], launch)
            }
            None => {
                let mut all: Vec<Use<'_>> = Vec::with_capacity(uses.len() + 1);
                all.extend_from_slice(uses);
                all.push(code);
                run_tracked_in(&stream.inner, gate, &all, launch)
            }
            Some(vars) => {
                let mut all = vars.with(uses);
                all.push(code);
                run_tracked_in(&stream.inner, gate, &all, launch)
            }
        }
    }

    /// Step 5: `cuLaunchKernel` / `cuLaunchCooperativeKernel` / `cuLaunchKernelEx` (`mode`) of
    /// a checked configuration, under the kernel's launch budget if it launches kernels.
    ///
    /// # Safety
    /// As [`Function::launch_raw`]; the configuration was checked for `mode`
    /// ([`Function::prepare`]), the context is current, and a programmatic launch is of a
    /// kernel whose loaded entry waits.
    #[inline]
    pub(crate) unsafe fn enqueue(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
        mode: LaunchMode,
    ) -> Result<()> {
        if self.device_launches
            && let Some((budget, _)) = &self.module.launch_budget
        {
            // Not in a capture: the callers checked (`Function::gate`) under the stream's gate.
            let serial = &self.module.gpu.launch_serial;
            // SAFETY: forwarded; the budget only orders and resets before the launch.
            let launch = || unsafe { self.enqueue_now(stream, config, params, mode) };
            return budget.around(&*self.module.gpu.backend, serial, stream.inner.raw, launch);
        }
        // SAFETY: forwarded.
        unsafe { self.enqueue_now(stream, config, params, mode) }
    }

    /// [`Function::enqueue`] without the launch budget.
    ///
    /// # Safety
    /// As [`Function::enqueue`].
    #[inline]
    unsafe fn enqueue_now(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
        mode: LaunchMode,
    ) -> Result<()> {
        let host = HostKernel {
            entry: self.cpu_entry,
            name: &self.name,
            fast_path: self.cpu_fast_path,
            device_launches: self.device_launches,
            vars: self.cpu_vars(),
        };
        // SAFETY: the caller guarantees the parameters and the configuration.
        let r = unsafe { self.module.gpu.backend.launch(self.raw, host, config, stream.inner.raw, params, mode) };
        match r {
            Ok(()) => {
                stream.note_launch(&self.name, config);
                Ok(())
            }
            Err(fault) => Err(self.launch_failure(stream, config, fault)),
        }
    }

    /// The error of a launch the backend refused or (on the CPU device) that failed.
    #[cold]
    fn launch_failure(&self, stream: &Stream, config: LaunchConfig, fault: Fault) -> Error {
        match fault {
            Fault::Driver(code) => stream.launch_error(&self.name, config, code),
            Fault::Kernel(error) => {
                // It ran (and failed): noted as any launch.
                stream.note_launch(&self.name, config);
                Error::CpuKernel { kernel: self.name.clone(), config, error }
            }
            Fault::Unsupported(what) => crate::cpu::not_on_cpu(what),
            fault => fault.into_error(format!("launching kernel `{}` with {config}", self.name)),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The order of the launch path's steps, the same for every launch, on the CPU device: each
    //! launch here is refused before its enqueue, by the step the order makes first.

    use std::sync::Arc;

    use crate::stream::Capture;
    use crate::{Error, Function, Gpu, LaunchConfig, Module, Result, Stream, StreamOptions};

    const PTX: &str = ".version 8.0\n.target sm_80\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n";

    fn module(gpu: &Gpu) -> Module {
        gpu.load_ptx_text("launch_path", PTX).unwrap()
    }

    /// Every untracked and tracked launch of `f` on `s` with `config` (no parameters, no
    /// operands), plain, programmatic and cooperative.
    fn every_launch(f: &Function, s: &Stream, config: LaunchConfig) -> Vec<(&'static str, Result<()>)> {
        // SAFETY: `k` takes no parameters and touches no memory (and none of these launches
        // reaches its enqueue).
        unsafe {
            vec![
                ("launch_raw", f.launch_raw(s, config, &mut [])),
                ("launch_tracked", f.launch_tracked(s, config, &mut [], &[])),
                ("launch_programmatic_tracked", f.launch_programmatic_tracked(s, config, &mut [], &[])),
                ("launch_cooperative_raw", f.launch_cooperative_raw(s, config, &mut [])),
                ("launch_cooperative_tracked", f.launch_cooperative_tracked(s, config, &mut [], &[])),
            ]
        }
    }

    #[test]
    fn each_launch_checks_its_kind_then_the_configuration() {
        let gpu = Gpu::cpu().unwrap();
        let m = module(&gpu);
        let (plain, coop) = (m.function("k", false).unwrap(), m.function("k", true).unwrap());
        let bad = LaunchConfig::new(0, 32);
        for (f, cooperative) in [(&plain, false), (&coop, true)] {
            for (what, r) in every_launch(f, gpu.stream(), bad) {
                let kind_first = match what {
                    // Not loaded as `#[kernel(dependent)]`: refused before anything else.
                    "launch_programmatic_tracked" => {
                        matches!(&r, Err(Error::Argument(m)) if m.contains("cannot be launched programmatically"))
                    }
                    "launch_raw" | "launch_tracked" if cooperative => matches!(&r, Err(Error::Cooperative { .. })),
                    _ => matches!(&r, Err(Error::InvalidLaunch { reason, .. }) if reason.contains("dimension is 0")),
                };
                assert!(kind_first, "{what} of a {} kernel: {r:?}", if cooperative { "cooperative" } else { "plain" });
            }
        }
    }

    #[test]
    fn another_threads_capture_is_refused_after_the_checks_and_before_the_enqueue() {
        let gpu = Gpu::cpu().unwrap();
        let m = module(&gpu);
        let s = gpu.new_stream_with(StreamOptions::new().non_blocking(true)).unwrap();
        // The stream as another thread's capture leaves it (the CPU device has no graphs).
        let c = std::thread::spawn(|| Arc::new(Capture::new_for_tests())).join().unwrap();
        *s.inner.capture.write().unwrap() = Some(c.clone());
        let plain = m.function("k", false).unwrap();
        for (what, r) in every_launch(&plain, &s, LaunchConfig::new(0, 32)) {
            // The launch's own checks come before the stream's gate.
            let checked_first = match what {
                "launch_programmatic_tracked" => {
                    matches!(&r, Err(Error::Argument(m)) if m.contains("programmatically"))
                }
                _ => matches!(&r, Err(Error::InvalidLaunch { .. })),
            };
            assert!(checked_first, "{what} with a bad configuration: {r:?}");
        }
        let coop = m.function("k", true).unwrap();
        let good = LaunchConfig::new(1, 32);
        let refused = |r: &Result<()>| matches!(r, Err(Error::Argument(m)) if m.contains("launching kernel `k`") && m.contains("another thread"));
        for (what, r) in every_launch(&plain, &s, good) {
            if what.contains("cooperative") || what.contains("programmatic") {
                continue;
            }
            assert!(refused(&r), "{what}: {r:?}");
        }
        for (what, r) in every_launch(&coop, &s, good) {
            if what.contains("cooperative") {
                assert!(refused(&r), "{what} of a cooperative kernel: {r:?}");
            }
        }
        c.end_for_tests();
    }
}
