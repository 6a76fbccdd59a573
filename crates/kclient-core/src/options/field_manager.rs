//! What create, update and patch share: `fieldManager` checks and `fieldValidation`.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::OptionsError;

/// The longest `fieldManager` the API server accepts, in bytes.
pub const FIELD_MANAGER_MAX_LEN: usize = 128;

/// How the server treats unknown or duplicate fields in a create, update or patch body
/// (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FieldValidation {
    /// `Ignore`: silently drop unknown fields and keep the last of duplicate fields.
    Ignore,
    /// `Warn`: as `Ignore`, with a `Warning` header per dropped or duplicate field. The
    /// server's default.
    Warn,
    /// `Strict`: fail the request with `400 Bad Request` on unknown or duplicate fields.
    Strict,
}

impl FieldValidation {
    /// The value on the wire: `"Ignore"`, `"Warn"` or `"Strict"`.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldValidation::Ignore => "Ignore",
            FieldValidation::Warn => "Warn",
            FieldValidation::Strict => "Strict",
        }
    }
}

impl fmt::Display for FieldValidation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Checks a `fieldManager` the way the API server does: at most
/// [`FIELD_MANAGER_MAX_LEN`] bytes, and printable characters only.
///
/// "Printable" follows Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols
/// and the ASCII space. Control, format, private-use and surrogate characters and all other
/// spaces are rejected here; code points unassigned in Unicode are left for the server to
/// reject, as this crate carries no Unicode tables.
pub(super) fn validate_field_manager(field_manager: Option<&str>) -> Result<(), OptionsError> {
    let Some(field_manager) = field_manager else {
        return Ok(());
    };
    if field_manager.len() > FIELD_MANAGER_MAX_LEN {
        return Err(OptionsError::FieldManagerTooLong {
            len: field_manager.len(),
        });
    }
    match field_manager
        .char_indices()
        .find(|(_, c)| !is_printable(*c))
    {
        Some((position, character)) => Err(OptionsError::FieldManagerNotPrintable {
            character,
            position,
        }),
        None => Ok(()),
    }
}

fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    // Cc (control), Zs/Zl/Zp (spaces and separators other than ' ').
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !is_format_or_private_use(u32::from(c))
}

/// Unicode general categories Cf (format) and Co (private use).
fn is_format_or_private_use(cp: u32) -> bool {
    matches!(
        cp,
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
            | 0xE000..=0xF8FF
            | 0xF0000..=0xFFFFD
            | 0x100000..=0x10FFFD
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for name in [
            "kubectl",
            "my controller",
            "kclient/v0.1 (linux)",
            "résumé-控制器",
        ] {
            assert_eq!(validate_field_manager(Some(name)), Ok(()), "{name}");
        }
        assert_eq!(validate_field_manager(None), Ok(()));
        assert_eq!(validate_field_manager(Some("")), Ok(()));
    }

    #[test]
    fn length_is_counted_in_bytes() {
        assert_eq!(validate_field_manager(Some(&"a".repeat(128))), Ok(()));
        assert_eq!(
            validate_field_manager(Some(&"a".repeat(129))),
            Err(OptionsError::FieldManagerTooLong { len: 129 })
        );
        // 43 three-byte characters: 129 bytes.
        assert_eq!(
            validate_field_manager(Some(&"控".repeat(43))),
            Err(OptionsError::FieldManagerTooLong { len: 129 })
        );
    }

    #[test]
    fn rejects_non_printable_characters() {
        for (name, character, position) in [
            ("a\tb", '\t', 1),
            ("ab\n", '\n', 2),
            ("\u{7f}", '\u{7f}', 0),
            ("é\u{a0}", '\u{a0}', 2),
            ("a\u{200b}", '\u{200b}', 1),
            ("a\u{feff}", '\u{feff}', 1),
            ("\u{e000}", '\u{e000}', 0),
            ("x\u{2028}", '\u{2028}', 1),
        ] {
            assert_eq!(
                validate_field_manager(Some(name)),
                Err(OptionsError::FieldManagerNotPrintable {
                    character,
                    position
                }),
                "{name:?}"
            );
        }
    }

    #[test]
    fn field_validation_wire_values() {
        assert_eq!(FieldValidation::Ignore.as_str(), "Ignore");
        assert_eq!(FieldValidation::Warn.to_string(), "Warn");
        assert_eq!(
            serde_json::to_string(&FieldValidation::Strict).unwrap(),
            "\"Strict\""
        );
    }
}
