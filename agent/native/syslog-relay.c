// syslogd's socket: Node has no unix datagram sockets, so this binds one (/dev/log on a
// node) and relays every datagram to stdout as a 4-byte big-endian length and the bytes;
// machined parses them (RFC3164, RFC5424) into the syslogd log. usage: syslog-relay PATH PARENT_PID
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int write_all(const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(STDOUT_FILENO, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

int main(int argc, char **argv) {
  char *end = NULL;
  long parent = argc == 3 ? strtol(argv[2], &end, 10) : 0;
  if (argc != 3 || *argv[2] == '\0' || *end != '\0' || parent <= 0) {
    fprintf(stderr, "usage: syslog-relay PATH PARENT_PID\n");
    return 2;
  }
  // A relay never outlives machined (a machined killed outright runs no stop of its services); it
  // only writes when a datagram comes, so it would not notice otherwise. The check after prctl
  // covers a parent that died before it.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)parent) return 1;
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(argv[1]) >= sizeof addr.sun_path) {
    fprintf(stderr, "syslog-relay: socket path too long: %s\n", argv[1]);
    return 2;
  }
  strcpy(addr.sun_path, argv[1]);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    perror("syslog-relay: socket");
    return 1;
  }
  unlink(argv[1]);
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
    fprintf(stderr, "syslog-relay: bind %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  // Every local program may log.
  chmod(argv[1], 0666);
  int rcvbuf = 65536;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  static char buf[65536];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      perror("syslog-relay: recv");
      return 1;
    }
    uint32_t len = htonl((uint32_t)n);
    if (write_all(&len, sizeof len) < 0 || write_all(buf, (size_t)n) < 0) return 0; // machined went away
  }
}
