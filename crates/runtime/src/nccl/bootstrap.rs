//! One process per GPU under `torchrun`, `srun` or `mpirun`: the rank from the launcher's
//! environment, the NCCL id from rank 0 over TCP. No shared file system is needed, so a job
//! spans machines as a PyTorch one does.
//!
//! ```no_run
//! # use std::time::Duration;
//! # use cohort_runtime::nccl::{Comm, Launch, ReduceOp};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let launch = Launch::from_env()?;                 // RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, …
//! let gpu = launch.gpu()?;                          // device LOCAL_RANK
//! let comm = Comm::from_launch(&gpu, &launch, Duration::from_secs(120))?;
//! let mut grads = gpu.upload(&vec![1.0f32; 1 << 20])?;
//! comm.all_reduce_in_place(gpu.stream(), &mut grads, ReduceOp::Sum)?;
//! # Ok(()) }
//! ```
//!
//! [`Comm::from_env`] does the first and last lines with a GPU you choose.
//!
//! # The launcher's variables
//!
//! | launcher | rank | world size | local rank | ranks on this node | job token |
//! |---|---|---|---|---|---|
//! | `torchrun` (or set by hand) | `RANK` | `WORLD_SIZE` | `LOCAL_RANK` | `LOCAL_WORLD_SIZE` | `TORCHELASTIC_RUN_ID` |
//! | Open MPI `mpirun` | `OMPI_COMM_WORLD_RANK` | `OMPI_COMM_WORLD_SIZE` | `OMPI_COMM_WORLD_LOCAL_RANK` | `OMPI_COMM_WORLD_LOCAL_SIZE` | `PMIX_NAMESPACE` |
//! | MPICH / Intel MPI `mpiexec` (Hydra) | `PMI_RANK` | `PMI_SIZE` | `MPI_LOCALRANKID` | `MPI_LOCALNRANKS` | none |
//! | Slurm `srun` | `SLURM_PROCID` | `SLURM_NTASKS` (`SLURM_NPROCS`) | `SLURM_LOCALID` | `SLURM_STEP_TASKS_PER_NODE` at `SLURM_NODEID`, else `SLURM_NTASKS_PER_NODE` | `SLURM_JOB_ID.SLURM_STEP_ID` |
//!
//! The first launcher of this table whose rank or world size is set is the one read — the
//! innermost launcher sets its own, so `torchrun` started by `srun` gives torchrun's ranks and
//! `mpirun` inside a Slurm allocation Open MPI's — unless [`COHORT_LAUNCHER`](LAUNCHER_VAR)
//! (`torchrun`, `openmpi`, `mpich`, `slurm`) names one. A variable that is empty counts as unset.
//! Every problem is an [`NcclError::Launch`] naming the variable and what to set: a launcher's
//! rank without its world size (or the reverse), a value that is not a whole number, a rank
//! not below the world size, a local rank not below the ranks on its node.
//!
//! # Where the ranks meet
//!
//! Rank 0 listens at `MASTER_ADDR:MASTER_PORT` (a host name, an IPv4 or an IPv6 address), as
//! torch.distributed's `env://` does, with two exceptions:
//!
//! - under `torchrun`, when torchrun's agent keeps its own store on `MASTER_PORT`
//!   (`TORCHELASTIC_USE_AGENT_STORE=True`: its default static rendezvous, and the c10d one
//!   when the agent hosts it), Cohort's rank 0 listens on `MASTER_PORT + 1`;
//! - [`COHORT_RENDEZVOUS_PORT`](PORT_VAR) sets the port outright (every rank must see the same).
//!
//! torchrun sets both variables. Slurm and the MPI launchers set neither: export them (the
//! errors say how), e.g. in a batch script:
//!
//! ```text
//! export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
//! export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))
//! srun --ntasks-per-node=8 --gpus-per-node=8 ./train
//! ```
//!
//! A job of one rank needs no address. Rank 0 must run on the `MASTER_ADDR` host (it checks:
//! if that address refuses a connection from rank 0 itself, it is another host, an error;
//! with [`COHORT_RENDEZVOUS_BIND`](BIND_VAR) set, rank 0 trusts it and skips the check).
//!
//! # The exchange
//!
//! Rank 0 binds the port (an error at once if it is taken), makes the id ([`NcclId::new`]),
//! and waits until every other rank has connected and said hello — a magic, the protocol
//! version, its rank, the world size and the job token. It refuses a hello with another world
//! size or token, a rank out of range, rank 0, or a rank that is connected already (two
//! processes given one rank), saying why, and keeps waiting for the good ranks. Then it closes
//! the listener and sends every rank the id. The other ranks connect until their deadline
//! (rank 0 may start later; they retry with a back-off up to 1 s), and get either the id or
//! the reason they were refused. Nobody goes on to NCCL until every rank is there, so a
//! missing rank is reported by name: rank 0's error says which never joined ("ranks 3, 5–7
//! never joined within 60.0 s"), what was refused, and what else connected, and the ranks
//! waiting get the same message. See [`Rendezvous`] for the protocol and for using it with
//! an id of your own (any transport, any number of exchanges: each needs its own port, or
//! the previous one finished).
//!
//! Everything is bounded: each rank's `timeout` counts from its own call (give every rank the
//! same, with room for the slowest to start); rank 0 reads every connection without blocking,
//! drops one that has not sent a whole hello within [`HELLO_WAIT`] or does not start with the
//! magic (a port scanner, `curl`), keeps at most [`MAX_PENDING`] such connections, and gives
//! none of them a say in the result. The job token — the launcher's job id, or
//! [`COHORT_JOB_ID`](JOB_VAR) — keeps the ranks of two jobs that meet at one port apart; under
//! MPICH there is none unless you set it.
//!
//! # Trust
//!
//! The rendezvous is not authenticated, like torchrun's c10d `TCPStore` (where PyTorch keeps
//! its own NCCL id) and NCCL's own bootstrap: whoever can connect to the port while rank 0
//! waits, and knows the world size and the token (a job id, not a secret), can take a
//! missing rank's place and receive the id, and with it join NCCL's bootstrap as that rank —
//! read what is sent to it, or stall the job. It can't obtain anything once every rank has
//! joined (the listener is closed then). Run jobs on a network only they and trusted hosts
//! reach, as with torchrun: by default rank 0 listens on every address of its host (`::` or
//! `0.0.0.0`) unless `MASTER_ADDR` is a loopback address (then only there); bind it to the
//! cluster's private interface with [`COHORT_RENDEZVOUS_BIND`](BIND_VAR), and keep the port
//! closed to the outside.
//!
//! # The GPU
//!
//! [`Launch::gpu`] opens device `LOCAL_RANK` (of those `CUDA_VISIBLE_DEVICES` leaves) and is an
//! error if the process sees no such device, naming both numbers. Where the launcher gives
//! each process a GPU of its own (one visible device each), open `Gpu::new(0)` instead.

use std::time::Duration;

mod launch;
mod rendezvous;

pub use launch::{BIND_VAR, Endpoint, JOB_VAR, LAUNCHER_VAR, Launch, Launcher, MAX_TOKEN, PORT_VAR};
pub use rendezvous::{HELLO_WAIT, Listener, MAX_PENDING, PROTOCOL, Rendezvous};

use super::{Comm, NcclError, NcclId, NcclResult, api, check_primary};
use crate::device::Gpu;

impl NcclId {
    /// The id of the job `launch` describes, exchanged over TCP: rank 0 makes it and serves
    /// it at the launch's rendezvous address; the other ranks fetch it (see the
    /// [module docs](self)). `timeout` bounds the exchange on each rank, from this call.
    ///
    /// # Errors
    /// [`NcclError::Launch`] for a launch of several ranks without an address;
    /// [`NcclError::IdExchange`] as [`Rendezvous::exchange`]; [`NcclError::NotFound`] on rank 0
    /// without NCCL.
    pub fn exchange_tcp(launch: &Launch, timeout: Duration) -> NcclResult<NcclId> {
        Rendezvous::from_launch(launch)?.exchange(launch.rank, timeout, NcclId::new)
    }
}

impl Comm {
    /// This process's rank of a job started by `torchrun`, `srun` or `mpirun`, on `gpu`:
    /// [`Launch::from_env`], then [`Comm::from_launch`]. [`Launch::gpu`] picks the GPU the
    /// launcher means (`LOCAL_RANK`).
    ///
    /// # Errors
    /// As [`Launch::from_env`] and [`Comm::from_launch`].
    pub fn from_env(gpu: &Gpu, timeout: Duration) -> NcclResult<Comm> {
        Self::from_launch(gpu, &Launch::from_env()?, timeout)
    }

    /// Rank `launch.rank` of `launch.world_size` on `gpu`: the id over TCP
    /// ([`NcclId::exchange_tcp`], bounded by `timeout`), then [`Comm::from_rank`] (bounded by
    /// the communicator [`timeout`](super::timeout)). The GPU and NCCL are checked first, so
    /// that a rank that can't take part fails before the others wait for it.
    ///
    /// # Errors
    /// [`NcclError::NotFound`] without NCCL; as [`Comm::from_rank`] and
    /// [`NcclId::exchange_tcp`].
    pub fn from_launch(gpu: &Gpu, launch: &Launch, timeout: Duration) -> NcclResult<Comm> {
        if launch.rank >= launch.world_size {
            return Err(NcclError::Launch(format!("rank {} of {}", launch.rank, launch.world_size)));
        }
        check_primary(gpu)?;
        api()?;
        let id = NcclId::exchange_tcp(launch, timeout)?;
        Self::from_rank(gpu, &id, launch.rank, launch.world_size)
    }
}
