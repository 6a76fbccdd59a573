//! The error stream of protocols v4 and v5: the command's end as a `metav1.Status`
//! (client-go's `errorDecoderV4`).

use kclient_core::Status;

use super::Error;

/// The reason of a `Status` that reports a non-zero exit.
pub const NON_ZERO_EXIT_CODE_REASON: &str = "NonZeroExitCode";
/// The cause type that carries the exit code in its message.
pub const EXIT_CODE_CAUSE_TYPE: &str = "ExitCode";

/// A command that ended with a non-zero exit code (client-go's `exec.CodeExitError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("command terminated with exit code {code}")]
pub struct CodeExitError {
    /// The exit code (0–255).
    pub code: i32,
}

/// What the error stream said: `Ok` for success (or nothing at all), the exit code or the
/// server's failure otherwise.
pub(crate) fn decode(message: &[u8]) -> Result<(), Error> {
    if message.is_empty() {
        return Ok(());
    }
    let status: Status = serde_json::from_slice(message).map_err(|e| {
        Error::ErrorStream(format!(
            "error stream protocol error: {e} in {:?}",
            String::from_utf8_lossy(message)
        ))
    })?;
    match status.status.as_str() {
        Status::SUCCESS => Ok(()),
        Status::FAILURE if status.reason.as_str() == NON_ZERO_EXIT_CODE_REASON => {
            let Some(details) = &status.details else {
                return Err(Error::ErrorStream(
                    "error stream protocol error: details must be set".into(),
                ));
            };
            let Some(cause) = details
                .causes
                .iter()
                .find(|c| c.cause_type == EXIT_CODE_CAUSE_TYPE)
            else {
                return Err(Error::ErrorStream(format!(
                    "error stream protocol error: no {EXIT_CODE_CAUSE_TYPE} cause given"
                )));
            };
            // As client-go (`strconv.ParseUint(message, 10, 8)`): decimal digits only.
            let digits =
                !cause.message.is_empty() && cause.message.bytes().all(|b| b.is_ascii_digit());
            let code: u8 = cause
                .message
                .parse()
                .ok()
                .filter(|_| digits)
                .ok_or_else(|| {
                    Error::ErrorStream(format!(
                        "error stream protocol error: invalid exit code value {:?}",
                        cause.message
                    ))
                })?;
            Err(Error::NonZeroExit(CodeExitError {
                code: i32::from(code),
            }))
        }
        Status::FAILURE => Err(Error::Remote(Box::new(status))),
        _ => Err(Error::ErrorStream(
            "error stream protocol error: unknown error".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(code: &str) -> Vec<u8> {
        format!(
            r#"{{"metadata":{{}},"status":"Failure","message":"command terminated with non-zero exit code: command terminated with exit code {code}","reason":"NonZeroExitCode","details":{{"causes":[{{"reason":"ExitCode","message":"{code}"}}]}}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn success_and_silence_are_success() {
        assert!(decode(br#"{"metadata":{},"status":"Success"}"#).is_ok());
        assert!(decode(b"").is_ok());
    }

    #[test]
    fn exit_codes_come_from_the_exit_code_cause() {
        match decode(&exit("3")) {
            Err(Error::NonZeroExit(e)) => {
                assert_eq!(e.code, 3);
                assert_eq!(e.to_string(), "command terminated with exit code 3");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decode(&exit("255")),
            Err(Error::NonZeroExit(CodeExitError { code: 255 }))
        ));
        for bad in ["256", "-1", "x", "+3", ""] {
            match decode(&exit(bad)) {
                Err(Error::ErrorStream(m)) => assert!(m.contains("invalid exit code value"), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn other_failures_and_garbage() {
        let internal = br#"{"metadata":{},"status":"Failure","message":"Internal error occurred: unable to upgrade connection: container not found (\"c\")","reason":"InternalError","details":{"causes":[{"message":"unable to upgrade connection: container not found (\"c\")"}]},"code":500}"#;
        match decode(internal) {
            Err(Error::Remote(status)) => {
                assert_eq!(status.code, 500);
                assert!(status.message.contains("container not found"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(decode(b"not json"), Err(Error::ErrorStream(_))));
        assert!(matches!(
            decode(br#"{"status":"Failure","reason":"NonZeroExitCode"}"#),
            Err(Error::ErrorStream(m)) if m.contains("details must be set")
        ));
        assert!(matches!(
            decode(br#"{"status":"Failure","reason":"NonZeroExitCode","details":{}}"#),
            Err(Error::ErrorStream(m)) if m.contains("no ExitCode cause")
        ));
        assert!(matches!(
            decode(br#"{"status":"Sideways"}"#),
            Err(Error::ErrorStream(m)) if m.contains("unknown error")
        ));
    }
}
