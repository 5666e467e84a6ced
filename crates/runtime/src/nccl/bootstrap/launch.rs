//! Which rank this process is, of how many, and where rank 0 listens: read from the variables
//! a launcher sets (see the parent module's table). [`Launch::from_vars`] is a pure function of
//! a variable lookup; [`Launch::from_env`] gives it the process environment.

use std::fmt;
use std::net::IpAddr;

use crate::device::Gpu;
use crate::nccl::{NcclError, NcclResult};

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
struct Names {
    rank: &'static str,
    size: &'static str,
    local_rank: &'static str,
    local_size: &'static str,
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

    /// The launcher a [`LAUNCHER_VAR`] value names: `torchrun` (or `torch`), `openmpi` (or
    /// `ompi`), `mpich` (or `hydra`, `intelmpi`), `slurm` (or `srun`); case is ignored.
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

    fn names(self) -> Names {
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
    fn present(self, env: &Env<'_>) -> bool {
        let n = self.names();
        env.get(n.rank).is_some() || env.get(n.size).is_some()
    }

    /// How to tell rank 0's address under this launcher, for the error when it is missing.
    fn address_hint(self) -> &'static str {
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

/// The variables, looked up through a function (the process environment, or a test's map).
/// A variable that is empty or only blanks counts as unset.
struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

fn launch_err(m: String) -> NcclError {
    NcclError::Launch(m)
}

/// One of a launcher's pair of variables without the other.
fn missing(name: &str, other: &str, launcher: Launcher) -> NcclError {
    launch_err(format!("{name} is not set, but {other} is: {launcher} sets both; set {name} too"))
}

impl Env<'_> {
    fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    /// A whole number, if the variable is set.
    fn number(&self, name: &str) -> NcclResult<Option<usize>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .parse::<usize>()
                .map(Some)
                .map_err(|_| launch_err(format!("{name}={v:?} is not a whole number (0, 1, 2, …)"))),
        }
    }

    fn port(&self, name: &str) -> NcclResult<Option<u16>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => match v.parse::<u16>() {
                Ok(0) => Err(launch_err(format!(
                    "{name}=0: the other ranks could not know which port rank 0 got; choose one (1024–65535, free on \
                     rank 0's host)"
                ))),
                Ok(p) => Ok(Some(p)),
                Err(_) => Err(launch_err(format!("{name}={v:?} is not a TCP port (1–65535)"))),
            },
        }
    }
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
    /// [`NcclError::Launch`], naming the variable and what to set: no launcher's variables; a
    /// value that is not a number or a port; one of a launcher's pair (rank, world size)
    /// without the other; a rank not below the world size, a local rank not below the local
    /// world size, a local world size above the world size; no `MASTER_ADDR` or `MASTER_PORT`
    /// in a job of several ranks; a token longer than [`MAX_TOKEN`] bytes.
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
    /// [`NcclError::Launch`] when the launcher gave no local rank, or when it is not below the
    /// number of devices this process sees (naming both); the errors of [`Gpu::new`].
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

/// Slurm's tasks on this node: `SLURM_STEP_TASKS_PER_NODE` (else `SLURM_TASKS_PER_NODE`) at
/// `SLURM_NODEID`, else `SLURM_NTASKS_PER_NODE`; and the variable it came from.
fn slurm_tasks_here(env: &Env<'_>) -> NcclResult<(Option<usize>, &'static str)> {
    for var in ["SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"] {
        let Some(list) = env.get(var) else { continue };
        let node = env.number("SLURM_NODEID")?;
        let counts = parse_tasks_per_node(&list)
            .ok_or_else(|| launch_err(format!("{var}={list:?} is not a Slurm task count list (such as 4(x2),3)")))?;
        match (node, counts.len()) {
            (_, 1) => return Ok((Some(counts[0].0), var)),
            (Some(n), _) => {
                let mut left = n;
                for &(tasks, nodes) in &counts {
                    if left < nodes {
                        return Ok((Some(tasks), var));
                    }
                    left -= nodes;
                }
                return Err(launch_err(format!("SLURM_NODEID={n} is past the nodes of {var}={list:?}")));
            }
            (None, _) => break,
        }
    }
    Ok((env.number("SLURM_NTASKS_PER_NODE")?, "SLURM_NTASKS_PER_NODE"))
}

/// `4(x2),3` → `[(4, 2), (3, 1)]`: tasks per node, repeated over nodes.
fn parse_tasks_per_node(list: &str) -> Option<Vec<(usize, usize)>> {
    list.split(',')
        .map(|item| {
            let item = item.trim();
            match item.split_once("(x") {
                Some((tasks, rest)) => {
                    let nodes = rest.strip_suffix(')')?.parse::<usize>().ok().filter(|&n| n > 0)?;
                    Some((tasks.parse().ok()?, nodes))
                }
                None => Some((item.parse().ok()?, 1)),
            }
        })
        .collect()
}

/// Where rank 0 listens: `MASTER_ADDR`, and the port: [`PORT_VAR`] if set, else `MASTER_PORT`,
/// plus one under torchrun when its own store holds `MASTER_PORT`.
fn rendezvous(env: &Env<'_>, launcher: Launcher, world_size: usize) -> NcclResult<Option<Endpoint>> {
    let addr = env.get("MASTER_ADDR");
    let own = env.port(PORT_VAR)?;
    let master = env.port("MASTER_PORT")?;
    if world_size == 1 && addr.is_none() {
        return Ok(None);
    }
    let Some(addr) = addr else {
        return Err(launch_err(format!(
            "MASTER_ADDR is not set: the ranks meet at rank 0's host, MASTER_ADDR:MASTER_PORT. {}",
            launcher.address_hint()
        )));
    };
    let host = Endpoint::new(addr.clone(), 0).host;
    if host.is_empty() || host.contains(char::is_whitespace) || host.contains(['/', '[', ']']) {
        return Err(launch_err(format!("MASTER_ADDR={addr:?} is not a host name or an IP address")));
    }
    let port = match (own, master) {
        (Some(p), _) => p,
        (None, Some(p)) if launcher == Launcher::Torch && agent_store(env) => p.checked_add(1).ok_or_else(|| {
            launch_err(format!(
                "MASTER_PORT=65535 holds torchrun's store, and Cohort listens on the port after it: choose another \
                 --master-port, or set {PORT_VAR}"
            ))
        })?,
        (None, Some(p)) => p,
        (None, None) => {
            return Err(launch_err(format!(
                "MASTER_PORT is not set (MASTER_ADDR={addr} is): {}",
                launcher.address_hint()
            )));
        }
    };
    Ok(Some(Endpoint { host, port }))
}

/// Whether torchrun's agent holds a store on `MASTER_PORT` (its static rendezvous, and the c10d
/// one when the agent hosts it): then a worker can't listen there.
fn agent_store(env: &Env<'_>) -> bool {
    env.get("TORCHELASTIC_USE_AGENT_STORE").is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// [`JOB_VAR`] if set, else the launcher's job id: torchrun's `TORCHELASTIC_RUN_ID`, Slurm's
/// `SLURM_JOB_ID.SLURM_STEP_ID`, Open MPI's `PMIX_NAMESPACE`; none for Hydra.
fn token(env: &Env<'_>, launcher: Launcher) -> String {
    if let Some(t) = env.get(JOB_VAR) {
        return t;
    }
    match launcher {
        Launcher::Torch => env.get("TORCHELASTIC_RUN_ID").unwrap_or_default(),
        Launcher::Slurm => match (env.get("SLURM_JOB_ID"), env.get("SLURM_STEP_ID")) {
            (Some(job), Some(step)) => format!("slurm:{job}.{step}"),
            (Some(job), None) => format!("slurm:{job}"),
            _ => String::new(),
        },
        Launcher::OpenMpi => env.get("PMIX_NAMESPACE").map(|n| format!("pmix:{n}")).unwrap_or_default(),
        Launcher::Mpich => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(vars: &[(&str, &str)]) -> NcclResult<Launch> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Launch::from_vars(|k| map.get(k).cloned())
    }

    fn err(vars: &[(&str, &str)]) -> String {
        match parse(vars) {
            Ok(l) => panic!("{vars:?} parsed as {l:?}"),
            Err(NcclError::Launch(m)) => m,
            Err(e) => panic!("{vars:?}: not a launch error: {e}"),
        }
    }

    const MASTER: [(&str, &str); 2] = [("MASTER_ADDR", "node0"), ("MASTER_PORT", "29500")];

    fn with_master(vars: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        let mut v = vars.to_vec();
        v.extend(MASTER);
        v
    }

    #[test]
    fn torchrun() {
        let l = parse(&[
            ("RANK", "5"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "4"),
            ("MASTER_ADDR", "10.1.2.3"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_USE_AGENT_STORE", "True"),
            ("TORCHELASTIC_RUN_ID", "job-7"),
            ("GROUP_RANK", "1"),
        ])
        .unwrap();
        assert_eq!(
            l,
            Launch {
                launcher: Launcher::Torch,
                rank: 5,
                world_size: 8,
                local_rank: Some(1),
                local_world_size: Some(4),
                // torchrun's store holds 29500: Cohort's rank 0 listens on the next port.
                rendezvous: Some(Endpoint::new("10.1.2.3", 29501)),
                bind: None,
                token: "job-7".into(),
            }
        );
        assert_eq!(l.to_string(), "rank 5 of 8 (torchrun), local rank 1 of 4, rendezvous at 10.1.2.3:29501");
        // Without the agent's store (torchrun's c10d rendezvous picks a free MASTER_PORT), or
        // set by hand: MASTER_PORT itself.
        for store in [None, Some("False")] {
            let mut v = with_master(&[("RANK", "0"), ("WORLD_SIZE", "2")]);
            v.extend(store.map(|s| ("TORCHELASTIC_USE_AGENT_STORE", s)));
            let l = parse(&v).unwrap();
            assert_eq!(l.rendezvous, Some(Endpoint::new("node0", 29500)));
            assert_eq!((l.local_rank, l.local_world_size, l.token.as_str()), (None, None, ""));
        }
    }

    #[test]
    fn open_mpi() {
        let l = parse(&with_master(&[
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "16"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "3"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "8"),
            ("PMIX_NAMESPACE", "prterun-host-1234@1"),
            ("TORCHELASTIC_USE_AGENT_STORE", "True"), // torchrun's alone: not a reason to move
        ]))
        .unwrap();
        assert_eq!(
            (l.launcher, l.rank, l.world_size, l.local_rank, l.local_world_size),
            (Launcher::OpenMpi, 3, 16, Some(3), Some(8))
        );
        assert_eq!(l.rendezvous, Some(Endpoint::new("node0", 29500)));
        assert_eq!(l.token, "pmix:prterun-host-1234@1");
    }

    #[test]
    fn mpich_hydra() {
        let l = parse(&with_master(&[
            ("PMI_RANK", "4"),
            ("PMI_SIZE", "5"),
            ("MPI_LOCALRANKID", "1"),
            ("MPI_LOCALNRANKS", "2"),
        ]))
        .unwrap();
        assert_eq!(
            (l.launcher, l.rank, l.world_size, l.local_rank, l.local_world_size),
            (Launcher::Mpich, 4, 5, Some(1), Some(2))
        );
        assert_eq!(l.token, "");
    }

    #[test]
    fn slurm() {
        let base = [
            ("SLURM_PROCID", "6"),
            ("SLURM_NTASKS", "7"),
            ("SLURM_LOCALID", "0"),
            ("SLURM_NODEID", "2"),
            ("SLURM_JOB_ID", "4242"),
            ("SLURM_STEP_ID", "0"),
        ];
        // Two nodes of 3 tasks, then one of 1: node 2 has 1.
        let mut v = with_master(&base);
        v.push(("SLURM_STEP_TASKS_PER_NODE", "3(x2),1"));
        let l = parse(&v).unwrap();
        assert_eq!(
            (l.launcher, l.rank, l.world_size, l.local_rank, l.local_world_size),
            (Launcher::Slurm, 6, 7, Some(0), Some(1))
        );
        assert_eq!(l.token, "slurm:4242.0");
        // Only --ntasks-per-node.
        let mut v = with_master(&base);
        v.push(("SLURM_NTASKS_PER_NODE", "4"));
        assert_eq!(parse(&v).unwrap().local_world_size, Some(4));
        // One count for every node needs no node id.
        let mut v = with_master(&[("SLURM_PROCID", "1"), ("SLURM_NPROCS", "4")]);
        v.push(("SLURM_TASKS_PER_NODE", "2(x2)"));
        let l = parse(&v).unwrap();
        assert_eq!((l.world_size, l.local_world_size, l.local_rank), (4, Some(2), None));
        // Malformed lists, a node past the list.
        for bad in ["3(x2", "x", "3(x0)", "3,,1"] {
            let mut v = with_master(&base);
            v.push(("SLURM_STEP_TASKS_PER_NODE", bad));
            assert!(err(&v).contains("SLURM_STEP_TASKS_PER_NODE"), "{bad}");
        }
        let mut v = with_master(&base);
        v.push(("SLURM_STEP_TASKS_PER_NODE", "3,3"));
        assert!(err(&v).contains("SLURM_NODEID=2 is past the nodes"));
    }

    #[test]
    fn slurm_without_master_addr_says_what_to_set() {
        let m = err(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2")]);
        assert!(m.starts_with("MASTER_ADDR is not set"), "{m}");
        assert!(m.contains("scontrol show hostnames") && m.contains("MASTER_PORT"), "{m}");
        let m = err(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2"), ("MASTER_ADDR", "n1")]);
        assert!(m.starts_with("MASTER_PORT is not set (MASTER_ADDR=n1 is)"), "{m}");
        // One task needs no rendezvous.
        let l = parse(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "1")]).unwrap();
        assert_eq!(l.rendezvous, None);
    }

    #[test]
    fn precedence_is_torch_then_open_mpi_then_hydra_then_slurm() {
        // torchrun inside a Slurm step (srun starts one torchrun per node): torchrun's ranks.
        let mut all = MASTER.to_vec();
        all.extend([
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("PMI_RANK", "2"),
            ("PMI_SIZE", "4"),
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("RANK", "9"),
            ("WORLD_SIZE", "16"),
        ]);
        let ranks: Vec<(Launcher, usize)> = (0..4)
            .map(|skip| {
                let l = parse(&all[..all.len() - 2 * skip]).unwrap();
                (l.launcher, l.rank)
            })
            .collect();
        assert_eq!(ranks, [(Launcher::Torch, 9), (Launcher::OpenMpi, 3), (Launcher::Mpich, 2), (Launcher::Slurm, 1)]);
        // COHORT_LAUNCHER picks one, whatever else is set.
        let mut v = all.clone();
        v.push((LAUNCHER_VAR, "Slurm"));
        assert_eq!(parse(&v).unwrap().rank, 1);
        v.push((LAUNCHER_VAR, "pbs")); // the later value wins in the map
        assert!(err(&v).starts_with("COHORT_LAUNCHER=\"pbs\" names no launcher"));
        // A launcher named but absent: its rank is missing.
        let m = err(&with_master(&[(LAUNCHER_VAR, "mpich"), ("RANK", "0"), ("WORLD_SIZE", "2")]));
        assert_eq!(m, "COHORT_LAUNCHER names MPICH/Hydra, but neither PMI_RANK nor PMI_SIZE is set");
    }

    #[test]
    fn missing_and_malformed_variables_are_errors_naming_them() {
        let m = err(&MASTER);
        assert!(m.starts_with("no launcher's variables are set") && m.contains("torchrun"), "{m}");
        let m = err(&with_master(&[("RANK", "0")]));
        assert_eq!(m, "WORLD_SIZE is not set, but RANK is: torchrun sets both; set WORLD_SIZE too");
        let m = err(&with_master(&[("WORLD_SIZE", "4")]));
        assert!(m.starts_with("RANK is not set, but WORLD_SIZE is"), "{m}");
        let m = err(&with_master(&[("RANK", "-1"), ("WORLD_SIZE", "4")]));
        assert_eq!(m, "RANK=\"-1\" is not a whole number (0, 1, 2, …)");
        let m = err(&with_master(&[("RANK", "0"), ("WORLD_SIZE", "four")]));
        assert!(m.starts_with("WORLD_SIZE=\"four\""), "{m}");
        let m = err(&with_master(&[("RANK", "4"), ("WORLD_SIZE", "4")]));
        assert_eq!(m, "RANK=4 is not below WORLD_SIZE=4: ranks are 0..3");
        let m = err(&with_master(&[("RANK", "0"), ("WORLD_SIZE", "0")]));
        assert!(m.starts_with("WORLD_SIZE=0"), "{m}");
        let m =
            err(&with_master(&[("RANK", "1"), ("WORLD_SIZE", "4"), ("LOCAL_RANK", "2"), ("LOCAL_WORLD_SIZE", "2")]));
        assert!(m.starts_with("LOCAL_RANK=2 is not below the 2 ranks on this node"), "{m}");
        let m = err(&with_master(&[("RANK", "1"), ("WORLD_SIZE", "4"), ("LOCAL_WORLD_SIZE", "8")]));
        assert!(m.starts_with("LOCAL_WORLD_SIZE says 8 ranks on this node"), "{m}");
        let m = err(&with_master(&[("RANK", "1"), ("WORLD_SIZE", "4"), ("LOCAL_RANK", "x")]));
        assert!(m.starts_with("LOCAL_RANK=\"x\""), "{m}");
        // Blank counts as unset.
        let m = err(&with_master(&[("RANK", " "), ("WORLD_SIZE", "4")]));
        assert!(m.starts_with("RANK is not set"), "{m}");
    }

    #[test]
    fn addresses_and_ports() {
        let tr = [("RANK", "1"), ("WORLD_SIZE", "2")];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut v = tr.to_vec();
            v.extend_from_slice(extra);
            v
        };
        let m = err(&with(&[("MASTER_PORT", "29500")]));
        assert!(m.starts_with("MASTER_ADDR is not set") && m.contains("torchrun sets MASTER_ADDR"), "{m}");
        for bad in ["0", "65536", "http", "-5"] {
            let m = err(&with(&[("MASTER_ADDR", "h"), ("MASTER_PORT", bad)]));
            assert!(m.starts_with(&format!("MASTER_PORT={bad}")) || m.contains("MASTER_PORT=\""), "{bad}: {m}");
        }
        for bad in ["a b", "host/x", "[::1", "[]"] {
            let m = err(&with(&[("MASTER_ADDR", bad), ("MASTER_PORT", "1")]));
            assert!(m.contains("is not a host name or an IP address"), "{bad}: {m}");
        }
        // IPv6 with or without brackets; Display puts them back.
        for addr in ["::1", "[::1]"] {
            let l = parse(&with(&[("MASTER_ADDR", addr), ("MASTER_PORT", "7000")])).unwrap();
            let ep = l.rendezvous.unwrap();
            assert_eq!((ep.host.as_str(), ep.port), ("::1", 7000));
            assert_eq!(ep.to_string(), "[::1]:7000");
        }
        // COHORT_RENDEZVOUS_PORT wins over MASTER_PORT (and over torchrun's +1); it can stand alone.
        let l = parse(&with(&[
            ("MASTER_ADDR", "h"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_USE_AGENT_STORE", "True"),
            (PORT_VAR, "31000"),
        ]))
        .unwrap();
        assert_eq!(l.rendezvous.unwrap().port, 31000);
        assert_eq!(parse(&with(&[("MASTER_ADDR", "h"), (PORT_VAR, "31000")])).unwrap().rendezvous.unwrap().port, 31000);
        let m = err(&with(&[("MASTER_ADDR", "h"), ("MASTER_PORT", "65535"), ("TORCHELASTIC_USE_AGENT_STORE", "True")]));
        assert!(m.contains(PORT_VAR), "{m}");
        // Bind address and token.
        let l = parse(&with(&[("MASTER_ADDR", "h"), ("MASTER_PORT", "1"), (BIND_VAR, "[::]"), (JOB_VAR, "run-9")]))
            .unwrap();
        assert_eq!((l.bind, l.token.as_str()), (Some("::".parse().unwrap()), "run-9"));
        let m = err(&with(&[("MASTER_ADDR", "h"), ("MASTER_PORT", "1"), (BIND_VAR, "eth0")]));
        assert!(m.starts_with("COHORT_RENDEZVOUS_BIND=\"eth0\" is not an IP address"), "{m}");
        let long = "x".repeat(MAX_TOKEN + 1);
        let map: HashMap<&str, String> = with(&[("MASTER_ADDR", "h"), ("MASTER_PORT", "1")])
            .into_iter()
            .map(|(k, v)| (k, v.to_owned()))
            .chain([(JOB_VAR, long)])
            .collect();
        let e = Launch::from_vars(|k| map.get(k).cloned()).unwrap_err().to_string();
        assert!(e.contains("256 bytes, more than 255"), "{e}");
    }

    #[test]
    fn no_local_rank_means_no_gpu_to_pick() {
        let l = parse(&with_master(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "2")])).unwrap();
        let Err(NcclError::Launch(m)) = l.gpu() else { panic!("a GPU without a local rank") };
        assert!(m.starts_with("Open MPI did not say which rank of its node this process is"), "{m}");
        assert!(m.contains("OMPI_COMM_WORLD_LOCAL_RANK is not set"), "{m}");
    }

    #[test]
    fn tasks_per_node_lists() {
        assert_eq!(parse_tasks_per_node("4"), Some(vec![(4, 1)]));
        assert_eq!(parse_tasks_per_node("2(x3),1,5(x2)"), Some(vec![(2, 3), (1, 1), (5, 2)]));
        assert_eq!(parse_tasks_per_node(""), None);
        assert_eq!(parse_tasks_per_node("2(x)"), None);
    }
}
