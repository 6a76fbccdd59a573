//! This process's memory and CPU time, from `/proc/self` (Linux).

use std::time::Duration;

/// A line of `/proc/self/status` (`VmRSS:`, `VmHWM:`), in bytes (0 if unreadable).
pub(crate) fn status_bytes(field: &str) -> u64 {
    status_number(field, "kB") * 1024
}

/// The process's threads now (`Threads:` of `/proc/self/status`; 0 if unreadable).
pub(crate) fn threads() -> u64 {
    status_number("Threads:", "")
}

/// The number on the line `field` of `/proc/self/status`, before its `unit` (0 if unreadable).
fn status_number(field: &str, unit: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .trim()
                .strip_suffix(unit)?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0)
}

/// The heap's live bytes, counted by the global allocator (with the `heap-count` feature;
/// `None` without it).
#[cfg(feature = "heap-count")]
pub(crate) fn heap_bytes() -> Option<u64> {
    Some(crate::ALLOCATOR.allocated() as u64)
}

/// The heap's live bytes (`None`: built without the `heap-count` feature).
#[cfg(not(feature = "heap-count"))]
pub(crate) fn heap_bytes() -> Option<u64> {
    None
}

/// Resets the resident-set high-water mark (`VmHWM`); best effort.
pub(crate) fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// User plus system CPU time of this process so far (`/proc/self/stat`, 10 ms ticks).
pub(crate) fn cpu_time() -> Duration {
    cpu_time_of("/proc/self/stat")
}

/// User plus system CPU time of the process whose `stat` file is `path` (10 ms ticks).
pub(crate) fn cpu_time_of(path: &str) -> Duration {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // The fields after the command name (in parentheses, which may hold spaces).
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
    // utime and stime are fields 14 and 15 of the line: 11 and 12 after the name.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// The median of some durations in seconds (the upper one of an even count).
pub(crate) fn median(times: &[f64]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}
