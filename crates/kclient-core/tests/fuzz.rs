//! Fuzz targets for the parsers of kclient-core, as property tests: any bytes and
//! near-valid hostile input give a value or a typed error, never a panic. A bounded number
//! of cases runs with the tests, from a fixed seed (`kclient-testkit`); `cargo xtask fuzz`
//! runs them longer with new seeds and records what fails in `proptest-regressions/fuzz.txt`.

use kclient_core::labels::Selector;
use kclient_core::{DynamicObject, JsonFrameDecoder, Status, WatchEvent};
use proptest::prelude::*;

/// Text made of the characters these grammars care about, to get past the first check.
fn grammar_soup() -> impl Strategy<Value = String> {
    proptest::string::string_regex(r#"[a-z0-9=!(),.\-_/ \\"'{}\[\]:\n]{0,200}"#).unwrap()
}

fn json_soup() -> impl Strategy<Value = String> {
    proptest::string::string_regex(
        r#"(\{|\}|\[|\]|"type"|"object"|"metadata"|"items"|"ADDED"|"ERROR"|"BOOKMARK"|"code"|"apiVersion"|"kind"|:|,|null|1e999|-1|"x"|\n|\\u0000){0,60}"#,
    )
    .unwrap()
}

proptest! {
    #![proptest_config(kclient_testkit::proptest_config(2048, concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/fuzz.txt")))]

    #[test]
    fn label_selectors_never_panic(text in grammar_soup()) {
        if let Ok(selector) = text.parse::<Selector>() {
            // What parses renders and parses again to the same selector.
            let again: Selector = selector.to_string().parse().unwrap();
            prop_assert_eq!(again.to_string(), selector.to_string());
        }
    }

    #[test]
    fn watch_frames_never_panic(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..16), soup in json_soup()) {
        let mut decoder = JsonFrameDecoder::with_max_frame_len(1024);
        for chunk in chunks.iter().map(Vec::as_slice).chain([soup.as_bytes()]) {
            decoder.push(chunk);
            while let Some(frame) = decoder.next_frame() {
                if let Ok(frame) = frame {
                    let _ = WatchEvent::<DynamicObject>::from_json(&frame);
                    let _ = WatchEvent::<k8s_openapi::api::core::v1::Pod>::from_json(&frame);
                }
            }
        }
        let _ = decoder.finish();
    }

    #[test]
    fn json_lists_never_panic_and_read_as_a_whole_read(soup in json_soup(), split in 0usize..256) {
        use kclient_core::json_list::{JsonListPiece, JsonListReader};
        use kclient_core::managed_fields::decode_object;
        let bytes = soup.as_bytes();
        let mut reader = JsonListReader::new(1024);
        let mut items = Vec::new();
        let split = split.min(bytes.len());
        'read: for chunk in [&bytes[..split], &bytes[split..]] {
            reader.push(chunk);
            loop {
                match reader.next_piece() {
                    Ok(Some(JsonListPiece::Item(json))) => items.push(decode_object::<DynamicObject>(json, false).ok()),
                    Ok(Some(JsonListPiece::Head(_))) => {}
                    Ok(None) => break,
                    Err(_) => break 'read,
                }
            }
        }
        // What reads as a list of whole objects reads so whole too.
        if let (Ok(_), true) = (reader.finish(), items.iter().all(Option::is_some)) {
            if let Ok(whole) = serde_json::from_slice::<kclient_core::ObjectList<DynamicObject>>(bytes) {
                let items: Vec<DynamicObject> = items.into_iter().flatten().collect();
                prop_assert_eq!(items, whole.items);
            }
        }
    }

    #[test]
    fn status_and_dynamic_objects_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256), soup in json_soup()) {
        for input in [bytes.as_slice(), soup.as_bytes()] {
            let _ = Status::from_failure_body(input);
            let _ = serde_json::from_slice::<Status>(input);
            if let Ok(obj) = serde_json::from_slice::<DynamicObject>(input) {
                // What decodes, encodes and decodes again the same.
                let text = serde_json::to_vec(&obj).unwrap();
                let again: DynamicObject = serde_json::from_slice(&text).unwrap();
                prop_assert_eq!(again, obj);
            }
        }
    }
}
