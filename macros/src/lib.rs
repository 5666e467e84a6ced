//! Procedural macros of Cohort: [`macro@kernel`] and [`macro@DeviceCopy`].
//!
//! Each is split parse → validate → expand (`attr.rs`, `ast.rs`, `valid.rs`, `expand/`, a file per
//! thing generated);
//! errors carry the span of the offending tokens. On error the original item is emitted too,
//! with the `compile_error!`s, so that IDEs keep resolving it.

mod ast;
mod attr;
mod contract;
mod device_copy;
mod expand;
mod valid;

use proc_macro::TokenStream;

/// Marks a function as a GPU kernel.
///
/// On `nvptx64` it becomes an `extern "ptx-kernel"` entry point named after the function. On the
/// host it becomes a struct of the same name with `load(&Module)` and a typed `launch` (or
/// `launch_cooperative`) whose parameters mirror the kernel's, so that a wrong argument is a
/// compile error. The host also gets each entry's twin for the CPU device (hidden,
/// `__cohort_cpu_<entry>`): it reads the same parameters from a launch's parameter array and runs
/// the body; `load` hands it to the runtime with the function.
///
/// | kernel parameter | host argument |
/// |---|---|
/// | `x: T` (`T: DeviceCopy`) | `T` |
/// | `s: &[T]` | `&DeviceBuffer<T>`, `DeviceView<T>`, … |
/// | `s: &[AtomicU32]` (any atomic) | `&mut DeviceBuffer<u32>`, … |
/// | `out: DisjointSlice<T>` | `&mut DeviceBuffer<T>`, `DeviceViewMut<T>`, … |
/// | `p: *const T` / `*mut T` (in an `unsafe fn` kernel) | `DevicePtr<T>` / `DevicePtrMut<T>` |
/// | `grid: GridGroup` (with `cooperative`) | nothing |
/// | `shape: BlockShape<X, Y, Z>` | nothing (the launch must use blocks of exactly `X × Y × Z`) |
/// | `out: DisjointMatrix<T, L, I>` | `MatrixMut<T>` (`buffer.as_matrix_mut(rows, cols)?`; with `L = Within<_>`, a grid that stays inside it, checked at launch) |
/// | `a: Matrix<T, I>` (read-only) | `MatrixRef<T>` (`buffer.as_matrix(rows, cols)?`; shape checked at launch) |
///
/// The kind of a parameter is its type's (`cohort::abi::KernelParam`, host side
/// `cohort_runtime::KernelArg`), so a type alias of any of these works — but for `GridGroup`,
/// `MultiGridGroup` and `BlockShape`, which the launchers take no argument for: write those by
/// name (an alias of one is a compile error saying so).
///
/// Options: `#[kernel(contract)]` (fused multiply-add as nvcc's default; see `cohort::fp`),
/// `#[kernel(cooperative)]` (may use grid sync; launched only cooperatively),
/// `#[kernel(dependent)]` (the entry first waits for the kernel before it on the stream,
/// `griddepcontrol.wait` on sm_90, so the host launcher also gets `launch_programmatic`: a
/// programmatic dependent launch that may begin while that kernel finishes) and
/// `#[kernel(instances(f32, f64))]` for a generic kernel: one entry per instance, named
/// `<name>_<instance>`, and a host struct `name<T>` with `load`/`launch` for each instance.
/// Several generic parameters take tuples: `instances((f32, 4), (f64, 8))`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item2: proc_macro2::TokenStream = item.clone().into();
    match expand::kernel(attr.into(), item2.clone()) {
        Ok(ts) => ts.into(),
        Err(err) => {
            let mut out = item2;
            out.extend(err.to_compile_error());
            out.into()
        }
    }
}

/// Contraction, as nvcc's default `-fmad=true`: in the function's body, `x * y + z`,
/// `z + x * y`, `x * y - z`, `z - x * y`, `acc += x * y` and `acc -= x * y` on `f32` or `f64`
/// become one fused multiply-add (one rounding); other types compute as written. Operands must
/// be `Copy`. `#[kernel(contract)]` does the same for a kernel. See `cohort::fp`.
#[proc_macro_attribute]
pub fn contract(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item2: proc_macro2::TokenStream = item.clone().into();
    match contract::attribute(attr.into(), item2.clone()) {
        Ok(ts) => ts.into(),
        Err(err) => {
            let mut out = item2;
            out.extend(err.to_compile_error());
            out.into()
        }
    }
}

/// Derives `cohort::DeviceCopy` for a `#[repr(C)]` (or `#[repr(transparent)]`) struct whose
/// fields are all `DeviceCopy`. The struct must also be `Copy`.
#[proc_macro_derive(DeviceCopy)]
pub fn derive_device_copy(item: TokenStream) -> TokenStream {
    match device_copy::derive(item.into()) {
        Ok(ts) => ts.into(),
        Err(err) => err.to_compile_error().into(),
    }
}
