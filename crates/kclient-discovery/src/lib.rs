//! kclient-discovery: what an API server serves, found at run time — client-go's `discovery`
//! and `restmapper` packages.
//!
//! * [`DiscoveryClient`] asks the server for its version, groups and resources, with
//!   aggregated discovery (`apidiscovery.k8s.io/v2`: the whole API in two requests) and a
//!   fallback to the legacy documents (one request per group-version, fetched in parallel). A
//!   discovery that reaches some group-versions but not all returns what it found together with
//!   the failures ([`ServerResources::failed`], client-go's `ErrGroupDiscoveryFailed`).
//! * [`MemCacheClient`] caches discovery in memory and [`DiskCachedDiscoveryClient`] on disk,
//!   in kubectl's `~/.kube/cache/discovery/<host_port>/` layout with a TTL, so kclient programs
//!   and kubectl share one cache. Both implement the same [`Discovery`] trait, with
//!   [`fresh`](Discovery::fresh) and [`invalidate`](Discovery::invalidate).
//! * [`RestMapper`] maps kinds to resources and back and resolves what people type (`po`,
//!   `deploy`, `Deployment`, `crontabs.stable.example.com`, the `all` category), with typed
//!   errors for unknown and ambiguous names ([`MapperError`]). [`DeferredRestMapper`] builds
//!   one lazily and refreshes discovery once when a name is missing, so custom resources
//!   installed after start are found.
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::discovery::…`); one depending on kclient-discovery alone writes `kclient_discovery::…`.
//!
//! ```no_run
//! # mod kclient { pub mod rest { pub use ::kclient_rest::*; } pub mod discovery { pub use ::kclient_discovery::*; } } // the facade's paths
//! use kclient::discovery::{DeferredRestMapper, Discovery, DiscoveryClient, MemCacheClient};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = kclient::rest::Config::infer()?;
//! let discovery = MemCacheClient::new(DiscoveryClient::for_config(&config)?);
//!
//! let version = discovery.server_version().await?;
//! println!("server {}", version.git_version);
//! let all = discovery.server_groups_and_resources().await?;
//! if let Some(failure) = all.failure() {
//!     eprintln!("warning: {failure}"); // e.g. a metrics API server that is down
//! }
//!
//! let mapper = DeferredRestMapper::new(discovery);
//! let pods = mapper.find("po").await?;
//! assert_eq!(pods.resource.resource, "pods");
//! println!("{}", pods.api_resource().collection_path(Some("default"))); // /api/v1/namespaces/default/pods
//! # Ok(()) }
//! ```
//!
//! Defaults are client-go's: a discovery client made by [`DiscoveryClient::for_config`] has a
//! burst of [`DEFAULT_DISCOVERY_BURST`] (300) and a timeout of [`DEFAULT_DISCOVERY_TIMEOUT`]
//! (32 s); kubectl's disk cache lives for [`KUBECTL_DISCOVERY_TTL`] (6 h).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod aggregated;
mod client;
mod deferred;
mod discovery;
pub mod disk;
mod error;
mod memcache;
pub mod rest_mapper;

pub use client::{DiscoveryClient, DEFAULT_DISCOVERY_BURST, DEFAULT_DISCOVERY_TIMEOUT};
pub use deferred::DeferredRestMapper;
pub use discovery::{Discovery, GroupsAndMaybeResources, ServerResources, DEFAULT_RETRIES};
pub use disk::{
    default_cache_dir, kubectl_discovery_cache_dir, Clock, DiskCachedDiscoveryClient, SystemClock,
    KUBECTL_DISCOVERY_TTL,
};
pub use error::{Error, GroupDiscoveryFailed};
pub use memcache::MemCacheClient;
pub use rest_mapper::{
    parse_kind_arg, parse_resource_arg, MapperError, RestMapper, RestMapping, Scope,
    ShortNameExpansion,
};
