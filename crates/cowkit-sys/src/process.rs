//! What a child does between `fork` and `exec` that `std::process` does
//! not offer: the signal mask it starts its program with, the root
//! directory and umask of a scriptlet's child; and whether a signal is
//! ignored (`sigaction` queried).
#![expect(
    unsafe_code,
    reason = "the child's steps between fork and exec and sigaction queries have no safe wrapper; each with its // SAFETY:"
)]

/// Arrange for the child of `cmd` to set its umask to `mask`, `chroot`
/// into `root` and change to its `/` just before `exec`, as rpm's
/// scriptlet child starts (rpm chroots for the transaction and forks;
/// `runExtScript` in `lib/rpmscript.c` sets umask 022). `cmd`'s program
/// is then looked up inside `root`: give it as an absolute path. A
/// failure fails the spawn with the step's error.
///
/// # Errors
///
/// `root` contains a NUL byte.
pub fn chroot_on_exec(
    cmd: &mut std::process::Command,
    root: &std::path::Path,
    mask: libc::mode_t,
) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    let root = std::ffi::CString::new(root.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe functions (umask, chroot, chdir) on a
    // string allocated before the fork; it allocates nothing (an
    // `io::Error` from an errno does not allocate).
    unsafe {
        cmd.pre_exec(move || {
            libc::umask(mask);
            if libc::chroot(root.as_ptr()) != 0 || libc::chdir(c"/".as_ptr()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// Arrange for the child of `cmd` to block `signals` just before `exec`
/// (the program starts with them blocked, as rpm starts its scriptlets).
/// A failure fails the spawn.
pub fn block_signals_on_exec(cmd: &mut std::process::Command, signals: &'static [i32]) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe functions (sigemptyset, sigaddset,
    // pthread_sigmask) on a set on its own stack; it allocates nothing
    // (an `io::Error` from an errno does not allocate).
    unsafe {
        cmd.pre_exec(move || {
            let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigemptyset(set.as_mut_ptr());
            for &sig in signals {
                libc::sigaddset(set.as_mut_ptr(), sig);
            }
            match libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), std::ptr::null_mut()) {
                0 => Ok(()),
                e => Err(std::io::Error::from_raw_os_error(e)),
            }
        });
    }
}

/// Whether signal `sig` is ignored (`SIG_IGN`), as a parent may leave it
/// for its child: `nohup` ignores SIGHUP, a shell without job control
/// ignores SIGINT and SIGQUIT in a background job. A program that then
/// installs a handler undoes what its parent asked for.
pub fn signal_ignored(sig: i32) -> bool {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a query only (no new action): the kernel writes the current
    // action into `old`, a zeroed `sigaction` we own.
    let rc = unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) };
    // SAFETY: zero-initialised, and filled in by the kernel when rc == 0.
    rc == 0 && unsafe { old.assume_init() }.sa_sigaction == libc::SIG_IGN
}
