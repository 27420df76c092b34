//! How every scenario of [`super::scenarios`] is expected to end, one line
//! each: `Equal` (as with rpm), `Refused(TEXT)` (cowkit refuses a step rpm
//! does, before touching its root, with TEXT in its message) or
//! `Differs(WHY)` (a known difference, WHY in a few words). The test fails
//! when a scenario ends otherwise: a line must change with the code.

/// The expected end of a scenario.
#[derive(Debug)]
pub enum Expect {
    Equal,
    Differs(&'static str),
    Refused(&'static str),
    /// No line for the scenario (the test fails).
    Missing,
}

use Expect::*;

/// Scenario id → expected end.
pub const EXPECTED: &[(&str, Expect)] = &[
];
