//! The shim's counters: one line per process, summed by the supervisor.

use std::fmt;

use crate::shim::{KINDS, STATS_PREFIX};

/// Calls suppressed by the shim, summed over the processes that reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Per kind, in the order of [`KINDS`].
    pub counts: [u64; KINDS.len()],
    /// How many processes reported (only those that suppressed something
    /// and exited through `exit`, not `_exit` or `exec`).
    pub processes: u64,
}

impl Stats {
    /// Sum the lines of a stats file; lines that do not parse are ignored.
    pub fn parse(text: &str) -> Stats {
        let mut s = Stats::default();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix(STATS_PREFIX) else {
                continue;
            };
            let mut counts = [0u64; KINDS.len()];
            let mut ok = true;
            for field in rest.split(' ').skip(1) {
                let Some((k, v)) = field.split_once('=') else {
                    ok = false;
                    break;
                };
                match (KINDS.iter().position(|&n| n == k), v.parse::<u64>()) {
                    (Some(i), Ok(n)) => counts[i] = n,
                    _ => ok = false,
                }
            }
            if ok {
                s.processes += 1;
                for (a, b) in s.counts.iter_mut().zip(counts) {
                    *a = a.saturating_add(b);
                }
            }
        }
        s
    }

    /// The count of one kind by name.
    pub fn get(&self, kind: &str) -> Option<u64> {
        KINDS
            .iter()
            .position(|&k| k == kind)
            .map(|i| self.counts[i])
    }

    /// `(kind, count)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        KINDS.iter().copied().zip(self.counts.iter().copied())
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.iter().map(|(k, n)| format!("{k} {n}")).collect();
        write!(f, "{}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_lines_and_ignores_junk() {
        let t = "cowkit-nosync-stats pid=1 fsync=2 fdatasync=0 sync=1 syncfs=0 sync_file_range=0 msync=0 open=3 pwritev2=0\n\
                 junk\n\
                 cowkit-nosync-stats pid=2 fsync=5 fdatasync=1 sync=0 syncfs=0 sync_file_range=0 msync=1 open=0 pwritev2=4\n\
                 cowkit-nosync-stats pid=3 fsync=x\n";
        let s = Stats::parse(t);
        assert_eq!(s.processes, 2);
        assert_eq!(s.get("fsync"), Some(7));
        assert_eq!(s.get("open"), Some(3));
        assert_eq!(s.get("pwritev2"), Some(4));
        assert_eq!(s.get("nope"), None);
    }
}
