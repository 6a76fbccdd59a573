//! What a [`wait_until`](crate::FakeApiServer::wait_until) condition read, for the error that
//! says why it timed out.
//!
//! While the condition runs (synchronously, on the waiting thread), the handle's reads
//! (`get`, `get_value`, `list`, `actions`, ...) note what they found here; the notes of the
//! last check are the state a [`WaitTimeout`](crate::Error::WaitTimeout) shows. Reads on other
//! threads, and reads outside a check, are not noted.

use std::cell::RefCell;

use serde_json::Value;

thread_local! {
    static NOTES: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Runs `check` and returns its result with what it read, one line per distinct read.
pub(crate) fn noting_reads<T>(check: impl FnOnce() -> T) -> (T, Vec<String>) {
    let outer = NOTES.with(|n| n.replace(Some(Vec::new())));
    let result = check();
    let notes = NOTES.with(|n| n.replace(outer)).unwrap_or_default();
    (result, notes)
}

/// Notes a read, when a check is running on this thread (`describe` is called only then).
pub(crate) fn note(describe: impl FnOnce() -> String) {
    NOTES.with(|n| {
        if let Some(notes) = n.borrow_mut().as_mut() {
            let line = describe();
            if !notes.contains(&line) {
                notes.push(line);
            }
        }
    });
}

/// An object as a note shows it: its JSON without `metadata.managedFields`.
pub(crate) fn object(value: &Value) -> String {
    let mut shown = value.clone();
    if let Some(meta) = shown.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    shown.to_string()
}

/// The notes of a check as one text, for the error.
pub(crate) fn describe(notes: &[String]) -> String {
    if notes.is_empty() {
        "it read nothing from the server".into()
    } else {
        format!("it last read: {}", notes.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn notes_only_what_a_check_reads_once_each() {
        note(|| unreachable!("not noted outside a check"));
        let ((), notes) = noting_reads(|| {
            note(|| "a".into());
            note(|| "b".into());
            note(|| "a".into());
        });
        assert_eq!(notes, ["a", "b"]);
        assert_eq!(describe(&notes), "it last read: a; b");
        assert_eq!(describe(&[]), "it read nothing from the server");
        let ((), after) = noting_reads(|| {});
        assert!(after.is_empty());
    }

    #[test]
    fn objects_are_shown_without_managed_fields() {
        let shown = object(&json!({"metadata": {"name": "a", "managedFields": [{}]}}));
        assert_eq!(shown, r#"{"metadata":{"name":"a"}}"#);
    }
}
