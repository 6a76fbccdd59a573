//! The cluster's processes: started in their own process group (so that a Ctrl-C at the
//! terminal does not reach them and they outlive `cargo xtask e2e up`), identified later by
//! pid *and* executable (a recycled pid is never signalled), stopped with SIGTERM, then
//! SIGKILL after a bounded wait.

use std::fs::{self, File};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// A process we started.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Started {
    pub(crate) name: String,
    pub(crate) pid: u32,
    pub(crate) exe: PathBuf,
    pub(crate) log: PathBuf,
}

/// Starts `exe args` with stdout and stderr appended to `log`, detached from our terminal's
/// process group.
pub(crate) fn spawn(name: &str, exe: &Path, args: &[String], log: &Path) -> Result<Started> {
    let out = File::create(log).with_context(|| format!("could not create {}", log.display()))?;
    let err = out.try_clone()?;
    let child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .with_context(|| format!("could not start {}", exe.display()))?;
    Ok(Started {
        name: name.to_string(),
        pid: child.id(),
        exe: exe.to_path_buf(),
        log: log.to_path_buf(),
    })
}

impl Started {
    /// Whether the process is still running (not exited, not a zombie) and is still the
    /// program we started under that pid.
    pub(crate) fn is_alive(&self) -> bool {
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
            // A rebuilt binary shows as "<path> (deleted)".
            Ok(exe) => exe
                .to_string_lossy()
                .starts_with(&*self.exe.to_string_lossy()),
            Err(_) => false,
        }
    }

    /// The last `lines` lines of the log, for error messages.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        let start = all.len().saturating_sub(lines);
        all[start..].join("\n")
    }

    /// Stops the process: SIGTERM, up to `grace` to exit, then SIGKILL (and a short wait).
    pub(crate) fn stop(&self, grace: Duration) -> Result<()> {
        if !self.is_alive() {
            return Ok(());
        }
        signal(self.pid, "TERM")?;
        if self.wait_exit(grace) {
            return Ok(());
        }
        eprintln!(
            "e2e: {} (pid {}) did not stop within {}s of SIGTERM: SIGKILL",
            self.name,
            self.pid,
            grace.as_secs()
        );
        signal(self.pid, "KILL")?;
        if self.wait_exit(Duration::from_secs(10)) {
            return Ok(());
        }
        bail!(
            "{} (pid {}) is still running after SIGKILL",
            self.name,
            self.pid
        )
    }

    fn wait_exit(&self, limit: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < limit {
            if !self.is_alive() {
                return true;
            }
            thread::sleep(Duration::from_millis(100));
        }
        !self.is_alive()
    }
}

fn signal(pid: u32, signal: &str) -> Result<()> {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status()
        .context("could not run kill")?;
    // A failure here means the process is already gone: nothing to do.
    let _ = status;
    Ok(())
}
