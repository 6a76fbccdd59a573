//! Ratcheting: which old value a node correlates with, and whether it is unchanged.

use serde_json::Value;

use crate::schema::structural::Schema;

/// The old items of an `x-kubernetes-list-type: map` list, found by key (the only lists
/// whose items ratchet individually).
pub(super) struct MapListIndex<'a> {
    keys: &'a [String],
    old: &'a [Value],
}

impl<'a> MapListIndex<'a> {
    pub(super) fn new(s: &'a Schema, old: Option<&'a Value>) -> Option<Self> {
        let old = old?.as_array()?;
        if s.list_type.as_deref() != Some("map") || s.list_map_keys.is_empty() || old.is_empty() {
            return None;
        }
        Some(Self {
            keys: &s.list_map_keys,
            old,
        })
    }

    /// The composite key of an item, when every key field is a scalar.
    fn key_of(&self, item: &Value) -> Option<Vec<Value>> {
        let m = item.as_object()?;
        self.keys
            .iter()
            .map(|k| match m.get(k)? {
                v @ (Value::Bool(_) | Value::Number(_) | Value::String(_)) => Some(v.clone()),
                _ => None,
            })
            .collect()
    }

    pub(super) fn get(&self, item: &Value) -> Option<&'a Value> {
        let key = self.key_of(item)?;
        self.old
            .iter()
            .find(|o| self.key_of(o).as_ref() == Some(&key))
    }
}

/// Whether a node is unchanged for ratcheting (apiserver's `CorrelatedObject.CachedDeepEqual`):
/// map-list items compare by key, object fields only where the schema describes them.
pub(super) fn ratchet_equal(s: &Schema, new: &Value, old: &Value) -> bool {
    match (new, old) {
        (Value::Null, Value::Null) => true,
        (Value::Array(n), Value::Array(o)) => {
            if n.len() != o.len() {
                return false;
            }
            match (MapListIndex::new(s, Some(old)), &s.items) {
                (Some(index), Some(items)) => n.iter().all(|item| {
                    index
                        .get(item)
                        .is_some_and(|old_item| ratchet_equal(items, item, old_item))
                }),
                _ => n == o,
            }
        }
        (Value::Object(n), Value::Object(o)) => {
            n.len() == o.len()
                && n.iter().all(|(k, v)| match (o.get(k), s.field(k)) {
                    (Some(ov), Some(fs)) => ratchet_equal(fs, v, ov),
                    _ => false,
                })
        }
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        (a, b) => a == b,
    }
}
