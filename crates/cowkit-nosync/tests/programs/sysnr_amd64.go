package main

// syncfs(2) on x86_64; the syscall package has no constant for it.
const sysSyncfs = 306
