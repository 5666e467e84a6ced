//! Module variables (`constant!` / `global!`) on the CPU device.
//!
//! Each loaded module of the CPU device has a [`VarTable`]: host memory for each of its
//! variables; `global!` ones are registered as global memory, `constant!` ones are not (on a GPU
//! they are in the `.const` state space: `isspacep.global` is false for them, a child launch
//! refuses them as a slice argument and `cp.async` cannot read them). The device library's host build finds a variable by
//! name with [`module_var`], in the table of the running launch's module (inside a kernel) or
//! of the module the host is looking the variable up in ([`with_module_vars`]). The first
//! lookup writes the variable's initial value (the declaration's initializer, which the caller
//! passes), so every path to a variable sees it initialized, as a GPU's module load does.

use std::alloc::Layout;
use std::cell::Cell;
use std::sync::{Arc, Once, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::device_launch::{current_vars, register_global, unregister_global};

/// One variable: its memory and whether it holds its initial value yet.
struct Slot {
    name: String,
    ptr: *mut u8,
    layout: Layout,
    init: Once,
    /// In constant memory (`constant!`): not registered as global memory.
    constant: bool,
}

/// The variables of one loaded module: host memory for each, never freed (see `Drop`).
pub struct VarTable {
    slots: Vec<Slot>,
    /// Launches of the module's kernels hold it shared, host reads and writes of the variables
    /// exclusively: on the CPU device a launch runs on the thread that makes it, so without it
    /// a host write from another thread could land under a running kernel (a GPU orders them
    /// by streams and events instead).
    access: RwLock<()>,
}

// SAFETY: the slots' memory is owned by the table and only reached through addresses handed to
// kernels and to the runtime, which access it as a GPU's module variables are accessed (reads,
// atomics, host copies ordered by streams); `Once` and the rest are thread-safe.
unsafe impl Send for VarTable {}
// SAFETY: as above.
unsafe impl Sync for VarTable {}

impl VarTable {
    /// Host memory for each `(name, bytes, alignment, constant)` variable (zeroed until its
    /// first lookup writes its initial value), registered as global memory unless `constant`
    /// (a `constant!`, in the `.const` state space on a GPU).
    ///
    /// # Panics
    /// On an alignment that is not a power of two, or a size too large to allocate.
    #[must_use]
    pub fn new(vars: impl IntoIterator<Item = (String, usize, usize, bool)>) -> Arc<Self> {
        let slots = vars
            .into_iter()
            .map(|(name, size, align, constant)| {
                let layout = Layout::from_size_align(size.max(1), align.max(16)).expect("a module variable's layout");
                // SAFETY: the layout has a non-zero size.
                let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
                if ptr.is_null() {
                    std::alloc::handle_alloc_error(layout);
                }
                if !constant {
                    register_global(ptr as usize, layout.size());
                }
                Slot { name, ptr, layout, init: Once::new(), constant }
            })
            .collect();
        Arc::new(Self { slots, access: RwLock::new(()) })
    }

    /// Held while a launch of the module's kernels runs (shared with other launches).
    pub fn launch_guard(&self) -> RwLockReadGuard<'_, ()> {
        self.access.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Held while the host reads or writes a variable (no launch of the module runs meanwhile).
    pub fn host_guard(&self) -> RwLockWriteGuard<'_, ()> {
        self.access.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The address and size of variable `name`, if the table has it.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<(u64, usize)> {
        self.slots.iter().find(|s| s.name == name).map(|s| (s.ptr as u64, s.layout.size()))
    }
}

impl Drop for VarTable {
    /// Unregisters the variables (no kernel can be handed them as global memory any more) but
    /// does not free them: `global!` and `constant!` statics deref to `&'static` references,
    /// which host-only code in a kernel could keep (in a `std` static) past the module. Kept
    /// memory makes such a reference harmless once the module is gone: nothing else ever
    /// writes or reuses those bytes. The cost is the variables' bytes per module dropped.
    fn drop(&mut self) {
        for s in self.slots.iter().filter(|s| !s.constant) {
            unregister_global(s.ptr as usize);
        }
    }
}

thread_local! {
    /// The table host code on this thread looks variables up in ([`with_module_vars`]).
    static HOST: Cell<*const VarTable> = const { Cell::new(core::ptr::null()) };
}

/// Runs `f` with `table` as the module whose variables [`module_var`] finds on this thread
/// outside kernels (the runtime's symbol lookup calls the handle's address function in it).
pub fn with_module_vars<R>(table: &Arc<VarTable>, f: impl FnOnce() -> R) -> R {
    struct Restore(*const VarTable);
    impl Drop for Restore {
        fn drop(&mut self) {
            HOST.with(|h| h.set(self.0));
        }
    }
    let _restore = Restore(HOST.with(|h| h.replace(Arc::as_ptr(table))));
    f()
}

/// The address of module variable `name` in the running launch's module (in a kernel) or in
/// the module [`with_module_vars`] names (on the host); the first lookup copies `init_len`
/// bytes from `init` into it.
///
/// # Safety
/// `init` points to `init_len` readable bytes: the variable's initial value.
///
/// # Panics
/// Outside a launch of the runtime's CPU device (and outside [`with_module_vars`]), or when the
/// module has no variable `name` or a smaller one.
#[track_caller]
pub unsafe fn module_var(name: &str, init: *const u8, init_len: usize) -> u64 {
    let table = if crate::in_kernel() { current_vars() } else { HOST.with(Cell::get) };
    if table.is_null() {
        panic!(
            "module variable `{name}` used outside a launch of its module on the CPU device (a kernel run through \
             `cohort_cpu::launch` directly has no module)"
        );
    }
    // SAFETY: `table` is the running launch's table (kept alive by its launch tree until every
    // thread of the tree has finished) or the one `with_module_vars` holds for this call.
    let table = unsafe { &*table };
    let Some(slot) = table.slots.iter().find(|s| s.name == name) else {
        panic!("the module of this launch has no module variable `{name}` (a kernel of another crate?)")
    };
    assert!(init_len <= slot.layout.size(), "module variable `{name}`: the initial value is larger than the variable");
    slot.init.call_once(|| {
        // SAFETY: `init` has `init_len` readable bytes (the caller's contract), and the slot at
        // least as many (checked above), written by no one else before its `Once` completes.
        unsafe { core::ptr::copy_nonoverlapping(init, slot.ptr, init_len) };
    });
    slot.ptr as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    use crate::{LaunchSpec, launch, with_launch_budget};

    #[test]
    fn variables_get_their_initial_value_at_first_lookup_host_or_kernel() {
        let table = VarTable::new([("A".to_string(), 8, 8, false), ("B".to_string(), 4, 4, false)]);
        let (a, size) = table.get("A").unwrap();
        assert_eq!(size, 8);
        assert!(crate::is_global(a as usize, 8), "`global!` variables are global memory");
        let init_a = 0x1122_3344_5566_7788u64;
        // SAFETY: `init_a` has 8 readable bytes.
        let got = with_module_vars(&table, || unsafe { module_var("A", (&raw const init_a).cast(), 8) });
        assert_eq!(got, a);
        // SAFETY: the variable's memory, initialized above.
        assert_eq!(unsafe { (a as *const u64).read() }, init_a);
        // In a kernel of a launch of the module: B gets its value once, every thread sees it.
        let init_b = 7u32;
        let seen = std::sync::atomic::AtomicU32::new(0);
        with_launch_budget(0, Some(table.clone()), || {
            launch(&LaunchSpec::new(2u32, 32u32), &|| {
                // SAFETY: `init_b` has 4 readable bytes.
                let b = unsafe { module_var("B", (&raw const init_b).cast(), 4) };
                // SAFETY: the variable, initialized by the lookup.
                seen.fetch_add(unsafe { (b as *const u32).read() }, Ordering::Relaxed);
            })
        })
        .unwrap();
        assert_eq!(seen.into_inner(), 64 * 7);
        // Outside any module, a lookup is a panic naming the variable, not a wild address.
        // SAFETY: as above.
        let r = std::panic::catch_unwind(|| unsafe { module_var("A", (&raw const init_a).cast(), 8) });
        let msg = r.unwrap_err().downcast::<String>().unwrap();
        assert!(msg.contains("`A`"), "{msg}");
        drop(table);
        assert!(!crate::is_global(a as usize, 8), "no longer global memory once its module is dropped");
        // …but still there, unchanged, for a `&'static` a kernel kept past the module (a freed
        // block would hold the allocator's own pointers in its first bytes by now).
        // SAFETY: module variables are never freed (`VarTable`'s `Drop`).
        assert_eq!(unsafe { (a as *const u64).read() }, init_a);
    }

    /// `constant!` variables are constant memory, as on a GPU (`isspacep.global` is false for
    /// them): not in the registry of global memory, before or after their module is dropped.
    #[test]
    fn constants_are_not_global_memory() {
        let table = VarTable::new([("C".to_string(), 16, 16, true), ("G".to_string(), 16, 16, false)]);
        let (c, _) = table.get("C").unwrap();
        let (g, _) = table.get("G").unwrap();
        assert!(!crate::is_global(c as usize, 1), "a constant is not global memory");
        assert!(crate::is_global(g as usize, 16));
        drop(table);
        assert!(!crate::is_global(c as usize, 1) && !crate::is_global(g as usize, 1));
    }
}
