//! [`DiskCachedDiscoveryClient`]: discovery cached on disk in kubectl's layout (client-go's
//! `discovery/cached/disk.CachedDiscoveryClient`), so that kclient programs and kubectl share
//! one cache.
//!
//! The layout, under `~/.kube/cache/discovery/<host_port>/` (see
//! [`kubectl_discovery_cache_dir`]):
//!
//! ```text
//! servergroups.json                    APIGroupList (the core group first, named "")
//! v1/serverresources.json              APIResourceList of the core group
//! apps/v1/serverresources.json         APIResourceList of apps/v1
//! ...
//! ```
//!
//! A file is used while its modification time is younger than the TTL (kubectl uses
//! [`KUBECTL_DISCOVERY_TTL`], 6 hours). Files are written to a temporary file in the same
//! directory and renamed over the old one, so concurrent processes never read a partial file;
//! an unreadable or undecodable file is treated as missing.

use std::collections::HashSet;
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroupList, APIResourceList};
use k8s_openapi::apimachinery::pkg::version::Info;
use kclient_core::GroupVersion;
use kclient_rest::Config;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::{discovery_config, DiscoveryClient};
use crate::discovery::{Discovery, GroupsAndMaybeResources};
use crate::error::Error;
use crate::memcache::MemCacheClient;

/// The TTL kubectl gives its discovery cache (cli-runtime's `ToDiscoveryClient`): 6 hours.
pub const KUBECTL_DISCOVERY_TTL: Duration = Duration::from_secs(6 * 60 * 60);

/// The environment variable that moves kubectl's cache directory (`$KUBECACHEDIR`).
pub const KUBECACHEDIR_ENV: &str = "KUBECACHEDIR";

/// The name of the groups file in a discovery cache directory.
pub const SERVER_GROUPS_FILE: &str = "servergroups.json";

/// The name of a group-version's resources file, under `<group>/<version>/` (`v1/` for core).
pub const SERVER_RESOURCES_FILE: &str = "serverresources.json";

/// kubectl's cache root: `$KUBECACHEDIR` if set, else `~/.kube/cache`; `None` when neither is
/// known (no home directory).
pub fn default_cache_dir() -> Option<PathBuf> {
    match std::env::var_os(KUBECACHEDIR_ENV) {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => std::env::home_dir().map(|home| home.join(".kube").join("cache")),
    }
}

/// The discovery cache directory of the server at `host` under kubectl's cache root
/// `cache_root` (cli-runtime's `computeDiscoverCacheDir`): `<cache_root>/discovery/<host>`, where
/// the scheme is stripped from `host` and every character other than ASCII letters, digits,
/// `_`, `.`, `/`, `(` and `)` becomes `_` (so `https://10.0.0.1:6443` gives `10.0.0.1_6443`).
///
/// A `/` in the host (a path prefix) makes nested directories, as in kubectl; empty, `.` and
/// `..` segments are dropped so the directory always stays under `cache_root`.
pub fn kubectl_discovery_cache_dir(cache_root: &Path, host: &str) -> PathBuf {
    let mut dir = cache_root.join("discovery");
    for segment in sanitize_host(host).split('/') {
        if !segment.is_empty() && segment != "." && segment != ".." {
            dir.push(segment);
        }
    }
    dir
}

/// kubectl's host sanitisation: strip `https://` then `http://` (first occurrence of each),
/// then replace what the regular expression `[^(\w/.)]` matches with `_`.
fn sanitize_host(host: &str) -> String {
    let schemeless = host.replacen("https://", "", 1).replacen("http://", "", 1);
    schemeless
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '.' | '(' | ')') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A source of the current time, so the TTL can be tested without waiting.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> SystemTime;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

impl<F: Fn() -> SystemTime + Send + Sync> Clock for F {
    fn now(&self) -> SystemTime {
        self()
    }
}

#[derive(Debug)]
struct State {
    /// Files this client wrote (after the last invalidation).
    ours: HashSet<PathBuf>,
    /// Whether every file read so far was written by this client.
    fresh: bool,
    /// Whether the cache was invalidated: files from before are ignored from then on.
    invalidated: bool,
}

/// Discovery cached on disk, compatible with kubectl's cache (see the module documentation).
///
/// As in client-go:
/// - [`fresh`](Discovery::fresh) stays true while every file read was written by this client;
///   reading a file another process (or an earlier run) wrote makes it false, which tells a
///   [`DeferredRestMapper`](crate::DeferredRestMapper) that a miss may be cured by
///   invalidating;
/// - [`invalidate`](Discovery::invalidate) makes the client ignore every file it did not write
///   since, and invalidates the delegate;
/// - a group-version with no resources is not cached.
///
/// ```no_run
/// use kclient_discovery::{default_cache_dir, Discovery, DiskCachedDiscoveryClient, KUBECTL_DISCOVERY_TTL};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = kclient_rest::Config::infer()?;
/// let root = default_cache_dir().expect("a home directory");
/// let discovery = DiskCachedDiscoveryClient::for_config(&config, &root, KUBECTL_DISCOVERY_TTL)?;
/// let resources = discovery.server_preferred_resources().await?;
/// println!("{} group-versions", resources.resources.len());
/// # Ok(()) }
/// ```
pub struct DiskCachedDiscoveryClient<D = MemCacheClient<DiscoveryClient>> {
    delegate: D,
    directory: PathBuf,
    ttl: Duration,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

impl<D: fmt::Debug> fmt::Debug for DiskCachedDiscoveryClient<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DiskCachedDiscoveryClient")
            .field("delegate", &self.delegate)
            .field("directory", &self.directory)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl DiskCachedDiscoveryClient {
    /// kubectl's discovery client for `config`: a [`DiscoveryClient`] with discovery defaults,
    /// behind a [`MemCacheClient`], behind files in
    /// [`kubectl_discovery_cache_dir(cache_root, &config.host)`](kubectl_discovery_cache_dir)
    /// (client-go's `NewCachedDiscoveryClientForConfig`; kubectl passes `~/.kube/cache` and
    /// [`KUBECTL_DISCOVERY_TTL`]).
    pub fn for_config(config: &Config, cache_root: &Path, ttl: Duration) -> Result<Self, Error> {
        let directory = kubectl_discovery_cache_dir(cache_root, &config.host);
        let rest = kclient_rest::RestClient::new(discovery_config(config))?;
        Ok(Self::new(
            MemCacheClient::new(DiscoveryClient::new(rest)),
            directory,
            ttl,
        ))
    }
}

impl<D: Discovery> DiskCachedDiscoveryClient<D> {
    /// A disk cache in `directory` (the per-server directory, such as
    /// `~/.kube/cache/discovery/10.0.0.1_6443`) in front of `delegate`, whose files are used
    /// while younger than `ttl`.
    pub fn new(delegate: D, directory: impl Into<PathBuf>, ttl: Duration) -> Self {
        Self {
            delegate,
            directory: directory.into(),
            ttl,
            clock: Arc::new(SystemClock),
            state: Mutex::new(State {
                ours: HashSet::new(),
                fresh: true,
                invalidated: false,
            }),
        }
    }

    /// The same client, judging the age of files against `clock` instead of the system time.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The per-server cache directory.
    pub fn directory(&self) -> &Path {
        &self.directory
    }

    /// The TTL of cache files.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The client behind the cache.
    pub fn delegate(&self) -> &D {
        &self.delegate
    }

    /// The file of the groups.
    pub fn groups_file(&self) -> PathBuf {
        self.directory.join(SERVER_GROUPS_FILE)
    }

    /// The file of a group-version's resources (`v1/serverresources.json` for the core group,
    /// `apps/v1/serverresources.json` ...).
    pub fn resources_file(&self, group_version: &GroupVersion) -> PathBuf {
        let mut path = self.directory.clone();
        if !group_version.group.is_empty() {
            path.push(&group_version.group);
        }
        path.push(&group_version.version);
        path.push(SERVER_RESOURCES_FILE);
        path
    }

    /// Reads and decodes a cache file if it is usable: present, readable, younger than the
    /// TTL, decodable, and (after an invalidation) written by this client.
    async fn read<T: DeserializeOwned + Send + 'static>(&self, path: PathBuf) -> Option<T> {
        let ours = {
            let state = self.state.lock();
            let ours = state.ours.contains(&path);
            if state.invalidated && !ours {
                return None;
            }
            ours
        };
        let now = self.clock.now();
        let ttl = self.ttl;
        let read_path = path.clone();
        let read = blocking(move || -> std::io::Result<Option<Vec<u8>>> {
            let file = match std::fs::File::open(&read_path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            let modified = file.metadata()?.modified()?;
            // A TTL too large to add to the file's time (Duration::MAX: "never expire")
            // never expires.
            if modified.checked_add(ttl).is_some_and(|expiry| now > expiry) {
                return Ok(None);
            }
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut &file, &mut bytes)?;
            Ok(Some(bytes))
        })
        .await;
        let bytes = match read {
            Ok(Ok(Some(bytes))) => bytes,
            Ok(Ok(None)) => return None,
            Ok(Err(e)) => {
                tracing::debug!(path = %path.display(), error = %e, "cannot read the discovery cache");
                return None;
            }
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "cannot read the discovery cache");
                return None;
            }
        };
        match serde_json::from_slice(&bytes) {
            Ok(value) => {
                tracing::trace!(path = %path.display(), "returning cached discovery");
                let mut state = self.state.lock();
                state.fresh = state.fresh && ours;
                Some(value)
            }
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "ignoring an undecodable discovery cache file");
                None
            }
        }
    }

    /// Writes a cache file atomically (a temporary file in the same directory, renamed over the
    /// old one). Failures are logged, not returned: the cache is an optimisation.
    async fn write<T: Serialize>(&self, path: PathBuf, value: &T) {
        let bytes = match serde_json::to_vec(value) {
            Ok(b) => b,
            Err(e) => {
                tracing::debug!(error = %e, "cannot encode discovery for the cache");
                return;
            }
        };
        let write_path = path.clone();
        match blocking(move || write_atomically(&write_path, &bytes)).await {
            Ok(Ok(())) => {
                self.state.lock().ours.insert(path);
            }
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "cannot write the discovery cache");
            }
            Err(e) => tracing::debug!(error = %e, "cannot write the discovery cache"),
        }
    }
}

/// Runs blocking file I/O off the async worker threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Task(e.to_string()))
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, with
/// kubectl's permissions (directories 0750, files 0660 on Unix).
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let cache_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Cache { path, source }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir_all(dir).map_err(cache_err(dir))?;
    let prefix = format!(
        "{}.",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .tempfile_in(dir)
        .map_err(cache_err(dir))?;
    tmp.write_all(bytes).map_err(cache_err(tmp.path()))?;
    set_file_permissions(tmp.as_file()).map_err(cache_err(tmp.path()))?;
    tmp.persist(path).map_err(|e| Error::Cache {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

#[cfg(unix)]
fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o750)
        .create(dir)
}

#[cfg(not(unix))]
fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn set_file_permissions(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    file.set_permissions(std::fs::Permissions::from_mode(0o660))
}

#[cfg(not(unix))]
fn set_file_permissions(_file: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

impl<D: Discovery> Discovery for DiskCachedDiscoveryClient<D> {
    /// Not cached.
    async fn server_version(&self) -> Result<Info, Error> {
        self.delegate.server_version().await
    }

    /// The groups from `servergroups.json` if it is usable (resources are then read per
    /// group-version); otherwise from the delegate, writing the groups and every group-version
    /// it returned resources for.
    async fn groups_and_maybe_resources(&self) -> Result<GroupsAndMaybeResources, Error> {
        if let Some(groups) = self.read::<APIGroupList>(self.groups_file()).await {
            return Ok(GroupsAndMaybeResources {
                groups,
                resources: None,
                failed: Default::default(),
            });
        }
        let live = self.delegate.groups_and_maybe_resources().await?;
        self.write(self.groups_file(), &live.groups).await;
        if let Some(resources) = &live.resources {
            for (gv, list) in resources.iter().filter(|(_, l)| !l.resources.is_empty()) {
                self.write(self.resources_file(gv), list).await;
            }
        }
        Ok(live)
    }

    async fn server_resources_for_group_version(
        &self,
        group_version: &GroupVersion,
    ) -> Result<APIResourceList, Error> {
        let path = self.resources_file(group_version);
        if let Some(list) = self.read::<APIResourceList>(path.clone()).await {
            return Ok(list);
        }
        let live = self
            .delegate
            .server_resources_for_group_version(group_version)
            .await?;
        if live.resources.is_empty() {
            tracing::debug!(group_version = %group_version, "not caching an empty group-version");
        } else {
            self.write(path, &live).await;
        }
        Ok(live)
    }

    fn fresh(&self) -> bool {
        self.state.lock().fresh
    }

    fn invalidate(&self) {
        {
            let mut state = self.state.lock();
            state.ours.clear();
            state.fresh = true;
            state.invalidated = true;
        }
        self.delegate.invalidate();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_directories_follow_kubectl() {
        let root = Path::new("/home/u/.kube/cache");
        let cases = [
            ("https://10.0.0.1:6443", "10.0.0.1_6443"),
            ("http://localhost:8080", "localhost_8080"),
            ("https://my-cluster.example.com", "my_cluster.example.com"),
            ("https://[::1]:6443", "___1__6443"),
            ("10.0.0.1:6443", "10.0.0.1_6443"),
            ("https://h:443/k8s/clusters/c-1", "h_443/k8s/clusters/c_1"),
            ("https://h/../../etc", "h/etc"),
            ("https://h/(x)", "h/(x)"),
        ];
        for (host, expected) in cases {
            assert_eq!(
                kubectl_discovery_cache_dir(root, host),
                root.join("discovery").join(expected),
                "{host}"
            );
        }
    }

    #[test]
    fn kubectl_defaults() {
        assert_eq!(KUBECTL_DISCOVERY_TTL, Duration::from_secs(21_600));
        assert_eq!(KUBECACHEDIR_ENV, "KUBECACHEDIR");
        assert_eq!(SERVER_GROUPS_FILE, "servergroups.json");
        assert_eq!(SERVER_RESOURCES_FILE, "serverresources.json");
    }

    #[test]
    fn atomic_writes_replace_whole_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/serverresources.json");
        write_atomically(&path, b"{\"first\":true}").unwrap();
        write_atomically(&path, b"{\"second\":true}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"second\":true}");
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "no temporary files left: {leftovers:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o660);
        }
    }
}
