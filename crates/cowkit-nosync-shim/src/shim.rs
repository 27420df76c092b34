//! The `cowkit nosync` preload shim: a `#![no_std]` cdylib that turns the
//! sync family into no-ops for dynamically linked programs.
//!
//! Built by `crates/cowkit-nosync/build.rs` with `rustc --crate-type cdylib
//! -C panic=abort` (see `docs/nosync.md`); this file is not a module of any
//! crate. Every interposed function is implemented directly on the raw system
//! call: no `dlsym(RTLD_NEXT)` (which is `GLIBC_2.34` on current glibc and
//! would not load in an older chroot) and no libc calls except
//! `__errno_location` (`GLIBC_2.2.5` on x86_64, `GLIBC_2.17` on aarch64).
//!
//! Counters: each suppressed call is counted per kind. When
//! `COWKIT_NOSYNC_STATS` names a file at start-up, a destructor appends one
//! line to it at exit (a single `write` with `O_APPEND`):
//! `cowkit-nosync-stats pid=P fsync=N fdatasync=N sync=N syncfs=N
//! sync_file_range=N msync=N open=N pwritev2=N`.
#![no_std]
#![expect(
    unsafe_code,
    reason = "a no_std preload shim: raw system calls and functions exported under libc's names, the documented exception"
)]
#![expect(
    clippy::missing_safety_doc,
    reason = "the exported functions are called by C programs as libc's, under libc's contracts"
)]

use core::arch::asm;
use core::sync::atomic::{AtomicI32, AtomicU64, Ordering};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // Nothing here can panic (no indexing that is not checked, no
    // arithmetic that can overflow in debug); abort hard if it ever does.
    loop {
        // SAFETY: `exit_group` never returns and takes one integer.
        unsafe {
            sys::call1(sys::EXIT_GROUP, 127);
        }
    }
}

/// Raw system calls: number in the first argument, arguments as words,
/// the kernel's return value (`-errno` on failure) as is.
mod sys {
    use super::asm;

    /// A system call's number: the first on x86_64, the second on aarch64
    /// (the only architectures the shim is built for).
    const fn nr(x86_64: usize, aarch64: usize) -> usize {
        if cfg!(target_arch = "x86_64") {
            x86_64
        } else {
            aarch64
        }
    }

    pub const WRITE: usize = nr(1, 64);
    pub const CLOSE: usize = nr(3, 57);
    pub const MSYNC: usize = nr(26, 227);
    pub const GETPID: usize = nr(39, 172);
    pub const FCNTL: usize = nr(72, 25);
    pub const EXIT_GROUP: usize = nr(231, 94);
    pub const OPENAT: usize = nr(257, 56);
    pub const PWRITEV2: usize = nr(328, 287);

    /// One-argument system call.
    ///
    /// # Safety
    /// The caller passes arguments valid for system call `n`.
    #[inline(always)]
    pub unsafe fn call1(n: usize, a: usize) -> isize {
        call6(n, a, 0, 0, 0, 0, 0)
    }

    /// Three-argument system call.
    ///
    /// # Safety
    /// As for [`call1`].
    #[inline(always)]
    pub unsafe fn call3(n: usize, a: usize, b: usize, c: usize) -> isize {
        call6(n, a, b, c, 0, 0, 0)
    }

    /// Four-argument system call.
    ///
    /// # Safety
    /// As for [`call1`].
    #[inline(always)]
    pub unsafe fn call4(n: usize, a: usize, b: usize, c: usize, d: usize) -> isize {
        call6(n, a, b, c, d, 0, 0)
    }

    /// Six-argument system call.
    ///
    /// # Safety
    /// As for [`call1`].
    #[inline(always)]
    pub unsafe fn call6(
        n: usize,
        a: usize,
        b: usize,
        c: usize,
        d: usize,
        e: usize,
        f: usize,
    ) -> isize {
        let r: isize;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the x86_64 Linux system call ABI: number in rax, arguments
        // in rdi, rsi, rdx, r10, r8, r9; rcx and r11 are clobbered.
        unsafe {
            asm!("syscall",
                inlateout("rax") n as isize => r,
                in("rdi") a, in("rsi") b, in("rdx") c,
                in("r10") d, in("r8") e, in("r9") f,
                lateout("rcx") _, lateout("r11") _,
                options(nostack));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: the aarch64 Linux system call ABI: number in x8, arguments
        // in x0..x5, result in x0.
        unsafe {
            asm!("svc 0",
                in("x8") n,
                inlateout("x0") a as isize => r,
                in("x1") b, in("x2") c, in("x3") d, in("x4") e, in("x5") f,
                options(nostack));
        }
        r
    }
}

extern "C" {
    fn __errno_location() -> *mut i32;
}

const EBADF: isize = 9;
const AT_FDCWD: isize = -100;
const F_GETFD: usize = 1;
const O_WRONLY: usize = 0o1;
const O_CREAT: i32 = 0o100;
const O_TRUNC: i32 = 0o1000;
const O_APPEND: usize = 0o2000;
const O_CLOEXEC: usize = 0o2000000;
/// `O_DSYNC`; `O_SYNC` is `__O_SYNC | O_DSYNC`.
const O_DSYNC: i32 = 0o10000;
const O_SYNC: i32 = 0o4010000;
const MS_ASYNC: i32 = 1;
const MS_SYNC: i32 = 4;
const RWF_DSYNC: i32 = 0x2;
const RWF_SYNC: i32 = 0x4;

/// Turn a raw result into the libc convention: `-1` and `errno` on failure.
fn ret(r: isize) -> isize {
    if (-4095..0).contains(&r) {
        // SAFETY: `__errno_location` returns the calling thread's errno.
        unsafe { *__errno_location() = (-r) as i32 };
        -1
    } else {
        r
    }
}

// ---------------------------------------------------------------- counters

/// The kinds counted, in the order of the stats line.
const KINDS: [&[u8]; 8] = [
    b"fsync",
    b"fdatasync",
    b"sync",
    b"syncfs",
    b"sync_file_range",
    b"msync",
    b"open",
    b"pwritev2",
];
const FSYNC: usize = 0;
const FDATASYNC: usize = 1;
const SYNC: usize = 2;
const SYNCFS: usize = 3;
const SYNC_FILE_RANGE: usize = 4;
const MSYNC: usize = 5;
const OPEN: usize = 6;
const PWRITEV2: usize = 7;

#[expect(
    clippy::declare_interior_mutable_const,
    reason = "ZERO only fills the array of counters; it is never used as a value"
)]
const ZERO: AtomicU64 = AtomicU64::new(0);
static COUNTS: [AtomicU64; 8] = [ZERO; 8];
/// The process the counters belong to: a forked child starts from zero.
static OWNER: AtomicI32 = AtomicI32::new(0);

fn count(kind: usize) {
    // Without a stats file nobody reads the counters: skip the getpid.
    // SAFETY: the first byte of the NUL-terminated buffer, written only by
    // the constructor.
    if unsafe { (STATS_PATH.0.get() as *const u8).read_volatile() } == 0 {
        return;
    }
    // SAFETY: getpid takes no arguments and cannot fail.
    let pid = unsafe { sys::call1(sys::GETPID, 0) } as i32;
    if OWNER.swap(pid, Ordering::Relaxed) != pid {
        for c in &COUNTS {
            c.store(0, Ordering::Relaxed);
        }
    }
    if let Some(c) = COUNTS.get(kind) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// Whether `fd` is an open descriptor (`fcntl(fd, F_GETFD)`); on failure
/// `errno` is set as the real call would set it (EBADF).
fn fd_ok(fd: i32) -> bool {
    // SAFETY: F_GETFD reads the descriptor flags and takes no pointer.
    let r = unsafe { sys::call3(sys::FCNTL, fd as isize as usize, F_GETFD, 0) };
    if r < 0 {
        ret(if r == -EBADF { -EBADF } else { r });
        false
    } else {
        true
    }
}

fn skip_fd_sync(fd: i32, kind: usize) -> i32 {
    if !fd_ok(fd) {
        return -1;
    }
    count(kind);
    0
}

// ------------------------------------------------------- the sync family

#[no_mangle]
pub extern "C" fn fsync(fd: i32) -> i32 {
    skip_fd_sync(fd, FSYNC)
}

#[no_mangle]
pub extern "C" fn fdatasync(fd: i32) -> i32 {
    skip_fd_sync(fd, FDATASYNC)
}

#[no_mangle]
pub extern "C" fn syncfs(fd: i32) -> i32 {
    skip_fd_sync(fd, SYNCFS)
}

#[no_mangle]
pub extern "C" fn sync_file_range(fd: i32, _offset: i64, _nbytes: i64, _flags: u32) -> i32 {
    skip_fd_sync(fd, SYNC_FILE_RANGE)
}

#[no_mangle]
pub extern "C" fn sync() {
    count(SYNC);
}

/// `msync(MS_SYNC)` becomes `msync(MS_ASYNC)`: the kernel still checks the
/// range and flags, but waits for nothing.
///
/// # Safety
/// As for `msync(2)`: the kernel checks the range.
#[no_mangle]
pub unsafe extern "C" fn msync(addr: *mut u8, len: usize, flags: i32) -> i32 {
    let mut f = flags;
    if f & MS_SYNC != 0 {
        f = (f & !MS_SYNC) | MS_ASYNC;
        count(MSYNC);
    }
    // SAFETY: msync only reads its arguments; the kernel validates the range.
    ret(unsafe { sys::call3(sys::MSYNC, addr as usize, len, f as usize) }) as i32
}

// ------------------------------------------------------------- the opens

fn strip_open(flags: i32) -> i32 {
    if flags & O_DSYNC != 0 {
        count(OPEN);
        flags & !O_SYNC
    } else {
        flags
    }
}

/// `openat` with the sync flags removed. The mode is read as a third fixed
/// argument: on x86_64 and aarch64 Linux a variadic integer is passed in
/// the same register, and the kernel ignores it without `O_CREAT`/`O_TMPFILE`.
fn do_openat(dirfd: isize, path: *const u8, flags: i32, mode: u32) -> i32 {
    let flags = strip_open(flags);
    // SAFETY: `path` is the caller's C string, read by the kernel only.
    ret(unsafe {
        sys::call4(
            sys::OPENAT,
            dirfd as usize,
            path as usize,
            flags as u32 as usize,
            mode as usize,
        )
    }) as i32
}

/// Export one function under libc's name and under its large-file twin
/// (`open` and `open64`: on 64-bit Linux, the same call).
macro_rules! with_twin {
    ($(#[$doc:meta])* $name:ident, $twin:ident ($($arg:ident: $ty:ty),*) -> $ret:ty $body:block) => {
        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret $body

        $(#[$doc])*
        #[no_mangle]
        pub unsafe extern "C" fn $twin($($arg: $ty),*) -> $ret $body
    };
}

with_twin! {
    /// # Safety
    /// As for `open(2)`.
    open, open64 (path: *const u8, flags: i32, mode: u32) -> i32 {
        do_openat(AT_FDCWD, path, flags, mode)
    }
}

with_twin! {
    /// # Safety
    /// As for `openat(2)`.
    openat, openat64 (dirfd: i32, path: *const u8, flags: i32, mode: u32) -> i32 {
        do_openat(dirfd as isize, path, flags, mode)
    }
}

with_twin! {
    /// The `_FORTIFY_SOURCE` entry point for `open` without `O_CREAT`.
    ///
    /// # Safety
    /// As for `open(2)`.
    __open_2, __open64_2 (path: *const u8, flags: i32) -> i32 {
        do_openat(AT_FDCWD, path, flags, 0)
    }
}

with_twin! {
    /// The `_FORTIFY_SOURCE` entry point for `openat` without `O_CREAT`.
    ///
    /// # Safety
    /// As for `openat(2)`.
    __openat_2, __openat64_2 (dirfd: i32, path: *const u8, flags: i32) -> i32 {
        do_openat(dirfd as isize, path, flags, 0)
    }
}

with_twin! {
    /// # Safety
    /// As for `creat(2)`.
    creat, creat64 (path: *const u8, mode: u32) -> i32 {
        do_openat(AT_FDCWD, path, O_CREAT | O_WRONLY as i32 | O_TRUNC, mode)
    }
}

// ---------------------------------------------------------- pwritev2

fn do_pwritev2(fd: i32, iov: *const u8, iovcnt: i32, offset: i64, flags: i32) -> isize {
    let mut f = flags;
    if f & (RWF_SYNC | RWF_DSYNC) != 0 {
        f &= !(RWF_SYNC | RWF_DSYNC);
        count(PWRITEV2);
    }
    // On 64-bit the kernel takes the offset whole in `pos_l` (`pos_h` is
    // shifted out); -1 means "at the file position", as for glibc.
    // SAFETY: `iov` is the caller's iovec array, read by the kernel only.
    ret(unsafe {
        sys::call6(
            sys::PWRITEV2,
            fd as isize as usize,
            iov as usize,
            iovcnt as isize as usize,
            offset as usize,
            0,
            f as u32 as usize,
        )
    })
}

with_twin! {
    /// # Safety
    /// As for `pwritev2(2)`.
    pwritev2, pwritev64v2 (fd: i32, iov: *const u8, iovcnt: i32, offset: i64, flags: i32) -> isize {
        do_pwritev2(fd, iov, iovcnt, offset, flags)
    }
}

// ------------------------------------------------- stats at process exit

const STATS_ENV: &[u8] = b"COWKIT_NOSYNC_STATS=";
const PATH_MAX: usize = 512;

/// The stats file path, NUL-terminated, copied from the environment at
/// start-up (the program may change its environment later).
struct PathBuf(core::cell::UnsafeCell<[u8; PATH_MAX]>);
// SAFETY: written once by the constructor, before any other thread of the
// program exists; read only by the destructor.
unsafe impl Sync for PathBuf {}
static STATS_PATH: PathBuf = PathBuf(core::cell::UnsafeCell::new([0; PATH_MAX]));

/// ELF constructor: glibc passes `argc, argv, envp`.
extern "C" fn init(_argc: i32, _argv: *const *const u8, envp: *const *const u8) {
    if envp.is_null() {
        return;
    }
    let mut i = 0;
    loop {
        // SAFETY: `envp` is the NULL-terminated environment array.
        let var = unsafe { *envp.add(i) };
        if var.is_null() {
            return;
        }
        i += 1;
        let mut k = 0;
        // SAFETY: `var` is a NUL-terminated string; we stop at the first
        // mismatch, which is at the latest its NUL.
        while k < STATS_ENV.len() && unsafe { *var.add(k) } == STATS_ENV[k] {
            k += 1;
        }
        if k != STATS_ENV.len() {
            continue;
        }
        let buf = STATS_PATH.0.get() as *mut u8;
        let mut j = 0;
        while j + 1 < PATH_MAX {
            // SAFETY: reading `var` up to its NUL; writing inside the buffer.
            let b = unsafe { *var.add(k + j) };
            if b == 0 {
                break;
            }
            // SAFETY: j < PATH_MAX - 1.
            unsafe { buf.add(j).write_volatile(b) };
            j += 1;
        }
        if j + 1 == PATH_MAX {
            // Too long: do not write stats rather than open a cut-off path.
            // SAFETY: index 0 is inside the buffer.
            unsafe { buf.write_volatile(0) };
        }
        return;
    }
}

fn push(line: &mut [u8; 256], len: &mut usize, bytes: &[u8]) {
    for &b in bytes {
        if let Some(slot) = line.get_mut(*len) {
            *slot = b;
            *len += 1;
        }
    }
}

fn push_num(line: &mut [u8; 256], len: &mut usize, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut d = 0;
    loop {
        if let Some(slot) = digits.get_mut(d) {
            *slot = b'0' + (n % 10) as u8;
        }
        d += 1;
        n /= 10;
        if n == 0 || d == 20 {
            break;
        }
    }
    while d > 0 {
        d -= 1;
        if let Some(&c) = digits.get(d) {
            push(line, len, &[c]);
        }
    }
}

/// ELF destructor: append this process's counters to the stats file.
extern "C" fn fini() {
    let path = STATS_PATH.0.get() as *const u8;
    // SAFETY: the buffer is always NUL-terminated (zeroed, last byte never
    // written).
    if unsafe { path.read_volatile() } == 0 {
        return;
    }
    // SAFETY: getpid takes no arguments.
    let pid = unsafe { sys::call1(sys::GETPID, 0) } as i32;
    if OWNER.load(Ordering::Relaxed) != pid {
        return; // nothing counted in this process
    }
    let mut line = [0u8; 256];
    let mut len = 0;
    push(&mut line, &mut len, b"cowkit-nosync-stats pid=");
    push_num(&mut line, &mut len, pid as u64);
    for (name, c) in KINDS.iter().zip(COUNTS.iter()) {
        push(&mut line, &mut len, b" ");
        push(&mut line, &mut len, name);
        push(&mut line, &mut len, b"=");
        push_num(&mut line, &mut len, c.load(Ordering::Relaxed));
    }
    push(&mut line, &mut len, b"\n");
    // SAFETY: `path` is NUL-terminated; no O_CREAT: the supervisor made it.
    let fd = unsafe {
        sys::call4(
            sys::OPENAT,
            AT_FDCWD as usize,
            path as usize,
            O_WRONLY | O_APPEND | O_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return;
    }
    // SAFETY: `line[..len]` is initialised; `fd` is ours.
    unsafe {
        sys::call3(sys::WRITE, fd as usize, line.as_ptr() as usize, len);
        sys::call1(sys::CLOSE, fd as usize);
    }
}

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn(i32, *const *const u8, *const *const u8) = init;

#[used]
#[link_section = ".fini_array"]
static FINI: extern "C" fn() = fini;
