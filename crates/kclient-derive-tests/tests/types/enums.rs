//! Enums of every serde representation.

use kclient_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A choice among enums.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "shapes.example.com",
    version = "v1",
    kind = "Choice",
    namespaced,
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct ChoiceSpec {
    /// A unit enum, its variants documented.
    pub phase: Phase,
    /// A unit enum, renamed.
    pub mode: Mode,
    /// An optional unit enum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_phase: Option<Phase>,
    /// An internally tagged enum.
    pub source: Source,
    /// An externally tagged enum with struct variants.
    pub action: Action,
    /// A number or a name.
    pub port: PortRef,
    /// An externally tagged enum mixing unit and struct variants (any value).
    pub strategy: Strategy,
}

/// A phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub enum Phase {
    /// Waiting.
    Pending,
    /// Running.
    Running,
    /// Done.
    Succeeded,
}

/// A mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Fast,
    Safe,
}

/// Where data comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Source {
    /// From a URL.
    Http {
        /// The URL.
        url: String,
    },
    /// From a bucket.
    Bucket {
        /// The bucket.
        bucket: String,
        /// The key prefix.
        #[serde(default)]
        prefix: String,
    },
}

/// What to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// Scale.
    Scale {
        /// To how many.
        replicas: i32,
    },
    /// Restart.
    Restart {
        /// Why.
        reason: String,
    },
}

/// A port by number or name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PortRef {
    /// A number.
    Number(i32),
    /// A name.
    Name(String),
}

/// How to roll out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Strategy {
    /// All at once.
    Recreate,
    /// A few at a time.
    Rolling {
        /// How many at most.
        max_surge: i32,
    },
}
