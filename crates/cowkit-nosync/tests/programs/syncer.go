// Test program for cowkit nosync: a Go program (no libc: Go makes its own
// system calls) that writes DIR/go.dat and syncs it every way Go offers.
//
//	syncer-go DIR [EXIT_CODE]
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

func main() {
	f, err := os.Create(os.Args[1] + "/go.dat")
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	if _, err := f.Write(buf); err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	fd := int(f.Fd())
	fmt.Printf("fsync=%v\n", f.Sync())
	fmt.Printf("fdatasync=%v\n", syscall.Fdatasync(fd))
	syscall.Sync()
	_, _, e := syscall.Syscall(sysSyncfs, uintptr(fd), 0, 0)
	fmt.Printf("syncfs=%d\n", e)
	fmt.Printf("fsync_neg=%v\n", syscall.Fsync(-1))
	f.Close()
	code := 0
	if len(os.Args) > 2 {
		code, _ = strconv.Atoi(os.Args[2])
	}
	os.Exit(code)
}
