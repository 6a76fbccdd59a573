//! [`snippet`]: a bounded, lossy preview of bytes for error messages.

/// The first `max` bytes of `bytes` as text (invalid UTF-8 replaced), with `…` appended when
/// something was cut. Errors quote bodies and frames through this, so an error message stays
/// short however large or binary the input was.
///
/// ```
/// assert_eq!(kclient_core::snippet(b"hello world", 5), "hello…");
/// assert_eq!(kclient_core::snippet(b"short", 64), "short");
/// ```
pub fn snippet(bytes: &[u8], max: usize) -> String {
    let end = bytes.len().min(max);
    let mut s = String::from_utf8_lossy(&bytes[..end]).into_owned();
    if bytes.len() > end {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::snippet;

    #[test]
    fn bounded_and_lossy() {
        assert_eq!(snippet(b"", 3), "");
        assert_eq!(snippet(b"abc", 3), "abc");
        assert_eq!(snippet(b"abcd", 3), "abc…");
        assert_eq!(snippet(b"\xff\xfeok", 64), "\u{fffd}\u{fffd}ok");
        assert_eq!(snippet(&[b'x'; 10_000], 100).chars().count(), 101);
    }
}
