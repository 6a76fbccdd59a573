//! Fuzz target for kubeconfig parsing, as a property test: any text gives a kubeconfig or a
//! typed error, never a panic, and no error quotes a value it was given.
//! `PROPTEST_CASES=100000 cargo test -p kclient-rest --test fuzz` runs it longer.

use kclient_rest::kubeconfig::Kubeconfig;
use proptest::prelude::*;

fn yaml_soup() -> impl Strategy<Value = String> {
    proptest::string::string_regex(
        r"(apiVersion: v1\n|kind: Config\n|clusters:\n|users:\n|contexts:\n|- name: [a-z]{1,3}\n|  cluster: |  user: |server: |insecure-skip-tls-verify: (yes|no|maybe)\n|token: |SECRET-[a-z]{4}|\[|\]|\{|\}|: |- |\n|  |'|\x22|#|&a |\*a|!!str |---\n){0,60}",
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn kubeconfig_parsing_never_panics_nor_quotes_values(text in yaml_soup(), bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
        for input in [text.clone(), String::from_utf8_lossy(&bytes).into_owned()] {
            match Kubeconfig::from_yaml(&input) {
                Ok(kubeconfig) => {
                    // What parses writes back and parses again.
                    let yaml = kubeconfig.to_yaml().unwrap();
                    prop_assert!(Kubeconfig::from_yaml(&yaml).is_ok(), "{yaml}");
                }
                Err(e) => prop_assert!(!e.to_string().contains("SECRET-"), "{e}"),
            }
        }
    }
}
