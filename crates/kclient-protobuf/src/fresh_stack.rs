//! Deep nesting in debug builds: every few levels past the first ones, a nested message is
//! decoded on a thread of its own, so that decoding to the nesting bound never needs more
//! than a tokio worker's 2 MiB of stack.
//!
//! A debug build keeps every temporary of a function in a slot of its own: a level of
//! `JSONSchemaProps` (the one recursive built-in message) costs some 25 KiB of stack there,
//! against 5–10 KiB in a release build, so the [`DEFAULT_DEPTH`] levels a hostile schema may
//! reach would need about 2.5 MiB — more than the thread decoding it may have, and running out
//! of stack aborts the process. Release builds never hop (at most about 1 MiB at the bound).
//! Real objects rarely nest deeper than the first hop; a schema that does pays a thread per
//! [`HOP_EVERY`] levels, in debug builds only.

use crate::wire::{Ctx, DecodeError, DEFAULT_DEPTH};

/// Levels between two hops (at 25 KiB a level, 400 KiB of stack).
pub const HOP_EVERY: u32 = 16;

/// Levels decoded on the caller's stack before the first hop.
const FIRST_HOP_AFTER: u32 = 20;

/// The stack of a hop's thread: its [`HOP_EVERY`] levels, and the JSON serde_json reads
/// innermost (128 levels at most), with room to spare.
const HOP_STACK: usize = 2 * 1024 * 1024;

/// Whether the message about to be decoded with `ctx` goes on a fresh stack: in debug builds,
/// at every [`HOP_EVERY`]th level of the budget left once [`FIRST_HOP_AFTER`] levels are
/// entered.
#[inline]
pub(crate) fn hops_at(ctx: Ctx) -> bool {
    cfg!(debug_assertions)
        && ctx.depth > 0
        && ctx.depth.is_multiple_of(HOP_EVERY)
        && ctx.depth <= DEFAULT_DEPTH - FIRST_HOP_AFTER
}

/// Runs `decode` on a thread of its own with [`HOP_STACK`] of stack, and waits for it. A
/// thread that cannot be started is a decode error (never a panic); a panic inside carries on
/// in the caller.
pub(crate) fn on_fresh_stack<T: Send>(
    decode: impl FnOnce() -> Result<T, DecodeError> + Send,
) -> Result<T, DecodeError> {
    std::thread::scope(|scope| {
        let started = std::thread::Builder::new()
            .name("kclient-protobuf-nested".into())
            .stack_size(HOP_STACK)
            .spawn_scoped(scope, decode);
        match started {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(e) => Err(DecodeError::new(format!(
                "could not start a thread to decode a deeply nested message: {e}"
            ))),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_deep_levels_hop_and_only_in_debug_builds() {
        let at = |depth| {
            hops_at(Ctx {
                depth,
                ..Ctx::default()
            })
        };
        let hopping: Vec<u32> = (0..=DEFAULT_DEPTH).filter(|&d| at(d)).collect();
        if cfg!(debug_assertions) {
            assert_eq!(hopping, [16, 32, 48, 64, 80]);
        } else {
            assert!(hopping.is_empty());
        }
    }

    #[test]
    fn a_panic_inside_a_hop_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| {
            let _ = on_fresh_stack::<()>(|| panic!("inside"));
        });
        assert!(caught.is_err());
        assert_eq!(on_fresh_stack(|| Ok(7)).unwrap(), 7);
    }
}
