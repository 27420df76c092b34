//! Object lock rules, pure: the bucket's configuration, an object
//! version's retention and legal hold, and what they allow.
//!
//! - A version under legal hold cannot be deleted (or overwritten in a
//!   bucket that keeps no old versions) by anyone, until the hold is off.
//! - A `COMPLIANCE` retention until a date in the future: no one may
//!   delete the version, shorten the date or weaken the mode.
//! - A `GOVERNANCE` retention: the same, except for callers allowed to
//!   bypass it (`crate::authz::may_bypass_governance`: admins who send
//!   `x-amz-bypass-governance-retention: true`, others a bucket policy
//!   allows).

use serde::{Deserialize, Serialize};

/// The longest default retention S3 takes, in days and in years.
pub const MAX_DAYS: i32 = 36_500;
/// See [`MAX_DAYS`].
pub const MAX_YEARS: i32 = 100;

/// A retention mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Mode {
    /// Callers allowed to bypass it may shorten or remove it.
    Governance,
    /// No one may shorten or remove it.
    Compliance,
}

impl Mode {
    /// S3's name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Governance => "GOVERNANCE",
            Mode::Compliance => "COMPLIANCE",
        }
    }

    /// From S3's name (exactly, as S3 wants it).
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "GOVERNANCE" => Some(Mode::Governance),
            "COMPLIANCE" => Some(Mode::Compliance),
            _ => None,
        }
    }
}

/// An object version's retention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    /// The mode.
    pub mode: Mode,
    /// Retained until this time (seconds since the epoch).
    pub until: i64,
}

/// A bucket's default retention (days or years).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefaultRetention {
    /// The mode new versions get.
    pub mode: Mode,
    /// Days, when the rule is in days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<i32>,
    /// Years, when the rule is in years.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub years: Option<i32>,
}

impl DefaultRetention {
    /// The retention a version written at `now` gets (a year is 365 days,
    /// as S3 counts it).
    pub fn at(&self, now: i64) -> Retention {
        let days = i64::from(self.days.unwrap_or(0)) + 365 * i64::from(self.years.unwrap_or(0));
        Retention {
            mode: self.mode,
            until: now + days * 86_400,
        }
    }
}

/// A bucket's object lock configuration (`object-lock.json`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockConfig {
    /// Object lock is enabled (it cannot be disabled again).
    pub enabled: bool,
    /// The default retention, when one was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<DefaultRetention>,
}

impl LockConfig {
    /// Object lock enabled, without a default retention.
    pub fn enabled() -> LockConfig {
        LockConfig {
            enabled: true,
            rule: None,
        }
    }
}

/// Why a default retention rule is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// Not what S3's schema allows (a mode missing or unknown, both or
    /// neither of days and years): `MalformedXML`.
    Malformed,
    /// A period that is not positive or too long: `InvalidArgument`
    /// naming `Days` or `Years` with the value.
    Period {
        /// `Days` or `Years`.
        name: &'static str,
        /// The value given.
        value: i32,
        /// Too large (rather than not positive).
        too_large: bool,
    },
}

/// Check a default retention rule as S3 does.
pub fn check_rule(
    mode: Option<&str>,
    days: Option<i32>,
    years: Option<i32>,
) -> Result<DefaultRetention, RuleError> {
    let mode = mode.and_then(Mode::parse).ok_or(RuleError::Malformed)?;
    let (name, value, max) = match (days, years) {
        (Some(d), None) => ("Days", d, MAX_DAYS),
        (None, Some(y)) => ("Years", y, MAX_YEARS),
        _ => return Err(RuleError::Malformed),
    };
    if value <= 0 || value > max {
        return Err(RuleError::Period {
            name,
            value,
            too_large: value > max,
        });
    }
    Ok(DefaultRetention { mode, days, years })
}

/// What protects a version now (`None`: nothing).
pub fn protection(retention: Option<&Retention>, legal_hold: bool, now: i64) -> Option<Protection> {
    if legal_hold {
        return Some(Protection::LegalHold);
    }
    match retention {
        Some(r) if r.until > now => Some(match r.mode {
            Mode::Compliance => Protection::Compliance,
            Mode::Governance => Protection::Governance,
        }),
        _ => None,
    }
}

/// What keeps a version from being deleted or overwritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protection {
    /// A legal hold: no one.
    LegalHold,
    /// A compliance retention: no one.
    Compliance,
    /// A governance retention: callers who may and do bypass it.
    Governance,
}

/// Whether a version with `retention` and `legal_hold` may be deleted (or
/// replaced) now, by a caller that asked to bypass governance (`bypass`:
/// the header was sent and the caller is allowed to).
pub fn may_remove(retention: Option<&Retention>, legal_hold: bool, bypass: bool, now: i64) -> bool {
    match protection(retention, legal_hold, now) {
        None => true,
        Some(Protection::Governance) => bypass,
        Some(_) => false,
    }
}

/// Whether `new` may replace the retention `old` now (PutObjectRetention):
/// an expired or missing one may be replaced by anything; a compliance one
/// only by compliance until the same date or later; a governance one by a
/// governance one as long or longer, or by anything with `bypass`.
pub fn may_replace(
    old: Option<&Retention>,
    new: Option<&Retention>,
    bypass: bool,
    now: i64,
) -> bool {
    let Some(old) = old.filter(|o| o.until > now) else {
        return true;
    };
    let keeps = new.is_some_and(|n| n.mode == old.mode && n.until >= old.until);
    match old.mode {
        Mode::Compliance => keeps,
        Mode::Governance => keeps || bypass,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn r(mode: Mode, until: i64) -> Retention {
        Retention { mode, until }
    }

    #[test]
    fn rules_are_checked_as_s3_checks_them() {
        assert_eq!(
            check_rule(Some("GOVERNANCE"), Some(10), None),
            Ok(DefaultRetention {
                mode: Mode::Governance,
                days: Some(10),
                years: None
            })
        );
        assert!(check_rule(Some("COMPLIANCE"), None, Some(100)).is_ok());
        for (m, d, y) in [
            (None, Some(1), None),
            (Some("governance"), Some(1), None),
            (Some("GOVERNANCE"), Some(1), Some(1)),
            (Some("GOVERNANCE"), None, None),
        ] {
            assert_eq!(
                check_rule(m, d, y),
                Err(RuleError::Malformed),
                "{m:?} {d:?} {y:?}"
            );
        }
        let period = |d, y| match check_rule(Some("COMPLIANCE"), d, y) {
            Err(RuleError::Period {
                name,
                value,
                too_large,
            }) => Some((name, value, too_large)),
            _ => None,
        };
        assert_eq!(period(Some(-3), None), Some(("Days", -3, false)));
        assert_eq!(period(Some(0), None), Some(("Days", 0, false)));
        assert_eq!(period(Some(36_501), None), Some(("Days", 36_501, true)));
        assert_eq!(period(None, Some(-5)), Some(("Years", -5, false)));
        assert_eq!(period(None, Some(101)), Some(("Years", 101, true)));
    }

    #[test]
    fn default_retention_counts_days_and_years() {
        let d = DefaultRetention {
            mode: Mode::Compliance,
            days: Some(2),
            years: None,
        };
        assert_eq!(d.at(NOW), r(Mode::Compliance, NOW + 2 * 86_400));
        let y = DefaultRetention {
            mode: Mode::Governance,
            days: None,
            years: Some(1),
        };
        assert_eq!(y.at(NOW).until, NOW + 365 * 86_400);
    }

    #[test]
    fn who_may_remove_a_version() {
        let gov = r(Mode::Governance, NOW + 10);
        let comp = r(Mode::Compliance, NOW + 10);
        let expired = r(Mode::Compliance, NOW);
        assert!(may_remove(None, false, false, NOW));
        assert!(may_remove(Some(&expired), false, false, NOW));
        assert!(!may_remove(Some(&gov), false, false, NOW));
        assert!(may_remove(Some(&gov), false, true, NOW));
        assert!(!may_remove(Some(&comp), false, true, NOW));
        assert!(!may_remove(None, true, true, NOW));
        assert!(!may_remove(Some(&expired), true, true, NOW));
    }

    #[test]
    fn which_retention_may_replace_which() {
        let gov = r(Mode::Governance, NOW + 100);
        let comp = r(Mode::Compliance, NOW + 100);
        let later = |x: Retention| r(x.mode, x.until + 1);
        let sooner = |x: Retention| r(x.mode, x.until - 1);
        // Compliance: only the same mode, as long or longer, bypass or not.
        assert!(may_replace(Some(&comp), Some(&comp), false, NOW));
        assert!(may_replace(Some(&comp), Some(&later(comp)), false, NOW));
        assert!(!may_replace(Some(&comp), Some(&sooner(comp)), true, NOW));
        assert!(!may_replace(Some(&comp), Some(&later(gov)), true, NOW));
        assert!(!may_replace(Some(&comp), None, true, NOW));
        // Governance: extending is free, the rest needs the bypass.
        assert!(may_replace(Some(&gov), Some(&later(gov)), false, NOW));
        assert!(!may_replace(Some(&gov), Some(&sooner(gov)), false, NOW));
        assert!(may_replace(Some(&gov), Some(&sooner(gov)), true, NOW));
        assert!(!may_replace(Some(&gov), Some(&comp), false, NOW));
        assert!(may_replace(Some(&gov), None, true, NOW));
        // Expired or none: anything.
        let old = r(Mode::Compliance, NOW - 1);
        assert!(may_replace(Some(&old), Some(&sooner(gov)), false, NOW));
        assert!(may_replace(None, Some(&gov), false, NOW));
    }
}
