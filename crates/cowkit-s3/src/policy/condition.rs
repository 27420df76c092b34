//! A statement's `Condition` block: operators (`StringEquals`,
//! `IpAddress`, `DateLessThan`, ..., with `IfExists` and the
//! `ForAllValues:`/`ForAnyValue:` qualifiers, and `Null`), the condition
//! keys the gateway fills from a request ([`Context`]), and which actions
//! each key applies to.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use serde_json::Value;

use super::PolicyError;

/// The condition keys of one request, by name (matched case-insensitively).
#[derive(Debug, Clone, Default)]
pub struct Context {
    values: BTreeMap<String, Vec<String>>,
}

impl Context {
    /// Set `key` (such as `aws:SourceIp`) to one value.
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        self.values
            .insert(key.to_ascii_lowercase(), vec![value.into()]);
    }

    fn get(&self, key: &str) -> Option<&[String]> {
        self.values
            .get(&key.to_ascii_lowercase())
            .map(Vec::as_slice)
    }
}

/// How a key's values are compared.
#[derive(Debug, Clone, Copy)]
enum Compare {
    Exact,
    IgnoreCase,
    Like,
    Numeric(fn(f64, f64) -> bool),
    Date(fn(i128, i128) -> bool),
    Bool,
    Ip,
    Null,
}

/// An operator: comparison, whether it is negated, `IfExists`, qualifier.
#[derive(Debug, Clone, Copy)]
struct Operator {
    compare: Compare,
    negate: bool,
    if_exists: bool,
    for_all: bool,
    for_any: bool,
    /// String and ARN operators take `${...}` variables in 2012-10-17.
    variables: bool,
}

/// The operators S3 knows, without `IfExists` and qualifiers.
fn base_operator(name: &str) -> Option<(Compare, bool)> {
    use Compare::*;
    Some(match name {
        "StringEquals" => (Exact, false),
        "StringNotEquals" => (Exact, true),
        "StringEqualsIgnoreCase" => (IgnoreCase, false),
        "StringNotEqualsIgnoreCase" => (IgnoreCase, true),
        "StringLike" | "ArnEquals" | "ArnLike" => (Like, false),
        "StringNotLike" | "ArnNotEquals" | "ArnNotLike" => (Like, true),
        "NumericEquals" => (Numeric(|a, e| a == e), false),
        "NumericNotEquals" => (Numeric(|a, e| a == e), true),
        "NumericLessThan" => (Numeric(|a, e| a < e), false),
        "NumericLessThanEquals" => (Numeric(|a, e| a <= e), false),
        "NumericGreaterThan" => (Numeric(|a, e| a > e), false),
        "NumericGreaterThanEquals" => (Numeric(|a, e| a >= e), false),
        "DateEquals" => (Date(|a, e| a == e), false),
        "DateNotEquals" => (Date(|a, e| a == e), true),
        "DateLessThan" => (Date(|a, e| a < e), false),
        "DateLessThanEquals" => (Date(|a, e| a <= e), false),
        "DateGreaterThan" => (Date(|a, e| a > e), false),
        "DateGreaterThanEquals" => (Date(|a, e| a >= e), false),
        "Bool" => (Bool, false),
        "BinaryEquals" => (Exact, false),
        "IpAddress" => (Ip, false),
        "NotIpAddress" => (Ip, true),
        _ => return None,
    })
}

/// Read an operator's name (`ForAnyValue:StringLikeIfExists`).
fn operator(name: &str) -> Option<Operator> {
    let (for_all, for_any, rest) = if let Some(r) = name.strip_prefix("ForAllValues:") {
        (true, false, r)
    } else if let Some(r) = name.strip_prefix("ForAnyValue:") {
        (false, true, r)
    } else {
        (false, false, name)
    };
    let mut op = Operator {
        compare: Compare::Null,
        negate: false,
        if_exists: false,
        for_all,
        for_any,
        variables: false,
    };
    if rest == "Null" {
        return Some(op);
    }
    let base = rest.strip_suffix("IfExists").unwrap_or(rest);
    let (compare, negate) = base_operator(base)?;
    op.compare = compare;
    op.negate = negate;
    op.if_exists = base.len() != rest.len();
    op.variables = base.starts_with("String") || base.starts_with("Arn");
    Some(op)
}

/// The keys a bucket policy may test, and the actions each applies to.
fn key_applies(key: &str, action: &str) -> Option<bool> {
    Some(match key.to_ascii_lowercase().as_str() {
        "aws:sourceip"
        | "aws:currenttime"
        | "aws:epochtime"
        | "aws:securetransport"
        | "aws:useragent"
        | "aws:referer"
        | "aws:principalarn"
        | "aws:username"
        | "aws:userid"
        | "aws:multifactorauthage" => true,
        "s3:prefix" | "s3:delimiter" | "s3:max-keys" => {
            matches!(action, "s3:ListBucket" | "s3:ListBucketVersions")
        }
        "s3:x-amz-acl" => matches!(
            action,
            "s3:PutObject" | "s3:PutBucketAcl" | "s3:PutObjectAcl"
        ),
        "s3:versionid" => matches!(
            action,
            "s3:GetObjectVersion"
                | "s3:DeleteObjectVersion"
                | "s3:GetObjectVersionAttributes"
                | "s3:GetObjectVersionTagging"
                | "s3:PutObjectVersionTagging"
                | "s3:DeleteObjectVersionTagging"
        ),
        _ => return None,
    })
}

/// A condition value as a string (numbers and booleans as written).
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// One test: an operator on a key, with the values it compares with.
#[derive(Debug, Clone)]
struct Test {
    op: Operator,
    key: String,
    values: Vec<String>,
}

/// A checked `Condition` block: every test must hold.
#[derive(Debug, Clone)]
pub struct Condition {
    tests: Vec<Test>,
}

/// `{"Op": {"key": value-or-list}}` as (operator name, key, values); `None`
/// when the block has another shape.
fn shape(v: &Value) -> Option<Vec<(String, String, Vec<String>)>> {
    let mut out = Vec::new();
    for (op, keys) in v.as_object()? {
        for (key, vals) in keys.as_object()? {
            let values = match vals {
                Value::Array(a) => a.iter().map(scalar).collect::<Option<Vec<_>>>()?,
                other => vec![scalar(other)?],
            };
            out.push((op.clone(), key.clone(), values));
        }
    }
    Some(out)
}

impl Condition {
    /// Check a `Condition` block for a statement with `actions`.
    pub fn parse(v: &Value, actions: &BTreeSet<String>) -> Result<Condition, PolicyError> {
        let unknown = v
            .as_object()
            .and_then(|o| o.keys().find(|k| operator(k).is_none()).cloned());
        let Some(tests) = shape(v) else {
            return Err(unknown.map_or(PolicyError::InvalidJson, PolicyError::InvalidConditionType));
        };
        if let Some(op) = unknown {
            return Err(PolicyError::InvalidConditionType(op));
        }
        let concrete: Vec<&String> = actions.iter().filter(|a| !a.contains(['*', '?'])).collect();
        let mut out = Vec::new();
        for (name, key, values) in tests {
            let op = operator(&name).ok_or(PolicyError::InvalidConditionType(name))?;
            if key_applies(&key, "").is_none() {
                return Err(PolicyError::InvalidConditionKey);
            }
            if concrete.iter().any(|a| key_applies(&key, a) != Some(true)) {
                return Err(PolicyError::ConditionActionMismatch);
            }
            if key.eq_ignore_ascii_case("aws:SourceIp") && values.iter().any(|v| cidr(v).is_none())
            {
                return Err(PolicyError::InvalidIp);
            }
            out.push(Test { op, key, values });
        }
        Ok(Condition { tests: out })
    }

    /// Whether every test holds for `cx` (`variables`: substitute
    /// `${key}` in string and ARN values, as policies of 2012-10-17 do).
    pub fn holds(&self, cx: &Context, variables: bool) -> bool {
        self.tests.iter().all(|t| {
            let actual = cx.get(&t.key);
            let expected: Vec<String> = if variables && t.op.variables {
                t.values.iter().map(|v| substitute(v, cx)).collect()
            } else {
                t.values.clone()
            };
            evaluate(&t.op, &expected, actual)
        })
    }
}

/// `${aws:username}` and the like replaced by the request's value (left
/// as written when the request has no single value for it).
fn substitute(v: &str, cx: &Context) -> String {
    let mut out = String::new();
    let mut rest = v;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let tail = &rest[start + 2..];
        match tail.find('}') {
            Some(end) => {
                let key = &tail[..end];
                match cx.get(key) {
                    Some([one]) => out.push_str(one),
                    _ => out.push_str(&rest[start..start + 3 + end]),
                }
                rest = &tail[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// One key's test: `Null` on presence; absent keys by the operator's
/// rules; otherwise any actual value matching any expected one (every
/// one, for negated operators and `ForAllValues`).
fn evaluate(op: &Operator, expected: &[String], actual: Option<&[String]>) -> bool {
    if matches!(op.compare, Compare::Null) {
        let present = actual.is_some();
        return expected.iter().any(|e| {
            (e.eq_ignore_ascii_case("true") && !present)
                || (e.eq_ignore_ascii_case("false") && present)
        });
    }
    let Some(actual) = actual else {
        return op.for_all || op.negate || op.if_exists;
    };
    let any_expected = |a: &str| expected.iter().any(|e| compare(op.compare, e, a));
    if op.for_all || (!op.for_any && op.negate) {
        actual.iter().all(|a| any_expected(a) != op.negate)
    } else {
        actual.iter().any(|a| any_expected(a) != op.negate)
    }
}

fn compare(c: Compare, expected: &str, actual: &str) -> bool {
    match c {
        Compare::Exact => expected == actual,
        Compare::IgnoreCase => expected.eq_ignore_ascii_case(actual),
        Compare::Like => super::wildcard_match(expected, actual),
        Compare::Numeric(f) => match (expected.parse::<f64>(), actual.parse::<f64>()) {
            (Ok(e), Ok(a)) => f(a, e),
            _ => false,
        },
        Compare::Date(f) => match (date_nanos(expected), date_nanos(actual)) {
            (Some(e), Some(a)) => f(a, e),
            _ => false,
        },
        Compare::Bool => match (boolean(expected), boolean(actual)) {
            (Some(e), Some(a)) => e == a,
            _ => false,
        },
        Compare::Ip => match (cidr(expected), actual.parse::<IpAddr>()) {
            (Some(net), Ok(ip)) => in_net(net, ip),
            _ => false,
        },
        Compare::Null => false,
    }
}

/// The spellings of a boolean Go's `strconv.ParseBool` (and so the
/// reference gateway) takes.
fn boolean(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// An address or a CIDR block (an address alone is its /32 or /128).
fn cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (addr, bits) = match s.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let ip: IpAddr = addr.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let bits = match bits {
        Some(b) if !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()) => b.parse().ok()?,
        Some(_) => return None,
        None => max,
    };
    (bits <= max).then_some((ip, bits))
}

fn in_net((net, bits): (IpAddr, u8), ip: IpAddr) -> bool {
    let ip = match (net, ip) {
        (IpAddr::V4(_), IpAddr::V6(v6)) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        _ => ip,
    };
    let (n, a, width) = match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(a)) => (u32::from(n) as u128, u32::from(a) as u128, 32),
        (IpAddr::V6(n), IpAddr::V6(a)) => (u128::from(n), u128::from(a), 128),
        _ => return false,
    };
    if bits == 0 {
        return true;
    }
    let shift = width - u32::from(bits);
    (n >> shift) == (a >> shift)
}

/// An RFC 3339 date (`2025-01-02T03:04:05Z`, fractions, `+hh:mm`) or
/// seconds since the epoch, as nanoseconds since the epoch.
pub fn date_nanos(s: &str) -> Option<i128> {
    if let Ok(secs) = s.parse::<f64>() {
        return secs.is_finite().then_some((secs * 1e9) as i128);
    }
    let (date, time) = s.split_once(['T', 't'])?;
    let mut d = date.splitn(3, '-').map(|x| x.parse::<i64>().ok());
    let (y, mo, da) = (d.next()??, d.next()??, d.next()??);
    let (clock, offset) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
        (c, 0i64)
    } else {
        let at = time.rfind(['+', '-'])?;
        let (c, off) = time.split_at(at);
        let (oh, om) = off[1..].split_once(':')?;
        let secs = oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60;
        (c, if off.starts_with('-') { -secs } else { secs })
    };
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
    let mut t = hms.splitn(3, ':').map(|x| x.parse::<i64>().ok());
    let (h, mi, se) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&da) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let nanos: i128 = if frac.is_empty() {
        0
    } else {
        let digits: String = frac.chars().take(9).collect();
        digits.parse::<i128>().ok()? * 10i128.pow(9 - digits.len() as u32)
    };
    let days = crate::civil::days_from_civil(y, mo, da);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset;
    Some(i128::from(secs) * 1_000_000_000 + nanos)
}

/// Seconds since the epoch as RFC 3339 (`aws:CurrentTime`).
pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
