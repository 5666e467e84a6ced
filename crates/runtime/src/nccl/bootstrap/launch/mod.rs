//! Which rank this process is, of how many, and where rank 0 listens: read from the variables
//! a launcher sets (see the parent module's table). [`Launch::from_vars`] is a pure function of
//! a variable lookup; [`Launch::from_env`] gives it the process environment.
//!
//! `launcher.rs` knows each launcher's variables; `env.rs` reads and checks them.

use std::fmt;
use std::net::IpAddr;

use crate::device::Gpu;
use crate::nccl::NcclResult;

mod env;
mod launcher;
#[cfg(test)]
mod tests;

use env::{Env, launch_err, missing, rendezvous, slurm_tasks_here, token};
pub use launcher::Launcher;

/// Picks the launcher whose variables are read, instead of the first one present.
pub const LAUNCHER_VAR: &str = "COHORT_LAUNCHER";
/// The port rank 0 listens on, instead of the one derived from `MASTER_PORT`.
pub const PORT_VAR: &str = "COHORT_RENDEZVOUS_PORT";
/// The address rank 0 binds its listener to, instead of the one derived from `MASTER_ADDR`.
pub const BIND_VAR: &str = "COHORT_RENDEZVOUS_BIND";
/// A job token every rank must share, instead of the one derived from the launcher's job id.
pub const JOB_VAR: &str = "COHORT_JOB_ID";

/// The longest job token (bytes): it travels in every rank's hello.
pub const MAX_TOKEN: usize = 255;

/// Where rank 0 listens: a host name or an IP address (IPv6 without brackets), and a port.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// A host name or an IP address.
    pub host: String,
    /// The TCP port.
    pub port: u16,
}

impl Endpoint {
    /// `host` (a name or an address; brackets around an IPv6 address are dropped) and `port`.
    #[must_use]
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        let host = host.into();
        let host = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(inner) => inner.to_owned(),
            None => host,
        };
        Self { host, port }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// This process's place in a job of several processes, from its launcher's environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The launcher whose variables were read.
    pub launcher: Launcher,
    /// This process's rank, `0..world_size`.
    pub rank: usize,
    /// The number of ranks.
    pub world_size: usize,
    /// This process's rank among those of its node (the GPU it takes, [`Launch::gpu`]), if
    /// the launcher says.
    pub local_rank: Option<usize>,
    /// The number of ranks on this node, if the launcher says.
    pub local_world_size: Option<usize>,
    /// Where rank 0 listens for the others (`MASTER_ADDR`, `MASTER_PORT`; see the module
    /// docs for the port under torchrun). `None` only for a job of one rank, which needs none.
    pub rendezvous: Option<Endpoint>,
    /// The address rank 0 binds to ([`BIND_VAR`]); `None`: derived from the rendezvous host.
    pub bind: Option<IpAddr>,
    /// A token every rank of the job shares (the launcher's job id, or [`JOB_VAR`]; may be
    /// empty): rank 0 refuses a rank with another, so two jobs on one port don't mix.
    pub token: String,
}

impl Launch {
    /// This process's launch, from its environment ([`Launch::from_vars`]).
    ///
    /// # Errors
    /// As [`Launch::from_vars`].
    pub fn from_env() -> NcclResult<Launch> {
        Self::from_vars(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
    }

    /// The launch that the variables `lookup` returns describe (a variable that is empty
    /// counts as unset). The launcher is [`LAUNCHER_VAR`]'s if set, else the first of
    /// [`Launcher::ALL`] whose rank or world size is set; see the module docs for each
    /// launcher's variables and for the rendezvous address.
    ///
    /// # Errors
    /// [`NcclError::Launch`](crate::nccl::NcclError::Launch), naming the variable and what to
    /// set: no launcher's variables; a value that is not a number or a port; one of a
    /// launcher's pair (rank, world size) without the other; a rank not below the world size, a
    /// local rank not below the local world size, a local world size above the world size; no
    /// `MASTER_ADDR` or `MASTER_PORT` in a job of several ranks; a token longer than
    /// [`MAX_TOKEN`] bytes.
    pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> NcclResult<Launch> {
        let env = Env { lookup: &lookup };
        let launcher = match env.get(LAUNCHER_VAR) {
            Some(name) => Launcher::from_name(&name).ok_or_else(|| {
                launch_err(format!(
                    "{LAUNCHER_VAR}={name:?} names no launcher: use torchrun, openmpi, mpich or slurm, or unset it"
                ))
            })?,
            None => Launcher::ALL.into_iter().find(|l| l.present(&env)).ok_or_else(|| {
                launch_err(
                    "no launcher's variables are set: start the program with torchrun (RANK, WORLD_SIZE), srun \
                     (SLURM_PROCID, SLURM_NTASKS), Open MPI's mpirun (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) or \
                     MPICH's mpiexec (PMI_RANK, PMI_SIZE), or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT"
                        .into(),
                )
            })?,
        };
        let names = launcher.names();
        let size = match env.number(names.size)? {
            // Older Slurm: SLURM_NPROCS.
            None if launcher == Launcher::Slurm => env.number("SLURM_NPROCS")?,
            n => n,
        };
        let (rank, world_size) = match (env.number(names.rank)?, size) {
            (Some(r), Some(n)) => (r, n),
            (None, Some(_)) => return Err(missing(names.rank, names.size, launcher)),
            (Some(_), None) => return Err(missing(names.size, names.rank, launcher)),
            (None, None) => {
                return Err(launch_err(format!(
                    "{LAUNCHER_VAR} names {launcher}, but neither {} nor {} is set",
                    names.rank, names.size
                )));
            }
        };
        if world_size == 0 {
            return Err(launch_err(format!("{}=0: a job has at least one rank", names.size)));
        }
        if rank >= world_size {
            return Err(launch_err(format!(
                "{}={rank} is not below {}={world_size}: ranks are 0..{}",
                names.rank,
                names.size,
                world_size - 1
            )));
        }
        let local_rank = env.number(names.local_rank)?;
        let (local_world_size, local_size_var) = if launcher == Launcher::Slurm {
            slurm_tasks_here(&env)?
        } else {
            (env.number(names.local_size)?, names.local_size)
        };
        if let Some(l) = local_world_size {
            if l == 0 || l > world_size {
                return Err(launch_err(format!(
                    "{local_size_var} says {l} ranks on this node, with {}={world_size} in all",
                    names.size
                )));
            }
            if let Some(r) = local_rank.filter(|&r| r >= l) {
                return Err(launch_err(format!(
                    "{}={r} is not below the {l} ranks on this node ({local_size_var})",
                    names.local_rank
                )));
            }
        }
        let rendezvous = rendezvous(&env, launcher, world_size)?;
        let bind = match env.get(BIND_VAR) {
            None => None,
            Some(v) => Some(v.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().map_err(|_| {
                launch_err(format!("{BIND_VAR}={v:?} is not an IP address (such as 10.0.0.5, 0.0.0.0 or ::)"))
            })?),
        };
        let token = token(&env, launcher);
        if token.len() > MAX_TOKEN {
            return Err(launch_err(format!(
                "the job token ({JOB_VAR}, or the launcher's job id) has {} bytes, more than {MAX_TOKEN}",
                token.len()
            )));
        }
        Ok(Launch { launcher, rank, world_size, local_rank, local_world_size, rendezvous, bind, token })
    }

    /// The GPU of this rank: device [`local_rank`](Launch::local_rank) of those this process
    /// sees (after `CUDA_VISIBLE_DEVICES`), with its primary context.
    ///
    /// # Errors
    /// [`NcclError::Launch`](crate::nccl::NcclError::Launch) when the launcher gave no local
    /// rank, or when it is not below the number of devices this process sees (naming both); the
    /// errors of [`Gpu::new`].
    pub fn gpu(&self) -> NcclResult<Gpu> {
        let var = self.launcher.local_rank_var();
        let local = self.local_rank.ok_or_else(|| {
            launch_err(format!(
                "{} did not say which rank of its node this process is ({var} is not set): set it, or open the \
                 GPU yourself (Gpu::new)",
                self.launcher
            ))
        })?;
        let count = Gpu::count()?;
        if local >= count {
            let visible = std::env::var("CUDA_VISIBLE_DEVICES")
                .map(|v| format!(" (CUDA_VISIBLE_DEVICES={v})"))
                .unwrap_or_default();
            return Err(launch_err(format!(
                "{var}={local}, but this process sees {count} GPU(s){visible}: run at most {count} rank(s) per node \
                 (one per GPU); if the launcher gives each process a GPU of its own (Slurm's --gpus-per-task, a \
                 CUDA_VISIBLE_DEVICES per rank), open Gpu::new(0) instead"
            )));
        }
        Ok(Gpu::new(local)?)
    }
}

impl fmt::Display for Launch {
    /// "rank 1 of 4 (torchrun), local rank 1 of 2, rendezvous at node0:29501".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {} of {} ({})", self.rank, self.world_size, self.launcher)?;
        match (self.local_rank, self.local_world_size) {
            (Some(r), Some(n)) => write!(f, ", local rank {r} of {n}")?,
            (Some(r), None) => write!(f, ", local rank {r}")?,
            _ => {}
        }
        if let Some(ep) = &self.rendezvous {
            write!(f, ", rendezvous at {ep}")?;
        }
        Ok(())
    }
}
