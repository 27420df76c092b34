//! How the scenarios end with rpm 4.20 registering and as the reference
//! (`rpm_at_420.rs`), where that is not as `expected.rs` says for rpm
//! 4.18, the `%preuntrans`/`%postuntrans` scenarios and the file trigger
//! argument scenarios.

use super::expected::Expect::{self, *};

/// Scenario id → expected end under rpm 4.20, over `expected::EXPECTED`.
pub const OVER_420: &[(&str, Expect)] = &[
    ("ftargs-1.1", Equal),
    ("ftargs-1.2", Equal),
    ("ftargs-2.1", Equal),
    ("sysusers-1.1", Equal),
    ("untrans-1.1", Equal),
    ("untrans-1.2", Equal),
    ("untrans-1.3", Equal),
];
