//! 03: a block reduction with Cooperative Groups: each block sums its 256 elements with
//! `cg::reduce` and its leader writes the block's sum (`my_kernels::reduce::block_sums`).
//!
//! `cargo run --example 03_block_reduce`

use std::process::ExitCode;

use cohort_runtime::LaunchConfig;
use my_app::{Result, check, exit_code};
use my_kernels::reduce::block_sums;

fn main() -> ExitCode {
    exit_code(run())
}

fn run() -> Result {
    const BLOCK: usize = 256;
    let n: usize = 1_000_003; // the last block is partial
    let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 20).collect();

    let gpu = my_app::device()?;
    let module = gpu.load(&my_kernels::PTX)?;
    let k = block_sums::load(&module)?;
    let d = gpu.upload(&data)?;
    let blocks = n.div_ceil(BLOCK);
    let mut sums = gpu.zeroed::<u64>(blocks)?; // one per block
    k.launch(gpu.stream(), LaunchConfig::for_elements(n, BLOCK as u32), &d, &mut sums)?;
    let got = sums.to_vec()?;

    let want: Vec<u64> = data.chunks(BLOCK).map(|c| c.iter().map(|&v| v as u64).sum()).collect();
    check("block sums", &got, &want, |g, w| g == w)?;
    let total: u64 = got.iter().sum();
    println!("block_sums: {blocks} blocks, every block's sum equal to the CPU's; total {total}");
    Ok(())
}
