//! The FIFO between an informer's reflector and its processing: a [`RealFifo`] (client-go's
//! default since `InOrderInformers`) or a [`DeltaFifo`], chosen at run time.

use std::sync::Arc;

use kclient_core::{DeletedObject, Resource};

use crate::delta::{Delta, Deltas};
use crate::delta_fifo::DeltaFifo;
use crate::queue::{PopError, ProcessError, Queue};
use crate::real_fifo::RealFifo;
use crate::representation::EncodedList;
use crate::store::{Store, StoreError};

/// Which FIFO an informer uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FifoKind {
    /// [`RealFifo`]: every delta in order, batch pops (client-go's default since 1.33).
    #[default]
    Real,
    /// [`DeltaFifo`] with the informer's indexer as its known objects: deltas grouped per
    /// key (client-go's behaviour before `InOrderInformers`).
    Delta,
}

/// A [`RealFifo`] or a [`DeltaFifo`] behind one type, implementing [`Store`] and
/// [`Queue`] by delegation. Cheap to clone (the FIFO is shared).
pub enum InformerQueue<K> {
    /// A RealFIFO.
    Real(Arc<RealFifo<K>>),
    /// A DeltaFIFO.
    Delta(Arc<DeltaFifo<K>>),
}

impl<K> Clone for InformerQueue<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Real(q) => Self::Real(Arc::clone(q)),
            Self::Delta(q) => Self::Delta(Arc::clone(q)),
        }
    }
}

impl<K> std::fmt::Debug for InformerQueue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Real(q) => q.fmt(f),
            Self::Delta(q) => q.fmt(f),
        }
    }
}

impl<K> From<RealFifo<K>> for InformerQueue<K> {
    fn from(q: RealFifo<K>) -> Self {
        Self::Real(Arc::new(q))
    }
}

impl<K> From<DeltaFifo<K>> for InformerQueue<K> {
    fn from(q: DeltaFifo<K>) -> Self {
        Self::Delta(Arc::new(q))
    }
}

impl<K> InformerQueue<K> {
    /// Which FIFO this is.
    pub fn kind(&self) -> FifoKind {
        match self {
            Self::Real(_) => FifoKind::Real,
            Self::Delta(_) => FifoKind::Delta,
        }
    }
}

/// Forwards a call to whichever FIFO is inside.
macro_rules! forward {
    ($self:ident, $q:ident => $call:expr) => {
        match $self {
            InformerQueue::Real($q) => $call,
            InformerQueue::Delta($q) => $call,
        }
    };
}

impl<K: Resource + Clone + Send + Sync + 'static> Store<K> for InformerQueue<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        forward!(self, q => q.add(obj))
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        forward!(self, q => q.update(obj))
    }

    fn delete(&self, obj: DeletedObject<K>) -> Result<(), StoreError> {
        forward!(self, q => q.delete(obj))
    }

    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        forward!(self, q => q.replace(list, resource_version))
    }

    fn replace_encoded(
        &self,
        list: EncodedList<K>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        forward!(self, q => q.replace_encoded(list, resource_version))
    }

    fn resync(&self) -> Result<(), StoreError> {
        forward!(self, q => q.resync())
    }

    fn list_keys(&self) -> Vec<String> {
        forward!(self, q => q.list_keys())
    }

    fn update_resource_version(&self, resource_version: &str) {
        forward!(self, q => q.update_resource_version(resource_version))
    }

    fn bookmark(&self, resource_version: &str) {
        forward!(self, q => q.bookmark(resource_version))
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> Queue<K> for InformerQueue<K> {
    async fn pop<F>(&self, process: F) -> Result<Deltas<K>, PopError>
    where
        F: FnOnce(&[Delta<K>], bool) -> Result<(), ProcessError> + Send,
    {
        forward!(self, q => Queue::pop(q.as_ref(), process).await)
    }

    fn has_synced(&self) -> bool {
        forward!(self, q => Queue::has_synced(q.as_ref()))
    }

    async fn wait_synced(&self) {
        forward!(self, q => Queue::wait_synced(q.as_ref()).await)
    }

    fn close(&self) {
        forward!(self, q => Queue::close(q.as_ref()))
    }

    fn is_closed(&self) -> bool {
        forward!(self, q => Queue::is_closed(q.as_ref()))
    }

    fn len(&self) -> usize {
        forward!(self, q => Queue::len(q.as_ref()))
    }
}
