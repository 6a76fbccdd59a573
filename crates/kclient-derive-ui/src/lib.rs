//! The compile errors of `#[derive(CustomResource)]` (kclient-derive), as a newcomer meets
//! them: each case in `tests/ui/` must fail with the message in its `.stderr` (trybuild). Not
//! published; the library is empty.
//!
//! A package of its own, apart from kclient-derive-tests, because trybuild checks every
//! dev-dependency of the package again in a project of its own: here they are only what the
//! cases use (kclient-core, serde, schemars), not the clients and kclient-fake. And not in
//! kclient-derive, a proc macro, whose tests cargo builds for the host with a second copy of
//! their dev-dependencies.
//!
//! `TRYBUILD=overwrite cargo test -p kclient-derive-ui --test ui` rewrites the `.stderr` files
//! after a deliberate change; review the diff.
