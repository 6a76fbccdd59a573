//! The derive's compile errors, as a newcomer meets them: each case in `tests/ui/` must fail
//! with the message in its `.stderr` (`TRYBUILD=overwrite cargo test -p kclient-derive-ui
//! --test ui` rewrites them after a deliberate change; review the diff).

#[test]
fn compile_errors_say_what_is_wrong_and_where() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
