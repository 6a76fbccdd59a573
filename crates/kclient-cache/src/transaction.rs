//! Store transactions (client-go's `TransactionStore.Transaction`): several adds, updates
//! and deletes applied to an [`Indexer`] as one step, with an error per write that failed.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_cache::{new_store, KeyFunc, Transaction};
//!
//! let store = new_store(KeyFunc::meta_namespace());
//! let named = |name: &str| {
//!     let mut cm = ConfigMap::default();
//!     cm.metadata.name = Some(name.into());
//!     Arc::new(cm)
//! };
//! store.add(named("old")).unwrap();
//! store
//!     .transaction([
//!         Transaction::Add(named("a")),
//!         Transaction::Update(named("b")),
//!         Transaction::Delete(named("old").into()),
//!     ])
//!     .unwrap();
//! let mut keys = store.list_keys();
//! keys.sort();
//! assert_eq!(keys, ["a", "b"]);
//! ```

use std::fmt;
use std::sync::Arc;

use kclient_core::DeletedObject;

use crate::indexer::Indexer;
use crate::store::StoreError;

/// One write of a transaction (client-go's `Transaction` with its `TransactionType`).
pub enum Transaction<K> {
    /// Store the object (client-go's `TransactionTypeAdd`).
    Add(Arc<K>),
    /// Store the object (client-go's `TransactionTypeUpdate`; the same as an add).
    Update(Arc<K>),
    /// Remove the object's key: an object or a tombstone (client-go's `TransactionTypeDelete`).
    Delete(DeletedObject<K>),
}

impl<K> fmt::Debug for Transaction<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Add(_) => "Add",
            Self::Update(_) => "Update",
            Self::Delete(_) => "Delete",
        })
    }
}

/// The writes of a transaction that failed (client-go's `TransactionError`): the others were
/// applied.
#[derive(Debug)]
pub struct TransactionError {
    /// The positions of the writes that were applied, in order.
    pub successful_indices: Vec<usize>,
    /// How many writes the transaction had.
    pub total_transactions: usize,
    /// Why each of the others failed, in order.
    pub errors: Vec<StoreError>,
}

impl fmt::Display for TransactionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} transactions failed",
            self.errors.len(),
            self.total_transactions
        )?;
        for err in &self.errors {
            write!(f, "; {err}")?;
        }
        Ok(())
    }
}

impl std::error::Error for TransactionError {}

impl<K> Indexer<K> {
    /// Applies `transactions` in order as one step: readers see the store before all of them
    /// or after all of them, and each write sees the ones before it (client-go's
    /// `Transaction`). A write whose key, transform or index function fails is skipped and
    /// reported; the others are applied.
    pub fn transaction(
        &self,
        transactions: impl IntoIterator<Item = Transaction<K>>,
    ) -> Result<(), TransactionError> {
        let mut writes = Vec::new();
        let mut positions = Vec::new();
        let mut failed: Vec<(usize, StoreError)> = Vec::new();
        let mut total = 0;
        for (i, txn) in transactions.into_iter().enumerate() {
            total += 1;
            let write = match txn {
                Transaction::Add(obj) | Transaction::Update(obj) => self
                    .key_func()
                    .key(&obj)
                    .map_err(StoreError::from)
                    .and_then(|key| Ok((key, Some(self.transformed(obj)?)))),
                Transaction::Delete(obj) => self
                    .key_func()
                    .key_of_deleted(&obj)
                    .map(|key| (key, None))
                    .map_err(StoreError::from),
            };
            match write {
                Ok(write) => {
                    writes.push(write);
                    positions.push(i);
                }
                Err(err) => failed.push((i, err)),
            }
        }
        let results = self.thread_safe_store().transaction(writes);
        let mut successful_indices = Vec::with_capacity(total);
        for (i, result) in positions.into_iter().zip(results) {
            match result {
                Ok(()) => successful_indices.push(i),
                Err(err) => failed.push((i, err.into())),
            }
        }
        if failed.is_empty() {
            return Ok(());
        }
        failed.sort_by_key(|(i, _)| *i);
        Err(TransactionError {
            successful_indices,
            total_transactions: total,
            errors: failed.into_iter().map(|(_, err)| err).collect(),
        })
    }
}
