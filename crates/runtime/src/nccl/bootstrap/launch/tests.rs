use super::env::parse_tasks_per_node;
use super::*;
use crate::nccl::NcclError;
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
    let m = err(&with_master(&[("RANK", "1"), ("WORLD_SIZE", "4"), ("LOCAL_RANK", "2"), ("LOCAL_WORLD_SIZE", "2")]));
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
    let l =
        parse(&with(&[("MASTER_ADDR", "h"), ("MASTER_PORT", "1"), (BIND_VAR, "[::]"), (JOB_VAR, "run-9")])).unwrap();
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
