//! Checks of the allowlist that need no confined process (those are in
//! `tests/confinement.rs`, each in a child process).

use linux_raw_sys::general as k;

use super::*;

/// System calls that must never be allowed, by name. Some exist on x86_64
/// only; a name that is absent from the list is what is checked.
const FORBIDDEN: &[&str] = &[
    // Paths: open, create, look up, change.
    "open",
    "openat",
    "openat2",
    "creat",
    "stat",
    "lstat",
    "newfstatat",
    "statx",
    "access",
    "faccessat",
    "faccessat2",
    "readlink",
    "readlinkat",
    "chdir",
    "fchdir",
    "chroot",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "unlink",
    "unlinkat",
    "rmdir",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "truncate",
    "chmod",
    "fchmodat",
    "chown",
    "fchownat",
    "utimensat",
    "open_by_handle_at",
    "name_to_handle_at",
    "inotify_init1",
    "fanotify_init",
    "memfd_create",
    "pipe",
    "pipe2",
    "dup",
    "dup2",
    "dup3",
    // Programs and processes.
    "execve",
    "execveat",
    "fork",
    "vfork",
    "clone",
    "clone3",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_open",
    "pidfd_getfd",
    "pidfd_send_signal",
    "kill",
    "tkill",
    "rt_sigqueueinfo",
    "rt_tgsigqueueinfo",
    "wait4",
    "waitid",
    // Network and other IPC.
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    "sendto",
    "sendmsg",
    "recvfrom",
    "recvmsg",
    "msgget",
    "shmget",
    "semget",
    "mq_open",
    // Privilege, namespaces, the kernel.
    "setuid",
    "setgid",
    "setreuid",
    "setresuid",
    "setresgid",
    "setgroups",
    "capset",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "prctl",
    "seccomp",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "keyctl",
    "add_key",
    "request_key",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "reboot",
    "swapon",
    "syslog",
    "ioctl",
    "pkey_mprotect",
    "personality",
    "setrlimit",
    "prlimit64",
    "sched_setaffinity",
    "sched_setscheduler",
    "set_mempolicy",
    "mbind",
    "move_pages",
    "migrate_pages",
    // Descriptor-to-descriptor copies std falls back from (not needed).
    "copy_file_range",
    "sendfile",
    "splice",
    "tee",
    "vmsplice",
];

#[test]
fn no_forbidden_syscall_is_allowed() {
    for threads in [false, true] {
        let names = Policy::stream_worker()
            .allow_threads(threads)
            .allowed_syscalls();
        for name in FORBIDDEN {
            let allowed_as_thread = threads && *name == "clone";
            assert!(
                !names.contains(name) || allowed_as_thread,
                "`{name}` is allowed (threads: {threads})"
            );
        }
    }
}

#[test]
fn no_forbidden_syscall_number_is_allowed() {
    // The numbers too, for the calls both architectures have, in case a
    // table entry were named after one call and numbered after another.
    let forbidden = [
        k::__NR_openat,
        k::__NR_openat2,
        k::__NR_newfstatat,
        k::__NR_statx,
        k::__NR_execve,
        k::__NR_execveat,
        k::__NR_clone3,
        k::__NR_ptrace,
        k::__NR_kill,
        k::__NR_socket,
        k::__NR_connect,
        k::__NR_mount,
        k::__NR_unshare,
        k::__NR_setuid,
        k::__NR_ioctl,
        k::__NR_prctl,
        k::__NR_seccomp,
        k::__NR_process_vm_readv,
        k::__NR_io_uring_setup,
    ];
    let numbers: Vec<u32> = Policy::stream_worker()
        .allow_threads(true)
        .entries()
        .map(|e| e.nr)
        .collect();
    for nr in forbidden {
        assert!(!numbers.contains(&nr), "syscall number {nr} is allowed");
    }
}

#[test]
fn threads_add_only_thread_creation() {
    let single = Policy::stream_worker().allowed_syscalls();
    let threads = Policy::stream_worker()
        .allow_threads(true)
        .allowed_syscalls();
    let added: Vec<_> = threads.iter().filter(|n| !single.contains(n)).collect();
    assert_eq!(added, [&"clone", &"set_robust_list", &"rseq"]);
    assert_eq!(
        Policy::stream_worker(),
        Policy::stream_worker().allow_threads(false)
    );
    for name in ["clone", "set_robust_list", "rseq"] {
        assert!(!single.contains(&name), "{name} allowed without threads");
    }
}

#[test]
fn names_are_unique_and_stripped() {
    let names = Policy::stream_worker()
        .allow_threads(true)
        .allowed_syscalls();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len());
    assert!(names.iter().all(|n| !n.starts_with("__NR_")), "{names:?}");
    assert!(names.contains(&"read") && names.contains(&"exit_group"));
}

#[test]
fn filters_compile_within_the_bpf_limit() {
    for threads in [false, true] {
        let built = Policy::stream_worker()
            .allow_threads(threads)
            .build(4242)
            .unwrap();
        // BPF_MAXINSNS
        assert!(built.main.len() < 4096, "{} instructions", built.main.len());
        assert_eq!(built.enosys.is_some(), threads);
        assert_eq!(built.applied.threads, threads);
        assert_eq!(built.applied.arch, std::env::consts::ARCH);
        assert_eq!(
            built.applied.allowed,
            Policy::stream_worker()
                .allow_threads(threads)
                .allowed_syscalls()
                .len()
        );
    }
}

#[test]
fn argument_checks_become_one_rule_per_value() {
    let find = |name: &str| {
        *allowlist::STREAM_WORKER
            .iter()
            .find(|e| e.name == name)
            .unwrap()
    };
    assert_eq!(allowlist::rules(&find("read"), 1).unwrap().len(), 0);
    assert_eq!(allowlist::rules(&find("madvise"), 1).unwrap().len(), 8);
    assert_eq!(allowlist::rules(&find("futex"), 1).unwrap().len(), 4);
    assert_eq!(allowlist::rules(&find("fcntl"), 1).unwrap().len(), 2);
    assert_eq!(allowlist::rules(&find("mmap"), 1).unwrap().len(), 1);
    assert_eq!(allowlist::rules(&find("tgkill"), 1).unwrap().len(), 1);
}

#[test]
fn only_the_compiled_architecture_is_accepted() {
    let here = std::env::consts::ARCH;
    assert!(allowlist::target_arch(here).is_ok());
    for other in ["riscv64", "x86", "arm", "powerpc64", "s390x"] {
        match allowlist::target_arch(other) {
            Err(Error::UnsupportedArch { arch }) => assert_eq!(arch, other),
            r => panic!("{other}: {r:?}"),
        }
    }
    let foreign = if here == "x86_64" {
        "aarch64"
    } else {
        "x86_64"
    };
    assert!(allowlist::target_arch(foreign).is_err());
}

#[test]
fn threads_answer_only_clone3_and_sched_getaffinity_with_enosys() {
    let names: Vec<_> = allowlist::THREADS_ENOSYS.iter().map(|e| e.name).collect();
    assert_eq!(names, ["clone3", "sched_getaffinity"]);
}
