/* The fsync-heavy benchmark program, built with `cc -static` by nosync.sh:
 * writes N files of 4 KiB into DIR, each followed by fsync, then fsyncs
 * DIR; like a database or package manager that syncs every file. Static,
 * so LD_PRELOAD tools (eatmydata) cannot touch its calls.
 *
 *   nosync-fsync-heavy DIR N */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  int n = atoi(argv[2]);
  char buf[4096], path[4096];
  for (int i = 0; i < (int)sizeof buf; i++) buf[i] = (char)(i * 31 + 7);
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/f%05d", argv[1], i);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0 || write(fd, buf, sizeof buf) != sizeof buf || fsync(fd) != 0) {
      perror(path);
      return 1;
    }
    close(fd);
  }
  int d = open(argv[1], O_RDONLY | O_DIRECTORY);
  if (d < 0 || fsync(d) != 0) return 1;
  return 0;
}
