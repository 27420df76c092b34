//! The POST policy: a base64 JSON document with an `expiration` and
//! `conditions` the form must meet (AWS, "Creating a POST Policy"):
//! exact matches (`{"field": "v"}`, `["eq", "$field", "v"]`), prefixes
//! (`["starts-with", "$field", "p"]`; every item of a comma-separated
//! `Content-Type`), and `["content-length-range", min, max]`. Every
//! field of the form but `file`, `policy`, `x-amz-signature` and
//! `x-ignore-*` must be named by a condition. Refusals carry AWS's
//! messages.

use base64::Engine;
use serde_json::Value;

/// One condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The field (lowercase, its `$` taken off; `None`: written without
    /// the `$`, which never matches) equals `value`.
    Eq {
        /// The field.
        field: Option<String>,
        /// The value it must have.
        value: String,
        /// The condition as AWS quotes it in a refusal.
        text: String,
    },
    /// The field starts with `prefix`.
    StartsWith {
        /// The field.
        field: Option<String>,
        /// What it must start with.
        prefix: String,
        /// The condition as AWS quotes it in a refusal.
        text: String,
    },
    /// The file's size is within `min..=max`.
    Range {
        /// The least size.
        min: u64,
        /// The largest.
        max: u64,
    },
}

/// A parsed policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Seconds since the epoch after which it no longer holds.
    pub expiration: i64,
    /// In the order written.
    pub conditions: Vec<Condition>,
}

/// Why a document is no policy (`InvalidPolicyDocument`, 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The field is empty.
    #[error("Invalid Policy: Expecting '{{' but found End-of-Input")]
    Empty,
    /// Not base64.
    #[error("Invalid Policy: invalid Base64 encoding.")]
    Base64,
    /// Not JSON, or a value of the wrong type.
    #[error("Invalid Policy: Invalid JSON.")]
    Json,
    /// A top-level key other than `expiration` and `conditions`.
    #[error("Invalid Policy: Unexpected: {0:?}")]
    Unexpected(String),
    /// No `expiration`.
    #[error("Invalid Policy: Policy missing expiration.")]
    MissingExpiration,
    /// An `expiration` that is no ISO 8601 time.
    #[error("Invalid Policy: Invalid 'expiration' value: '{0}'")]
    InvalidExpiration(String),
    /// No `conditions`.
    #[error("Invalid Policy: Policy missing conditions.")]
    MissingConditions,
    /// `conditions` is no list.
    #[error("Invalid Policy: Invalid 'conditions' value: must be a List.")]
    InvalidConditions,
    /// A condition neither a list nor an object.
    #[error("Invalid Policy: Invalid condition test: must be a List or Object.")]
    InvalidCondition,
    /// An empty list.
    #[error("Invalid Policy: Invalid Condition: missing operation identifier.")]
    MissingOperation,
    /// An operation other than `eq`, `starts-with`, `content-length-range`.
    #[error("Invalid Policy: Invalid Condition: unknown operation '{0}'.")]
    UnknownOperation(String),
    /// An operation with other than two arguments.
    #[error("Invalid Policy: Invalid {0}: wrong number of arguments.")]
    ArgumentCount(String),
    /// An object condition with other than one property.
    #[error("Invalid Policy: Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.")]
    OneProperty,
    /// An object condition whose value is no string.
    #[error("Invalid Policy: Invalid Simple-Condition: value must be a string.")]
    SimpleValue,
}

/// Why a form does not meet its policy (`AccessDenied`, 403).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// Past its `expiration`.
    #[error("Invalid according to Policy: Policy expired.")]
    Expired,
    /// A condition (as written) that does not hold.
    #[error("Invalid according to Policy: Policy Condition failed: {0}")]
    Failed(String),
    /// A field no condition names.
    #[error("Invalid according to Policy: Extra input fields: {0}")]
    Extra(String),
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]Z` → seconds since the epoch.
pub fn parse_expiration(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let rest = s.get(19..)?.strip_suffix('Z')?;
    let frac_ok = rest.is_empty()
        || rest
            .strip_prefix('.')
            .is_some_and(|f| !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()));
    if !frac_ok {
        return None;
    }
    let compact = format!(
        "{}{}{}T{}{}{}Z",
        &s[0..4],
        &s[5..7],
        &s[8..10],
        &s[11..13],
        &s[14..16],
        &s[17..19]
    );
    crate::precheck::auth::parse_amz_date(&compact)
}

/// A condition field: `$name` → `Some(name)` in lowercase.
fn field_of(s: &str) -> Option<String> {
    s.strip_prefix('$').map(str::to_ascii_lowercase)
}

fn array_condition(items: &[Value]) -> Result<Condition, PolicyError> {
    let text = serde_json::to_string(items).unwrap_or_default();
    let op = match items.first() {
        None => return Err(PolicyError::MissingOperation),
        Some(Value::String(op)) => op.to_ascii_lowercase(),
        Some(_) => return Err(PolicyError::Json),
    };
    let known = matches!(op.as_str(), "eq" | "starts-with" | "content-length-range");
    if !known {
        return Err(PolicyError::UnknownOperation(op));
    }
    if items.len() != 3 {
        return Err(PolicyError::ArgumentCount(op));
    }
    if op == "content-length-range" {
        let (Some(min), Some(max)) = (items[1].as_u64(), items[2].as_u64()) else {
            return Err(PolicyError::Json);
        };
        return Ok(Condition::Range { min, max });
    }
    let (Some(f), Some(v)) = (items[1].as_str(), items[2].as_str()) else {
        return Err(PolicyError::Json);
    };
    let (field, v) = (field_of(f), v.to_string());
    Ok(if op == "eq" {
        Condition::Eq {
            field,
            value: v,
            text,
        }
    } else {
        Condition::StartsWith {
            field,
            prefix: v,
            text,
        }
    })
}

fn object_condition(m: &serde_json::Map<String, Value>) -> Result<Condition, PolicyError> {
    let mut it = m.iter();
    let (Some((k, v)), None) = (it.next(), it.next()) else {
        return Err(PolicyError::OneProperty);
    };
    let Value::String(v) = v else {
        return Err(PolicyError::SimpleValue);
    };
    let name = k.strip_prefix('$').unwrap_or(k);
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    Ok(Condition::Eq {
        field: Some(name.to_ascii_lowercase()),
        value: v.clone(),
        text: format!("[\"eq\", {}, {}]", q(&format!("${name}")), q(v)),
    })
}

impl Policy {
    /// The policy in form field `b64`.
    pub fn parse(b64: &str) -> Result<Policy, PolicyError> {
        let b64: String = b64.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        if b64.is_empty() {
            return Err(PolicyError::Empty);
        }
        let doc = base64::engine::general_purpose::STANDARD
            .decode(&b64)
            .map_err(|_| PolicyError::Base64)?;
        let Ok(Value::Object(top)) = serde_json::from_slice::<Value>(&doc) else {
            return Err(PolicyError::Json);
        };
        if let Some(k) = top
            .keys()
            .find(|k| *k != "expiration" && *k != "conditions")
        {
            return Err(PolicyError::Unexpected(k.clone()));
        }
        let expiration = match top.get("expiration") {
            None => return Err(PolicyError::MissingExpiration),
            Some(Value::String(s)) => {
                parse_expiration(s).ok_or_else(|| PolicyError::InvalidExpiration(s.clone()))?
            }
            Some(_) => return Err(PolicyError::Json),
        };
        let list = match top.get("conditions") {
            None => return Err(PolicyError::MissingConditions),
            Some(Value::Array(a)) => a,
            Some(_) => return Err(PolicyError::InvalidConditions),
        };
        let conditions = list
            .iter()
            .map(|c| match c {
                Value::Array(items) => array_condition(items),
                Value::Object(m) => object_condition(m),
                _ => Err(PolicyError::InvalidCondition),
            })
            .collect::<Result<_, _>>()?;
        Ok(Policy {
            expiration,
            conditions,
        })
    }

    /// The sizes `content-length-range` allows (every one of them, when
    /// there are several).
    pub fn length_range(&self) -> (u64, u64) {
        self.conditions
            .iter()
            .fold((0, u64::MAX), |(lo, hi), c| match c {
                Condition::Range { min, max } => (lo.max(*min), hi.min(*max)),
                _ => (lo, hi),
            })
    }

    /// Whether the form (`value`: a field's value, `""` when absent;
    /// `names`: the fields sent) meets every condition but the length,
    /// and every field is named by one, at `now`.
    pub fn check(
        &self,
        now: i64,
        value: &dyn Fn(&str) -> String,
        names: &[&str],
    ) -> Result<(), Violation> {
        if now >= self.expiration {
            return Err(Violation::Expired);
        }
        for c in &self.conditions {
            let failed = match c {
                Condition::Eq {
                    field,
                    value: want,
                    text,
                } => field
                    .as_deref()
                    .is_none_or(|f| value(f) != *want)
                    .then_some(text),
                Condition::StartsWith {
                    field,
                    prefix,
                    text,
                } => (!field.as_deref().is_some_and(|f| {
                    let v = value(f);
                    if f == "content-type" {
                        v.split(',').all(|t| t.trim().starts_with(prefix.as_str()))
                    } else {
                        v.starts_with(prefix.as_str())
                    }
                }))
                .then_some(text),
                Condition::Range { .. } => None,
            };
            if let Some(text) = failed {
                return Err(Violation::Failed(text.clone()));
            }
        }
        let named = |n: &str| {
            self.conditions.iter().any(|c| match c {
                Condition::Eq { field, .. } | Condition::StartsWith { field, .. } => {
                    field.as_deref() == Some(n)
                }
                Condition::Range { .. } => false,
            })
        };
        match names.iter().find(|n| !exempt(n) && !named(n)) {
            Some(n) => Err(Violation::Extra(n.to_string())),
            None => Ok(()),
        }
    }
}

/// Fields no condition needs to name.
fn exempt(name: &str) -> bool {
    // SigV2 forms sign with `AWSAccessKeyId` and `signature`.
    matches!(
        name,
        "file" | "policy" | "x-amz-signature" | "awsaccesskeyid" | "signature"
    ) || name.starts_with("x-ignore-")
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
