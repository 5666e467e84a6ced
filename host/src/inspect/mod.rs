//! `cohort ptx` and `cohort sass`: one embedded kernel's PTX, or its SASS (assembled here with
//! `ptxas`, disassembled with `nvdisasm` or `cuobjdump`), with its resource use — what CUDA.jl's
//! `@device_code_ptx` / `@device_code_sass` show.
//!
//! The PTX printed is the kernel's `.entry` with everything it uses (the module's header, the
//! functions it calls and their prototypes, the globals and shared variables it names), in the
//! module's order: a module of its own that `ptxas` assembles. `--module` prints the whole
//! module instead, the entry marked.
//!
//! `lookup.rs` finds a kernel among the embedded modules, `cut.rs` cuts its entry out of a
//! module, `assemble.rs` runs `ptxas`; `ptx.rs` and `sass.rs` are the two commands.

use cohort_runtime::PtxSet;

mod assemble;
mod cut;
mod lookup;
mod ptx;
mod sass;
#[cfg(test)]
mod tests;

pub use ptx::ptx;
pub use sass::sass;

/// Every kernels crate whose PTX this binary embeds. Another one: add its `PTX` here (and the
/// crate to host/Cargo.toml); `ptx`, `sass` and `doctor` then cover it.
pub static EMBEDDED: &[&PtxSet] = &[&cohort_kernels::PTX, &cohort_dynamic_kernels::PTX];

/// `cohort ptx`'s options.
#[derive(clap::Args, Debug)]
pub struct PtxArgs {
    /// The kernel: its PTX entry name (`vector_add`; a generic kernel's instance: `saxpy_f32`)
    pub kernel: String,
    /// The architecture (`sm_90` or `90`): the embedded PTX a device of it loads (the highest
    /// not above it) [default: this GPU's, else the highest embedded]
    #[arg(long, value_parser = parse_arch)]
    pub arch: Option<u32>,
    /// Print the whole module, the entry marked, instead of the entry and what it uses
    #[arg(long)]
    pub module: bool,
}

/// `cohort sass`' options.
#[derive(clap::Args, Debug)]
pub struct SassArgs {
    /// The kernel: its PTX entry name (`vector_add`; a generic kernel's instance: `saxpy_f32`)
    pub kernel: String,
    /// The architecture to assemble for (`sm_90` or `90`), from the embedded PTX a device of it
    /// loads [default: this GPU's, else the highest embedded]
    #[arg(long, value_parser = parse_arch)]
    pub arch: Option<u32>,
}

/// `sm_90`, `sm90` or `90` → 90; `sm_90a` → 90 too (a 9.0 device loads the `sm_90a` module when
/// one is embedded).
pub fn parse_arch(v: &str) -> Result<u32, String> {
    let digits = v.trim().trim_start_matches("sm_").trim_start_matches("sm");
    let digits = digits.strip_suffix('a').unwrap_or(digits);
    match digits.parse::<u32>() {
        Ok(n) if (10..=1000).contains(&n) => Ok(n),
        _ => Err(format!("`{v}` is not an architecture like sm_90")),
    }
}
