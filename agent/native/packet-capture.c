// The reader of a packet capture: machined opens the packet socket (bound to one link, its filter attached) and
// hands it over as this program's stdin; this program reads it until it is killed or its stdout is closed, and
// writes one frame per packet on stdout: the kernel's receive time (nanoseconds since the epoch, u64), the
// packet's length and the captured length (u32 each), all in host byte order, then the captured bytes. It holds
// the only reference to the socket, so its exit closes the socket and drops the link's promiscuous mode with it.
//
// Usage: packet-capture SNAP_LENGTH PARENT_PID
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_SNAP_LENGTH 262144

struct frame_header {
  uint64_t timestamp_ns;
  uint32_t length;
  uint32_t captured;
};

static long number_arg(const char *text, long max) {
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v <= 0 || v > max) return -1;
  return v;
}

// Writes all of the frame (header and bytes); false once stdout is gone or failed.
static bool write_frame(struct frame_header *h, const char *data) {
  struct iovec iov[2] = {{.iov_base = h, .iov_len = sizeof *h}, {.iov_base = (void *)data, .iov_len = h->captured}};
  struct iovec *cur = iov;
  int left = 2;
  while (left > 0) {
    ssize_t n = writev(STDOUT_FILENO, cur, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    while (left > 0 && (size_t)n >= cur->iov_len) {
      n -= (ssize_t)cur->iov_len;
      cur++;
      left--;
    }
    if (left > 0) {
      cur->iov_base = (char *)cur->iov_base + n;
      cur->iov_len -= (size_t)n;
    }
  }
  return true;
}

// The receive time from the SCM_TIMESTAMPNS message, or now when the kernel gave none.
static uint64_t receive_time(struct msghdr *msg) {
  struct timespec ts;
  bool found = false;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      memcpy(&ts, CMSG_DATA(c), sizeof ts);
      found = true;
    }
  }
  if (!found) clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
  long snap = argc == 3 ? number_arg(argv[1], MAX_SNAP_LENGTH) : -1;
  long parent = argc == 3 ? number_arg(argv[2], 0x7fffffff) : -1;
  if (snap < 0 || parent < 0) {
    fprintf(stderr, "usage: packet-capture SNAP_LENGTH(1..%d) PARENT_PID\n", MAX_SNAP_LENGTH);
    return 2;
  }
  // A capture never outlives machined; the check after prctl covers a parent that died before it.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)parent) return 1;
  // A reader gone is the end of the capture, seen as EPIPE from writev.
  signal(SIGPIPE, SIG_IGN);
  int on = 1;
  if (setsockopt(STDIN_FILENO, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) != 0) {
    fprintf(stderr, "setting SO_TIMESTAMPNS on the packet socket: %s\n", strerror(errno));
    return 1;
  }
  char *buf = malloc((size_t)snap);
  if (buf == NULL) return 1;
  union {
    char bytes[CMSG_SPACE(sizeof(struct timespec))];
    struct cmsghdr align;
  } control;
  for (;;) {
    struct iovec iov = {.iov_base = buf, .iov_len = (size_t)snap};
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof control.bytes;
    // MSG_TRUNC: the packet's whole length, however much of it fits.
    ssize_t n = recvmsg(STDIN_FILENO, &msg, MSG_TRUNC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      fprintf(stderr, "reading the packet socket: %s\n", strerror(errno));
      return 1;
    }
    struct frame_header h = {
        .timestamp_ns = receive_time(&msg),
        .length = (uint32_t)n,
        .captured = (uint32_t)(n < snap ? n : snap),
    };
    if (!write_frame(&h, buf)) return 0;
  }
}
