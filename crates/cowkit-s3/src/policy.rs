//! Bucket policies: the JSON document of PutBucketPolicy, checked as
//! VersityGW's posix gateway checks it (its `MalformedPolicy` messages), and
//! evaluated as AWS evaluates a resource policy: a matching explicit `Deny`
//! wins, then a matching `Allow`; nothing matching is no decision (the ACL
//! does not apply then: see [`crate::authz`]).
//!
//! Pure functions: [`Policy::parse`] reads and validates a document,
//! [`Policy::decide`] evaluates it for one principal, action and resource
//! with the request's condition keys ([`condition::Context`]).
//!
//! ```
//! use cowkit_s3::policy::{Decision, Policy, Requester};
//! let doc = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow",
//!   "Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}"#;
//! let p = Policy::parse(doc, "photos", &|_| false).unwrap();
//! let d = p.decide(Requester::Anonymous, "s3:GetObject", "photos/cat.jpg", &Default::default());
//! assert_eq!(d, Decision::Allow);
//! ```

use std::collections::BTreeSet;

use serde_json::Value;

pub mod condition;

use condition::{Condition, Context};

/// The largest policy document accepted (AWS's limit for bucket policies,
/// 20 KB).
pub const MAX_POLICY_BYTES: usize = 20 * 1024;

/// The deepest nesting of arrays and objects a document may have (a
/// policy with conditions nests 5 deep).
pub const MAX_POLICY_DEPTH: usize = 12;

/// The prefix of an S3 resource ARN.
pub const ARN_PREFIX: &str = "arn:aws:s3:::";

/// Why a policy document is refused: the message of S3's
/// `MalformedPolicy` (400), worded as VersityGW's suite expects it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// Not a JSON object.
    #[error("Policies must be valid JSON and the first byte must be '{{'")]
    FirstChar,
    /// Not well-formed JSON, or an element of the wrong type.
    #[error("This policy contains invalid Json")]
    InvalidJson,
    /// No `Statement`.
    #[error("Missing required field Statement")]
    MissingStatement,
    /// `Statement` is an empty list.
    #[error("Could not parse the policy: Statement is empty!")]
    EmptyStatement,
    /// A statement lacks a required element (`Effect`, `Principal`, ...).
    #[error("Missing required field {0}")]
    MissingField(&'static str),
    /// `Version` is not `2008-10-17` or `2012-10-17`.
    #[error("The policy must contain a valid version string")]
    InvalidVersion,
    /// `Effect` is not `Allow` or `Deny`.
    #[error("Invalid effect: {0}")]
    InvalidEffect(String),
    /// A principal that is empty, `*` beside others, or no known account.
    #[error("Invalid principal in policy")]
    InvalidPrincipal,
    /// An action that is no S3 action.
    #[error("Policy has invalid action")]
    InvalidAction,
    /// A resource that is not `arn:aws:s3:::` this bucket.
    #[error("Policy has invalid resource")]
    InvalidResource,
    /// An object action with only bucket resources, or the reverse.
    #[error("Action does not apply to any resource(s) in statement")]
    ResourceMismatch,
    /// A condition operator S3 does not know.
    #[error("Invalid Condition type : {0}")]
    InvalidConditionType(String),
    /// A condition key S3 does not know.
    #[error("Policy has an invalid condition key")]
    InvalidConditionKey,
    /// A condition key none of the statement's actions has.
    #[error("Conditions do not apply to combination of actions and resources in statement")]
    ConditionActionMismatch,
    /// An `aws:SourceIp` value that is no address or CIDR block.
    #[error("Invalid IP address in Conditions")]
    InvalidIp,
    /// An element this gateway does not evaluate (`NotPrincipal`,
    /// `NotAction`, `NotResource`): refused rather than ignored.
    #[error("Policy element {0} is not supported")]
    Unsupported(String),
    /// Over [`MAX_POLICY_BYTES`].
    #[error("Policy exceeds the maximum allowed document size ({MAX_POLICY_BYTES} bytes)")]
    TooLarge,
    /// Nested deeper than [`MAX_POLICY_DEPTH`].
    #[error("Policy nests deeper than {MAX_POLICY_DEPTH} levels")]
    TooDeep,
}

/// A policy's `Version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `2008-10-17` (the default): no policy variables.
    V2008,
    /// `2012-10-17`: `${aws:...}` variables in string conditions.
    V2012,
}

/// `Allow` or `Deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Grants what the statement matches.
    Allow,
    /// Refuses it, whatever else allows it.
    Deny,
}

/// The principals of a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principals {
    /// `"*"`: everyone, anonymous requests too.
    Everyone,
    /// These access keys.
    Keys(BTreeSet<String>),
}

/// One statement.
#[derive(Debug, Clone)]
pub struct Statement {
    /// Allow or Deny.
    pub effect: Effect,
    /// Who.
    pub principals: Principals,
    /// Action patterns (`s3:GetObject`, `s3:Get*`, `s3:*`).
    pub actions: BTreeSet<String>,
    /// Resource patterns without the `arn:aws:s3:::` prefix (`bucket`,
    /// `bucket/*`, `bucket/a?c/*`).
    pub resources: BTreeSet<String>,
    /// The `Condition` block (none: always holds).
    pub condition: Option<Condition>,
}

/// A checked bucket policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The version.
    pub version: Version,
    /// The statements, in document order.
    pub statements: Vec<Statement>,
}

/// Who asks, as a policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requester<'a> {
    /// An unsigned request: only `"*"` statements match.
    Anonymous,
    /// A signed request with this access key.
    Key(&'a str),
}

/// What a policy says about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A matching statement denies it.
    Deny,
    /// A matching statement allows it and none denies it.
    Allow,
    /// No statement matches.
    NoMatch,
}

/// What an action acts on: its bucket, or an object (resource
/// `bucket/key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acts {
    /// The bucket.
    OnBucket,
    /// An object of the bucket.
    OnObject,
}

/// The S3 actions a policy may name (`s3:*` aside), as VersityGW knows
/// them, with what each acts on.
pub const ACTIONS: &[(&str, Acts)] = &[
    ("s3:GetBucketAcl", Acts::OnBucket),
    ("s3:CreateBucket", Acts::OnBucket),
    ("s3:PutBucketAcl", Acts::OnBucket),
    ("s3:DeleteBucket", Acts::OnBucket),
    ("s3:PutBucketVersioning", Acts::OnBucket),
    ("s3:GetBucketVersioning", Acts::OnBucket),
    ("s3:PutBucketPolicy", Acts::OnBucket),
    ("s3:GetBucketPolicy", Acts::OnBucket),
    ("s3:DeleteBucketPolicy", Acts::OnBucket),
    ("s3:AbortMultipartUpload", Acts::OnObject),
    ("s3:ListMultipartUploadParts", Acts::OnObject),
    ("s3:ListBucketMultipartUploads", Acts::OnBucket),
    ("s3:PutObject", Acts::OnObject),
    ("s3:GetObject", Acts::OnObject),
    ("s3:GetObjectVersion", Acts::OnObject),
    ("s3:DeleteObject", Acts::OnObject),
    ("s3:DeleteObjectVersion", Acts::OnObject),
    ("s3:GetObjectAcl", Acts::OnObject),
    ("s3:GetObjectAttributes", Acts::OnObject),
    ("s3:GetObjectVersionAttributes", Acts::OnObject),
    ("s3:PutObjectAcl", Acts::OnObject),
    ("s3:RestoreObject", Acts::OnObject),
    ("s3:GetBucketTagging", Acts::OnBucket),
    ("s3:PutBucketTagging", Acts::OnBucket),
    ("s3:GetObjectTagging", Acts::OnObject),
    ("s3:GetObjectVersionTagging", Acts::OnObject),
    ("s3:PutObjectTagging", Acts::OnObject),
    ("s3:PutObjectVersionTagging", Acts::OnObject),
    ("s3:DeleteObjectTagging", Acts::OnObject),
    ("s3:DeleteObjectVersionTagging", Acts::OnObject),
    ("s3:ListBucketVersions", Acts::OnBucket),
    ("s3:ListBucket", Acts::OnBucket),
    ("s3:GetBucketObjectLockConfiguration", Acts::OnBucket),
    ("s3:PutBucketObjectLockConfiguration", Acts::OnBucket),
    ("s3:GetObjectLegalHold", Acts::OnObject),
    ("s3:PutObjectLegalHold", Acts::OnObject),
    ("s3:GetObjectRetention", Acts::OnObject),
    ("s3:PutObjectRetention", Acts::OnObject),
    ("s3:BypassGovernanceRetention", Acts::OnObject),
    ("s3:PutBucketOwnershipControls", Acts::OnBucket),
    ("s3:GetBucketOwnershipControls", Acts::OnBucket),
    ("s3:PutBucketCORS", Acts::OnBucket),
    ("s3:GetBucketCORS", Acts::OnBucket),
    ("s3:PutAnalyticsConfiguration", Acts::OnBucket),
    ("s3:GetAnalyticsConfiguration", Acts::OnBucket),
    ("s3:PutEncryptionConfiguration", Acts::OnBucket),
    ("s3:GetEncryptionConfiguration", Acts::OnBucket),
    ("s3:PutIntelligentTieringConfiguration", Acts::OnBucket),
    ("s3:GetIntelligentTieringConfiguration", Acts::OnBucket),
    ("s3:PutInventoryConfiguration", Acts::OnBucket),
    ("s3:GetInventoryConfiguration", Acts::OnBucket),
    ("s3:PutLifecycleConfiguration", Acts::OnBucket),
    ("s3:GetLifecycleConfiguration", Acts::OnBucket),
    ("s3:PutBucketLogging", Acts::OnBucket),
    ("s3:GetBucketLogging", Acts::OnBucket),
    ("s3:PutBucketRequestPayment", Acts::OnBucket),
    ("s3:GetBucketRequestPayment", Acts::OnBucket),
    ("s3:PutMetricsConfiguration", Acts::OnBucket),
    ("s3:GetMetricsConfiguration", Acts::OnBucket),
    ("s3:PutReplicationConfiguration", Acts::OnBucket),
    ("s3:GetReplicationConfiguration", Acts::OnBucket),
    ("s3:PutBucketPublicAccessBlock", Acts::OnBucket),
    ("s3:GetBucketPublicAccessBlock", Acts::OnBucket),
    ("s3:PutBucketNotification", Acts::OnBucket),
    ("s3:GetBucketNotification", Acts::OnBucket),
    ("s3:PutAccelerateConfiguration", Acts::OnBucket),
    ("s3:GetAccelerateConfiguration", Acts::OnBucket),
    ("s3:PutBucketWebsite", Acts::OnBucket),
    ("s3:GetBucketWebsite", Acts::OnBucket),
    ("s3:DeleteBucketWebsite", Acts::OnBucket),
    ("s3:GetBucketPolicyStatus", Acts::OnBucket),
    ("s3:GetBucketLocation", Acts::OnBucket),
];

/// `*` matches any run of characters, `?` any one character (bytes, as
/// S3 matches ARNs).
pub fn wildcard_match(pattern: &str, input: &str) -> bool {
    let (p, s) = (pattern.as_bytes(), input.as_bytes());
    let (mut pi, mut si) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// How deep arrays and objects nest in `doc` (outside strings).
fn nesting(doc: &[u8]) -> usize {
    let (mut depth, mut max, mut in_str, mut esc) = (0usize, 0usize, false, false);
    for &c in doc {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// A JSON object's members in document order (serde_json's `Value` sorts
/// them; the first bad element of a document decides its error).
struct Ordered(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A statement as read, before it is checked.
#[derive(Default)]
struct RawStatement {
    effect: Option<String>,
    principals: Option<Principals>,
    actions: Option<BTreeSet<String>>,
    resources: Option<BTreeSet<String>>,
    condition: Option<Value>,
}

/// A string or a list of strings (`Action`, `Resource`); `empty` is the
/// error for none or an empty one.
fn strings(v: &Value, empty: PolicyError) -> Result<Vec<String>, PolicyError> {
    match v {
        Value::String(s) if s.is_empty() => Err(empty),
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) if a.is_empty() => Err(empty),
        Value::Array(a) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or(PolicyError::InvalidJson)
            })
            .collect(),
        _ => Err(PolicyError::InvalidJson),
    }
}

/// `Principal`: `"*"`, a key, a list of keys, or `{"AWS": ...}` of either.
fn principals(v: &Value) -> Result<Principals, PolicyError> {
    let names = match v {
        Value::Object(o) => match o.iter().find(|(k, _)| k.eq_ignore_ascii_case("AWS")) {
            Some((_, aws)) => strings(aws, PolicyError::InvalidPrincipal)?,
            // `{"CanonicalUser": ...}` and other kinds name no account here.
            None => return Err(PolicyError::InvalidPrincipal),
        },
        other => strings(other, PolicyError::InvalidPrincipal)?,
    };
    let names: BTreeSet<String> = names.into_iter().collect();
    if names.contains("*") {
        return if names.len() == 1 {
            Ok(Principals::Everyone)
        } else {
            Err(PolicyError::InvalidPrincipal)
        };
    }
    Ok(Principals::Keys(names))
}

/// Whether `a` names an S3 action (a pattern must match one).
fn valid_action(a: &str) -> bool {
    a.starts_with("s3:")
        && (a == "s3:*" || ACTIONS.iter().any(|(known, _)| wildcard_match(a, known)))
}

/// Whether the action pattern `a` (not `s3:*`) covers an object action.
fn is_object_action(a: &str) -> bool {
    ACTIONS
        .iter()
        .any(|&(known, on)| on == Acts::OnObject && wildcard_match(a, known))
}

fn actions(v: &Value) -> Result<BTreeSet<String>, PolicyError> {
    let list = strings(v, PolicyError::InvalidAction)?;
    if list.iter().any(|a| !valid_action(a)) {
        return Err(PolicyError::InvalidAction);
    }
    Ok(list.into_iter().collect())
}

fn resources(v: &Value) -> Result<BTreeSet<String>, PolicyError> {
    let mut out = BTreeSet::new();
    for r in strings(v, PolicyError::InvalidResource)? {
        match r.strip_prefix(ARN_PREFIX) {
            Some(rest) if !rest.is_empty() && !rest.starts_with('/') => {
                out.insert(rest.to_string());
            }
            _ => return Err(PolicyError::InvalidResource),
        }
    }
    Ok(out)
}

/// Read one statement's elements in document order (names as JSON
/// decoders match them, case aside).
fn raw_statement(v: Value) -> Result<RawStatement, PolicyError> {
    let Ordered(members) = serde_json::from_value(v).map_err(|_| PolicyError::InvalidJson)?;
    let mut st = RawStatement::default();
    for (name, value) in members {
        match name.to_ascii_lowercase().as_str() {
            "effect" => match value {
                Value::String(s) => st.effect = Some(s),
                _ => return Err(PolicyError::InvalidJson),
            },
            "principal" => st.principals = Some(principals(&value)?),
            "action" => st.actions = Some(actions(&value)?),
            "resource" => st.resources = Some(resources(&value)?),
            "condition" => st.condition = Some(value),
            "notprincipal" | "notaction" | "notresource" => {
                return Err(PolicyError::Unsupported(name))
            }
            _ => {} // Sid and others are kept as text only.
        }
    }
    Ok(st)
}

/// The `Statement` list and `Version` of a document, read in order.
fn raw_policy(doc: &str) -> Result<(Option<String>, Vec<RawStatement>), PolicyError> {
    let Ordered(members) = serde_json::from_str(doc).map_err(|_| PolicyError::InvalidJson)?;
    let (mut version, mut statements) = (None, None);
    for (name, value) in members {
        match name.to_ascii_lowercase().as_str() {
            "version" => match value {
                Value::String(s) => version = Some(s),
                Value::Null => {}
                _ => return Err(PolicyError::InvalidJson),
            },
            "statement" => match value {
                Value::Array(list) => {
                    let read: Result<Vec<_>, _> = list.into_iter().map(raw_statement).collect();
                    statements = Some(read?);
                }
                Value::Null => {}
                _ => return Err(PolicyError::InvalidJson),
            },
            _ => {}
        }
    }
    Ok((version, statements.ok_or(PolicyError::MissingStatement)?))
}

impl Policy {
    /// Read and check a PutBucketPolicy document for `bucket`; `known`
    /// says whether an access key names an account of this gateway (a
    /// principal must).
    pub fn parse(
        doc: &str,
        bucket: &str,
        known: &dyn Fn(&str) -> bool,
    ) -> Result<Policy, PolicyError> {
        if doc.len() > MAX_POLICY_BYTES {
            return Err(PolicyError::TooLarge);
        }
        if !doc.starts_with('{') {
            return Err(PolicyError::FirstChar);
        }
        if nesting(doc.as_bytes()) > MAX_POLICY_DEPTH {
            return Err(PolicyError::TooDeep);
        }
        let (version, raw) = raw_policy(doc)?;
        if raw.is_empty() {
            return Err(PolicyError::EmptyStatement);
        }
        let version = match version.as_deref() {
            None => Version::V2008,
            Some("2008-10-17") => Version::V2008,
            Some("2012-10-17") => Version::V2012,
            Some(_) => return Err(PolicyError::InvalidVersion),
        };
        let statements = raw
            .into_iter()
            .map(|st| checked(st, bucket, known))
            .collect::<Result<_, _>>()?;
        Ok(Policy {
            version,
            statements,
        })
    }

    /// Evaluate for `who` doing `action` (`s3:GetObject`) on `resource`
    /// (`bucket` or `bucket/key`): a matching Deny wins, then a matching
    /// Allow. Anonymous requests match only `"*"` statements.
    pub fn decide(
        &self,
        who: Requester<'_>,
        action: &str,
        resource: &str,
        cx: &Context,
    ) -> Decision {
        let mut allowed = false;
        for st in &self.statements {
            let principal = match (&st.principals, who) {
                (Principals::Everyone, _) => true,
                (Principals::Keys(keys), Requester::Key(k)) => keys.contains(k),
                (Principals::Keys(_), Requester::Anonymous) => false,
            };
            let matches = principal
                && st.actions.iter().any(|a| wildcard_match(a, action))
                && st.resources.iter().any(|r| wildcard_match(r, resource))
                && st
                    .condition
                    .as_ref()
                    .is_none_or(|c| c.holds(cx, self.version == Version::V2012));
            if !matches {
                continue;
            }
            match st.effect {
                Effect::Deny => return Decision::Deny,
                Effect::Allow => allowed = true,
            }
        }
        if allowed {
            Decision::Allow
        } else {
            Decision::NoMatch
        }
    }

    /// Whether a statement grants something to everyone (`"*"`).
    pub fn is_public(&self) -> bool {
        self.statements
            .iter()
            .any(|s| s.effect == Effect::Allow && s.principals == Principals::Everyone)
    }
}

/// Check one statement, in VersityGW's order: effect, principals,
/// resources, condition, then whether each action has a resource of its kind.
fn checked(
    st: RawStatement,
    bucket: &str,
    known: &dyn Fn(&str) -> bool,
) -> Result<Statement, PolicyError> {
    let effect = match st.effect.as_deref() {
        Some("Allow") => Effect::Allow,
        Some("Deny") => Effect::Deny,
        Some(other) => return Err(PolicyError::InvalidEffect(other.to_string())),
        None => return Err(PolicyError::MissingField("Effect")),
    };
    let principals = st
        .principals
        .ok_or(PolicyError::MissingField("Principal"))?;
    if let Principals::Keys(keys) = &principals {
        if keys.iter().any(|k| !known(k)) {
            return Err(PolicyError::InvalidPrincipal);
        }
    }
    let resources = st.resources.ok_or(PolicyError::MissingField("Resource"))?;
    if resources.iter().any(|r| !r.starts_with(bucket)) {
        return Err(PolicyError::InvalidResource);
    }
    let actions = st.actions.ok_or(PolicyError::MissingField("Action"))?;
    let condition = match st.condition {
        None | Some(Value::Null) => None,
        Some(c) => Some(Condition::parse(&c, &actions)?),
    };
    let object_resource = resources.iter().any(|r| r == "*" || r.contains('/'));
    let bucket_resource = resources.iter().any(|r| r == "*" || !r.contains('/'));
    if !actions.contains("s3:*") {
        for a in &actions {
            let fits = if is_object_action(a) {
                object_resource
            } else {
                bucket_resource
            };
            if !fits {
                return Err(PolicyError::ResourceMismatch);
            }
        }
    }
    Ok(Statement {
        effect,
        principals,
        actions,
        resources,
        condition,
    })
}

#[cfg(test)]
mod tests;
