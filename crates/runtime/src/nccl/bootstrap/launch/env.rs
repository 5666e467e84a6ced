//! The variables, read and checked: numbers, ports, Slurm's tasks per node, the rendezvous
//! address, the job token.

use super::{Endpoint, JOB_VAR, Launcher, PORT_VAR};
use crate::nccl::{NcclError, NcclResult};

/// The variables, looked up through a function (the process environment, or a test's map).
/// A variable that is empty or only blanks counts as unset.
pub(super) struct Env<'a> {
    pub(super) lookup: &'a dyn Fn(&str) -> Option<String>,
}

pub(super) fn launch_err(m: String) -> NcclError {
    NcclError::Launch(m)
}

/// One of a launcher's pair of variables without the other.
pub(super) fn missing(name: &str, other: &str, launcher: Launcher) -> NcclError {
    launch_err(format!("{name} is not set, but {other} is: {launcher} sets both; set {name} too"))
}

impl Env<'_> {
    pub(super) fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    /// A whole number, if the variable is set.
    pub(super) fn number(&self, name: &str) -> NcclResult<Option<usize>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .parse::<usize>()
                .map(Some)
                .map_err(|_| launch_err(format!("{name}={v:?} is not a whole number (0, 1, 2, …)"))),
        }
    }

    pub(super) fn port(&self, name: &str) -> NcclResult<Option<u16>> {
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

/// Slurm's tasks on this node: `SLURM_STEP_TASKS_PER_NODE` (else `SLURM_TASKS_PER_NODE`) at
/// `SLURM_NODEID`, else `SLURM_NTASKS_PER_NODE`; and the variable it came from.
pub(super) fn slurm_tasks_here(env: &Env<'_>) -> NcclResult<(Option<usize>, &'static str)> {
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
pub(super) fn parse_tasks_per_node(list: &str) -> Option<Vec<(usize, usize)>> {
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
pub(super) fn rendezvous(env: &Env<'_>, launcher: Launcher, world_size: usize) -> NcclResult<Option<Endpoint>> {
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
pub(super) fn token(env: &Env<'_>, launcher: Launcher) -> String {
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
