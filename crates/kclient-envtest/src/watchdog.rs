//! The watchdog: a tiny `sh` process that stops an environment's servers when the test
//! process is gone without stopping them — killed (SIGKILL, `abort`), or ended while the
//! environment was still alive (a `static`'s destructor never runs).
//!
//! Its standard input is a pipe whose only writer is this process (Rust opens pipes
//! close-on-exec: no other child inherits it). It reads a line `pid N` for each server
//! started, `forget N` for one stopped, and `disarm` when the environment stops its servers itself or detaches them. The
//! end of its input without `disarm` means that this process is gone — the kernel closes a
//! process's pipes however it ends — and then it stops the servers one by one, the newest
//! first (as [`Environment::stop`](crate::Environment::stop) does: a kube-apiserver whose etcd
//! is gone takes its whole grace period to go), each with SIGTERM and SIGKILL after the grace
//! period, and removes the environment's temporary directory.
//! It runs in a process group of its own, so a Ctrl-C at the terminal does not end it first.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::Error;

/// `$1`: tenths of a second between SIGTERM and SIGKILL; `$2`: a directory to remove at the
/// end, or empty.
const SCRIPT: &str = r#"
trap '' INT HUP
pids=
while read -r word pid; do
    case $word in
        pid) pids="$pid $pids" ;;
        forget)
            kept=
            for p in $pids; do [ "$p" = "$pid" ] || kept="$kept $p"; done
            pids=$kept
            ;;
        disarm) exit 0 ;;
    esac
done
alive() {
    if [ -d /proc/self ]; then
        # A zombie has exited (and nobody may reap it, its parent being gone).
        s=
        [ -r "/proc/$1/stat" ] && read -r s < "/proc/$1/stat"
        case $s in '' | *') Z '* | *') X '*) return 1 ;; esac
        return 0
    fi
    kill -0 "$1" 2>/dev/null
}
for p in $pids; do
    kill -TERM "$p" 2>/dev/null
    tenths=0
    while [ "$tenths" -lt "$1" ] && alive "$p"; do
        sleep 0.1
        tenths=$((tenths + 1))
    done
    kill -KILL "$p" 2>/dev/null
done
[ -n "$2" ] && rm -rf "$2"
exit 0
"#;

/// A running watchdog.
#[derive(Debug)]
pub(crate) struct Watchdog {
    child: Child,
    input: ChildStdin,
}

impl Watchdog {
    /// Starts one that gives the servers `grace` after SIGTERM and then removes `remove`.
    pub(crate) fn start(grace: Duration, remove: Option<&Path>) -> Result<Self, Error> {
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(SCRIPT)
            .arg("kclient-envtest-watchdog")
            .arg((grace.as_millis() / 100).max(1).to_string())
            .arg(remove.map(Path::as_os_str).unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .current_dir("/")
            .process_group(0)
            .spawn()
            .map_err(|source| Error::Spawn {
                component: "the watchdog".to_owned(),
                path: "/bin/sh".into(),
                source,
            })?;
        let input = child.stdin.take().ok_or_else(|| Error::Spawn {
            component: "the watchdog".to_owned(),
            path: "/bin/sh".into(),
            source: std::io::Error::other("no standard input"),
        })?;
        Ok(Watchdog { child, input })
    }

    /// Has it stop `pid` too.
    pub(crate) fn watch(&mut self, pid: u32) -> Result<(), Error> {
        writeln!(self.input, "pid {pid}").map_err(Error::io("telling the watchdog a pid"))
    }

    /// Has it no longer stop `pid` (stopped already: the pid may be another process's soon).
    pub(crate) fn forget(&mut self, pid: u32) -> Result<(), Error> {
        writeln!(self.input, "forget {pid}").map_err(Error::io("telling the watchdog a pid"))
    }

    /// Ends it without stopping anything (the servers were stopped, or are detached).
    pub(crate) fn disarm(mut self) {
        let _ = writeln!(self.input, "disarm");
        drop(self.input);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
        let started = Instant::now();
        while !done() {
            assert!(started.elapsed() < limit, "{what} within {limit:?}");
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn the_end_of_its_input_stops_the_servers_and_removes_the_directory() {
        let dir = tempfile::tempdir().unwrap().keep();
        let mut server = Command::new("sleep").arg("600").spawn().unwrap();
        let mut watchdog = Watchdog::start(Duration::from_secs(5), Some(&dir)).unwrap();
        watchdog.watch(server.id()).unwrap();
        // What the kernel does when this process dies: the pipe closes.
        drop(watchdog.input);
        wait_for("the server stopped", Duration::from_secs(10), || {
            matches!(server.try_wait(), Ok(Some(_)))
        });
        wait_for("the directory removed", Duration::from_secs(10), || {
            !dir.exists()
        });
        wait_for("the watchdog gone", Duration::from_secs(10), || {
            matches!(watchdog.child.try_wait(), Ok(Some(_)))
        });
    }

    #[test]
    fn a_forgotten_pid_is_not_stopped() {
        let mut kept = Command::new("sleep").arg("600").spawn().unwrap();
        let mut forgotten = Command::new("sleep").arg("600").spawn().unwrap();
        let mut watchdog = Watchdog::start(Duration::from_millis(100), None).unwrap();
        watchdog.watch(forgotten.id()).unwrap();
        watchdog.watch(kept.id()).unwrap();
        watchdog.forget(forgotten.id()).unwrap();
        drop(watchdog.input);
        wait_for("the watchdog gone", Duration::from_secs(10), || {
            matches!(watchdog.child.try_wait(), Ok(Some(_)))
        });
        assert!(
            matches!(kept.try_wait(), Ok(Some(_))),
            "the watched one stopped"
        );
        assert!(
            matches!(forgotten.try_wait(), Ok(None)),
            "the forgotten one runs"
        );
        forgotten.kill().unwrap();
        forgotten.wait().unwrap();
    }

    #[test]
    fn disarmed_it_stops_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut server = Command::new("sleep").arg("600").spawn().unwrap();
        let mut watchdog = Watchdog::start(Duration::from_secs(5), Some(dir.path())).unwrap();
        watchdog.watch(server.id()).unwrap();
        watchdog.disarm();
        thread::sleep(Duration::from_millis(300));
        assert!(matches!(server.try_wait(), Ok(None)));
        assert!(dir.path().exists());
        server.kill().unwrap();
        server.wait().unwrap();
    }
}
