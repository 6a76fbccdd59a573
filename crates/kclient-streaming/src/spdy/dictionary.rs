//! The zlib dictionary of SPDY/3's header compression (the SPDY/3 specification, section
//! 2.6.10.1): both sides prime their compressor and decompressor with it, so the common
//! header names compress from the first frame on.

use std::sync::OnceLock;

/// The words the dictionary starts with, each written as a 4-byte big-endian length and the
/// word.
const WORDS: &[&str] = &[
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
];

/// The text that follows the words, as it is (no length prefixes).
const TAIL: &str = concat!(
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
    "203 Non-Authoritative Information",
    "204 No Content",
    "301 Moved Permanently",
    "400 Bad Request",
    "401 Unauthorized",
    "403 Forbidden",
    "404 Not Found",
    "500 Internal Server Error",
    "501 Not Implemented",
    "503 Service Unavailable",
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 ",
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT",
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,",
    "text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdch",
    "charset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
);

/// The dictionary (1,423 bytes).
pub(crate) fn header_dictionary() -> &'static [u8] {
    static DICTIONARY: OnceLock<Vec<u8>> = OnceLock::new();
    DICTIONARY.get_or_init(|| {
        let mut dictionary = Vec::with_capacity(1423);
        for word in WORDS {
            let len = u32::try_from(word.len()).unwrap_or(u32::MAX);
            dictionary.extend_from_slice(&len.to_be_bytes());
            dictionary.extend_from_slice(word.as_bytes());
        }
        dictionary.extend_from_slice(TAIL.as_bytes());
        dictionary
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's dictionary is 1,423 bytes with Adler-32 `0xe3c6a7c2` (the
    /// checksum a zlib stream primed with it carries in its header).
    #[test]
    fn the_dictionary_is_the_specification_s() {
        let dictionary = header_dictionary();
        assert_eq!(dictionary.len(), 1423);
        let mut compress = flate2::Compress::new(flate2::Compression::best(), true);
        let adler = compress.set_dictionary(dictionary).unwrap();
        assert_eq!(adler, 0xe3c6_a7c2);
        assert!(dictionary.starts_with(b"\0\0\0\x07options\0\0\0\x04head"));
        assert!(dictionary.ends_with(b",*,enq=0."));
    }
}
