package main

// syncfs(2) on aarch64; the syscall package has no constant for it.
const sysSyncfs = 267
