//! The ground floor's request on one resource ([`Call`]): the server, the request, the
//! resource it names and its query, as every handler of a resource sees them — the verbs
//! (`crate::verbs`), the subresources (`crate::pods`, `crate::connect`, ...) and the patches
//! (`crate::patch`). It imports none of them.

use std::sync::Arc;

use crate::catalogue::ResourceInfo;
use crate::query::Query;
use crate::request::ApiRequest;
use crate::state::Shared;

/// A request on one resource, as the handlers see it.
pub(crate) struct Call<'a> {
    /// The server.
    pub(crate) shared: &'a Arc<Shared>,
    /// The request.
    pub(crate) req: &'a ApiRequest,
    /// The resource.
    pub(crate) info: &'a Arc<ResourceInfo>,
    /// The query.
    pub(crate) q: &'a Query,
    /// The namespace from the path, if any.
    pub(crate) namespace: Option<&'a str>,
    /// Whether the deprecated `/watch/` prefix was used.
    pub(crate) watch_prefix: bool,
}

impl Call<'_> {
    /// The namespace from the path, or `""` (all namespaces, or a cluster-scoped resource).
    pub(crate) fn namespace_or_all(&self) -> &str {
        self.namespace.unwrap_or_default()
    }
}
