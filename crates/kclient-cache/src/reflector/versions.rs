//! [`Versions`]: the reflector's resourceVersion bookkeeping and the pure rules that read it
//! (client-go's `lastSyncResourceVersion`, `isLastSyncResourceVersionUnavailable`,
//! `paginatedResult`, `relistResourceVersion`, `rewatchResourceVersion` and the page-size
//! rules of `list`).

use kclient_core::DEFAULT_PAGE_SIZE;

/// Which resourceVersions the reflector has seen, and what they say about the next request.
#[derive(Debug, Default)]
pub(super) struct Versions {
    /// The resourceVersion of the last list or watch event seen; empty before the first list.
    last_synced: String,
    /// The last list or streaming list at `last_synced` was refused as expired or too large:
    /// read at `""` (a quorum read) until a list succeeds.
    unavailable: bool,
    /// A list at `"0"` came back in pages: the server's watch cache is off, so later lists
    /// are paged even at a specific resourceVersion.
    paginated: bool,
}

impl Versions {
    /// The resourceVersion of the last list or watch event seen.
    pub(super) fn last_synced(&self) -> &str {
        &self.last_synced
    }

    /// Whether the last resourceVersion was refused (client-go's
    /// `isLastSyncResourceVersionUnavailable`).
    pub(super) fn is_unavailable(&self) -> bool {
        self.unavailable
    }

    /// Records the resourceVersion of a list or of a watch event, bookmarks included.
    pub(super) fn record(&mut self, resource_version: &str) {
        self.last_synced.clear();
        self.last_synced.push_str(resource_version);
    }

    /// The last resourceVersion was refused (`410 Expired/Gone`, "too large"): read at `""`
    /// from now on.
    pub(super) fn forget(&mut self) {
        self.unavailable = true;
    }

    /// A list at `listed_at` succeeded: the resourceVersion is available again, and a paged
    /// answer to `"0"` turns paging on for good.
    pub(super) fn listed(&mut self, listed_at: &str, paginated: bool) {
        if listed_at == "0" && paginated {
            self.paginated = true;
        }
        self.streamed();
    }

    /// A streaming list succeeded: the resourceVersion is available again.
    pub(super) fn streamed(&mut self) {
        self.unavailable = false;
    }

    /// Where a list reads (client-go's `relistResourceVersion`): `""` after an expired or
    /// too-large error, `"0"` (the watch cache) for the first list, else the last
    /// resourceVersion seen.
    pub(super) fn relist_at(&self) -> &str {
        if self.unavailable {
            ""
        } else if self.last_synced.is_empty() {
            "0"
        } else {
            &self.last_synced
        }
    }

    /// Where a streaming list starts (client-go's `rewatchResourceVersion`): `""` after an
    /// expired or too-large error, else the last resourceVersion seen (`""` at first).
    pub(super) fn rewatch_at(&self) -> &str {
        if self.unavailable {
            ""
        } else {
            &self.last_synced
        }
    }

    /// The page size of a list at `resource_version`: an explicit size wins; then the default
    /// if the server paginated a `"0"` list before; no paging at a specific resourceVersion
    /// (so that the watch cache can serve it: it ignores limits only for `"0"`); else the
    /// default.
    pub(super) fn page_size(&self, explicit: i64, resource_version: &str) -> i64 {
        if explicit != 0 {
            explicit
        } else if self.paginated {
            DEFAULT_PAGE_SIZE
        } else if !resource_version.is_empty() && resource_version != "0" {
            0
        } else {
            DEFAULT_PAGE_SIZE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// seed-semantics §3.17: the first list at "0", later ones at the last resourceVersion,
    /// `""` once it was refused and until a list succeeds.
    #[test]
    fn which_resource_version_a_list_reads_at() {
        let mut v = Versions::default();
        assert_eq!((v.relist_at(), v.rewatch_at()), ("0", ""));
        v.record("10");
        assert_eq!((v.relist_at(), v.rewatch_at()), ("10", "10"));
        v.record("12");
        assert_eq!(v.relist_at(), "12", "every event moves it");
        v.forget();
        assert!(v.is_unavailable());
        assert_eq!((v.relist_at(), v.rewatch_at()), ("", ""));
        v.listed("", false);
        assert!(!v.is_unavailable());
        assert_eq!(v.relist_at(), "12");
        v.forget();
        v.streamed();
        assert_eq!(v.rewatch_at(), "12");
        assert_eq!(v.last_synced(), "12");
    }

    /// seed-semantics §3.19: 500 by default, an explicit size wins, no paging at a specific
    /// resourceVersion unless a "0" list came back paged.
    #[test]
    fn paging_rules() {
        let mut v = Versions::default();
        assert_eq!(v.page_size(0, "0"), 500);
        assert_eq!(v.page_size(0, ""), 500);
        assert_eq!(v.page_size(0, "10"), 0);
        assert_eq!(v.page_size(7, "10"), 7);
        v.listed("10", true);
        assert_eq!(
            v.page_size(0, "10"),
            0,
            "only a paged answer to \"0\" counts"
        );
        v.listed("0", false);
        assert_eq!(v.page_size(0, "10"), 0);
        v.listed("0", true);
        assert_eq!(v.page_size(0, "10"), 500);
        assert_eq!(v.page_size(7, "10"), 7);
        v.listed("0", false);
        assert_eq!(v.page_size(0, "10"), 500, "for good");
    }
}
