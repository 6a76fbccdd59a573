//! The test command's short soak: `kclient-bench soak` with 300 parents for 12 s and a fault
//! every 2 s, its server in a child process as in the long runs; everything converges once
//! the churn stops, and no descriptors are left open by the faults.

use std::process::Command;

#[test]
fn a_short_soak_converges_and_leaks_no_descriptors() {
    let output = Command::new(env!("CARGO_BIN_EXE_kclient-bench"))
        .args(["soak", "--objects", "300", "--seconds", "12"])
        .args(["--sample", "1", "--fault-every", "2"])
        .output()
        .expect("kclient-bench runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}: {stderr}", output.status);
    let result: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("the result is one JSON object");
    assert_eq!(result["unconverged_at_end"], 0, "{result}");
    // The churn deleted parents and made each one again.
    assert_eq!(result["parents_at_end"], 300, "{result}");
    assert!(result["faults"].as_u64().unwrap() >= 4, "{result}");
    assert!(result["reconciles"].as_u64().unwrap() > 300, "{result}");
    assert!(result["writes"].as_u64().unwrap() > 100, "{result}");
    // Reconnections after dropped watches and storms must not pile up descriptors.
    assert!(result["fds"]["growth"].as_u64().unwrap() <= 16, "{result}");
    // The server process reported its own figures in every sample after its first report.
    let samples = result["samples"].as_array().unwrap();
    assert!(
        samples.last().unwrap()["server"]["rss_mib"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{result}"
    );
}
