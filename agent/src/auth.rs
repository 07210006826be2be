//! Secrets: bearer tokens checked in constant time, and `${NAME}` expanded
//! from the environment so secrets stay out of config files.
//!
//! A leaf module: it imports nothing from the crate. No function here logs or
//! returns a secret's value; errors name the variable, never what it holds.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// Whether `given` equals `expected`, in time that does not depend on where
/// they differ (the length may leak; the content does not).
pub fn tokens_equal(given: &[u8], expected: &[u8]) -> bool {
    given.ct_eq(expected).into()
}

/// Check `Authorization: Bearer <token>`; `None` when allowed (or when no
/// token is required), else the 401/403 response to send.
pub fn check_bearer(headers: &HeaderMap, token: Option<&str>) -> Option<Response> {
    let token = token?;
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        None => Some(
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "missing `Authorization: Bearer <token>`: set the token in the sender's headers\n",
            )
                .into_response(),
        ),
        Some(g) if tokens_equal(g.trim().as_bytes(), token.as_bytes()) => None,
        Some(_) => Some(
            (
                StatusCode::FORBIDDEN,
                "wrong bearer token: use the token the collector was started with\n",
            )
                .into_response(),
        ),
    }
}

/// Why a `${NAME}` could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnvError {
    /// `${` with no `}` after it.
    #[error("{what}: `${{` without a closing `}}`: write `${{NAME}}`")]
    Unclosed {
        /// What held the text (e.g. "`url`").
        what: String,
    },
    /// The variable is not set.
    #[error("{what} uses ${{{name}}}, which is not set: export {name} in the agent's environment")]
    Unset {
        /// What held the text.
        what: String,
        /// The variable's name (never its value).
        name: String,
    },
}

/// Expand `${NAME}` from the environment; `what` names the setting in errors.
pub fn expand_env(text: &str, what: &str) -> Result<String, EnvError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(EnvError::Unclosed {
                what: what.to_string(),
            });
        };
        let name = &after[..end];
        let value = std::env::var(name).map_err(|_| EnvError::Unset {
            what: what.to_string(),
            name: name.to_string(),
        })?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_by_content() {
        assert!(tokens_equal(b"abc", b"abc"));
        assert!(!tokens_equal(b"abc", b"abd"));
        assert!(!tokens_equal(b"abc", b"ab"));
        assert!(!tokens_equal(b"", b"a"));
        assert!(tokens_equal(b"", b""));
    }

    #[test]
    fn expand_env_names_the_variable_not_a_value() {
        let e = expand_env("a${TRIPCAP_SURELY_UNSET_VAR}b", "`token`").expect_err("unset");
        assert_eq!(
            e.to_string(),
            "`token` uses ${TRIPCAP_SURELY_UNSET_VAR}, which is not set: export TRIPCAP_SURELY_UNSET_VAR in the agent's environment"
        );
        assert!(matches!(
            expand_env("${X", "`url`"),
            Err(EnvError::Unclosed { .. })
        ));
        assert_eq!(expand_env("plain", "`url`").expect("no vars"), "plain");
        std::env::set_var("TRIPCAP_TEST_TOKEN_XYZ", "s3cret");
        assert_eq!(
            expand_env("Bearer ${TRIPCAP_TEST_TOKEN_XYZ}", "h").expect("set"),
            "Bearer s3cret"
        );
    }
}
