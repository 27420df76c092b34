//! The seccomp layer: the sync system calls answered without running.
//!
//! Two filters, because one seccompiler filter has one action for "matched":
//!
//! 1. `fsync`, `fdatasync`, `sync`, `syncfs`, `sync_file_range`, `msync` →
//!    `SECCOMP_RET_ERRNO | 0`: the call returns 0 and the kernel does not
//!    run it (the `sys_enter_*` tracepoints, which fire after seccomp, never
//!    see it);
//! 2. the four that take a descriptor first, when that argument is negative
//!    as a signed 32-bit value → `SECCOMP_RET_ERRNO | EBADF`.
//!
//! Filter 2 is installed last. For one system call the kernel runs every
//! filter, newest first, and keeps the first result of the highest
//! precedence: a negative descriptor gets `ERRNO(EBADF)` from filter 2 (the
//! same precedence as filter 1's `ERRNO(0)`, seen first); any other
//! descriptor gets `ALLOW` from filter 2 and `ERRNO(0)` from filter 1, which
//! wins. A closed but non-negative descriptor gets 0: seccomp cannot see the
//! descriptor table (the preload shim can, and answers `EBADF`).
//!
//! seccompiler starts every program with an architecture check that kills
//! the process on a mismatch; here that instruction is rewritten to `ALLOW`,
//! so 32-bit programs on a 64-bit kernel run unfiltered instead of dying.

use std::collections::BTreeMap;

use linux_raw_sys::general as k;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::error::{Error, Result};

/// The system calls filter 1 answers with 0, by name and number.
pub const SYNC_CALLS: [(&str, u32); 6] = [
    ("fsync", k::__NR_fsync),
    ("fdatasync", k::__NR_fdatasync),
    ("sync", k::__NR_sync),
    ("syncfs", k::__NR_syncfs),
    ("sync_file_range", k::__NR_sync_file_range),
    ("msync", k::__NR_msync),
];

/// The ones whose first argument is a descriptor (filter 2).
pub const FD_CALLS: [u32; 4] = [
    k::__NR_fsync,
    k::__NR_fdatasync,
    k::__NR_syncfs,
    k::__NR_sync_file_range,
];

const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const BPF_RET_K: u16 = 0x06;

fn arch() -> Result<TargetArch> {
    match std::env::consts::ARCH {
        "x86_64" => Ok(TargetArch::x86_64),
        "aarch64" => Ok(TargetArch::aarch64),
        other => Err(Error::UnsupportedArch(other)),
    }
}

/// Build one program and turn its architecture-mismatch kill into allow.
fn program(rules: BTreeMap<i64, Vec<SeccompRule>>, matched: SeccompAction) -> Result<BpfProgram> {
    let mut prog: BpfProgram = SeccompFilter::new(rules, SeccompAction::Allow, matched, arch()?)
        .and_then(BpfProgram::try_from)
        .map_err(Error::Filter)?;
    // [0] load arch, [1] jump if equal over [2], [2] return KILL_PROCESS.
    let kill = prog
        .iter_mut()
        .take(3)
        .find(|i| i.code == BPF_RET_K && i.k == SECCOMP_RET_KILL_PROCESS);
    match kill {
        Some(insn) => insn.k = SECCOMP_RET_ALLOW,
        None => unreachable!("seccompiler 0.5 starts every filter with the arch check"),
    }
    Ok(prog)
}

/// The two programs, in the order they must be installed.
pub fn programs() -> Result<[BpfProgram; 2]> {
    let zero = SYNC_CALLS
        .iter()
        .map(|&(_, nr)| (i64::from(nr), Vec::new()))
        .collect();
    let negative = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(0x8000_0000),
        0x8000_0000,
    )
    .map_err(Error::Filter)?;
    let ebadf = FD_CALLS
        .iter()
        .map(|&nr| {
            Ok((
                i64::from(nr),
                vec![SeccompRule::new(vec![negative.clone()]).map_err(Error::Filter)?],
            ))
        })
        .collect::<Result<_>>()?;
    Ok([
        program(zero, SeccompAction::Errno(0))?,
        program(
            ebadf,
            SeccompAction::Errno(rustix::io::Errno::BADF.raw_os_error() as u32),
        )?,
    ])
}

/// `SECCOMP_RET_ERRNO` with 0, what the first program answers sync calls.
const SECCOMP_RET_ERRNO_ZERO: u32 = 0x0005_0000;
/// `SECCOMP_RET_USER_NOTIF`: ask the listener.
const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;

fn to_raw(p: &BpfProgram) -> Vec<cowkit_sys::seccomp::BpfInsn> {
    p.iter()
        .map(|i| cowkit_sys::seccomp::BpfInsn {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect()
}

/// The programs as raw instructions: the first one with its answer to
/// the sync calls turned into `SECCOMP_RET_USER_NOTIF`, the same answering
/// 0 itself, and the second one (negative descriptors get `EBADF`).
pub fn raw_programs() -> Result<[Vec<cowkit_sys::seccomp::BpfInsn>; 3]> {
    let progs = programs()?;
    let plain = to_raw(&progs[0]);
    let mut notify = plain.clone();
    for i in notify.iter_mut() {
        if i.code == BPF_RET_K && i.k == SECCOMP_RET_ERRNO_ZERO {
            i.k = SECCOMP_RET_USER_NOTIF;
        }
    }
    Ok([notify, plain, to_raw(&progs[1])])
}

/// Install both programs with the first one's answer to the sync calls
/// turned into `SECCOMP_RET_USER_NOTIF`: the returned listener is given to
/// the supervisor, which answers each call (EBADF for a descriptor that is
/// not open, 0 otherwise) and counts it. Negative descriptors still get
/// EBADF from the second program (ERRNO outranks USER_NOTIF). Where a
/// listener cannot be had (one is installed already, in a nested run; a
/// kernel before 5.0), the plain filter of [`install`] and `None`.
pub fn install_with_listener() -> Result<(Installed, Option<std::os::fd::OwnedFd>)> {
    let [first, _, second] = raw_programs()?;
    let eacces = Some(rustix::io::Errno::ACCESS.raw_os_error());
    let (installed, listener) = match cowkit_sys::seccomp::filter_with_listener(&first) {
        Ok(l) => (Installed::Privileged, l),
        Err(e) if e.raw_os_error() == eacces => {
            rustix::thread::set_no_new_privs(true).map_err(|e| Error::Install {
                how: "with no_new_privs",
                source: e.into(),
            })?;
            match cowkit_sys::seccomp::filter_with_listener(&first) {
                Ok(l) => (Installed::NoNewPrivs, l),
                Err(_) => return install().map(|i| (i, None)),
            }
        }
        Err(_) => return install().map(|i| (i, None)),
    };
    cowkit_sys::seccomp::set_mode_filter(&second).map_err(|source| Error::Install {
        how: "after the listener's",
        source,
    })?;
    Ok((installed, Some(listener)))
}

/// How the filter was installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// Without `no_new_privs` (we have `CAP_SYS_ADMIN`): setuid programs and
    /// file capabilities keep working.
    Privileged,
    /// With `no_new_privs`, which an unprivileged process must set first:
    /// setuid bits and file capabilities of programs run later are ignored.
    NoNewPrivs,
}

/// Install the filters on this process (every thread), to be inherited by
/// everything it executes. Without `no_new_privs` when the kernel allows it
/// (root); otherwise with it.
pub fn install() -> Result<Installed> {
    let progs = programs()?;
    let raw: Vec<Vec<cowkit_sys::seccomp::BpfInsn>> = progs.iter().map(to_raw).collect();
    let first = raw.first().map(|p| cowkit_sys::seccomp::set_mode_filter(p));
    match first {
        Some(Ok(())) => {
            for p in raw.iter().skip(1) {
                cowkit_sys::seccomp::set_mode_filter(p).map_err(|source| Error::Install {
                    how: "without no_new_privs",
                    source,
                })?;
            }
            Ok(Installed::Privileged)
        }
        Some(Err(e)) if e.raw_os_error() == Some(rustix::io::Errno::ACCESS.raw_os_error()) => {
            for p in &progs {
                seccompiler::apply_filter_all_threads(p).map_err(|e| Error::Install {
                    how: "with no_new_privs",
                    source: std::io::Error::other(e),
                })?;
            }
            Ok(Installed::NoNewPrivs)
        }
        Some(Err(source)) => Err(Error::Install {
            how: "without no_new_privs",
            source,
        }),
        None => unreachable!("two programs"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_programs_build_and_let_foreign_architectures_through() {
        let [a, b] = programs().unwrap();
        for p in [&a, &b] {
            assert!(p.len() > 4);
            assert_eq!(p[2].code, BPF_RET_K);
            assert_eq!(p[2].k, SECCOMP_RET_ALLOW);
            assert!(!p
                .iter()
                .any(|i| i.code == BPF_RET_K && i.k == SECCOMP_RET_KILL_PROCESS));
        }
    }
}
