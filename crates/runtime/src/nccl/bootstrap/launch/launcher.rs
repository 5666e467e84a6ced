//! The launchers Cohort reads ([`Launcher`]) and the names of their variables.

use std::fmt;

use super::env::Env;

/// The launcher that started this process, as its environment tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Launcher {
    /// `torchrun` (`torch.distributed.elastic`), or `RANK` and `WORLD_SIZE` set by hand or by
    /// another launcher that follows torch.distributed's `env://` convention (DeepSpeed,
    /// Accelerate, `cohort nccl --processes`).
    Torch,
    /// Open MPI's `mpirun` / `mpiexec` / `prterun`: `OMPI_COMM_WORLD_*`.
    OpenMpi,
    /// The Hydra process manager of MPICH, Intel MPI and MVAPICH (`mpiexec`, `mpirun`):
    /// `PMI_RANK`, `PMI_SIZE`, `MPI_LOCALRANKID`, `MPI_LOCALNRANKS`.
    Mpich,
    /// Slurm's `srun`: `SLURM_PROCID`, `SLURM_NTASKS`, `SLURM_LOCALID`, the tasks per node.
    Slurm,
}

/// The variables of one launcher.
pub(super) struct Names {
    pub(super) rank: &'static str,
    pub(super) size: &'static str,
    pub(super) local_rank: &'static str,
    pub(super) local_size: &'static str,
}

impl Launcher {
    /// Every launcher, in the order their variables are looked for (see the module docs).
    pub const ALL: [Launcher; 4] = [Launcher::Torch, Launcher::OpenMpi, Launcher::Mpich, Launcher::Slurm];

    /// Its name in messages.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Torch => "torchrun",
            Launcher::OpenMpi => "Open MPI",
            Launcher::Mpich => "MPICH/Hydra",
            Launcher::Slurm => "Slurm",
        }
    }

    /// The launcher a [`LAUNCHER_VAR`](super::LAUNCHER_VAR) value names: `torchrun` (or
    /// `torch`), `openmpi` (or `ompi`), `mpich` (or `hydra`, `intelmpi`), `slurm` (or `srun`);
    /// case is ignored.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Launcher> {
        match name.trim().to_ascii_lowercase().as_str() {
            "torchrun" | "torch" => Some(Launcher::Torch),
            "openmpi" | "ompi" => Some(Launcher::OpenMpi),
            "mpich" | "hydra" | "intelmpi" => Some(Launcher::Mpich),
            "slurm" | "srun" => Some(Launcher::Slurm),
            _ => None,
        }
    }

    pub(super) fn names(self) -> Names {
        match self {
            Launcher::Torch => {
                Names { rank: "RANK", size: "WORLD_SIZE", local_rank: "LOCAL_RANK", local_size: "LOCAL_WORLD_SIZE" }
            }
            Launcher::OpenMpi => Names {
                rank: "OMPI_COMM_WORLD_RANK",
                size: "OMPI_COMM_WORLD_SIZE",
                local_rank: "OMPI_COMM_WORLD_LOCAL_RANK",
                local_size: "OMPI_COMM_WORLD_LOCAL_SIZE",
            },
            Launcher::Mpich => Names {
                rank: "PMI_RANK",
                size: "PMI_SIZE",
                local_rank: "MPI_LOCALRANKID",
                local_size: "MPI_LOCALNRANKS",
            },
            Launcher::Slurm => Names {
                rank: "SLURM_PROCID",
                size: "SLURM_NTASKS",
                local_rank: "SLURM_LOCALID",
                local_size: "SLURM_STEP_TASKS_PER_NODE",
            },
        }
    }

    /// The variable that tells this process's rank on its node (`LOCAL_RANK`, …).
    #[must_use]
    pub fn local_rank_var(self) -> &'static str {
        self.names().local_rank
    }

    /// Whether this launcher's variables are present: its rank's or its world size's.
    pub(super) fn present(self, env: &Env<'_>) -> bool {
        let n = self.names();
        env.get(n.rank).is_some() || env.get(n.size).is_some()
    }

    /// How to tell rank 0's address under this launcher, for the error when it is missing.
    pub(super) fn address_hint(self) -> &'static str {
        match self {
            Launcher::Torch => {
                "torchrun sets MASTER_ADDR and MASTER_PORT; when setting RANK and WORLD_SIZE yourself, set them to \
                 rank 0's host name or address and a free port"
            }
            Launcher::OpenMpi => {
                "mpirun does not say where rank 0 runs: pass it, e.g. `mpirun -x MASTER_ADDR=<first host of the \
                 host file> -x MASTER_PORT=29500 …`"
            }
            Launcher::Mpich => {
                "mpiexec does not say where rank 0 runs: pass it, e.g. `mpiexec -genv MASTER_ADDR <first host> \
                 -genv MASTER_PORT 29500 …`"
            }
            Launcher::Slurm => {
                "Slurm does not say where rank 0 runs: before srun, `export MASTER_ADDR=$(scontrol show hostnames \
                 \"$SLURM_JOB_NODELIST\" | head -n1)` and `export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))` (any \
                 port free on that node)"
            }
        }
    }
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
