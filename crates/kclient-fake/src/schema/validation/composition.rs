//! `anyOf`, `oneOf`, `allOf` and `not` (kube-openapi's `schemaPropsValidator`).

use kclient_core::go_format;

use super::{checks, plain, At, Outcome};
use crate::schema::structural::Schema;

/// `anyOf`, `oneOf`, `allOf` and `not` of one node.
///
/// The alternatives are checked at the same node, with the same correlation to the old
/// value (their own errors are not ratcheted separately: the node's are).
pub(super) fn composition(at: At<'_>) -> Outcome {
    let c = &at.s.checks;
    let check = |sub: &Schema| checks(At { s: sub, ..at });
    let quoted = go_format::quote(at.path);
    let mut main = Outcome::default();
    if !c.any_of.is_empty() {
        any_of(c.any_of.iter().map(check), &quoted, &mut main);
    }
    if !c.one_of.is_empty() {
        one_of(c.one_of.iter().map(check), &quoted, &mut main);
    }
    if !c.all_of.is_empty() {
        all_of(c.all_of.iter().map(check), &quoted, &mut main);
    }
    if let Some(not) = &c.not {
        if check(not).is_valid() {
            main.add(plain(format!(
                "{quoted} must not validate the schema (not)"
            )));
        }
    }
    main
}

/// `anyOf`, from the outcomes of its alternatives (taken until one succeeds): on failure,
/// the errors of the alternative that matched most.
fn any_of(results: impl Iterator<Item = Outcome>, quoted: &str, main: &mut Outcome) {
    let mut best: Option<Outcome> = None;
    let mut first_success: Option<Outcome> = None;
    let mut succeeded = false;
    for r in results {
        if r.is_valid() {
            best = None;
            succeeded = true;
            first_success.get_or_insert(r);
            break;
        }
        if best.as_ref().is_none_or(|b| r.matches > b.matches) {
            best = Some(r);
        }
    }
    if !succeeded {
        main.add(plain(format!(
            "{quoted} must validate at least one schema (anyOf)"
        )));
    }
    if let Some(b) = best {
        main.merge(b);
    } else if let Some(f) = first_success {
        main.merge(f);
    }
}

/// `oneOf`, from the outcomes of its alternatives: exactly one must succeed.
fn one_of(results: impl Iterator<Item = Outcome>, quoted: &str, main: &mut Outcome) {
    let mut best: Option<Outcome> = None;
    let mut first_success: Option<Outcome> = None;
    let mut validated = 0;
    for r in results {
        if r.is_valid() {
            validated += 1;
            best = None;
            if first_success.is_none() {
                first_success = Some(r);
            }
            continue;
        }
        if validated == 0 && best.as_ref().is_none_or(|b| r.matches > b.matches) {
            best = Some(r);
        }
    }
    if validated != 1 {
        let detail = if validated == 0 {
            "Found none valid".to_string()
        } else {
            format!("Found {validated} valid alternatives")
        };
        main.add(plain(format!(
            "{quoted} must validate one and only one schema (oneOf). {detail}"
        )));
        if let Some(b) = best {
            main.merge(b);
        }
    } else if let Some(f) = first_success {
        main.merge(f);
    }
}

/// `allOf`, from the outcomes of its alternatives: every one must succeed, and every one's
/// errors are reported.
fn all_of(results: impl ExactSizeIterator<Item = Outcome>, quoted: &str, main: &mut Outcome) {
    let total = results.len();
    let mut validated = 0;
    for r in results {
        if r.is_valid() {
            validated += 1;
        }
        main.merge(r);
    }
    if validated != total {
        let detail = if validated == 0 {
            ". None validated"
        } else {
            ""
        };
        main.add(plain(format!(
            "{quoted} must validate all the schemas (allOf){detail}"
        )));
    }
}
