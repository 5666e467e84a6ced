//! PTX checks that need no GPU: every embedded module assembles with ptxas for its
//! architecture; no library kernel spills or uses local memory; key kernels keep the
//! instructions they are meant to have (golden snippets).
//!
//! Without ptxas (`COHORT_PTXAS`, `PATH`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`) the ptxas
//! tests report themselves ignored with that reason, unless `COHORT_REQUIRE_PTXAS=1` (set by
//! CI, which installs ptxas from PyPI), where they fail instead. Likewise the test that the
//! device runtime (`libcudadevrt.a`) is embedded, with `COHORT_REQUIRE_CUDADEVRT=1`.

mod globals;

use cohort_kernels::PTX;
use cohort_runtime::{PtxModule, PtxSet};

/// Every embedded PTX set: the application's kernels, the tests', and the device-launching ones.
const SETS: [&PtxSet; 3] = [&cohort_kernels::PTX, &cohort_test_kernels::PTX, &cohort_dynamic_kernels::PTX];
use cohort_tests::{TestResult, cpu_trial, ensure};
use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// Kernels allowed a local-memory stack frame, and why.
const LOCAL_MEMORY_ALLOWED: &[(&str, &str)] = &[
    ("hello", "printf's argument buffer lives in local memory, as in CUDA C++"),
    ("example_tile4_hello", "printf"),
    ("example_tile8_scan", "printf"),
    ("nested_hello", "printf"),
    ("recurse", "printf"),
    ("pass_local", "hands a slice of its local memory to a child on purpose (the launch must refuse it)"),
    ("memcpy_from", "copies from a local array on purpose (memcpy_async must refuse it)"),
    ("tile_copy", "copies from a local array on purpose (memcpy_async_tile must refuse it)"),
    (
        "mat2_scan_tile",
        "a 32-byte user type (a 2x2 u64 matrix) through the block scan: its per-thread items (64 bytes of them) stay an \
         indexed array at sm_80 in checked mode; the built-in 4- and 8-byte scans have none (issue 29: wide types)",
    ),
    ("mat2_reduce_tiles", "as mat2_scan_tile"),
    (
        "sum3_reduce_tiles",
        "a 12-byte user type (three u32s, straddling 16-byte vectors, so read blocked): its per-thread items stay an \
         indexed array at sm_80 in checked mode, as mat2's (issue 29: wide types)",
    ),
    ("sum3_scan_tile", "as sum3_reduce_tiles"),
    (
        "block_split_misuse",
        "forgets split-barrier tokens on purpose (`mem::forget`: a misuse case); the value keeps a stack slot",
    ),
    ("grid_split_misuse", "as block_split_misuse"),
    ("block_coalesced_copy_sum3", "as sum3_reduce_tiles: four 12-byte items a thread through the coalesced load/store"),
    (
        "wide_sort_tiles",
        "a merge sort of 12-byte keys with 24-byte values, five items a thread (180 bytes): the per-thread items stay an \
         indexed array at sm_80 in checked mode, as sum3's and mat2's (issue 29: wide types)",
    ),
    (
        "wide_sort_merge",
        "as wide_sort_tiles: the merge pass loads a tile's five items a thread into registers before staging them in \
         shared memory (all loads in flight together), and they stay an indexed array at sm_80 in checked mode",
    ),
    (
        "pt_sort_tiles",
        "a merge sort of an 8-byte user key (two f32s, a user comparator), seven items a thread, since this session's \
         merge core: a 12-byte slot at sm_80 in checked mode (a key stored there, never loaded back; ptxas keeps a 24-byte \
         frame), not an array of items; the built-in key types have none (issue 29)",
    ),
    ("pt_sort_merge", "as pt_sort_tiles"),
];

fn main() {
    let args = Arguments::from_args();
    let mut trials = vec![
        cpu_trial("ptx_every_arch_is_embedded", every_arch_embedded),
        cpu_trial("ptx_module_selection_by_compute_capability", selection),
        cpu_trial("ptx_golden_grid_sync", golden_grid_sync),
        cpu_trial("ptx_golden_site_markers_are_numbered_one_per_call_instruction", golden_site_markers),
        cpu_trial("ptx_golden_phase_changes_use_the_blocks_own_mbarrier", golden_phase_mbarrier),
        cpu_trial("ptx_golden_atomic_reduction", golden_atomic),
        cpu_trial("ptx_memcpy_async_checks_its_source_is_global_before_cp_async", memcpy_source_checked),
        cpu_trial("ptx_golden_printf", golden_printf),
        cpu_trial("ptx_golden_cg_reduce_uses_redux_sync", golden_redux),
        cpu_trial("ptx_golden_cg_scan_uses_shfl_up", golden_scan),
        cpu_trial("ptx_golden_16_byte_loads", golden_vector_loads),
        cpu_trial("ptx_golden_atomic_orderings_and_scopes", golden_atomic_forms),
        cpu_trial("ptx_golden_mutex_acquire_release", golden_mutex),
        cpu_trial("ptx_golden_warp_ops_are_convergent_intrinsics", golden_convergent),
        cpu_trial("ptx_kernels_have_no_local_arrays", no_local_arrays),
        cpu_trial("ptx_classic_kernels_have_no_bounds_checks", classic_no_bounds_checks),
        cpu_trial("matrix_layouts_are_one_to_one", layouts_one_to_one),
        cpu_trial("ptx_gemm_k_loop_has_no_checks", gemm_k_loop_has_no_checks),
        cpu_trial("ptx_abi_every_entry_has_a_record", abi_every_entry_has_a_record),
        cpu_trial("ptx_abi_records_match_their_launchers", abi_records_match),
        cpu_trial("ptx_abi_host_device_skew_is_refused", abi_skew_refused),
        cpu_trial("ptx_golden_launch_cdp2_declarations", golden_launch_declarations),
        cpu_trial("ptx_golden_launch_argument_layout", golden_launch_layout),
        cpu_trial("ptx_launch_only_device_launching_modules_need_the_device_runtime", launch_modules_marked),
        cudadevrt_trial("ptx_launch_device_runtime_is_embedded", device_runtime_embedded),
        cpu_trial("ptx_golden_constant_declarations_and_ld_const", globals::golden_constants),
        cpu_trial("ptx_golden_device_globals_and_atomics", globals::golden_device_globals),
        cpu_trial("ptx_launch_budget_for_exactly_the_launching_kernels", launch_budget_kernels),
        cpu_trial("ptx_golden_dependent_kernels_wait_before_touching_memory", golden_dependent_wait),
        cpu_trial("ptx_golden_async_barrier_one_arrival_per_phase_and_counted_scope", golden_async_barrier),
        cpu_trial("ptx_wgmma_only_in_sm_90a_elsewhere_a_marked_trap", wgmma_only_in_sm_90a),
        cpu_trial("ptx_golden_split_block_wait_is_barrier_14", golden_split_block_wait),
    ];
    for set in SETS {
        for m in set.modules {
            trials.push(ptxas_trial(
                &format!("ptxas_{}_{}_assembles_without_spills", set.crate_name, m.arch_name()),
                m,
                assemble,
            ));
        }
    }
    for m in PTX.modules {
        trials.push(ptxas_trial(&format!("ptxas_{}_launch_bounds_hold", m.arch_name()), m, launch_bounds_hold));
        trials.push(sass_trial(&format!("sass_{}_gemm_k_loop_is_the_twins", m.arch_name()), m, gemm_k_loop_sass));
    }
    libtest_mimic::run(&args, trials).exit();
}

/// `#[kernel(launch_bounds(..))]` and `max_registers(..)` reach the PTX entries (cohort-build's
/// rewrite) and ptxas: `capped_polynomials` (`max_registers(24)`) gets at most 24 registers;
/// the same PTX without its `.maxnreg` gets more (so the cap is what holds it);
/// `bounded_saxpy` (`launch_bounds(128, 4)`) carries `.maxntid 128, 1, 1` and `.minnctapersm 4`.
fn launch_bounds_hold(ptxas: &std::path::Path, m: &'static PtxModule) -> TestResult {
    let text = m.text();
    let header = |name: &str| {
        let start = text.find(&format!(".entry {name}(")).unwrap_or(0);
        text[start..].split("\n{").next().unwrap_or("").to_owned()
    };
    ensure(header("bounded_saxpy").contains(".maxntid 128, 1, 1\n.minnctapersm 4"), || header("bounded_saxpy"))?;
    ensure(header("capped_polynomials").ends_with(".maxnreg 24"), || header("capped_polynomials"))?;
    ensure(!text.contains(cohort::raw::LAUNCH_BOUNDS_MARKER), || "an unapplied launch-bounds marker".into())?;
    let regs = |res: &[cohort_build::KernelResources]| {
        res.iter().find(|r| r.name == "capped_polynomials").map(|r| r.registers).ok_or("no capped_polynomials")
    };
    let capped = regs(&run_ptxas(ptxas, m)?)?;
    ensure(capped <= 24, || format!("sm_{}: capped_polynomials uses {capped} registers under a cap of 24", m.arch))?;
    let uncapped_text = m.text_with_nul().replace(".maxnreg 24\n", "");
    let uncapped: &'static str = Box::leak(uncapped_text.into_boxed_str());
    let uncapped_module = PtxModule::new(m.arch, uncapped);
    let uncapped_module = if m.arch_specific { uncapped_module.with_arch_specific() } else { uncapped_module };
    let uncapped_module: &'static PtxModule = Box::leak(Box::new(uncapped_module));
    let free = regs(&run_ptxas(ptxas, uncapped_module)?)?;
    ensure(free > 24, || {
        format!("sm_{}: without its cap capped_polynomials uses {free} registers: the test proves nothing", m.arch)
    })
}

fn ptxas_trial(name: &str, m: &'static PtxModule, f: fn(&std::path::Path, &'static PtxModule) -> TestResult) -> Trial {
    Trial::ignorable_test(name, move || match cohort_build::ptxas_path() {
        Some(p) => f(&p, m).map(|()| Completion::Completed).map_err(Failed::from),
        None if std::env::var("COHORT_REQUIRE_PTXAS").as_deref() == Ok("1") => {
            Err(Failed::from("COHORT_REQUIRE_PTXAS=1 but ptxas was not found"))
        }
        None => Ok(Completion::ignored_with(
            "ptxas not found (set COHORT_PTXAS, or put CUDA's bin on PATH, or pip install nvidia-cuda-nvcc==13.0.88)",
        )),
    })
}

fn run_ptxas(ptxas: &std::path::Path, m: &PtxModule) -> Result<Vec<cohort_build::KernelResources>, String> {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("cohort-ptx-test-{}-{}-{run}", std::process::id(), m.arch_name()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join(format!("module.{}.ptx", m.arch_name()));
    std::fs::write(&file, m.text()).map_err(|e| e.to_string())?;
    // A module that calls the device runtime is assembled as relocatable code: its
    // `__cudaCDP2*` calls are resolved when the runtime links it with libcudadevrt.
    let out = std::process::Command::new(ptxas)
        .arg(format!("-arch={}", m.arch_name()))
        .args(m.needs_device_runtime().then_some("-c"))
        .arg("-v")
        .arg("-o")
        .arg(dir.join("module.cubin"))
        .arg(&file)
        .output()
        .map_err(|e| format!("running {}: {e}", ptxas.display()))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        return Err(format!("ptxas -arch={} rejected the module:\n{text}", m.arch_name()));
    }
    Ok(cohort_build::parse_ptxas_output(&text))
}

/// A test of a module's SASS (ptxas, then `nvdisasm` beside it or on `PATH`): ignored with the
/// reason without them, and for checked-mode builds (`cargo test`'s default: the checks'
/// warp barriers and calls are in every loop; run with `COHORT_CHECKED=0` or `--release`).
fn sass_trial(name: &str, m: &'static PtxModule, f: fn(&SassTools, &'static PtxModule) -> TestResult) -> Trial {
    Trial::ignorable_test(name, move || {
        if m.text().contains(cohort::raw::SITE_MARKER_NUMBERED) {
            return Ok(Completion::ignored_with(
                "the kernels are built in checked mode (COHORT_CHECKED=0 or --release builds them without)",
            ));
        }
        let Some(ptxas) = cohort_build::ptxas_path() else {
            return Ok(Completion::ignored_with("ptxas not found (set COHORT_PTXAS, or put CUDA's bin on PATH)"));
        };
        let beside = ptxas.parent().map(|d| d.join("nvdisasm")).filter(|p| p.is_file());
        let on_path = std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join("nvdisasm")).find(|p| p.is_file()));
        let Some(nvdisasm) = beside.or(on_path) else {
            return Ok(Completion::ignored_with("nvdisasm not found (pip install nvidia-cuda-nvdisasm==13.2.51)"));
        };
        f(&SassTools { ptxas, nvdisasm }, m).map(|()| Completion::Completed).map_err(Failed::from)
    })
}

/// The tools of a [`sass_trial`].
struct SassTools {
    ptxas: std::path::PathBuf,
    nvdisasm: std::path::PathBuf,
}

/// Entry `kernel` of `m` assembled for the module's architecture and disassembled: its
/// instructions, in order, with their addresses and the addresses of the labels.
fn sass_of(tools: &SassTools, m: &PtxModule, kernel: &str) -> Result<Sass, String> {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("cohort-sass-test-{}-{}-{run}", std::process::id(), m.arch_name()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (ptx, cubin) = (dir.join("module.ptx"), dir.join("module.cubin"));
    std::fs::write(&ptx, m.text()).map_err(|e| e.to_string())?;
    let run_tool = |cmd: &mut std::process::Command| -> Result<String, String> {
        let out = cmd.output().map_err(|e| format!("running {cmd:?}: {e}"))?;
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if out.status.success() { Ok(text) } else { Err(format!("{cmd:?} failed:\n{text}")) }
    };
    let asm = run_tool(
        std::process::Command::new(&tools.ptxas)
            .arg(format!("-arch={}", m.arch_name()))
            .args(["-e", kernel, "-o"])
            .arg(&cubin)
            .arg(&ptx),
    )
    .and_then(|_| run_tool(std::process::Command::new(&tools.nvdisasm).arg("-c").arg(&cubin)));
    let _ = std::fs::remove_dir_all(&dir);
    let text = asm?;
    let mut sass = Sass::default();
    let mut pending = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(label) = line.strip_suffix(':').filter(|l| l.starts_with(".L_x_")) {
            pending.push(label.to_owned());
        } else if let Some(rest) = line.strip_prefix("/*") {
            let Some((addr, ins)) = rest.split_once("*/") else { continue };
            let Ok(addr) = u64::from_str_radix(addr, 16) else { continue };
            for l in pending.drain(..) {
                sass.labels.insert(l, addr);
            }
            sass.code.push((addr, ins.trim().trim_end_matches(';').trim().to_owned()));
        }
    }
    Ok(sass)
}

/// A kernel's SASS ([`sass_of`]).
#[derive(Default)]
struct Sass {
    /// (address, instruction) in order.
    code: Vec<(u64, String)>,
    labels: std::collections::HashMap<String, u64>,
}

impl Sass {
    /// The innermost loop around every instruction whose opcode starts with `op`: the
    /// instructions from the target of the nearest backward branch that encloses them to that
    /// branch.
    fn loop_around(&self, op: &str) -> Option<&[(u64, String)]> {
        let is = |i: &str| {
            let w = i.split_whitespace().next().unwrap_or("");
            // A predicated instruction: `@P0 OPCODE …`.
            let w = if w.starts_with('@') { i.split_whitespace().nth(1).unwrap_or("") } else { w };
            w.starts_with(op)
        };
        let first = self.code.iter().position(|(_, i)| is(i))?;
        let last = self.code.iter().rposition(|(_, i)| is(i))?;
        let (lo, hi) = (self.code[first].0, self.code[last].0);
        let mut best: Option<(usize, usize)> = None;
        for (at, (addr, ins)) in self.code.iter().enumerate() {
            let Some(target) = ins.contains("BRA").then(|| ins.split('`').nth(1)).flatten() else { continue };
            let Some(&to) = self.labels.get(target.trim_matches(|c| c == '(' || c == ')')) else { continue };
            if *addr >= hi && to <= lo {
                let from = self.code.iter().position(|(a, _)| *a == to)?;
                if best.is_none_or(|(f, t)| at - from < t - f) {
                    best = Some((from, at));
                }
            }
        }
        best.map(|(f, t)| &self.code[f..=t])
    }
}

/// The tensor-core GEMM's k-loop in SASS has its CUDA C++ twin's shape
/// (`host/benches/gemm_twins.cu`, whose loop ptxas 13.0 makes 73 instructions at sm_90): 32
/// `HMMA`, 12 `LDSM` each of one 32-bit register plus an immediate (the `.shared` form of
/// `ldmatrix`, not a generic address rebuilt in 64 bits per load), four `LDGSTS`, and at most
/// 80 instructions in all (156 with the generic `ldmatrix` and 64-bit fill addressing before).
/// No `VOTE`: ptxas deleted every convergence anchor of the inline-asm `ldmatrix`
/// (`raw::warp::asm_anchor`), which must cost nothing.
fn gemm_k_loop_sass(tools: &SassTools, m: &'static PtxModule) -> TestResult {
    for k in ["gemm_tn_bf16", "gemm_tn_f16"] {
        let sass = sass_of(tools, m, k)?;
        let body =
            sass.loop_around("HMMA").ok_or_else(|| format!("{}: `{k}`: no loop around its HMMA", m.arch_name()))?;
        let count = |op: &str| body.iter().filter(|(_, i)| i.split_whitespace().any(|w| w.starts_with(op))).count();
        let listing = || body.iter().map(|(a, i)| format!("{a:#06x} {i}")).collect::<Vec<_>>().join("\n");
        ensure(count("HMMA") == 32 && count("LDSM") == 12 && count("LDGSTS") == 4, || {
            format!("{}: `{k}`'s k-loop is not 32 HMMA, 12 LDSM, 4 LDGSTS:\n{}", m.arch_name(), listing())
        })?;
        ensure(body.len() <= 80, || {
            format!(
                "{}: `{k}`'s k-loop has {} instructions (its C++ twin's: 73):\n{}",
                m.arch_name(),
                body.len(),
                listing()
            )
        })?;
        ensure(!sass.code.iter().any(|(_, i)| i.contains("VOTE")), || {
            format!("{}: `{k}` keeps a VOTE (an inline-asm convergence anchor ptxas did not delete)", m.arch_name())
        })?;
    }
    Ok(())
}

/// Test kernels allowed to spill, and why (every library kernel and every other test kernel must not).
const SPILLS_ALLOWED: &[(&str, &str)] = &[(
    "mat2_scan_tile",
    "the block scan of a 32-byte user type (a 2x2 u64 matrix, non-commutative) in checked mode: 255 registers and \
     ~1.1 KB of spills; the built-in 4- and 8-byte scans do not spill (issue 29: wide types' register pressure)",
)];

/// Assembles the module for its architecture; every kernel is reported, none spills but
/// those of [`SPILLS_ALLOWED`].
fn assemble(ptxas: &std::path::Path, m: &'static PtxModule) -> TestResult {
    let res = run_ptxas(ptxas, m)?;
    let kernels = m.kernels();
    ensure(res.len() == kernels.len(), || {
        format!("ptxas compiled {} entries, the PTX declares {}", res.len(), kernels.len())
    })?;
    for k in kernels {
        ensure(res.iter().any(|r| r.name == k), || format!("ptxas did not report kernel `{k}`"))?;
    }
    let bad: Vec<String> = res
        .iter()
        .filter(|r| r.spill_store_bytes + r.spill_load_bytes > 0)
        .filter(|r| !SPILLS_ALLOWED.iter().any(|(name, _)| *name == r.name))
        .map(|r| {
            format!(
                "{} ({} B stores, {} B loads, {} registers)",
                r.name, r.spill_store_bytes, r.spill_load_bytes, r.registers
            )
        })
        .collect();
    ensure(bad.is_empty(), || format!("sm_{}: kernels spill registers: {}", m.arch, bad.join(", ")))
}

/// The body of entry `name` in a module's PTX.
fn entry_body(m: &PtxModule, name: &str) -> Result<&'static str, String> {
    let text = m.text();
    let start = text.find(&format!(".entry {name}(")).ok_or_else(|| format!("sm_{}: no entry `{name}`", m.arch))?;
    let rest = &text[start..];
    let end = rest.find("\n}\n").map_or(rest.len(), |e| e + 3);
    Ok(&rest[..end])
}

/// `gemm_hopper`'s entries: in the `sm_90a` module four back-to-back `m64n256k16` MMAs per
/// stage, the register split and the TMA loads, and no trap marker; in every other module no
/// `wgmma` but the marked trap the runtime refuses to launch (`Error::NeedsArchSpecific`). The
/// kernels crate embeds an `sm_90a` module beside `sm_90`.
fn wgmma_only_in_sm_90a() -> TestResult {
    ensure(PTX.modules.iter().any(|m| m.arch_specific && m.arch == 90), || format!("modules: {:?}", PTX.arch_names()))?;
    for m in PTX.modules {
        for k in ["gemm_tn_hopper_bf16", "gemm_tn_hopper_f16"] {
            // To the next function (`entry_body` stops at a `}` line, which inline assembly may hold).
            let text = m.text();
            let start = text.find(&format!(".entry {k}(")).ok_or_else(|| format!("{}: no `{k}`", m.arch_name()))?;
            let rest = &text[start + 1..];
            let end = [rest.find("\n.visible .entry"), rest.find("\n.func"), rest.find("\n.entry")]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(rest.len());
            let body = &rest[..end];
            let marked = body.contains(cohort::raw::NEEDS_SM_90A);
            if m.arch_specific {
                let mmas = body.matches("wgmma.mma_async.sync.aligned.m64n256k16.f32").count();
                ensure(mmas == 4 && !marked, || format!("{} `{k}`: {mmas} MMAs, marked {marked}", m.arch_name()))?;
                for needle in [
                    "setmaxnreg.dec.sync.aligned.u32 40",
                    "setmaxnreg.inc.sync.aligned.u32 232",
                    "cp.async.bulk.tensor.2d",
                ] {
                    ensure(body.contains(needle), || format!("{} `{k}` lacks `{needle}`", m.arch_name()))?;
                }
            } else {
                ensure(marked && !body.contains("wgmma."), || {
                    format!("{} `{k}`: wgmma outside sm_90a, or no marked trap", m.arch_name())
                })?;
            }
        }
    }
    Ok(())
}

/// The entry's body and every `.func` in the module it calls directly.
fn entry_and_callees(m: &PtxModule, name: &str) -> Result<String, String> {
    let body = entry_body(m, name)?;
    let mut all = body.to_string();
    for line in body.lines().filter(|l| l.contains("call")) {
        if let Some(callee) = line
            .split([',', ' ', '\t', '(', ')'])
            .filter(|t| !t.is_empty())
            .find(|t| t.starts_with("_R") || *t == "vprintf")
        {
            let text = m.text();
            if let Some(at) = text.find(&format!(".func {callee}")).or_else(|| text.find(&format!("{callee}(\n"))) {
                let rest = &text[at..];
                all.push_str(&rest[..rest.find("\n}\n").map_or(rest.len(), |e| e + 3)]);
            }
        }
    }
    Ok(all)
}

fn every_arch_embedded() -> TestResult {
    let archs = PTX.archs();
    ensure(archs.contains(&80) && archs.contains(&90), || format!("embedded architectures: {archs:?}"))?;
    for m in PTX.modules {
        ensure(m.text().contains(&format!(".target {}", m.arch_name())), || {
            format!("module for {} targets something else", m.arch_name())
        })?;
        ensure(m.text_with_nul().ends_with('\0'), || "PTX is not NUL-terminated".into())?;
        ensure(m.kernels().contains(&"vector_add"), || format!("sm_{}: no vector_add", m.arch))?;
    }
    Ok(())
}

fn selection() -> TestResult {
    let pick = |cc| PTX.select(cc).map(|m| m.arch_name());
    // The kernels crate builds sm_90a beside sm_90 (Hopper's wgmma GEMM): a 9.0 device loads it,
    // no other does.
    let want90 = if PTX.modules.iter().any(|m| m.arch_specific) { "sm_90a" } else { "sm_90" };
    ensure(pick(90).as_deref() == Some(want90), || format!("cc 9.0 -> {:?}", pick(90)))?;
    ensure(pick(89).as_deref() == Some("sm_80"), || format!("cc 8.9 -> {:?}", pick(89)))?;
    ensure(pick(100).as_deref() == Some("sm_90"), || format!("cc 10.0 -> {:?}", pick(100)))?;
    ensure(pick(120).as_deref() == Some("sm_90"), || format!("cc 12.0 -> {:?}", pick(120)))?;
    ensure(pick(75).is_none(), || format!("cc 7.5 -> {:?}", pick(75)))
}

/// Every module of `set` has entry `kernel`, and its body contains each of `needles`.
fn entry_contains(set: &PtxSet, kernel: &str, needles: &[&str]) -> TestResult {
    for m in set.modules {
        let body = entry_body(m, kernel)?;
        for needle in needles {
            ensure(body.contains(needle), || format!("sm_{}: {kernel} lacks `{needle}`", m.arch))?;
        }
    }
    Ok(())
}

/// `AsyncBarrier::memcpy_async` arrives once per thread and phase (`.noinc`: the form that
/// raises the count and needs a second arrival is synccheck's "missing wait"), and `scope`'s
/// block barrier counts the threads at it (a thread that returned before would hang the block).
fn golden_async_barrier() -> TestResult {
    for m in cohort_test_kernels::PTX.modules {
        let body = entry_and_callees(m, "barrier_stream")?;
        ensure(body.contains("cp.async.mbarrier.arrive.noinc.shared.b64"), || {
            format!("sm_{}: barrier_stream lacks `cp.async.mbarrier.arrive.noinc`", m.arch)
        })?;
        ensure(!body.contains("cp.async.mbarrier.arrive.shared"), || {
            format!("sm_{}: barrier_stream has the counting `cp.async.mbarrier.arrive` (a second arrival)", m.arch)
        })?;
        ensure(body.contains("barrier.red.popc"), || {
            format!("sm_{}: barrier_stream's scope counts no threads", m.arch)
        })?;
    }
    Ok(())
}

/// The block's split wait is hardware barrier 14 (which no `sync_threads()` uses) in every
/// architecture; its arrival emits no barrier.
fn golden_split_block_wait() -> TestResult {
    entry_contains(&cohort_test_kernels::PTX, "block_split_rounds", &["barrier.sync 	14"])
}

fn golden_grid_sync() -> TestResult {
    entry_contains(
        &PTX,
        "neighbour_sums",
        &["%envreg1", "%envreg2", "atom.add.release.gpu.u32", "ld.acquire.gpu.u32", "barrier.sync 	0"],
    )
}

/// The numbers of the call-site markers in `text`, in order.
fn site_numbers(text: &str) -> Vec<u32> {
    text.match_indices(cohort::raw::SITE_MARKER_NUMBERED)
        .filter_map(|(at, m)| {
            let rest = &text[at + m.len()..];
            rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())].parse().ok()
        })
        .collect()
}

/// Checked mode's call-site markers (issue 31): numbered by cohort-build in every module (none
/// left as `// cohort-site?`), each number once per module, and the two calls of one macro
/// expansion or `#[track_caller]` helper get two numbers.
fn golden_site_markers() -> TestResult {
    ensure(
        cohort_build::SITE_MARKER_UNNUMBERED == cohort::raw::SITE_MARKER_UNNUMBERED
            && cohort_build::SITE_MARKER_NUMBERED == cohort::raw::SITE_MARKER_NUMBERED,
        || "cohort-build and the device library spell the call-site markers differently".into(),
    )?;
    for set in SETS {
        for m in set.modules {
            ensure(!m.text().contains(cohort::raw::SITE_MARKER_UNNUMBERED), || {
                format!("{} sm_{}: an unnumbered call-site marker", set.crate_name, m.arch)
            })?;
        }
    }
    for m in cohort_test_kernels::PTX.modules {
        let mut all = site_numbers(m.text());
        ensure(all.len() > 100, || format!("sm_{}: only {} markers in the checked test kernels", m.arch, all.len()))?;
        all.sort_unstable();
        let n = all.len();
        all.dedup();
        ensure(all.len() == n, || format!("sm_{}: a marker number is used twice", m.arch))?;
        for entry in [
            "diverge_macro_shfl",
            "diverge_helper_shfl",
            "diverge_macro_sync_count",
            "diverge_helper_sync_count",
            "diverge_grid_sites",
        ] {
            let nums = site_numbers(entry_body(m, entry)?);
            ensure(nums.len() >= 2, || format!("sm_{}: {entry} has the markers {nums:?}, not one per arm", m.arch))?;
        }
    }
    Ok(())
}

/// `GridVec` phase changes arrive on the block's own `mbarrier` (set up at kernel entry),
/// which no `sync_threads()` can complete (issue 31).
fn golden_phase_mbarrier() -> TestResult {
    for m in cohort_test_kernels::PTX.modules {
        let wait = if m.arch >= 90 { "mbarrier.try_wait.shared.b64" } else { "mbarrier.test_wait.shared.b64" };
        for entry in ["phases", "grid_reduce"] {
            let body = entry_body(m, entry)?;
            for needle in ["mbarrier.init.shared.b64", "mbarrier.arrive.shared.b64", wait, "barrier.red.or.pred"] {
                ensure(body.contains(needle), || format!("sm_{}: {entry} lacks `{needle}`", m.arch))?;
            }
        }
    }
    Ok(())
}

/// A `#[kernel(dependent)]` entry (launched programmatically, so it may start before the kernel
/// ahead of it has finished) executes `griddepcontrol.wait` before any access to memory other
/// than its parameters, in the sm_90 PTX; the sm_80 PTX (where `griddepcontrol` does not
/// exist) has none, and the runtime launches its kernels in plain stream order. A kernel
/// declared without `dependent` has no wait; `launch_dependents()` is
/// `griddepcontrol.launch_dependents` on sm_90.
fn golden_dependent_wait() -> TestResult {
    use cohort_test_kernels::PTX as TESTS;
    for m in TESTS.modules {
        for name in ["pdl_step", "pdl_slow_produce"] {
            let body = entry_body(m, name)?;
            let wait = body.find("griddepcontrol.wait");
            if m.arch < 90 {
                ensure(!body.contains("griddepcontrol"), || format!("sm_{}: `{name}` has griddepcontrol", m.arch))?;
                continue;
            }
            let wait = wait.ok_or_else(|| format!("sm_{}: `{name}` has no griddepcontrol.wait", m.arch))?;
            // The first instruction that touches memory other than the parameter space.
            let first_access = body
                .lines()
                .map(str::trim_start)
                .filter(|l| !l.starts_with("//") && !l.starts_with("ld.param"))
                .find(|l| ["ld.", "st.", "atom.", "red.", "call", "cp.async"].iter().any(|op| l.starts_with(op)))
                .and_then(|l| body.find(l));
            ensure(first_access.is_none_or(|a| wait < a), || {
                format!("sm_{}: `{name}` touches memory before griddepcontrol.wait:\n{body}", m.arch)
            })?;
        }
        let produce = entry_body(m, "pdl_slow_produce")?;
        ensure(m.arch < 90 || produce.contains("griddepcontrol.launch_dependents"), || {
            format!("sm_{}: launch_dependents() is not griddepcontrol.launch_dependents", m.arch)
        })?;
        let plain = entry_body(m, "pdl_step_plain")?;
        ensure(!plain.contains("griddepcontrol"), || format!("sm_{}: a plain kernel waits", m.arch))?;
    }
    Ok(())
}

/// `cp.async` takes its source as a global address: every path to it first asks
/// `isspacep.global` (a local or constant source is a panic, not a fault).
fn memcpy_source_checked() -> TestResult {
    let tests = &cohort_test_kernels::PTX;
    for m in tests.modules {
        let body = entry_body(m, "memcpy_from")?;
        let (check, copy) = (body.find("isspacep.global"), body.find("cp.async.c"));
        if m.arch >= 80 {
            ensure(matches!((check, copy), (Some(a), Some(b)) if a < b), || {
                format!("sm_{}: memcpy_from has no isspacep.global before its first cp.async:\n{body}", m.arch)
            })?;
        } else {
            ensure(check.is_some(), || format!("sm_{}: memcpy_from has no isspacep.global", m.arch))?;
        }
    }
    Ok(())
}

fn golden_atomic() -> TestResult {
    entry_contains(&PTX, "sum_u32", &["red.relaxed.gpu.global.add.u64"])
}

fn golden_printf() -> TestResult {
    entry_contains(&PTX, "hello", &["vprintf"])
}

fn golden_redux() -> TestResult {
    entry_contains(&PTX, "bench_reduce_u32", &["redux.sync.add"])?;
    entry_contains(&PTX, "bench_reduce_u32_vec4", &["redux.sync.add"])?;
    entry_contains(&PTX, "sum_u32", &["shfl.sync.bfly.b32"])
}

fn golden_scan() -> TestResult {
    for m in PTX.modules {
        let body = entry_body(m, "bench_scan_u32")?;
        ensure(body.matches("shfl.sync.up.b32").count() == 5, || {
            format!("sm_{}: a tile-32 scan is 5 shfl.sync.up", m.arch)
        })?;
    }
    Ok(())
}

/// The classic kernels (`cohort bench kernels`) are written with the safe API only, and every
/// index check in them must have folded away: no call to a panic path in their entries, in
/// either build (the checked build calls `cohort::check` for its barrier checks, nothing else).
/// Their hot loops keep the instructions that make them fast: fused multiply-adds and 16-byte
/// shared loads.
fn classic_no_bounds_checks() -> TestResult {
    let kernels =
        ["transpose_naive", "transpose_tiled", "sgemm_tiled32", "sgemm_128x128", "jacobi_step", "jacobi_step_select"];
    for m in PTX.modules {
        for k in kernels {
            let body = entry_body(m, k)?;
            for line in body.lines().filter(|l| l.contains("call")) {
                let callee = line.split_whitespace().find(|w| w.starts_with("_R")).unwrap_or("");
                ensure(!callee.contains("panic") && (callee.is_empty() || callee.contains("5check")), || {
                    format!("sm_{}: `{k}` calls `{callee}`: a check that did not fold away", m.arch)
                })?;
            }
        }
    }
    entry_contains(&PTX, "sgemm_128x128", &["fma.rn.f32", "ld.shared.v4.b32"])?;
    entry_contains(&PTX, "sgemm_tiled32", &["fma.rn.f32", "ld.shared.v4.b32"])?;
    // A `Point`'s row neighbours are read at the centre's own address register ± 4 bytes,
    // folded into the load as an immediate, as C++'s `u[i - 1]`, `u[i + 1]`: not through a
    // neighbour index computed afresh.
    for m in PTX.modules {
        let body = entry_body(m, "jacobi_step")?;
        let addrs: Vec<&str> = body
            .lines()
            .filter_map(|l| l.trim().strip_prefix("ld.global.b32")?.split('[').nth(1)?.strip_suffix("];"))
            .collect();
        let found = addrs.iter().any(|a| {
            !a.contains('+')
                && addrs.contains(&format!("{a}+-4").as_str())
                && addrs.contains(&format!("{a}+4").as_str())
        });
        ensure(found, || {
            format!("sm_{}: `jacobi_step` has no loads at [p], [p+-4], [p+4] of one register p: {addrs:?}", m.arch)
        })?;
    }
    Ok(())
}

/// Every `DisjointMatrix` layout gives each (block, thread, k, l) of a launch its own element:
/// the fact the writes' safety rests on, checked exhaustively on the CPU for several block
/// shapes and grids, nested layouts included.
fn layouts_one_to_one() -> TestResult {
    use cohort::matrix::{Blocked, Cyclic, Layout, MmaWarps, Transposed, TransposedTiles, Warpgroups};
    fn check<L: Layout>(name: &str) -> TestResult {
        check_blocks::<L>(name, &[(8, 4), (32, 8), (1, 16), (16, 1)])
    }
    fn check_blocks<L: Layout>(name: &str, blocks: &[(usize, usize)]) -> TestResult {
        for &(x, y) in blocks {
            for (gx, gy) in [(3usize, 5usize), (1, 1), (7, 2)] {
                let mut seen = std::collections::HashMap::new();
                for (by, bx, ty, tx) in (0..gy).flat_map(|by| {
                    (0..gx).flat_map(move |bx| (0..y).flat_map(move |ty| (0..x).map(move |tx| (by, bx, ty, tx))))
                }) {
                    let [r0, dr, c0, dc] = L::place(tx, ty, x, y, by, bx);
                    // Idle threads (`Warpgroups`' producers) are placed past every matrix: they
                    // write nothing (a layout with them is not `Within`: every write is checked).
                    if L::IDLE_THREADS && r0 >= 1 << 60 {
                        ensure((ty * x + tx) / 128 < 4, || {
                            format!("{name}: a consumer thread placed past the matrix")
                        })?;
                        continue;
                    }
                    for k in 0..L::KR {
                        for l in 0..L::KC {
                            let at = (r0 + dr * k, c0 + dc * (l / L::RUN) + l % L::RUN);
                            if let Some(prev) = seen.insert(at, (by, bx, ty, tx, k, l)) {
                                return Err(format!(
                                    "{name}, blocks of {x}×{y}, grid {gx}×{gy}: element {at:?} belongs to {prev:?} and {:?}",
                                    (by, bx, ty, tx, k, l)
                                ));
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
    check::<Cyclic>("Cyclic")?;
    check::<Cyclic<2, 3>>("Cyclic<2, 3>")?;
    check::<Blocked<3, 2>>("Blocked<3, 2>")?;
    check::<Blocked<8, 8>>("Blocked<8, 8>")?;
    check::<Transposed<Cyclic<4, 1>>>("Transposed<Cyclic<4, 1>>")?;
    check::<TransposedTiles<Cyclic<4, 1>>>("TransposedTiles<Cyclic<4, 1>>")?;
    check::<Transposed<TransposedTiles<Blocked<2, 3>>>>("Transposed<TransposedTiles<Blocked<2, 3>>>")?;
    check::<TransposedTiles<Transposed<Cyclic<1, 2>>>>("TransposedTiles<Transposed<Cyclic<1, 2>>>")?;
    // Layouts of warps: blocks of whole rows of warps (`DisjointMatrix::tile` compiles for no
    // other).
    check_blocks::<MmaWarps<4, 4, 4>>("MmaWarps<4, 4, 4>", &[(256, 1), (32, 8), (128, 1)])?;
    check_blocks::<MmaWarps<1, 2, 1>>("MmaWarps<1, 2, 1>", &[(32, 1), (64, 1), (32, 3)])?;
    check_blocks::<TransposedTiles<MmaWarps<2, 1, 2>>>("TransposedTiles<MmaWarps<2, 1, 2>>", &[(64, 1), (32, 4)])?;
    // Warpgroup MMA accumulators, producers first (they write nothing).
    check_blocks::<Warpgroups<32, 1>>("Warpgroups<32, 1>", &[(384, 1), (128, 3), (256, 1)])?;
    check_blocks::<Warpgroups<8, 0>>("Warpgroups<8, 0>", &[(128, 1), (256, 1)])?;
    check_blocks::<TransposedTiles<Warpgroups<4, 2>>>("TransposedTiles<Warpgroups<4, 2>>", &[(512, 1)])
}

/// The tensor-core GEMM's k-loop (`cohort_kernels::gemm`: from its first `cp.async` to its last
/// `mma.sync`) branches to no panic: every shape, alignment and bounds check of the safe API
/// is made before it (strips, `AsyncTiles`, `WarpTiles`) or folds away. Its `ldmatrix` are the
/// `.shared` form of 32-bit addresses (lane addresses plus constants, which ptxas folds into
/// the instruction: `sass_sm_*_gemm_k_loop_is_the_twins`), and it stores C in 8-byte stores.
fn gemm_k_loop_has_no_checks() -> TestResult {
    for m in PTX.modules {
        for k in ["gemm_tn_bf16", "gemm_tn_f16"] {
            let body = entry_body(m, k)?;
            let lines: Vec<&str> = body.lines().collect();
            // The blocks that call a panic (LLVM puts them after the function's hot code).
            let mut panics = std::collections::HashSet::new();
            let mut label = "";
            for l in &lines {
                let t = l.trim();
                if let Some(name) = t.strip_suffix(':').filter(|n| n.starts_with("$L")) {
                    label = name;
                } else if t.contains("call") && t.contains("panic") {
                    panics.insert(label);
                }
            }
            let from = lines.iter().position(|l| l.contains("cp.async.cg.shared.global"));
            let to = lines.iter().rposition(|l| l.contains("mma.sync"));
            let (Some(from), Some(to)) = (from, to) else {
                return Err(format!("sm_{}: `{k}` has no cp.async or no mma.sync", m.arch));
            };
            for l in &lines[from..to] {
                let target = l.split_whitespace().last().unwrap_or("").trim_end_matches(';');
                ensure(!(l.contains("bra") && panics.contains(target)), || {
                    format!("sm_{}: `{k}`'s k-loop branches to a panic: `{}`", m.arch, l.trim())
                })?;
            }
            let ldm: Vec<&str> =
                lines[from..to].iter().copied().filter(|l| l.contains("ldmatrix.sync.aligned.m8n8.x4")).collect();
            let shared = ldm.iter().filter(|l| l.contains(".shared.b16") && l.contains("[%r")).count();
            ensure(ldm.len() >= 12 && shared == ldm.len(), || {
                format!(
                    "sm_{}: `{k}`: {shared} of its {} ldmatrix are the .shared form of a 32-bit address",
                    m.arch,
                    ldm.len()
                )
            })?;
            ensure(["st.global.v2", "st.global.b64", "st.global.u64"].iter().any(|st| body.contains(st)), || {
                format!("sm_{}: `{k}` stores C without 8-byte stores", m.arch)
            })?;
        }
    }
    Ok(())
}

fn golden_vector_loads() -> TestResult {
    // 16-byte elements load with one ld.global.v4.
    entry_contains(&PTX, "bench_reduce_u32_vec4", &["ld.global.v4"])
}

fn golden_atomic_forms() -> TestResult {
    entry_contains(
        &cohort_test_kernels::PTX,
        "atomic_forms",
        &[
            "atom.relaxed.gpu.global.add.u32",
            "atom.acquire.gpu.global.add.u32",
            "atom.release.gpu.global.add.u32",
            "atom.acq_rel.gpu.global.add.u32",
            "fence.sc.gpu;",
            "atom.relaxed.sys.global.add.u32",
            "ld.acquire.gpu.global.b32",
            "st.release.gpu.global.b32",
            "atom.relaxed.gpu.global.max.u64",
            "atom.relaxed.gpu.global.min.u64",
            "atom.relaxed.gpu.global.add.f32",
            "red.relaxed.gpu.global.add.f32",
            "fence.sc.cta;",
            "fence.acq_rel.gpu;",
            "fence.sc.sys;",
            "ld.relaxed.gpu.b32",
        ],
    )?;
    // Shared-memory atomics carry .shared and block scope.
    entry_contains(&cohort_test_kernels::PTX, "int_ops_shared_u32", &[".cta.shared.add.u32"])?;
    for m in cohort_test_kernels::PTX.modules {
        let body = entry_body(m, "atomic_forms")?;
        // SeqCst is a fence.sc then the acq_rel form, in that order.
        let f = body.find("fence.sc.gpu;").unwrap_or(usize::MAX);
        let after = &body[f.min(body.len())..];
        ensure(after.contains("atom.acq_rel.gpu.global.add.u32"), || {
            format!("sm_{}: SeqCst is not fence.sc + acq_rel", m.arch)
        })?;
    }
    Ok(())
}

fn golden_mutex() -> TestResult {
    entry_contains(
        &PTX,
        "mutex_add_one",
        &["atom.acquire.gpu.global.cas.b32", "st.release.gpu.global.b32", "nanosleep.u32"],
    )?;
    // The mutex in shared memory.
    entry_contains(
        &cohort_test_kernels::PTX,
        "mutex_counters",
        &["atom.acquire.cta.shared.cas.b32", "st.release.cta.shared.b32"],
    )
}

/// Warp-synchronous operations come from LLVM's convergent NVVM intrinsics, never inline
/// assembly (which LLVM may move across divergent branches): inline asm in the PTX is marked
/// by `// begin inline asm`, so no warp op may appear between such markers. The exceptions,
/// `ldmatrix` and `stmatrix` (whose intrinsics Rust can only give a generic address), are
/// inline asm that names its convergence anchor (`raw::warp::asm_anchor`: a convergent
/// `activemask.b32` of the same basic block, no label between them) in its first line.
fn golden_convergent() -> TestResult {
    for m in SETS.iter().flat_map(|s| s.modules) {
        let mut in_asm = false;
        // The register of the last `activemask` of the current basic block.
        let mut anchor: Option<&str> = None;
        let mut named: Option<&str> = None;
        for line in m.text().lines() {
            let l = line.trim();
            if l.ends_with(':') || l.starts_with('}') || l.starts_with(".entry") || l.starts_with(".func") {
                anchor = None;
            } else if let Some(reg) = l.strip_prefix("activemask.b32").map(|r| r.trim().trim_end_matches(';')) {
                anchor = Some(reg);
            }
            if l.starts_with("// begin inline asm") {
                in_asm = true;
                named = None;
            } else if l.starts_with("// end inline asm") {
                in_asm = false;
            } else if in_asm && named.is_none() && l.starts_with("// %r") {
                named = Some(l.trim_start_matches("// ").trim());
            } else if in_asm && (l.starts_with("ldmatrix") || l.starts_with("stmatrix")) {
                ensure(named.is_some() && named == anchor, || {
                    format!("sm_{}: a warp op in inline asm without its convergence anchor ({anchor:?}): {l}", m.arch)
                })?;
            } else if in_asm {
                for op in [
                    "shfl.sync",
                    "vote.sync",
                    "match.any",
                    "match.all",
                    "redux.sync",
                    "activemask",
                    "bar.warp.sync",
                    "bar.sync",
                    "barrier.sync",
                    "bar.red",
                ] {
                    ensure(!l.contains(op), || format!("sm_{}: `{op}` is emitted as inline asm: {l}", m.arch))?;
                }
            }
        }
    }
    Ok(())
}

fn no_local_arrays() -> TestResult {
    for m in SETS.iter().flat_map(|s| s.modules) {
        let mut bad = Vec::new();
        for k in m.kernels() {
            if LOCAL_MEMORY_ALLOWED.iter().any(|(n, _)| *n == k) {
                continue;
            }
            let code = entry_and_callees(m, k)?;
            if code.contains(".local") || code.contains("__local_depot") {
                // the cold panic path of core may keep its own frame; the kernel itself may not
                if entry_body(m, k)?.contains("__local_depot") {
                    bad.push(k);
                }
            }
        }
        ensure(bad.is_empty(), || format!("sm_{}: kernels with local-memory arrays: {bad:?}", m.arch))?;
    }
    Ok(())
}

/// Every entry of every module carries the ABI record `#[kernel]` writes (so a typed `load`
/// can check it).
fn abi_every_entry_has_a_record() -> TestResult {
    for set in SETS {
        for m in set.modules {
            for k in m.kernels() {
                ensure(m.text().contains(&format!("{}{k}[", cohort::abi::ABI_SYMBOL_PREFIX)), || {
                    format!("{} sm_{}: entry `{k}` has no ABI record", set.crate_name, m.arch)
                })?;
            }
        }
    }
    Ok(())
}

/// Launchers and entries built from one declaration agree, on every architecture (values,
/// slices, atomics, disjoint outputs, arrays, generics, cooperative kernels, zero-sized elements).
fn abi_records_match() -> TestResult {
    use cohort_kernels::{atomics, bench, checks, classic, tour};
    use cohort_test_kernels::{safety, shapes};
    let launchers: &[(&PtxSet, &str, &[u8])] = &[
        (&PTX, tour::vector_add::NAME, tour::vector_add::ABI),
        (&PTX, tour::saxpy::<f32>::NAME, tour::saxpy::<f32>::ABI),
        (&PTX, tour::saxpy::<f64>::NAME, tour::saxpy::<f64>::ABI),
        (&PTX, atomics::mutex_add_one::NAME, atomics::mutex_add_one::ABI),
        (&PTX, atomics::histogram_lib::NAME, atomics::histogram_lib::ABI),
        (&PTX, bench::bench_grid_sync::NAME, bench::bench_grid_sync::ABI),
        (&PTX, bench::bench_reduce_u32_vec4::NAME, bench::bench_reduce_u32_vec4::ABI),
        (&PTX, checks::empty::NAME, checks::empty::ABI),
        (&PTX, checks::thread_indices::NAME, checks::thread_indices::ABI),
        (&cohort_test_kernels::PTX, safety::zero_sized_elements::NAME, safety::zero_sized_elements::ABI),
        (&cohort_test_kernels::PTX, safety::compact::NAME, safety::compact::ABI),
        (&cohort_test_kernels::PTX, safety::leaders::NAME, safety::leaders::ABI),
        (&PTX, classic::transpose_tiled::NAME, classic::transpose_tiled::ABI),
        (&PTX, classic::sgemm_128x128::NAME, classic::sgemm_128x128::ABI),
        (&PTX, classic::jacobi_step::NAME, classic::jacobi_step::ABI),
        (&cohort_test_kernels::PTX, shapes::shaped_ranks::NAME, shapes::shaped_ranks::ABI),
        (&cohort_test_kernels::PTX, shapes::layout_transposed_tiles::NAME, shapes::layout_transposed_tiles::ABI),
    ];
    for (set, name, abi) in launchers {
        for m in set.modules {
            cohort_runtime::check_kernel_abi(set, m, name, abi).map_err(|e| format!("sm_{}: {e}", m.arch))?;
        }
    }
    Ok(())
}

/// Declarations split by `#[cfg]` so that host and device disagree: each is refused with the
/// first difference named (the `(ptr, len)`-as-integers case, a grid-sync entry launched
/// non-cooperatively, elements narrower on the host than on the device).
fn abi_skew_refused() -> TestResult {
    use cohort_test_kernels::safety;
    let set = &cohort_test_kernels::PTX;
    let cases: [(&str, &[u8], &str); 3] = [
        (safety::abi_skew::NAME, safety::abi_skew::ABI, "PTX parameter 0: the device entry expects a value of 8 bytes"),
        (safety::abi_skew_coop::NAME, safety::abi_skew_coop::ABI, "uses grid sync"),
        (safety::abi_skew_elem::NAME, safety::abi_skew_elem::ABI, "4-byte elements"),
    ];
    for (name, abi, want) in cases {
        for m in set.modules {
            match cohort_runtime::check_kernel_abi(set, m, name, abi) {
                Ok(()) => return Err(format!("sm_{}: `{name}` was accepted", m.arch)),
                Err(e) => {
                    let text = e.to_string();
                    ensure(text.contains(want) && text.contains(name), || {
                        format!("sm_{}: `{name}`: expected an error containing {want:?}, got: {text}", m.arch)
                    })?;
                }
            }
        }
    }
    Ok(())
}

// --- Device-side launches (`cohort::launch`) -------------------------------------------------

/// The device runtime's CDP2 entry points are declared exactly as nvcc 13.0 declares them.
fn golden_launch_declarations() -> TestResult {
    for m in cohort_dynamic_kernels::PTX.modules {
        let t = m.text();
        for needle in [
            ".extern .func  (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2",
            ".param .b64 __cudaCDP2GetParameterBufferV2_param_0,",
            ".param .align 4 .b8 __cudaCDP2GetParameterBufferV2_param_1[12],",
            ".param .align 4 .b8 __cudaCDP2GetParameterBufferV2_param_2[12],",
            ".param .b32 __cudaCDP2GetParameterBufferV2_param_3",
            ".extern .func  (.param .b32 func_retval0) __cudaCDP2LaunchDeviceV2",
            ".param .b64 __cudaCDP2LaunchDeviceV2_param_0,",
            ".param .b64 __cudaCDP2LaunchDeviceV2_param_1",
        ] {
            ensure(t.contains(needle), || format!("sm_{}: no `{needle}`", m.arch))?;
        }
    }
    Ok(())
}

/// The child's address is taken as nvcc does (`mov.b64 %rd, child;`), the stream is the tail
/// (3) or fire-and-forget (4) handle, and arguments land at their natural alignment: for
/// `scale(data: &[u32], out: DisjointSlice<u32>, k: u32)` pointer, length, pointer, length at
/// 0, 8, 16, 24 and `k` at 32.
fn golden_launch_layout() -> TestResult {
    let set = &cohort_dynamic_kernels::PTX;
    for m in set.modules {
        let body = entry_body(m, "scale_then_tail")?;
        for needle in ["mov.b64", ", scale;", "__cudaCDP2GetParameterBufferV2", "__cudaCDP2LaunchDeviceV2"] {
            ensure(body.contains(needle), || format!("sm_{}: scale_then_tail has no `{needle}`", m.arch))?;
        }
        let stores: Vec<&str> =
            body.lines().map(str::trim).filter(|l| l.starts_with("st.b") && l.contains("[%rd")).collect();
        for off in ["]", "+8]", "+16]", "+24]", "+32]"] {
            ensure(stores.iter().any(|l| l.contains(off)), || {
                format!("sm_{}: no parameter store at offset `{off}` in:\n{}", m.arch, stores.join("\n"))
            })?;
        }
        ensure(stores_param(body, "b64 \t[param1], 3;"), || format!("sm_{}: no tail-launch stream (3)", m.arch))?;
        let hello = entry_body(m, "nested_hello")?;
        ensure(hello.contains("mov.b64 \t%rd") && hello.contains(", nested_hello;"), || {
            format!("sm_{}: nested_hello does not take its own address", m.arch)
        })?;
        ensure(stores_param(hello, "b64 \t[param1], 4;"), || format!("sm_{}: no fire-and-forget stream (4)", m.arch))?;
    }
    Ok(())
}

/// Whether `body` stores `rest` (`"b64 \t[param1], 3;"`) to a call parameter: `st.param.` up to
/// PTX ISA 8.2, `st.param::func.` from 8.3 on (the sm_90 modules ask for 8.3).
fn stores_param(body: &str, rest: &str) -> bool {
    body.contains(&format!("st.param.{rest}")) || body.contains(&format!("st.param::func.{rest}"))
}

/// The device-launching modules carry `libcudadevrt.a` (the driver links them with it at load).
fn device_runtime_embedded() -> TestResult {
    for m in cohort_dynamic_kernels::PTX.modules {
        ensure(m.device_runtime.is_some(), || format!("sm_{}: libcudadevrt.a is not embedded", m.arch))?;
    }
    Ok(())
}

/// A test of what the build embeds only where `libcudadevrt.a` was found (it is optional: see
/// the README's Requirements). Without it the test reports itself ignored with the reason and
/// the fix, unless `COHORT_REQUIRE_CUDADEVRT=1` (set by CI once it has installed the library),
/// where it runs and fails.
fn cudadevrt_trial(name: &str, f: fn() -> TestResult) -> Trial {
    Trial::ignorable_test(name, move || {
        let embedded = cohort_dynamic_kernels::PTX.modules.iter().any(|m| m.device_runtime.is_some());
        if !embedded && std::env::var("COHORT_REQUIRE_CUDADEVRT").as_deref() != Ok("1") {
            return Ok(Completion::ignored_with(
                "libcudadevrt.a was not found when the kernels were built (optional: pip install --target DIR \
                 nvidia-cuda-runtime==13.0.96 and set COHORT_CUDADEVRT=DIR/nvidia/cu13/lib/libcudadevrt.a)",
            ));
        }
        f().map(|()| Completion::Completed).map_err(Failed::from)
    })
}

/// Only the device-launching crate's modules call the device runtime (the others keep the plain
/// load and embed no library).
fn launch_modules_marked() -> TestResult {
    for set in [&cohort_kernels::PTX, &cohort_test_kernels::PTX] {
        for m in set.modules {
            ensure(!m.needs_device_runtime() && m.device_runtime.is_none(), || {
                format!("{} sm_{} calls the device runtime", set.crate_name, m.arch)
            })?;
        }
    }
    for m in cohort_dynamic_kernels::PTX.modules {
        ensure(m.needs_device_runtime(), || format!("sm_{}: no device-runtime call found", m.arch))?;
    }
    Ok(())
}

/// The kernels whose host launches get a launch budget are exactly those that can launch
/// (through the call graph), and every device launch takes from the module's budget first.
fn launch_budget_kernels() -> TestResult {
    let launching = [
        "dive",
        "fan",
        "launch_each",
        "launch_many",
        "launch_panicking",
        "launch_serial",
        "nested_hello",
        "pass_local",
        "recurse",
        "reduce_nested",
        "reduce_nested2",
        "reduce_nested_tail",
        "scale_then_tail",
        "tail_order",
        "tails_in_order",
    ];
    for m in cohort_dynamic_kernels::PTX.modules {
        let mut got = m.device_launching_kernels();
        got.sort_unstable();
        ensure(got == launching, || format!("sm_{}: device-launching kernels {got:?}", m.arch))?;
        ensure(m.text().contains(".visible .global .align 4 .b8 cohort_launch_budget[4];"), || {
            format!("sm_{}: no `cohort_launch_budget` global", m.arch)
        })?;
        for k in launching {
            let body = entry_body(m, k)?;
            let budget = body.find("cohort_launch_budget").unwrap_or(usize::MAX);
            let call = body.find("__cudaCDP2GetParameterBufferV2").unwrap_or(0);
            ensure(budget < call, || {
                format!("sm_{}: `{k}` asks for a parameter buffer before taking from the budget", m.arch)
            })?;
        }
    }
    for set in [&cohort_kernels::PTX, &cohort_test_kernels::PTX] {
        for m in set.modules {
            ensure(m.device_launching_kernels().is_empty(), || {
                format!("{} sm_{}: kernels that launch in a module that does not", set.crate_name, m.arch)
            })?;
        }
    }
    Ok(())
}
