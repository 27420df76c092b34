/* Test program for cowkit nosync: makes every sync-family call on a file in
 * DIR, writes known data, and reports what it saw on stdout, one
 * `key=value` per line.
 *
 *   syncer DIR [EXIT_CODE | kill-SIG] [raw]
 *
 * "raw" makes the fsync-family calls through syscall(2), as static and
 * unusual programs do. Built with `cc` (dynamic) and `cc -static` by the
 * tests. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static int raw;

static int do_fsync(int fd) { return raw ? syscall(SYS_fsync, fd) : fsync(fd); }
static int do_fdatasync(int fd) { return raw ? syscall(SYS_fdatasync, fd) : fdatasync(fd); }

/* The flags field of /proc/self/fdinfo/FD, octal. */
static long fd_flags(int fd) {
  char p[64], line[256];
  long flags = -1;
  snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
  FILE *f = fopen(p, "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "flags: %lo", &flags) == 1) break;
  fclose(f);
  return flags;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  raw = argc > 3 && strcmp(argv[3], "raw") == 0;
  char path[4096];
  snprintf(path, sizeof path, "%s/syncer.dat", argv[1]);
  int fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_SYNC, 0644);
  if (fd < 0) { perror("open"); return 3; }
  printf("open_o_sync=%d\n", (fd_flags(fd) & O_SYNC) == O_SYNC);
  printf("open_o_dsync_bit=%d\n", (fd_flags(fd) & O_DSYNC) != 0);
  char buf[4096];
  for (int i = 0; i < 4096; i++) buf[i] = (char)(i * 7 + 1);
  if (write(fd, buf, sizeof buf) != sizeof buf) { perror("write"); return 3; }
  printf("fsync=%d\n", do_fsync(fd));
  printf("fdatasync=%d\n", do_fdatasync(fd));
  printf("syncfs=%d\n", syncfs(fd));
  printf("sync_file_range=%d\n", sync_file_range(fd, 0, 4096, SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER));
  sync();
  void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) { perror("mmap"); return 3; }
  ((char *)m)[0] = buf[0];
  printf("msync=%d\n", msync(m, 4096, MS_SYNC));
  munmap(m, 4096);

  int dfd = open(argv[1], O_DIRECTORY | O_RDONLY);
  int fd2 = openat(dfd, "syncer2.dat", O_CREAT | O_TRUNC | O_WRONLY | O_DSYNC, 0644);
  if (fd2 < 0) { perror("openat"); return 3; }
  printf("openat_o_dsync=%d\n", (fd_flags(fd2) & O_DSYNC) != 0);
  struct iovec iov = {buf, sizeof buf};
  printf("pwritev2=%zd\n", pwritev2(fd2, &iov, 1, 0, RWF_DSYNC));
  printf("pwritev2_append=%zd\n", pwritev2(fd2, &iov, 1, -1, RWF_SYNC));
  close(fd2);
  close(dfd);

  errno = 0;
  int r = do_fsync(-1);
  printf("fsync_neg=%d errno=%s\n", r, r ? strerrorname_np(errno) : "-");
  int closed = dup(fd);
  close(closed);
  errno = 0;
  r = do_fsync(closed);
  printf("fsync_closed=%d errno=%s\n", r, r ? strerrorname_np(errno) : "-");
  errno = 0;
  r = do_fdatasync(-5);
  printf("fdatasync_neg=%d errno=%s\n", r, r ? strerrorname_np(errno) : "-");
  close(fd);
  fflush(stdout);
  if (argc > 2 && strncmp(argv[2], "kill-", 5) == 0) {
    signal(atoi(argv[2] + 5), SIG_DFL);
    kill(getpid(), atoi(argv[2] + 5));
  }
  return argc > 2 ? atoi(argv[2]) : 0;
}
