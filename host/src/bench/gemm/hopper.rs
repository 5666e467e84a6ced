//! The Hopper rows: the CUDA C++ twin (TMA + `wgmma`, warp-specialized, persistent) and Cohort's
//! `gemm_hopper`.

use super::table::bf16_row;
use super::*;

/// `cpp_gemm_hopper_bf16`'s block tile (M, N) and K step: the shapes it takes are multiples.
pub(super) const HOPPER_TILE: (usize, usize, usize) = (128, 256, 64);
/// Its threads per block: a producer warpgroup and two consumer warpgroups.
pub(super) const HOPPER_THREADS: u32 = 384;
/// Its dynamic shared memory (`hopper::SMEM_BYTES` in `host/benches/gemm_twins.cu`: 1 KiB of
/// alignment slack, 4 stages of 48 KiB, 8 mbarriers); the kernel returns at once with less.
pub(super) const HOPPER_SMEM_BYTES: u32 = 197_696;

const _: () = assert!(size_of::<cudarc::driver::sys::CUtensorMap>() == 128);

/// Why the Hopper GEMMs do not take `m × n × k`, if they do not.
pub(super) fn hopper_shape((m, n, k): (usize, usize, usize)) -> Option<String> {
    let (bm, bn, bk) = HOPPER_TILE;
    if m == 0 || n == 0 || k == 0 || !m.is_multiple_of(bm) || !n.is_multiple_of(bn) || !k.is_multiple_of(bk) {
        return Some(format!("{m}×{n}×{k}: M must be a multiple of {bm}, N of {bn} and K of {bk}"));
    }
    if m > 1 << 31 || n > 1 << 31 || k > 1 << 31 {
        return Some(format!("{m}×{n}×{k}: dimensions past 2^31 (TMA coordinates are 32-bit)"));
    }
    None
}

/// The tensor map of a row-major `rows × cols` bf16 matrix (`cols` = K, contiguous) in boxes of
/// `box_rows × 64` with the 128-byte swizzle — what `cpp_gemm_hopper_bf16` loads A and B with.
/// The fields pass Cohort's checks of `cuTensorMapEncodeTiled`'s rules (and stay inside the
/// buffer) before the driver encodes them.
pub(super) fn bf16_tensor_map(
    buf: &DeviceBuffer<bf16>,
    rows: usize,
    cols: usize,
    box_rows: u32,
) -> Result<cudarc::driver::sys::CUtensorMap, String> {
    use cohort_runtime::tensor_map::{L2Promotion, Swizzle, TensorMapSpec};
    use cudarc::driver::sys as d;
    let addr = buf.as_device_ptr().addr();
    let spec = TensorMapSpec::new([cols as u64, rows as u64], [64, box_rows])
        .strides(&[cols as u64 * 2])
        .swizzle(Swizzle::B128)
        .l2_promotion(L2Promotion::B256);
    spec.check(2, true, buf.num_bytes() as u64, addr).map_err(|e| e.to_string())?;
    let (dims, strides) = ([cols as u64, rows as u64], [cols as u64 * 2]);
    let (boxes, element_strides) = ([64u32, box_rows], [1u32, 1]);
    let mut map = std::mem::MaybeUninit::<d::CUtensorMap>::zeroed();
    // SAFETY: rank 2: two dimensions, one stride, two box sizes and element strides, as the
    // arrays hold; the address is the live buffer's (16-byte aligned, checked above); `map` has
    // room for the 128-byte map. The call only encodes (it reads no device memory).
    let r = unsafe {
        d::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            d::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            2,
            addr as usize as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            d::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            d::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            d::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            d::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != d::cudaError_enum::CUDA_SUCCESS {
        return Err(format!("cuTensorMapEncodeTiled: {r:?}"));
    }
    // SAFETY: written by the successful call (and zeroed before).
    Ok(unsafe { map.assume_init() })
}

/// The CUDA C++ Hopper twin (`cpp_gemm_hopper_bf16`), timed and checked.
pub(super) fn hopper_twin(
    gpu: &Gpu,
    twins: &Result<(Module, String), String>,
    inputs: &Inputs,
    reference: Option<&[f32]>,
    reps: usize,
) -> Outcome {
    let f = match twins {
        Err(e) => return Outcome::Skipped(format!("no C++ twins ({e})")),
        Ok((module, how)) => match module.function("cpp_gemm_hopper_bf16", false) {
            Ok(f) => f,
            Err(_) => {
                return Outcome::Skipped(format!(
                    "the twins ({how}) have no cpp_gemm_hopper_bf16, which needs sm_90a: build them with `nvcc \
                     -ptx -O3 -arch=sm_90a host/benches/gemm_twins.cu -o gemm_twins.ptx` and pass --twins-ptx \
                     gemm_twins.ptx"
                ));
            }
        },
    };
    let (m, n, k) = inputs.shape;
    if let Some(why) = hopper_shape(inputs.shape) {
        return Outcome::Skipped(why);
    }
    let maps = match (bf16_tensor_map(&inputs.da, m, k, 128), bf16_tensor_map(&inputs.db, n, k, 256)) {
        (Ok(a), Ok(b)) => [a, b],
        (Err(e), _) | (_, Err(e)) => return Outcome::failed(format!("tensor map: {e}")),
    };
    let tiles = (m / HOPPER_TILE.0) * (n / HOPPER_TILE.1);
    let grid = tiles.min(gpu.info().sms as usize) as u32;
    let cfg = LaunchConfig::new(grid, HOPPER_THREADS).with_shared_mem(HOPPER_SMEM_BYTES);
    let s = gpu.stream();
    bf16_row(gpu, inputs, reference, reps, |c| {
        // SAFETY: `f` is `cpp_gemm_hopper_bf16`; the maps describe A (m×k) and B (n×k), which
        // `inputs` keeps alive, C holds m×n f32 and outlives the launch (`bf16_row` reads it back
        // after the stream's work ends); the shape passed `hopper_shape`.
        unsafe { launch_hopper_twin(&f, s, cfg, &maps, c.as_device_ptr_mut().addr(), (m, n, k)) }
    })
}

/// Launches `cpp_gemm_hopper_bf16(tmA, tmB, C, M, N, K)`: the two 128-byte tensor maps by value
/// (the driver copies each parameter's bytes from the pointer given for it, whatever its size),
/// then four 8-byte values.
///
/// # Safety
/// `f` must be `cpp_gemm_hopper_bf16`; `maps` must describe live bf16 buffers of m×k (A) and n×k
/// (B) as [`bf16_tensor_map`] makes them, and `c` a live buffer of m×n `f32` that nothing else
/// uses until the kernel ends.
pub(super) unsafe fn launch_hopper_twin(
    f: &Function,
    s: &Stream,
    cfg: LaunchConfig,
    maps: &[cudarc::driver::sys::CUtensorMap; 2],
    c: u64,
    (m, n, k): (usize, usize, usize),
) -> cohort_runtime::Result<()> {
    let values = [c, m as u64, n as u64, k as u64];
    let mut params: [*mut std::ffi::c_void; 6] = [
        std::ptr::from_ref(&maps[0]).cast_mut().cast(),
        std::ptr::from_ref(&maps[1]).cast_mut().cast(),
        std::ptr::from_ref(&values[0]).cast_mut().cast(),
        std::ptr::from_ref(&values[1]).cast_mut().cast(),
        std::ptr::from_ref(&values[2]).cast_mut().cast(),
        std::ptr::from_ref(&values[3]).cast_mut().cast(),
    ];
    // SAFETY: one pointer per parameter of the kernel, each at a value of its type (the maps
    // are `CUtensorMap`s, 128 bytes; the rest 8-byte values), alive until the launch has copied
    // them; the buffers: the caller's contract.
    unsafe { f.launch_raw(s, cfg, &mut params) }
}

// --- Cohort's Hopper GEMM ---

/// Cohort's Hopper GEMM (`cohort_kernels::gemm_hopper::gemm_tn_hopper::<bf16>`: TMA + `wgmma`,
/// warp-specialized, written with the safe API), with its two tensor maps made once (as the
/// twin's): `bf16_row` fills C with NaN, times the launches, and checks C against the CPU and
/// cuBLAS.
pub(super) fn hopper_rust(gpu: &Gpu, inputs: &Inputs, reference: Option<&[f32]>, reps: usize) -> Outcome {
    use cohort_kernels::gemm_hopper::{self as gh, host as hh};
    let (m, n, k) = inputs.shape;
    if let Some(why) = hopper_shape(inputs.shape) {
        return Outcome::Skipped(why);
    }
    let module = match gpu.load(&PTX) {
        Ok(module) => module,
        Err(e) => return Outcome::failed(format!("loading cohort_kernels: {e}")),
    };
    let kernel = match <bf16 as hh::Gemm>::load(&module) {
        Ok(kernel) => kernel,
        Err(e) => return Outcome::Skipped(format!("gemm_tn_hopper: {e}")),
    };
    let maps = hh::map(&inputs.da, m, k, gh::BM).and_then(|a| Ok((a, hh::map(&inputs.db, n, k, gh::BN)?)));
    let (ma, mb) = match maps {
        Ok(maps) => maps,
        Err(e) => return Outcome::failed(format!("tensor maps: {e}")),
    };
    bf16_row(gpu, inputs, reference, reps, |c| {
        hh::launch_mapped::<bf16>(&kernel, gpu.stream(), inputs.shape, &ma, &mb, c)
    })
}
