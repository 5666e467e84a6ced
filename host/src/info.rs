//! `cohort info`.

use cohort_kernels::PTX;
use cohort_runtime::{Gpu, Module};

use crate::util::{CliError, CliResult, Table};

pub fn run() -> CliResult {
    println!("embedded PTX of `{}`: {}", PTX.crate_name, PTX.arch_names().join(", "));
    let gpus = match Gpu::count() {
        Ok(n) if n > 0 => n,
        Ok(_) => {
            print_build_resources();
            return Err(CliError::NoGpu(cohort_runtime::Error::NoDevice { requested: 0, count: 0, detail: None }));
        }
        Err(e) => {
            print_build_resources();
            return Err(CliError::NoGpu(e));
        }
    };
    for ordinal in 0..gpus {
        let gpu = Gpu::new(ordinal)?;
        let i = gpu.info();
        println!("\ndevice {i}");
        println!(
            "  max threads/block {}, shared memory/block {} KiB (opt-in {} KiB), /SM {} KiB, registers/SM {}, L2 {} MiB",
            i.max_threads_per_block,
            i.shared_per_block / 1024,
            i.shared_per_block_optin / 1024,
            i.shared_per_sm / 1024,
            i.registers_per_sm,
            i.l2_bytes >> 20
        );
        println!(
            "  memory {:.0} GiB, bus {} bit, peak {:.0} GB/s; driver {}.{}",
            i.total_memory as f64 / (1u64 << 30) as f64,
            i.memory_bus_bits,
            i.peak_bandwidth_gbs(),
            i.driver_version / 1000,
            i.driver_version % 1000 / 10
        );
        let module = gpu.load(&PTX)?;
        print_kernels(&module)?;
    }
    Ok(())
}

/// Resource use as ptxas reported it at build time (no GPU needed).
fn print_build_resources() {
    for m in PTX.modules {
        println!(
            "\n{} kernels ({}):",
            m.arch_name(),
            m.ptxas.map_or("ptxas did not run at build time".to_string(), |v| format!("checked by {v}"))
        );
        let mut t = Table::new(&["kernel", "registers", "shared B", "stack B", "spills B"]).numeric(1..5);
        for k in m.kernels() {
            match m.resources_of(k) {
                Some(r) => t.row(vec![
                    k.to_string(),
                    r.registers.to_string(),
                    r.shared_bytes.to_string(),
                    r.stack_frame_bytes.to_string(),
                    (r.spill_store_bytes + r.spill_load_bytes).to_string(),
                ]),
                None => t.row(vec![k.to_string(), "-".into(), "-".into(), "-".into(), "-".into()]),
            }
        }
        t.print();
    }
}

fn print_kernels(module: &Module) -> CliResult {
    let ptx = module.ptx();
    println!(
        "  loaded {} PTX; kernels (registers, shared memory and local memory as the driver compiled them):",
        ptx.arch_name()
    );
    let mut t =
        Table::new(&["kernel", "registers", "static shared B", "local B", "max block", "ptxas: regs / stack / spills"])
            .numeric(1..6);
    for k in ptx.kernels() {
        let f = module.function(k, false)?;
        let a = f.attributes();
        let build = ptx.resources_of(k).map_or("-".to_string(), |r| {
            format!("{} / {} / {}", r.registers, r.stack_frame_bytes, r.spill_store_bytes + r.spill_load_bytes)
        });
        t.row(vec![
            k.to_string(),
            a.registers.to_string(),
            a.static_shared_bytes.to_string(),
            a.local_bytes.to_string(),
            a.max_threads_per_block.to_string(),
            build,
        ]);
    }
    t.print();
    Ok(())
}
