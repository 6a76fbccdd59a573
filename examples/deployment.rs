//! Creates, updates, scales and deletes a Deployment (work in progress).
fn main() {}
