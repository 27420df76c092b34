//! Hardlink groups: a group's later names are linked to its first name's
//! copy, once that copy is complete.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// A source inode: device and inode number.
type Key = (u64, u64);

/// Where a group's first member was copied to: a path below a directory.
type At = (Arc<OwnedFd>, PathBuf);

/// Hardlink groups seen so far, by source device and inode: shared by
/// every [`copy_linked()`](super::copy_linked) call that is given the same
/// map, so that names of one group in several sources stay linked in the
/// copies (as `cp -a` does across its arguments).
#[derive(Default)]
pub struct Links {
    map: Mutex<HashMap<Key, Link>>,
    /// Signalled when a group's first member is done, or failed.
    changed: Condvar,
}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.lock().len();
        f.debug_struct("Links").field("groups", &n).finish()
    }
}

enum Link {
    /// The first member is being copied: other members wait, so that none
    /// is linked to a file whose data is not complete.
    Pending,
    /// Copied: further members are linked to `rel` below `top`.
    Done { top: Arc<OwnedFd>, rel: PathBuf },
}

/// What a member of a hardlink group is to the worker that meets it.
pub(super) enum Member<'a> {
    /// The group was copied: link this name to `rel` below `top`.
    Later { top: Arc<OwnedFd>, rel: PathBuf },
    /// This worker copies the group's first member, and settles the claim.
    First(Claim<'a>),
}

impl Links {
    /// An empty map.
    pub fn new() -> Self {
        Links::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Link>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the member `key` is: a later one (waiting while the first one
    /// is copied), or the first.
    pub(super) fn claim(&self, key: Key) -> Member<'_> {
        let mut map = self.lock();
        loop {
            match map.get(&key) {
                Some(Link::Done { top, rel }) => {
                    return Member::Later {
                        top: top.clone(),
                        rel: rel.clone(),
                    }
                }
                Some(Link::Pending) => {
                    map = self.changed.wait(map).unwrap_or_else(|e| e.into_inner());
                }
                None => {
                    map.insert(key, Link::Pending);
                    return Member::First(Claim {
                        links: self,
                        key: Some(key),
                    });
                }
            }
        }
    }

    /// The first member of `key` is copied to `at` (or failed: `None`, and
    /// the next member to come along tries in its turn).
    fn done(&self, key: Key, at: Option<At>) {
        let mut map = self.lock();
        match at {
            Some((top, rel)) => map.insert(key, Link::Done { top, rel }),
            None => map.remove(&key),
        };
        drop(map);
        self.changed.notify_all();
    }
}

/// A hardlink group whose first member this worker copies. Settled with
/// where the copy went; dropped unsettled (the copy unwound), the group is
/// marked failed, so that no other member waits forever.
pub(super) struct Claim<'a> {
    links: &'a Links,
    /// `None` once settled.
    key: Option<Key>,
}

impl Claim<'_> {
    /// The first member is copied to `at`, or failed (`None`).
    pub fn settle(mut self, at: Option<At>) {
        if let Some(key) = self.key.take() {
            self.links.done(key, at);
        }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.links.done(key, None);
        }
    }
}
