//! cuBLAS (BF16/F16 `cublasGemmEx`) and cuBLASLt (FP8 E4M3 `cublasLtMatmul`), loaded at run time.

use super::table::time;
use super::*;

/// The cuBLAS handle (libcublas loaded at run time).
pub(super) struct Cublas {
    pub(super) handle: cudarc::cublas::sys::cublasHandle_t,
}

impl Cublas {
    pub(super) fn new(s: &Stream) -> Result<Self, String> {
        // SAFETY: only probes whether the library can be opened.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err("libcublas not found: add CUDA's lib64 to LD_LIBRARY_PATH".into());
        }
        let handle = cudarc::cublas::result::create_handle().map_err(|e| format!("cublasCreate: {e:?}"))?;
        // SAFETY: a live handle and a live stream of the current context.
        unsafe { cudarc::cublas::result::set_stream(handle, s.cu_stream().cast()) }
            .map_err(|e| format!("cublasSetStream: {e:?}"))?;
        Ok(Self { handle })
    }

    /// Row-major `C = A · Bᵀ` (A m×k, B n×k, C m×n). cuBLAS is column-major: the row-major C is
    /// the column-major n×m `Cᵀ = B · Aᵀ`; the row-major n×k B is the column-major k×n `Bᵀ`
    /// (so `op = T` gives B), the row-major m×k A is the column-major k×m `Aᵀ` (`op = N`).
    pub(super) fn gemm_tn<T: Elem>(
        &self,
        (m, n, k): (usize, usize, usize),
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<f32>,
    ) -> Result<(), String> {
        use cudarc::cublas::sys::{
            cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cublasStatus_t, cudaDataType,
        };
        let (alpha, beta) = (1.0f32, 0.0f32);
        let int = |v: usize| i32::try_from(v).map_err(|_| format!("cuBLAS: {v} does not fit an int"));
        let (mi, ni, ki) = (int(m)?, int(n)?, int(k)?);
        if a.len() < m * k || b.len() < n * k || c.len() < m * n {
            return Err("cuBLAS: buffers smaller than the shape".into());
        }
        // SAFETY: three live device buffers of the sizes checked above; host scalars; the
        // handle is live.
        let st = unsafe {
            cudarc::cublas::sys::cublasGemmEx(
                self.handle,
                cublasOperation_t::CUBLAS_OP_T,
                cublasOperation_t::CUBLAS_OP_N,
                ni,
                mi,
                ki,
                std::ptr::from_ref(&alpha).cast(),
                b.as_device_ptr().addr() as *const std::ffi::c_void,
                T::CUDA,
                ki,
                a.as_device_ptr().addr() as *const std::ffi::c_void,
                T::CUDA,
                ki,
                std::ptr::from_ref(&beta).cast(),
                c.as_device_ptr().addr() as *mut std::ffi::c_void,
                cudaDataType::CUDA_R_32F,
                ni,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        if st == cublasStatus_t::CUBLAS_STATUS_SUCCESS { Ok(()) } else { Err(format!("cublasGemmEx: {st:?}")) }
    }

    pub(super) fn destroy(self) {
        // SAFETY: the handle is live and used no more.
        let _ = unsafe { cudarc::cublas::result::destroy_handle(self.handle) };
    }
}

// --- cuBLASLt FP8 ---

/// The positive finite E4M3 values, by code (0x00..=0x7E: they increase with the code).
pub(super) fn e4m3_positive() -> [f32; 127] {
    std::array::from_fn(|c| e4m3_to_f32(c as u8))
}

/// The value of an FP8 E4M3 byte (1 sign, 4 exponent bits of bias 7, 3 mantissa bits; no
/// infinities; S.1111.111 is NaN; exponent 0 is subnormal, m/8 · 2⁻⁶).
pub(super) fn e4m3_to_f32(b: u8) -> f32 {
    let (e, m) = ((b >> 3) & 0xF, b & 7);
    if e == 0xF && m == 7 {
        return f32::NAN;
    }
    let mag = if e == 0 {
        f32::from(m) / 8.0 * (-6f32).exp2()
    } else {
        (1.0 + f32::from(m) / 8.0) * f32::from(e).mul_add(1.0, -7.0).exp2()
    };
    if b & 0x80 != 0 { -mag } else { mag }
}

/// The E4M3 byte nearest `x`, ties to even; magnitudes past the largest finite value (448) become
/// it (saturating, as `__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)`); NaN is NaN.
/// `table` is [`e4m3_positive`].
pub(super) fn e4m3_from_f32(x: f32, table: &[f32; 127]) -> u8 {
    if x.is_nan() {
        return 0x7F;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = f64::from(x.abs());
    // The first code whose value is above |x|: |x| lies between its predecessor and it.
    let above = table.partition_point(|&v| f64::from(v) <= a);
    if above == table.len() {
        return sign | 0x7E;
    }
    let below = above - 1; // table[0] = 0 ≤ |x|
    let (lo, hi) = (f64::from(table[below]), f64::from(table[above]));
    let code = if a - lo < hi - a || (a - lo == hi - a && below % 2 == 0) { below } else { above };
    sign | code as u8
}

/// The cuBLASLt handle (libcublasLt loaded at run time) and its workspace.
pub(super) struct CublasLt {
    pub(super) handle: cudarc::cublaslt::sys::cublasLtHandle_t,
    pub(super) workspace: DeviceBuffer<u8>,
}

/// cuBLASLt's workspace: 32 MiB, NVIDIA's recommendation for Hopper.
pub(super) const LT_WORKSPACE: usize = 32 << 20;

/// `cublasLtMatmul`'s descriptors and algorithm for one FP8 shape (destroyed on drop).
pub(super) struct Fp8Plan {
    pub(super) desc: cudarc::cublaslt::sys::cublasLtMatmulDesc_t,
    /// Lt's A (our B: k×n column-major, transposed), Lt's B (our A: k×m column-major), D (n×m).
    pub(super) layouts: [cudarc::cublaslt::sys::cublasLtMatrixLayout_t; 3],
    pub(super) algo: cudarc::cublaslt::sys::cublasLtMatmulAlgo_t,
    /// Whether D is f32 (else bf16, where cuBLASLt offers no f32 output).
    pub(super) f32_out: bool,
}

impl Drop for Fp8Plan {
    fn drop(&mut self) {
        use cudarc::cublaslt::result as lt;
        // SAFETY: created by `CublasLt::plan`, destroyed only here.
        unsafe {
            let _ = lt::destroy_matmul_desc(self.desc);
            for l in self.layouts {
                let _ = lt::destroy_matrix_layout(l);
            }
        }
    }
}

impl CublasLt {
    pub(super) fn new(gpu: &Gpu) -> Result<Self, String> {
        // SAFETY: only probes whether the library can be opened.
        if !unsafe { cudarc::cublaslt::sys::is_culib_present() } {
            return Err("libcublasLt not found: add CUDA's lib64 to LD_LIBRARY_PATH".into());
        }
        let handle = cudarc::cublaslt::result::create_handle().map_err(|e| format!("cublasLtCreate: {e:?}"))?;
        let workspace = gpu.zeroed::<u8>(LT_WORKSPACE).map_err(|e| e.to_string())?;
        Ok(Self { handle, workspace })
    }

    /// The plan of row-major `C = A · Bᵀ` (A m×k, B n×k E4M3, C m×n): column-major, that is
    /// `Cᵀ (n×m) = B · Aᵀ`, Lt's A being our B read transposed and Lt's B our A as it is — the
    /// "TN" form FP8 needs. f32 out where cuBLASLt has an algorithm for it, else bf16.
    pub(super) fn plan(&self, (m, n, k): (usize, usize, usize)) -> Result<Fp8Plan, String> {
        use cudarc::cublaslt::result as lt;
        use cudarc::cublaslt::sys;
        let mut last = String::new();
        for out in [sys::cudaDataType::CUDA_R_32F, sys::cudaDataType::CUDA_R_16BF] {
            let e = |what: &'static str| move |err: lt::CublasError| format!("{what}: {err:?}");
            let desc =
                lt::create_matmul_desc(sys::cublasComputeType_t::CUBLAS_COMPUTE_32F, sys::cudaDataType::CUDA_R_32F)
                    .map_err(e("cublasLtMatmulDescCreate"))?;
            let layouts = [
                lt::create_matrix_layout(sys::cudaDataType::CUDA_R_8F_E4M3, k as u64, n as u64, k as i64),
                lt::create_matrix_layout(sys::cudaDataType::CUDA_R_8F_E4M3, k as u64, m as u64, k as i64),
                lt::create_matrix_layout(out, n as u64, m as u64, n as i64),
            ];
            let mut plan = match layouts {
                [Ok(a), Ok(b), Ok(d)] => Fp8Plan {
                    desc,
                    layouts: [a, b, d],
                    algo: sys::cublasLtMatmulAlgo_t { data: [0; 8] },
                    f32_out: out == sys::cudaDataType::CUDA_R_32F,
                },
                _ => {
                    // SAFETY: created above, used no more (the layouts that were made leak: an error path).
                    let _ = unsafe { lt::destroy_matmul_desc(desc) };
                    return Err("cublasLtMatrixLayoutCreate failed".into());
                }
            };
            let (op_t, op_n) = (
                cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_T as i32,
                cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N as i32,
            );
            let fast_accum: i8 = 1;
            use sys::cublasLtMatmulDescAttributes_t as A;
            // SAFETY: a live descriptor; each value is of the attribute's type (int32 operations,
            // int8 fast-accumulation flag) and lives through the call.
            unsafe {
                lt::set_matmul_desc_attribute(plan.desc, A::CUBLASLT_MATMUL_DESC_TRANSA, (&raw const op_t).cast(), 4)
                    .map_err(e("TRANSA"))?;
                lt::set_matmul_desc_attribute(plan.desc, A::CUBLASLT_MATMUL_DESC_TRANSB, (&raw const op_n).cast(), 4)
                    .map_err(e("TRANSB"))?;
                lt::set_matmul_desc_attribute(
                    plan.desc,
                    A::CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                    (&raw const fast_accum).cast(),
                    1,
                )
                .map_err(e("FAST_ACCUM"))?;
            }
            let pref = lt::create_matmul_pref().map_err(e("cublasLtMatmulPreferenceCreate"))?;
            let ws = LT_WORKSPACE as u64;
            // SAFETY: a live preference; a u64 for the u64 attribute.
            let set = unsafe {
                lt::set_matmul_pref_attribute(
                    pref,
                    sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    (&raw const ws).cast(),
                    8,
                )
            };
            let [a, b, d] = plan.layouts;
            // SAFETY: live handle, descriptor, layouts and preference (C and D share a layout).
            let heuristic =
                set.and_then(|()| unsafe { lt::get_matmul_algo_heuristic(self.handle, plan.desc, a, b, d, d, pref) });
            // SAFETY: created above, used no more.
            let _ = unsafe { lt::destroy_matmul_pref(pref) };
            match heuristic {
                Ok(h) if h.workspaceSize <= LT_WORKSPACE => {
                    // (Not `Fp8Plan { algo, ..plan }`: the fields are `Copy`, and `plan` would be
                    // dropped, destroying the descriptors the copy names.)
                    plan.algo = h.algo;
                    return Ok(plan);
                }
                Ok(h) => last = format!("the algorithm wants {} B of workspace", h.workspaceSize),
                Err(err) => last = format!("cublasLtMatmulAlgoGetHeuristic ({out:?} out): {err:?}"),
            }
        }
        Err(last)
    }

    /// Runs `plan` on E4M3 `a` (m×k) and `b` (n×k) into `d` (m×n elements of 4 bytes for an f32
    /// plan, 2 for bf16), on `s`.
    pub(super) fn matmul<D: cohort::DeviceCopy>(
        &self,
        plan: &Fp8Plan,
        (m, n, k): (usize, usize, usize),
        a: &DeviceBuffer<u8>,
        b: &DeviceBuffer<u8>,
        d: &mut DeviceBuffer<D>,
        s: &Stream,
    ) -> Result<(), String> {
        if a.len() < m * k || b.len() < n * k || d.len() < m * n || size_of::<D>() != if plan.f32_out { 4 } else { 2 } {
            return Err("cuBLASLt: buffers that do not match the shape or the plan".into());
        }
        let (alpha, beta) = (1.0f32, 0.0f32);
        let dp = d.as_device_ptr_mut().addr() as *mut std::ffi::c_void;
        let [la, lb, ld] = plan.layouts;
        // SAFETY: live handle, plan and buffers of the sizes checked above (Lt's A is our B, Lt's
        // B our A, C = D with beta 0); host scalars; the workspace is ours and as large as the
        // preference said; the stream is live in the current context.
        unsafe {
            cudarc::cublaslt::result::matmul(
                self.handle,
                plan.desc,
                (&raw const alpha).cast(),
                (&raw const beta).cast(),
                b.as_device_ptr().addr() as *const std::ffi::c_void,
                la,
                a.as_device_ptr().addr() as *const std::ffi::c_void,
                lb,
                dp,
                ld,
                dp,
                ld,
                &raw const plan.algo,
                self.workspace.as_device_ptr().addr() as *mut std::ffi::c_void,
                LT_WORKSPACE,
                s.cu_stream().cast(),
            )
        }
        .map_err(|e| format!("cublasLtMatmul: {e:?}"))
    }

    pub(super) fn destroy(self) {
        // SAFETY: the handle is live and used no more.
        let _ = unsafe { cudarc::cublaslt::result::destroy_handle(self.handle) };
    }
}

/// cuBLASLt FP8: the BF16 inputs rounded to E4M3 (scales 1), timed, and checked against the CPU's
/// product of the rounded inputs.
pub(super) fn fp8_row(gpu: &Gpu, lt: &CublasLt, inputs: &Inputs, reps: usize) -> Outcome {
    use rayon::prelude::*;
    let (m, n, k) = inputs.shape;
    if gpu.info().cc() < 89 {
        return Outcome::Skipped("FP8 tensor cores need sm_89 or later".into());
    }
    if !k.is_multiple_of(16) {
        return Outcome::Skipped(format!("cuBLASLt FP8 needs K a multiple of 16 (K = {k})"));
    }
    let plan = match lt.plan(inputs.shape) {
        Ok(p) => p,
        Err(e) => return Outcome::failed(format!("no cuBLASLt FP8 algorithm: {e}")),
    };
    let table = e4m3_positive();
    let to8 = |v: &[f32]| -> Vec<u8> { v.par_iter().map(|&x| e4m3_from_f32(x, &table)).collect() };
    let (a8, b8) = (to8(&inputs.af), to8(&inputs.bf));
    let back = |v: &[u8]| -> Vec<f32> { v.par_iter().map(|&x| e4m3_to_f32(x)).collect() };
    let (af8, bf8) = (back(&a8), back(&b8));
    let (da, db) = match (gpu.upload(&a8), gpu.upload(&b8)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return Outcome::failed(format!("uploading the inputs: {e}")),
    };
    let s = gpu.stream();
    // D: NaN (f32 or bf16 bits) before the first run.
    let (ms, got) = if plan.f32_out {
        let mut d = match gpu.upload(&vec![f32::NAN; m * n]) {
            Ok(d) => d,
            Err(e) => return Outcome::failed(format!("allocating D: {e}")),
        };
        let ms = time(gpu, reps, || {
            lt.matmul(&plan, inputs.shape, &da, &db, &mut d, s).map_err(cohort_runtime::Error::Argument)
        });
        (ms, d.to_vec().map_err(|e| e.to_string()))
    } else {
        let mut d = match gpu.upload(&vec![bf16::from_f32(f32::NAN); m * n]) {
            Ok(d) => d,
            Err(e) => return Outcome::failed(format!("allocating D: {e}")),
        };
        let ms = time(gpu, reps, || {
            lt.matmul(&plan, inputs.shape, &da, &db, &mut d, s).map_err(cohort_runtime::Error::Argument)
        });
        (ms, d.to_vec().map(|v| v.iter().map(|x| x.to_f32()).collect()).map_err(|e| e.to_string()))
    };
    let ms = match ms {
        Ok(ms) => ms,
        Err(e) => return Outcome::failed(e),
    };
    // FP8 tensor-core sums keep fewer bits than f32 (and a bf16 D rounds to 8): within 2^-8 of
    // Σ|ab| (plus |C| for a bf16 D) — a check of layouts and operands (a wrong one is off by
    // about |C| ≈ sqrt(K)/3 on most elements), not of the last bits.
    let check = got.and_then(|got| {
        let bound = |mag: f64, dot: f64| (mag + dot.abs()) * (-8f64).exp2() + 1e-3;
        sampled(&af8, &bf8, inputs.shape, &got, bound)
            .map(|worst| format!("ok: sampled, worst {worst:.1e}; D {}", if plan.f32_out { "f32" } else { "bf16" }))
    });
    Outcome::Ran { ms: Some(ms), check }
}
