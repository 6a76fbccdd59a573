//! The integration tests of kclient-tools, one module per file, linked into one test binary
//! (a binary per file made ~130 test executables of ~100 MB each in a workspace build).

mod election_support;

mod crd;
mod events_broadcaster;
mod events_correlator;
mod events_fake;
mod events_series;
mod flowcontrol;
mod leaderelection;
mod leaderelection_fake;
mod retry;
mod sharding_ring;
mod wait;
mod watch_fake;
mod watch_scripted;
