//! A hostile server's wire through the REST layer (issue 46): protobuf lists cut mid-item by a
//! closed connection, lists and objects of another kind, watch frames claiming more than the
//! bound or more than follows, gzip bombs read whole and as a list arrives, corrupt gzip,
//! trailing garbage and lying `Content-Length`s. Each ends in a typed error within a bounded
//! wait — never a panic, a hang or an allocation the server did not pay for. (Each step of the
//! inflater's memory is pinned by the unit tests of `compression.rs`.)

use std::time::Duration;

use crate::support;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use kclient_core::{GroupVersion, WatchDecodeError};
use kclient_protobuf::envelope;
use kclient_protobuf::registry;
use kclient_rest::{Error, RestClient};
use support::{config, full, raw_server, TestServer};
use tokio::io::AsyncWriteExt as _;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const WAIT: Duration = Duration::from_secs(30);

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {WAIT:?}"))
}

fn configmap(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            ..Default::default()
        },
        data: Some([("k".to_owned(), "v".repeat(200))].into()),
        ..Default::default()
    }
}

fn configmap_list(names: &[&str]) -> Vec<u8> {
    let items: Vec<_> = names.iter().map(|n| configmap(n)).collect();
    let meta = ListMeta {
        resource_version: Some("9".into()),
        ..Default::default()
    };
    envelope::encode_list("v1", "ConfigMapList", &meta, &items)
}

fn core(client: &RestClient, resource: &str) -> kclient_rest::Request {
    client
        .get()
        .group_version(&GroupVersion::new("", "v1"))
        .namespace("ns")
        .resource(resource)
        .accept_protobuf()
}

/// A list fetched and decoded whole: the first error of either step.
async fn list<K>(request: kclient_rest::Request) -> Result<Vec<K>, Error>
where
    K: serde::de::DeserializeOwned + Send + 'static,
{
    bounded("a list", async {
        let fetched = request.fetch_list::<K>().await?;
        Ok(fetched.decode().await?.items)
    })
    .await
}

/// A raw server answering every connection with `head` and `body`, then ending the
/// connection: closed (`close`) or left open until the client goes.
async fn scripted(
    head: String,
    body: Vec<u8>,
    close: bool,
) -> (String, tokio::task::JoinHandle<()>) {
    let (addr, task) = raw_server(move |mut stream, _| {
        let (head, body) = (head.clone(), body.clone());
        async move {
            let mut request = [0u8; 4096];
            let _ = tokio::io::AsyncReadExt::read(&mut stream, &mut request).await;
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body).await;
            let _ = stream.flush().await;
            if close {
                let _ = stream.shutdown().await;
            } else {
                // Held open: whatever the client does, it must not wait for more bytes.
                let mut rest = [0u8; 1024];
                while let Ok(n) = tokio::io::AsyncReadExt::read(&mut stream, &mut rest).await {
                    if n == 0 {
                        break;
                    }
                }
            }
        }
    })
    .await;
    (format!("http://{addr}"), task)
}

fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

// ---------------------------------------------------------------------------------------------
// Protobuf lists and objects.

#[tokio::test]
async fn a_protobuf_list_cut_mid_item_by_a_closed_connection_is_a_typed_error() {
    let body = configmap_list(&["a", "b", "c"]);
    let third = registry::codec::<ConfigMap>()
        .unwrap()
        .encode_message(&configmap("c"));
    let at = body.windows(third.len()).position(|w| w == third).unwrap() + third.len() / 2;
    // With a Content-Length the connection breaks before it, and chunked without the last
    // chunk: either way a broken body, not a short list.
    for framing in ["content-length", "chunked"] {
        let (head, sent) = match framing {
            "content-length" => (
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {PROTOBUF}\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                ),
                body[..at].to_vec(),
            ),
            _ => (
                format!("HTTP/1.1 200 OK\r\ncontent-type: {PROTOBUF}\r\ntransfer-encoding: chunked\r\n\r\n"),
                chunk(&body[..at]),
            ),
        };
        let (url, _server) = scripted(head, sent, true).await;
        let client = RestClient::new(config(&url)).unwrap();
        let error = list::<ConfigMap>(core(&client, "configmaps").max_retries(0))
            .await
            .expect_err("a cut list");
        assert!(
            matches!(error, Error::Transport { .. }),
            "{framing}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_protobuf_list_of_another_kind_is_refused_naming_the_kind_found() {
    let body = configmap_list(&["a", "b"]);
    let server = TestServer::http(move |_| {
        std::future::ready(support::pieces(&body, 7, false, Some(PROTOBUF)))
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let error = list::<Pod>(core(&client, "pods"))
        .await
        .expect_err("ConfigMaps for Pods");
    assert!(matches!(error, Error::ProtobufDecode { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("expected a PodList, got a \"ConfigMapList\""),
        "{error}"
    );
}

#[tokio::test]
async fn a_protobuf_object_of_another_kind_or_content_type_is_refused_naming_it() {
    let cm = registry::codec::<ConfigMap>()
        .unwrap()
        .encode_body(&configmap("a"));
    // The envelope of a Pod whose object is JSON.
    let mut json_pod = envelope::MAGIC.to_vec();
    json_pod.extend_from_slice(b"\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x02{}\x22\x10application/json");
    for (body, expected) in [
        (cm, "expected a Pod, got a \"ConfigMap\""),
        (
            json_pod,
            "contentType: the envelope's object is \"application/json\"",
        ),
    ] {
        let server = TestServer::http(move |_| {
            let body = body.clone();
            async move {
                http::Response::builder()
                    .header("content-type", PROTOBUF)
                    .body(full(body))
                    .unwrap()
            }
        })
        .await;
        let client = RestClient::new(config(&server.url())).unwrap();
        let error = bounded("a Pod", core(&client, "pods").name("a").decode::<Pod>())
            .await
            .expect_err("not a Pod");
        assert!(matches!(error, Error::ProtobufDecode { .. }), "{error:?}");
        assert!(error.to_string().contains(expected), "{error}");
    }
}

// ---------------------------------------------------------------------------------------------
// Protobuf watches.

fn watch(client: &RestClient) -> kclient_rest::Request {
    core(client, "configmaps").param("watch", "true")
}

const WATCH_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/vnd.kubernetes.protobuf;stream=watch\r\ntransfer-encoding: chunked\r\n\r\n";

#[tokio::test]
async fn a_watch_frame_over_the_bound_is_refused_on_its_header_while_the_connection_stays_open() {
    // 4 GiB - 1 claimed, and nothing after it: the error cannot wait for the bytes.
    for (bound, header) in [
        (None, [0xffu8, 0xff, 0xff, 0xff]),
        (Some(1024), [0, 0, 4, 1]),
    ] {
        let (url, _server) = scripted(WATCH_HEAD.to_owned(), chunk(&header), false).await;
        let client = RestClient::new(config(&url)).unwrap();
        let mut request = watch(&client);
        if let Some(bound) = bound {
            request = request.max_watch_frame_len(bound);
        }
        let events: Vec<_> = bounded("a watch", async {
            request.watch::<ConfigMap>().await.unwrap().collect().await
        })
        .await;
        let claimed = u32::from_be_bytes(header);
        let limit = bound.unwrap_or(kclient_rest::watch::DEFAULT_MAX_WATCH_FRAME_LEN);
        match &events[..] {
            [Err(Error::Watch(WatchDecodeError::Protobuf { message }))] => assert_eq!(
                message,
                &format!("watch frame of {claimed} bytes exceeds the limit of {limit}")
            ),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn a_watch_frame_claiming_more_than_follows_ends_with_a_typed_error() {
    let frame_of = |ty: &str, name: &str| {
        let codec = registry::codec::<ConfigMap>().unwrap();
        kclient_protobuf::core_types::encode_event_frame(ty, &codec.encode_body(&configmap(name)))
    };
    let mut stream = frame_of("ADDED", "a");
    // A frame of 1 GiB (within a bound raised to 2 GiB) of which 16 bytes come: only what
    // came is buffered, and the end of the body is a truncated stream.
    stream.extend_from_slice(&[0x40, 0, 0, 0]);
    stream.extend_from_slice(&[7; 16]);
    for (ending, close) in [("0\r\n\r\n", false), ("", true)] {
        let mut body = chunk(&stream);
        body.extend_from_slice(ending.as_bytes());
        let (url, _server) = scripted(WATCH_HEAD.to_owned(), body, close).await;
        let client = RestClient::new(config(&url)).unwrap();
        let events: Vec<_> = bounded("a watch", async {
            watch(&client)
                .max_watch_frame_len(2 << 30)
                .watch::<ConfigMap>()
                .await
                .unwrap()
                .collect()
                .await
        })
        .await;
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(events[0].is_ok());
        if close {
            // The connection broke inside the chunked body.
            assert!(
                matches!(events[1], Err(Error::Transport { .. })),
                "{events:?}"
            );
        } else {
            assert!(
                matches!(
                    events[1],
                    Err(Error::Watch(WatchDecodeError::Truncated { buffered: 20 }))
                ),
                "{events:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// gzip.

/// A deflate stream written by hand with the fixed Huffman codes, bit by bit (least
/// significant first, as deflate packs them): literals, and runs of zeros as a literal 0 then
/// matches of 258 bytes at distance 1 (13 bits each: some 160 times smaller than the zeros,
/// without compressing a gigabyte to make it).
struct Deflate {
    out: Vec<u8>,
    bits: u64,
    n: u32,
    crc: flate2::Crc,
    /// The CRC of 2^k zeros, by k.
    zero_crcs: Vec<flate2::Crc>,
}

impl Deflate {
    fn new() -> Self {
        let mut d = Self {
            out: Vec::new(),
            bits: 0,
            n: 0,
            crc: flate2::Crc::new(),
            zero_crcs: Vec::new(),
        };
        let mut one = flate2::Crc::new();
        one.update(&[0]);
        d.zero_crcs.push(one);
        for k in 1..40 {
            let mut next = flate2::Crc::new();
            next.combine(&d.zero_crcs[k - 1]);
            next.combine(&d.zero_crcs[k - 1]);
            d.zero_crcs.push(next);
        }
        d.put(1, 1); // the final block
        d.put(1, 2); // fixed Huffman codes
        d
    }

    fn put(&mut self, value: u32, len: u32) {
        self.bits |= u64::from(value) << self.n;
        self.n += len;
        while self.n >= 8 {
            self.out.push(self.bits as u8);
            self.bits >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code: written from its most significant bit.
    fn code(&mut self, code: u32, len: u32) {
        let reversed = code.reverse_bits() >> (32 - len);
        self.put(reversed, len);
    }

    fn literals(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                0..=143 => self.code(0x30 + u32::from(b), 8),
                _ => self.code(0x190 + u32::from(b) - 144, 9),
            }
        }
        self.crc.update(bytes);
    }

    /// `1 + 258 * runs` zeros.
    fn zeros(&mut self, runs: u64) {
        self.code(0x30, 8);
        for _ in 0..runs {
            self.code(0xc5, 8); // length 258 (symbol 285)
            self.code(0, 5); // distance 1
        }
        let mut n = 1 + 258 * runs;
        let mut k = 0;
        while n > 0 {
            if n & 1 == 1 {
                self.crc.combine(&self.zero_crcs[k]);
            }
            n >>= 1;
            k += 1;
        }
    }

    /// The gzip file: header, the block ended, CRC and length.
    fn gzip(mut self) -> Vec<u8> {
        self.code(0, 7); // end of block (symbol 256)
        if self.n > 0 {
            self.put(0, 8 - self.n);
        }
        let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        out.extend_from_slice(&self.out);
        out.extend_from_slice(&self.crc.sum().to_le_bytes());
        out.extend_from_slice(&self.crc.amount().to_le_bytes());
        out
    }
}

/// About 1 GiB of zeros (1 + 258 × 4,161,790 bytes) in some 6.8 MB of gzip.
fn zeros_bomb() -> Vec<u8> {
    let mut d = Deflate::new();
    d.zeros(4_161_790);
    d.gzip()
}

#[test]
fn the_hand_written_gzip_is_valid_gzip() {
    use std::io::Read as _;
    let mut d = Deflate::new();
    d.literals(b"k8s\0\xff\x90hello");
    d.zeros(1000);
    d.literals(b"end");
    let gz = d.gzip();
    let mut inflated = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut inflated)
        .expect("valid gzip");
    let mut expected = b"k8s\0\xff\x90hello".to_vec();
    expected.extend_from_slice(&[0; 1 + 258 * 1000]);
    expected.extend_from_slice(b"end");
    assert_eq!(inflated, expected);
}

fn gzip_response(body: Vec<u8>, content_type: &'static str) -> http::Response<support::Body> {
    http::Response::builder()
        .header("content-type", content_type)
        .header("content-encoding", "gzip")
        .body(full(body))
        .unwrap()
}

#[tokio::test]
async fn a_gzip_bomb_read_whole_stops_at_the_bound_with_a_typed_error() {
    let bomb = zeros_bomb();
    assert!(bomb.len() < 8 << 20, "{}", bomb.len());
    let server = TestServer::http(move |_| {
        std::future::ready(gzip_response(bomb.clone(), "application/json"))
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let limit = 64 << 20;
    let error = bounded(
        "a bomb",
        core(&client, "configmaps")
            .name("a")
            .max_inflated_len(limit)
            .send(),
    )
    .await
    .expect_err("past the bound");
    assert!(
        matches!(&error, Error::InflatedTooLarge { limit: l, .. } if *l == limit),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("inflates past the limit of 67108864 bytes"),
        "{error}"
    );
}

#[tokio::test]
async fn a_gzip_bomb_read_as_a_list_stops_at_the_bound_with_a_typed_error() {
    // Of zeros: the list's reader refuses the first step (no magic), not the whole bomb.
    let bomb = zeros_bomb();
    let server =
        TestServer::http(move |_| std::future::ready(gzip_response(bomb.clone(), PROTOBUF))).await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let error = list::<ConfigMap>(core(&client, "configmaps"))
        .await
        .expect_err("zeros");
    assert!(error.to_string().contains("no k8s\\0 prefix"), "{error}");

    // A well-formed list that never ends: fields the reader skips (unknown to a list, each
    // 16 MiB of zeros) until the inflated bound.
    let mut d = Deflate::new();
    d.literals(&envelope::MAGIC);
    d.literals(b"\x0a\x13\x0a\x02v1\x12\x0dConfigMapList");
    d.literals(&[0x12, 0xff, 0xff, 0xff, 0xff, 0x0f]); // the list: 4 GiB claimed
    let runs = (16 << 20) / 258;
    let field_len: u64 = 1 + 258 * runs;
    for _ in 0..16 {
        let mut header = vec![0x1a]; // field 3
        let mut len = field_len;
        while len >= 0x80 {
            header.push((len as u8) | 0x80);
            len >>= 7;
        }
        header.push(len as u8);
        d.literals(&header);
        d.zeros(runs);
    }
    let never_ending = d.gzip();
    let server = TestServer::http(move |_| {
        std::future::ready(gzip_response(never_ending.clone(), PROTOBUF))
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let limit = 100 << 20;
    let error = list::<ConfigMap>(
        core(&client, "configmaps")
            .max_watch_frame_len(32 << 20)
            .max_inflated_len(limit),
    )
    .await
    .expect_err("past the bound");
    assert!(
        matches!(&error, Error::InflatedTooLarge { limit: l, .. } if *l == limit),
        "{error:?}"
    );
}

#[tokio::test]
async fn corrupt_gzip_and_trailing_garbage_are_broken_bodies() {
    let good = support::gzip(&configmap_list(&["a", "b", "c"]));
    let mut corrupt = good.clone();
    let middle = corrupt.len() / 2;
    corrupt[middle] ^= 0xff;
    let mut trailing = good.clone();
    trailing.extend_from_slice(b"<html>proxy error</html>");
    let mut bad_crc = good.clone();
    let at = bad_crc.len() - 8;
    bad_crc[at] ^= 0x01;
    for (name, body) in [
        ("corrupt", corrupt),
        ("trailing garbage", trailing),
        ("bad CRC", bad_crc),
        ("cut", good[..good.len() - 3].to_vec()),
    ] {
        let server =
            TestServer::http(move |_| std::future::ready(gzip_response(body.clone(), PROTOBUF)))
                .await;
        let client = RestClient::new(config(&server.url())).unwrap();
        // Read whole, and as a list arrives.
        let whole = bounded(name, core(&client, "configmaps").send())
            .await
            .expect_err(name);
        assert!(
            matches!(whole, Error::Transport { .. }),
            "{name}: {whole:?}"
        );
        let listed = list::<ConfigMap>(core(&client, "configmaps"))
            .await
            .expect_err(name);
        assert!(
            matches!(
                listed,
                Error::Transport { .. } | Error::ProtobufDecode { .. }
            ),
            "{name}: {listed:?}"
        );
    }
}

#[tokio::test]
async fn a_lying_content_length_is_a_broken_body_not_an_allocation() {
    // 2^62 bytes claimed, 1 MiB sent (in many reads), then the connection closes: the client
    // once reserved what the header claimed (an abort), gzip-compressed or not.
    for gzipped in [false, true] {
        let data = vec![b'x'; 1 << 20];
        let (body, encoding) = if gzipped {
            (support::gzip(&data), "content-encoding: gzip\r\n")
        } else {
            (data, "")
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{encoding}content-length: 4611686018427387904\r\n\r\n"
        );
        let (url, _server) = scripted(head, body, true).await;
        let client = RestClient::new(config(&url)).unwrap();
        let error = bounded(
            "a lying length",
            core(&client, "configmaps").max_retries(0).send(),
        )
        .await
        .expect_err("a cut body");
        assert!(
            matches!(error, Error::Transport { .. }),
            "gzip {gzipped}: {error:?}"
        );
    }
}
