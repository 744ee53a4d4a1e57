//! The AMUDP master form (`./prog N [letter] args`): a program started by
//! no launcher becomes its job's master, starts the workers with the
//! spawner AMUDP's rules choose, and exits with the job's code.

use super::spawn::{self, Spawner};
use super::{run_job, JobSpec, DEFAULT_DEPTH};

/// The AMUDP master form: `prog N [L|S|C] args` — takes N (when `nproc`
/// is 0) and the spawner letter out of `args`, runs the job, exits with its
/// code. `func`: the program's own spawn function (then no letter is read).
pub fn run_master_form(
    args: &mut Vec<String>,
    nproc: usize,
    depth: u32,
    letter: Option<char>,
    func: Option<Spawner>,
) -> ! {
    // read afresh: the program may have set variables since the library
    // first looked (GASNet sets GASNET_SPAWNFN and GASNET_MASTERIP after
    // asking AMUDP_SPMDIsWorker)
    let cfg = match crate::config::Config::from_env() {
        Ok(c) => c.spmd,
        Err(errs) => {
            eprintln!("ramp: bad configuration:");
            for e in errs {
                eprintln!("  {e}");
            }
            std::process::exit(1);
        }
    };
    let prog = std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| args.first().cloned().unwrap_or_default());
    let mut n = nproc;
    if n == 0 {
        let parsed = args
            .get(1)
            .and_then(|a| a.parse::<usize>().ok())
            .filter(|&v| v >= 1);
        match parsed {
            Some(v) => {
                n = v;
                args.remove(1);
            }
            None => {
                eprintln!(
                    "usage: {} <numprocs> [L|S|C] <program args...>\n  (or start it with ramp-run -n N, mpiexec -n N, or srun --mpi=pmi2)",
                    args.first().map_or("prog", |s| s.as_str())
                );
                std::process::exit(1);
            }
        }
    }
    let mut letter = letter;
    if letter.is_none() && func.is_none() {
        if let Some(a) = args.get(1) {
            if a.len() == 1 && a.chars().next().is_some_and(|c| "LSClsc".contains(c)) {
                letter = a.chars().next();
                args.remove(1);
            }
        }
    }
    let letter = letter.or(cfg.spawnfn).unwrap_or('L').to_ascii_uppercase();
    let spawner = match (func, letter) {
        (Some(f), _) => Ok(f),
        (None, 'L') => Ok(Spawner::Local),
        (None, 'C') => spawn::custom(&cfg.spawn),
        (None, 'S') => spawn::ssh(&cfg.spawn),
        (None, other) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "spawner '{other}' is not one of L (fork/exec here), S (ssh), C (custom command)"
            ),
        )),
    };
    let spawner = match spawner {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ramp: {e}");
            std::process::exit(1);
        }
    };
    let mut spec = JobSpec::new(n, prog, args[1..].to_vec());
    spec.spawner = spawner;
    spec.depth = if depth > 0 {
        depth
    } else {
        cfg.network_depth.unwrap_or(DEFAULT_DEPTH)
    };
    spec.label_output = cfg.label_output;
    spec.route_output = cfg.route_output;
    spec.master_ip = cfg.master_ip;
    // AMUDP's master exits with -1 (255) when it loses a worker
    spec.lost_rank_code = Some(255);
    if cfg.verbose_env {
        eprintln!(
            "ramp: master: starting {n} worker(s) with spawner {:?} ('{letter}'): {} {}; they reach the master at {}",
            spec.spawner,
            spec.program,
            spec.args.join(" "),
            spec.master_ip.map_or("127.0.0.1".into(), |a| a.to_string())
        );
    }
    std::process::exit(run_job(&spec))
}
