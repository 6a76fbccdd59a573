//! Status conditions (`metav1.Condition`), with apimachinery's `meta` helpers' semantics
//! (`SetStatusCondition`, `RemoveStatusCondition`, `FindStatusCondition`,
//! `IsStatusConditionTrue` …): one condition per type, and a condition's
//! `lastTransitionTime` moves only when its status changes.
//!
//! ```
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
//! use kclient_controller::conditions::{
//!     is_status_condition_true, new_condition, set_status_condition,
//! };
//!
//! let mut conditions = Vec::new();
//! let available = |status: &str, reason: &str| Condition {
//!     observed_generation: Some(1),
//!     ..new_condition("Available", status, reason, "")
//! };
//! assert!(set_status_condition(&mut conditions, available("False", "Progressing")));
//! let first_transition = conditions[0].last_transition_time.clone();
//! // The same status again, another reason: changed, but the transition time stays.
//! assert!(set_status_condition(&mut conditions, available("False", "Scaling")));
//! assert_eq!(conditions[0].last_transition_time, first_transition);
//! assert!(!set_status_condition(&mut conditions, available("False", "Scaling")));
//! assert!(set_status_condition(&mut conditions, available("True", "Ready")));
//! assert!(is_status_condition_true(&conditions, "Available"));
//! ```
//!
//! A condition's `lastTransitionTime` left at its default (k8s-openapi's `Time(Timestamp::default())`,
//! the Unix epoch: Go's zero time has no counterpart) counts as unset, and is filled in
//! with the current time.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// `"True"`.
pub const CONDITION_TRUE: &str = "True";
/// `"False"`.
pub const CONDITION_FALSE: &str = "False";
/// `"Unknown"`.
pub const CONDITION_UNKNOWN: &str = "Unknown";

/// A condition of `condition_type` with `status`, `reason` and `message`, no observed
/// generation, and its transition time unset (so that [`set_status_condition`] fills it
/// in). k8s-openapi's `Condition` has no `Default`; this is the Rust spelling of Go's
/// `metav1.Condition{Type: …, Status: …, Reason: …, Message: …}`.
pub fn new_condition(condition_type: &str, status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: condition_type.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        observed_generation: None,
        last_transition_time: Time(Timestamp::default()),
    }
}

/// Sets `new` in `conditions` (apimachinery's `meta.SetStatusCondition`): added if its type
/// is not there (with the current time as its transition time, unless it carries one),
/// otherwise the existing condition takes its status — and the transition time, only if the
/// status changed — its reason, message and observed generation. Whether anything changed
/// (so that a status write can be skipped when nothing did).
pub fn set_status_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    set_status_condition_at(conditions, new, Time(Timestamp::now()))
}

/// [`set_status_condition`] with `now` as the current time (for tests, and for one time
/// across several conditions).
pub fn set_status_condition_at(conditions: &mut Vec<Condition>, new: Condition, now: Time) -> bool {
    let unset = |t: &Time| t.0 == Timestamp::default();
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == new.type_) else {
        let mut new = new;
        if unset(&new.last_transition_time) {
            new.last_transition_time = now;
        }
        conditions.push(new);
        return true;
    };
    let mut changed = false;
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time = if unset(&new.last_transition_time) {
            now
        } else {
            new.last_transition_time
        };
        changed = true;
    }
    if existing.reason != new.reason {
        existing.reason = new.reason;
        changed = true;
    }
    if existing.message != new.message {
        existing.message = new.message;
        changed = true;
    }
    if existing.observed_generation != new.observed_generation {
        existing.observed_generation = new.observed_generation;
        changed = true;
    }
    changed
}

/// Removes the condition of `condition_type` (apimachinery's `meta.RemoveStatusCondition`);
/// whether there was one.
pub fn remove_status_condition(conditions: &mut Vec<Condition>, condition_type: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != condition_type);
    conditions.len() != before
}

/// The condition of `condition_type`, if any (apimachinery's `meta.FindStatusCondition`).
pub fn find_status_condition<'a>(
    conditions: &'a [Condition],
    condition_type: &str,
) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == condition_type)
}

/// Whether the condition of `condition_type` is there with `status`
/// (apimachinery's `meta.IsStatusConditionPresentAndEqual`).
pub fn is_status_condition_present_and_equal(
    conditions: &[Condition],
    condition_type: &str,
    status: &str,
) -> bool {
    find_status_condition(conditions, condition_type).is_some_and(|c| c.status == status)
}

/// Whether the condition of `condition_type` is `True` (apimachinery's
/// `meta.IsStatusConditionTrue`).
pub fn is_status_condition_true(conditions: &[Condition], condition_type: &str) -> bool {
    is_status_condition_present_and_equal(conditions, condition_type, CONDITION_TRUE)
}

/// Whether the condition of `condition_type` is `False` (apimachinery's
/// `meta.IsStatusConditionFalse`).
pub fn is_status_condition_false(conditions: &[Condition], condition_type: &str) -> bool {
    is_status_condition_present_and_equal(conditions, condition_type, CONDITION_FALSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).unwrap())
    }

    fn condition(type_: &str, status: &str, reason: &str, time: Time) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: "m".into(),
            observed_generation: Some(3),
            last_transition_time: time,
        }
    }

    /// apimachinery's `TestSetStatusCondition` cases.
    #[test]
    fn set_follows_apimachinery() {
        let old = at(100);
        let mut conditions = vec![condition("first", "True", "reason", old.clone())];

        // A new type is added with the given time.
        assert!(set_status_condition_at(
            &mut conditions,
            condition("second", "True", "r", at(5)),
            at(200)
        ));
        assert_eq!(conditions[1].last_transition_time, at(5));
        // A new type without a time gets now.
        assert!(set_status_condition_at(
            &mut conditions,
            condition("third", "True", "r", Time(Timestamp::default())),
            at(200)
        ));
        assert_eq!(conditions[2].last_transition_time, at(200));

        // The same status: the time stays even when another time is given.
        assert!(set_status_condition_at(
            &mut conditions,
            condition("first", "True", "other", at(300)),
            at(400)
        ));
        assert_eq!(
            (
                conditions[0].reason.as_str(),
                &conditions[0].last_transition_time
            ),
            ("other", &old)
        );

        // A status change: the given time, or now.
        assert!(set_status_condition_at(
            &mut conditions,
            condition("first", "False", "other", at(300)),
            at(400)
        ));
        assert_eq!(conditions[0].last_transition_time, at(300));
        assert!(set_status_condition_at(
            &mut conditions,
            condition("first", "True", "other", Time(Timestamp::default())),
            at(400)
        ));
        assert_eq!(conditions[0].last_transition_time, at(400));

        // Nothing new: unchanged.
        assert!(!set_status_condition_at(
            &mut conditions,
            condition("first", "True", "other", Time(Timestamp::default())),
            at(500)
        ));
        let mut generation = condition("first", "True", "other", Time(Timestamp::default()));
        generation.observed_generation = Some(4);
        assert!(set_status_condition_at(
            &mut conditions,
            generation,
            at(500)
        ));
    }

    #[test]
    fn remove_find_and_the_predicates() {
        let mut conditions = vec![
            condition("Ready", "True", "r", at(1)),
            condition("Degraded", "False", "r", at(1)),
        ];
        assert!(is_status_condition_true(&conditions, "Ready"));
        assert!(is_status_condition_false(&conditions, "Degraded"));
        assert!(!is_status_condition_true(&conditions, "Missing"));
        assert!(!is_status_condition_false(&conditions, "Missing"));
        assert!(find_status_condition(&conditions, "Ready").is_some());
        assert!(remove_status_condition(&mut conditions, "Ready"));
        assert!(!remove_status_condition(&mut conditions, "Ready"));
        assert_eq!(conditions.len(), 1);
    }
}
