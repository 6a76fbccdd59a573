//! The array checks: `items` (each ratcheting against its correlated old item), then
//! `minItems`, `maxItems`, `uniqueItems`.

use serde_json::Value;

use super::ratchet::MapListIndex;
use super::{node, At, Code, OpenApiError, Outcome};

/// `items`, `minItems`, `maxItems`, `uniqueItems`.
pub(super) fn array_checks(at: At<'_>) -> Outcome {
    let At {
        s, data, path, old, ..
    } = at;
    let c = &s.checks;
    let items = data.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out = Outcome::default();
    if let Some(item_schema) = &s.items {
        let correlated = MapListIndex::new(s, old);
        for (i, item) in items.iter().enumerate() {
            let old_item = correlated.as_ref().and_then(|m| m.get(item));
            let path = format!("{path}[{i}]");
            out.merge(node(At::below(item_schema, item, &path, old_item)));
        }
    }
    let size = items.len() as i64;
    if let Some(min) = c.min_items {
        if size < min {
            out.add(OpenApiError {
                code: Code::Other,
                name: path.to_string(),
                value: Some(Value::from(size)),
                message: format!("{path} in body should have at least {min} items"),
            });
        }
    }
    if let Some(max) = c.max_items {
        if size > max {
            out.add(OpenApiError {
                code: Code::TooMany(size, max),
                name: path.to_string(),
                value: Some(Value::from(size)),
                message: format!("{path} in body should have at most {max} items"),
            });
        }
    }
    if c.unique_items {
        let duplicate = items
            .iter()
            .enumerate()
            .any(|(i, a)| items[..i].iter().any(|b| b == a));
        if duplicate {
            out.add(OpenApiError {
                code: Code::Other,
                name: path.to_string(),
                value: None,
                message: format!("{path} in body shouldn't contain duplicates"),
            });
        }
    }
    out.matches += 1;
    out
}
