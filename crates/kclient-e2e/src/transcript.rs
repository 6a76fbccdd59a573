//! What a scenario observed, in a form two targets can be compared by.

use std::fmt;

use serde_json::Value;

/// The observable outcome of a scenario: one `(step, observation)` per step. Observations hold
/// status codes, reasons, event types and object names, never uids, resourceVersions or
/// timestamps, so that the transcripts of a real and a fake server can be compared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    steps: Vec<(String, Value)>,
}

impl Transcript {
    /// An empty transcript.
    pub fn new() -> Transcript {
        Transcript::default()
    }

    /// Records one step.
    pub fn record(&mut self, step: impl Into<String>, observation: impl Into<Value>) {
        self.steps.push((step.into(), observation.into()));
    }

    /// The recorded steps.
    pub fn steps(&self) -> &[(String, Value)] {
        &self.steps
    }

    /// The first step where `self` and `other` differ, described, or `None` when they agree.
    pub fn first_difference(&self, other: &Transcript) -> Option<String> {
        let longest = self.steps.len().max(other.steps.len());
        (0..longest).find_map(|i| match (self.steps.get(i), other.steps.get(i)) {
            (Some(a), Some(b)) if a == b => None,
            (a, b) => Some(format!("step {i}: {a:?} versus {b:?}")),
        })
    }
}

impl fmt::Display for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (step, observation) in &self.steps {
            writeln!(f, "{step}: {observation}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_difference() {
        let mut a = Transcript::new();
        a.record("create", 201);
        a.record("get", 200);
        let mut b = a.clone();
        assert_eq!(a.first_difference(&b), None);
        b.record("delete", 200);
        assert!(a.first_difference(&b).unwrap().starts_with("step 2"));
    }
}
