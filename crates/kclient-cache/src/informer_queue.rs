//! The FIFO between an informer's reflector and its processing: a [`RealFifo`] (client-go's
//! default since `InOrderInformers`) or, with the `informer-delta-fifo` feature, a
//! `DeltaFifo`, chosen at run time.

use std::sync::Arc;

use kclient_core::{DeletedObject, Resource};

use crate::delta::{Delta, Deltas};
#[cfg(feature = "informer-delta-fifo")]
use crate::delta_fifo::DeltaFifo;
use crate::queue::{PopError, ProcessError, Queue};
use crate::real_fifo::RealFifo;
use crate::representation::EncodedList;
use crate::store::{Store, StoreError};

/// Which FIFO an informer uses.
///
/// `Delta` needs kclient-cache's `informer-delta-fifo` feature (in its default features and
/// the facade's): a program built without it compiles no DeltaFIFO for the kinds it caches.
/// Hence `#[non_exhaustive]`: a match needs a wildcard arm, so turning the feature on
/// anywhere in a build breaks no one's match.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FifoKind {
    /// [`RealFifo`]: every delta in order, batch pops (client-go's default since 1.33).
    #[default]
    Real,
    /// `DeltaFifo` with the informer's indexer as its known objects: deltas grouped per
    /// key (client-go's behaviour before `InOrderInformers`).
    #[cfg(feature = "informer-delta-fifo")]
    Delta,
}

/// A [`RealFifo`] or (with the `informer-delta-fifo` feature, see [`FifoKind`]) a
/// `DeltaFifo` behind one type, implementing [`Store`] and [`Queue`] by delegation. Cheap to
/// clone (the FIFO is shared).
#[non_exhaustive]
pub enum InformerQueue<K> {
    /// A RealFIFO.
    Real(Arc<RealFifo<K>>),
    /// A DeltaFIFO.
    #[cfg(feature = "informer-delta-fifo")]
    Delta(Arc<DeltaFifo<K>>),
}

impl<K> Clone for InformerQueue<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Real(q) => Self::Real(Arc::clone(q)),
            #[cfg(feature = "informer-delta-fifo")]
            Self::Delta(q) => Self::Delta(Arc::clone(q)),
        }
    }
}

impl<K> std::fmt::Debug for InformerQueue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Real(q) => q.fmt(f),
            #[cfg(feature = "informer-delta-fifo")]
            Self::Delta(q) => q.fmt(f),
        }
    }
}

impl<K> From<RealFifo<K>> for InformerQueue<K> {
    fn from(q: RealFifo<K>) -> Self {
        Self::Real(Arc::new(q))
    }
}

#[cfg(feature = "informer-delta-fifo")]
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
            #[cfg(feature = "informer-delta-fifo")]
            Self::Delta(_) => FifoKind::Delta,
        }
    }
}

/// Forwards a call to whichever FIFO is inside.
macro_rules! forward {
    ($self:ident, $q:ident => $call:expr) => {
        match $self {
            InformerQueue::Real($q) => $call,
            #[cfg(feature = "informer-delta-fifo")]
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
