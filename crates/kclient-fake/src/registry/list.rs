//! List: a page of the objects that match, with kube-apiserver's resourceVersion and
//! continue-token semantics.

use std::collections::HashMap;
use std::sync::Arc;

use kclient_core::ApiError;

use crate::catalogue::ResourceInfo;
use crate::meta::meta_str;
use crate::query::{parse_rv, ListParams, RvMatch};
use crate::selectors::Predicate;
use crate::store::{Compacted, StoreState, StoredObject};

use super::{
    decode_continue, encode_continue, ExpiredContinue, ListError, ListPage, Registry,
    INCONSISTENT_CONTINUE,
};

impl Registry {
    /// Lists objects (a page of them with `limit`), with the resourceVersion semantics of
    /// kube-apiserver. The caller waits for `NotOlderThan` versions first.
    pub fn list(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        params: &ListParams,
        predicate: &Predicate,
    ) -> Result<ListPage, ListError> {
        let gr = info.group_resource();
        let state = self.store.read();
        let current = state.current_rv();
        let (snapshot, after) = if !params.continue_token.is_empty() {
            continued_snapshot(&state, params)?
        } else {
            (requested_snapshot(&state, params)?, None)
        };
        let overrides = if snapshot < current {
            state
                .snapshot_overrides(&gr, snapshot)
                .map_err(|Compacted { .. }| {
                    ApiError::resource_expired(
                        "The resourceVersion for the provided list is too old.",
                    )
                })?
        } else {
            HashMap::new()
        };
        let prefix = namespace.map(|ns| format!("{ns}/"));
        let in_scope = |k: &str| {
            prefix.as_ref().is_none_or(|p| k.starts_with(p.as_str()))
                && after.as_deref().is_none_or(|a| k > a)
        };
        // Objects that existed at the snapshot but are gone now.
        let mut resurrected: Vec<(&String, &Arc<StoredObject>)> = overrides
            .iter()
            .filter(|(k, _)| state.get(&gr, k).is_none() && in_scope(k))
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
            .collect();
        resurrected.sort_by(|a, b| a.0.cmp(b.0));
        let live =
            state
                .range(&gr, namespace, after.as_deref())
                .filter_map(|(k, v)| match overrides.get(k) {
                    Some(None) => None,
                    Some(Some(prev)) => Some((k, prev)),
                    None => Some((k, v)),
                });
        let at_snapshot = merge_by_key(live, resurrected.into_iter());
        Ok(page(at_snapshot, snapshot, params, predicate))
    }
}

/// The snapshot and the key to start after, as a continue token says (which must not come
/// with a resourceVersion, nor point before the compaction).
fn continued_snapshot(
    state: &StoreState,
    params: &ListParams,
) -> Result<(u64, Option<String>), ListError> {
    if !params.resource_version.is_empty() && params.resource_version != "0" {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        )
        .into());
    }
    let (rv, start) = decode_continue(&params.continue_token)?;
    let rv = if rv < 0 {
        state.current_rv()
    } else {
        rv as u64
    };
    if rv < state.compacted_rv() {
        let mut error = ApiError::resource_expired(INCONSISTENT_CONTINUE);
        error.status.details = None;
        return Err(ListError::ExpiredContinue(ExpiredContinue {
            error,
            continue_token: encode_continue(-1, &start),
        }));
    }
    Ok((rv, Some(start)))
}

/// The snapshot a first page is read at: the requested resourceVersion when the match is
/// exact (explicitly, or a paged list at a version), the current one otherwise.
fn requested_snapshot(state: &StoreState, params: &ListParams) -> Result<u64, ListError> {
    let current = state.current_rv();
    let requested = parse_rv(&params.resource_version)?;
    let exact = match params.rv_match {
        RvMatch::Exact => true,
        RvMatch::Unset => params.limit > 0 && requested.is_some_and(|r| r > 0),
        RvMatch::NotOlderThan => false,
    };
    match requested {
        Some(rv) if rv > current => {
            Err(ApiError::too_large_resource_version(rv, current, 1).into())
        }
        Some(rv) if exact && rv > 0 => {
            if rv < state.compacted_rv() {
                return Err(ApiError::resource_expired(
                    "The resourceVersion for the provided list is too old.",
                )
                .into());
            }
            Ok(rv)
        }
        _ => Ok(current),
    }
}

/// Two iterators of keyed objects, each in key order, merged in key order (`a` first on
/// equal keys).
fn merge_by_key<'a>(
    a: impl Iterator<Item = (&'a String, &'a Arc<StoredObject>)>,
    b: impl Iterator<Item = (&'a String, &'a Arc<StoredObject>)>,
) -> impl Iterator<Item = (&'a String, &'a Arc<StoredObject>)> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (None, None) => None,
        (Some(_), None) => a.next(),
        (None, Some(_)) => b.next(),
        (Some(x), Some(y)) => {
            if x.0 <= y.0 {
                a.next()
            } else {
                b.next()
            }
        }
    })
}

/// The page of the objects (in key order, at resourceVersion `snapshot`) that match: up to
/// `limit`, with a continue token when more match, and how many more (counted only without
/// selectors, as kube-apiserver does).
fn page<'a>(
    objects: impl Iterator<Item = (&'a String, &'a Arc<StoredObject>)>,
    snapshot: u64,
    params: &ListParams,
    predicate: &Predicate,
) -> ListPage {
    let limit = if params.limit > 0 {
        params.limit as usize
    } else {
        usize::MAX
    };
    let exact_name = predicate.exact_name().map(str::to_string);
    let mut items = Vec::new();
    let mut last_key: Option<String> = None;
    let mut more = false;
    let mut remaining: i64 = 0;
    for (key, obj) in objects {
        if let Some(n) = &exact_name {
            if meta_str(&obj.value, "name") != n {
                continue;
            }
        }
        if !predicate.matches(&obj.value) {
            continue;
        }
        if items.len() >= limit {
            more = true;
            remaining += 1;
            if !predicate.is_everything() {
                break;
            }
            continue;
        }
        last_key = Some(key.clone());
        items.push(obj.clone());
    }
    let continue_token = if more {
        last_key
            .as_deref()
            .map(|k| encode_continue(snapshot as i64, k))
    } else {
        None
    };
    let remaining = (more && predicate.is_everything()).then_some(remaining);
    ListPage {
        items,
        rv: snapshot,
        continue_token,
        remaining,
    }
}
