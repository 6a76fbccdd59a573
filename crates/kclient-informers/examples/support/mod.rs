//! What the memory examples share: reading this process's memory and CPU time from
//! `/proc` (Linux), and serving realistic Pods from `kclient-fake-apiserver` in another
//! process, so that the server's copy is not counted.
#![allow(dead_code)] // each example uses part of it

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kclient_rest::Config;

pub type Error = Box<dyn std::error::Error>;

/// A line of `/proc/self/status` (`VmRSS:`, `VmHWM:`), in bytes.
pub fn status_bytes(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse::<usize>()
                .ok()
        })
        .unwrap_or(0)
        * 1024
}

/// Resets the resident-set high-water mark (`VmHWM`).
pub fn reset_peak() -> std::io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}

/// User plus system CPU time of this process so far (from `/proc/self/stat`, in clock ticks
/// of 10 ms, Linux's `USER_HZ`).
pub fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

pub fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// If this process was started to write a manifest (`--write-manifest PATH COUNT MANAGED`),
/// writes it and returns true: the caller exits.
pub fn write_manifest_if_asked() -> Result<bool, Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("--write-manifest") {
        return Ok(false);
    }
    let path = args.get(1).ok_or("a path")?;
    let count: usize = args.get(2).ok_or("a count")?.parse()?;
    let managed = args.get(3).map(String::as_str) == Some("managed");
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    kclient_fake::samples::write_pod_list(&mut out, count, managed)?;
    out.flush()?;
    Ok(true)
}

/// `kclient-fake-apiserver` serving `count` realistic Pods, killed when dropped.
pub struct Server {
    child: Child,
    pub config: Config,
    pub manifest: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Writes the Pods in a child process (so that its allocations stay out of this one),
    /// starts `binary` on them and waits for its kubeconfig.
    pub async fn start(binary: &str, count: usize, managed_fields: bool) -> Result<Server, Error> {
        let dir = tempfile::tempdir()?;
        let manifest = dir.path().join("pods.json");
        let status = Command::new(std::env::current_exe()?)
            .arg("--write-manifest")
            .arg(&manifest)
            .arg(count.to_string())
            .arg(if managed_fields { "managed" } else { "plain" })
            .status()?;
        if !status.success() {
            return Err("writing the manifest failed".into());
        }
        let kubeconfig = dir.path().join("kubeconfig");
        let child = Command::new(binary)
            .arg("--load")
            .arg(&manifest)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {binary}: {e}"))?;
        let started = Instant::now();
        while !kubeconfig.exists() {
            if started.elapsed() > Duration::from_secs(300) {
                return Err("the fake API server did not start".into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut config = Config::from_kubeconfig_file(&kubeconfig)?;
        config.qps = None;
        Ok(Server {
            child,
            config,
            manifest,
            _dir: dir,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
