//! Decoded objects hold no spare capacity: the decoders shrink each repeated field once its
//! message is read, and `Codec::fitter` does the same, in place, for an object serde decoded
//! from JSON (whose `Vec`s grow by doubling from room for four) — what an informer stores
//! (issue 27).

use k8s_openapi::api::core::v1::Pod;
use kclient_protobuf::{registry, Ctx};

/// A Pod whose lists each hold fewer elements than a `Vec`'s first allocation (four).
const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"ns",
  "finalizers":["example.com/f"],
  "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u"}]},
  "spec":{"containers":[{"name":"s","image":"i","args":["--a","--b"],
    "env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
    "ports":[{"containerPort":8080}]}],
    "volumes":[{"name":"v","configMap":{"name":"c"}}]},
  "status":{"conditions":[{"type":"Ready","status":"True"}],
    "containerStatuses":[{"name":"s","ready":true,"restartCount":0,"image":"i","imageID":"j"}]}}"#;

/// The spare capacity of every list the Pod above has, by name.
fn spare(pod: &Pod) -> Vec<(&'static str, usize)> {
    fn of<T>(v: Option<&Vec<T>>) -> usize {
        v.map_or(0, |v| v.capacity() - v.len())
    }
    let spec = pod.spec.as_ref().unwrap();
    let status = pod.status.as_ref().unwrap();
    let container = &spec.containers[0];
    vec![
        ("finalizers", of(pod.metadata.finalizers.as_ref())),
        (
            "ownerReferences",
            of(pod.metadata.owner_references.as_ref()),
        ),
        (
            "containers",
            spec.containers.capacity() - spec.containers.len(),
        ),
        ("args", of(container.args.as_ref())),
        ("env", of(container.env.as_ref())),
        ("ports", of(container.ports.as_ref())),
        ("volumes", of(spec.volumes.as_ref())),
        ("conditions", of(status.conditions.as_ref())),
        ("containerStatuses", of(status.container_statuses.as_ref())),
    ]
}

fn exact(pod: &Pod) -> bool {
    spare(pod).iter().all(|(_, n)| *n == 0)
}

#[test]
fn a_pod_serde_decoded_is_fitted_in_place_to_exact_capacities() {
    let mut pod: Pod = serde_json::from_str(POD).unwrap();
    assert!(
        !exact(&pod),
        "serde's decode was expected to leave spare room: {:?}",
        spare(&pod)
    );
    let decoded = pod.clone();
    registry::codec::<Pod>().unwrap().fitter()(&mut pod);
    assert!(exact(&pod), "{:?}", spare(&pod));
    assert_eq!(pod, decoded);
}

#[test]
fn a_pod_protobuf_decoded_has_exact_capacities() {
    let pod: Pod = serde_json::from_str(POD).unwrap();
    let codec = registry::codec::<Pod>().unwrap();
    let decoded = codec
        .decode_message(&codec.encode_message(&pod), Ctx::default())
        .unwrap();
    // (Equality through protobuf, with Go's zero values, is the round-trip tests' business.)
    assert!(exact(&decoded), "{:?}", spare(&decoded));
}
