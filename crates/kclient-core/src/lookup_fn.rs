//! [`LookupFn`]: a lookup closure, which label and field selectors match against as they
//! match against a label or field container.

use std::marker::PhantomData;

/// A closure from a key to its value (`None` when absent). [`Labels`](crate::labels::Labels)
/// and [`Fields`](crate::fields::Fields) are implemented for it, for the selectors'
/// `matches_fn`.
pub(crate) struct LookupFn<'a, F> {
    lookup: F,
    _values: PhantomData<fn() -> &'a str>,
}

impl<'a, F> LookupFn<'a, F>
where
    F: Fn(&str) -> Option<&'a str>,
{
    /// Wraps `lookup`.
    pub(crate) fn new(lookup: F) -> Self {
        Self {
            lookup,
            _values: PhantomData,
        }
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        (self.lookup)(key)
    }
}
