//! The servers' processes: started in a process group of their own (a Ctrl-C at the terminal
//! reaches the test, not them; the watchdog then stops them), output appended to a log file,
//! stopped with SIGTERM, then SIGKILL after a bounded wait. A [`ProcessRecord`] finds a
//! process again from another program (a detached environment's state file): by pid *and*
//! executable, so that a recycled pid is never signalled.

use std::fs::{self, File};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::Error;

/// How long a process gets to go after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// A server process of an environment: enough to find it again and stop it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// `etcd`, `kube-apiserver` or `kube-controller-manager`.
    pub name: String,
    /// Its process id.
    pub pid: u32,
    /// Its executable, symbolic links resolved.
    pub exe: PathBuf,
    /// Where its output goes.
    pub log: PathBuf,
}

impl ProcessRecord {
    /// Whether the process runs (not exited, not a zombie) and is still the program started
    /// under that pid.
    pub fn is_alive(&self) -> bool {
        let proc_dir = PathBuf::from(format!("/proc/{}", self.pid));
        let Ok(stat) = fs::read_to_string(proc_dir.join("stat")) else {
            return false;
        };
        // The state follows the parenthesised command name: "pid (comm) S ...".
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next());
        if matches!(state, Some("Z" | "X" | "x")) {
            return false;
        }
        match fs::read_link(proc_dir.join("exe")) {
            // A replaced binary shows as "<path> (deleted)".
            Ok(exe) => exe
                .to_string_lossy()
                .starts_with(&*self.exe.to_string_lossy()),
            Err(_) => false,
        }
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Stops it: SIGTERM, up to `grace` to exit, then SIGKILL. A process already gone is
    /// stopped.
    pub fn stop(&self, grace: Duration) -> Result<(), Error> {
        stop(&self.name, self.pid, grace, || self.is_alive())
    }
}

/// A server this process started (its child).
#[derive(Debug)]
pub(crate) struct Server {
    pub(crate) record: ProcessRecord,
    child: Child,
}

impl Server {
    /// Starts `exe args` with stdout and stderr going to `log`.
    pub(crate) fn spawn(
        name: &str,
        exe: &Path,
        args: &[String],
        log: &Path,
    ) -> Result<Self, Error> {
        let spawn_error = |source| Error::Spawn {
            component: name.to_owned(),
            path: exe.to_path_buf(),
            source,
        };
        let exe = fs::canonicalize(exe).map_err(spawn_error)?;
        let out = File::create(log).map_err(Error::io(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(Error::io(format!("opening {}", log.display())))?;
        let child = Command::new(&exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(spawn_error)?;
        Ok(Server {
            record: ProcessRecord {
                name: name.to_owned(),
                pid: child.id(),
                exe,
                log: log.to_path_buf(),
            },
            child,
        })
    }

    /// Whether it still runs (whatever its program: it is our child, its pid is ours until
    /// we reap it).
    pub(crate) fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops it (as [`ProcessRecord::stop`]) and reaps it.
    pub(crate) fn stop(&mut self, grace: Duration) -> Result<(), Error> {
        let (name, pid) = (self.record.name.clone(), self.record.pid);
        stop(&name, pid, grace, || self.is_alive())
    }

    /// Leaves it running: only the record remains.
    pub(crate) fn detach(self) -> ProcessRecord {
        self.record
    }
}

fn stop(
    name: &str,
    pid: u32,
    grace: Duration,
    mut is_alive: impl FnMut() -> bool,
) -> Result<(), Error> {
    if !is_alive() {
        return Ok(());
    }
    signal(pid, "TERM");
    if wait_exit(grace, &mut is_alive) {
        return Ok(());
    }
    tracing::warn!("{name} (pid {pid}) did not stop within {grace:?} of SIGTERM: SIGKILL");
    signal(pid, "KILL");
    if wait_exit(KILL_WAIT, &mut is_alive) {
        return Ok(());
    }
    Err(Error::StillRunning {
        component: name.to_owned(),
        pid,
    })
}

fn wait_exit(limit: Duration, is_alive: &mut impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if !is_alive() {
            return true;
        }
        thread::sleep(Duration::from_millis(50));
    }
    !is_alive()
}

/// Sends `signal` with kill(1) (no `unsafe`). A failure means the process is gone already.
fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
