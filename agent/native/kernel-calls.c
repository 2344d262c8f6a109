// The kernel calls machined makes on every node, as a Node-API addon of our own (koffi's general FFI
// addon costs ~4 MiB of private memory in machined): the clock's (adjtimex(2), clock_gettime(2), the
// RTC_SET_TIME ioctl), the console's terminal ioctls, link-layer broadcasts (DHCPv4, gratuitous ARP)
// pipe2(2) (logind's inhibitor locks), sendmsg(2) with SCM_RIGHTS (handing a lock to the system bus's
// client), the setup of a packet capture's socket (PacketCapture), and on x86 CPUID and the VMware
// hypervisor's backdoor port (the vmware platform's guestinfo). Each takes and fills the caller's Buffer (the JS
// side builds and reads the structs) and returns the call's result, or -errno when it failed.
#define _GNU_SOURCE // pipe2
#define NAPI_VERSION 8
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <linux/rtc.h>
#include <linux/vt.h>
#include <node_api.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/io.h>
#endif

// Reads argument i as a Buffer of at least size bytes; throws a TypeError and returns NULL otherwise.
static void *buffer_arg(napi_env env, napi_value *argv, size_t argc, size_t i, size_t size) {
  bool is_buffer = false;
  void *data = NULL;
  size_t len = 0;
  if (i >= argc || napi_is_buffer(env, argv[i], &is_buffer) != napi_ok || !is_buffer ||
      napi_get_buffer_info(env, argv[i], &data, &len) != napi_ok || len < size) {
    napi_throw_type_error(env, NULL, "expected a Buffer large enough for the kernel's struct");
    return NULL;
  }
  return data;
}

// Reads argument i as a 32-bit integer; throws a TypeError and returns false otherwise.
static bool int_arg(napi_env env, napi_value *argv, size_t argc, size_t i, int32_t *out) {
  if (i >= argc || napi_get_value_int32(env, argv[i], out) != napi_ok) {
    napi_throw_type_error(env, NULL, "expected an integer");
    return false;
  }
  return true;
}

// Reads the (n: number, buf: Buffer of at least size bytes) arguments most calls take (a clock id or an fd,
// and the struct); NULL, a TypeError thrown, otherwise.
static void *int_and_buffer(napi_env env, napi_callback_info info, size_t size, int32_t *n) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (!int_arg(env, argv, argc, 0, n)) return NULL;
  return buffer_arg(env, argv, argc, 1, size);
}

static napi_value result(napi_env env, int ret) {
  napi_value v;
  napi_create_int32(env, ret < 0 ? -errno : ret, &v);
  return v;
}

// The structs are copied through locals: a Buffer's bytes need not be aligned for them.

// adjtimex(buf: Buffer /* struct timex */): the clock state (TIME_OK..TIME_ERROR) or -errno.
static napi_value js_adjtimex(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  void *data = buffer_arg(env, argv, argc, 0, sizeof(struct timex));
  if (data == NULL) return NULL;
  struct timex tx;
  memcpy(&tx, data, sizeof tx);
  int ret = adjtimex(&tx);
  int err = errno;
  memcpy(data, &tx, sizeof tx);
  errno = err;
  return result(env, ret);
}

// clockGettime(id: number, buf: Buffer /* struct timespec */): 0 or -errno.
static napi_value js_clock_gettime(napi_env env, napi_callback_info info) {
  int32_t id;
  void *data = int_and_buffer(env, info, sizeof(struct timespec), &id);
  if (data == NULL) return NULL;
  struct timespec ts;
  int ret = clock_gettime((clockid_t)id, &ts);
  if (ret == 0) memcpy(data, &ts, sizeof ts);
  return result(env, ret);
}

// rtcSetTime(fd: number, buf: Buffer /* struct rtc_time */): 0 or -errno.
static napi_value js_rtc_set_time(napi_env env, napi_callback_info info) {
  int32_t fd;
  void *data = int_and_buffer(env, info, sizeof(struct rtc_time), &fd);
  if (data == NULL) return NULL;
  struct rtc_time tm;
  memcpy(&tm, data, sizeof tm);
  return result(env, ioctl(fd, RTC_SET_TIME, &tm));
}

// vtActivate(fd: number, tty: number): the VT_ACTIVATE ioctl, 0 or -errno.
static napi_value js_vt_activate(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd, tty;
  if (!int_arg(env, argv, argc, 0, &fd) || !int_arg(env, argv, argc, 1, &tty)) return NULL;
  return result(env, ioctl(fd, VT_ACTIVATE, (unsigned long)tty));
}

// pipe(buf: Buffer /* int[2] */): pipe2(2) with O_CLOEXEC, the read and write ends in buf; 0 or -errno.
static napi_value js_pipe(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  void *data = buffer_arg(env, argv, argc, 0, 2 * sizeof(int));
  if (data == NULL) return NULL;
  int fds[2];
  int ret = pipe2(fds, O_CLOEXEC);
  if (ret == 0) memcpy(data, fds, sizeof fds);
  return result(env, ret);
}

// ttyLinux(fd: number, buf: Buffer): the TIOCLINUX ioctl with the subcode and its arguments in buf, 0 or -errno.
static napi_value js_tty_linux(napi_env env, napi_callback_info info) {
  int32_t fd;
  void *data = int_and_buffer(env, info, 1, &fd);
  if (data == NULL) return NULL;
  return result(env, ioctl(fd, TIOCLINUX, data));
}

// ttyWinsize(fd: number, buf: Buffer /* struct winsize */): the TIOCGWINSZ ioctl, 0 or -errno.
static napi_value js_tty_winsize(napi_env env, napi_callback_info info) {
  int32_t fd;
  void *data = int_and_buffer(env, info, sizeof(struct winsize), &fd);
  if (data == NULL) return NULL;
  struct winsize ws;
  int ret = ioctl(fd, TIOCGWINSZ, &ws);
  if (ret == 0) memcpy(data, &ws, sizeof ws);
  return result(env, ret);
}

// packetBroadcast(ifindex: number, ethertype: number, payload: Buffer): sends payload to ff:ff:ff:ff:ff:ff on the
// link through a packet socket (SOCK_DGRAM: the kernel adds the Ethernet header); the bytes sent or -errno.
static napi_value js_packet_broadcast(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t ifindex, ethertype;
  if (!int_arg(env, argv, argc, 0, &ifindex) || !int_arg(env, argv, argc, 1, &ethertype)) return NULL;
  void *data = buffer_arg(env, argv, argc, 2, 1);
  if (data == NULL) return NULL;
  size_t len = 0;
  napi_get_buffer_info(env, argv[2], NULL, &len);
  int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons((uint16_t)ethertype));
  if (fd < 0) return result(env, -1);
  struct sockaddr_ll addr;
  memset(&addr, 0, sizeof addr);
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons((uint16_t)ethertype);
  addr.sll_ifindex = ifindex;
  addr.sll_halen = 6;
  memset(addr.sll_addr, 0xff, 6);
  ssize_t sent = sendto(fd, data, len, 0, (struct sockaddr *)&addr, sizeof addr);
  int err = errno;
  close(fd);
  errno = err;
  return result(env, (int)sent);
}

// The most fds one message carries (the kernel's SCM_MAX_FD is 253; the system bus sends one).
#define SEND_FDS_MAX 16

// sendFds(fd: number, data: Buffer, fds: Buffer /* int[n] */): sendmsg(2) of data on a connected Unix stream socket
// without blocking, the n fds (n may be 0) in an SCM_RIGHTS message; the bytes sent or -errno. The kernel attaches
// the fds to the first byte it takes: after a partial send the rest goes without them, after -EAGAIN nothing left.
static napi_value js_send_fds(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd;
  if (!int_arg(env, argv, argc, 0, &fd)) return NULL;
  void *data = buffer_arg(env, argv, argc, 1, 1);
  if (data == NULL) return NULL;
  size_t len = 0, fds_len = 0;
  napi_get_buffer_info(env, argv[1], NULL, &len);
  // An empty Buffer (no fds) may have no data pointer: buffer_arg cannot take it.
  bool is_buffer = false;
  void *fd_bytes = NULL;
  if (argc < 3 || napi_is_buffer(env, argv[2], &is_buffer) != napi_ok || !is_buffer ||
      napi_get_buffer_info(env, argv[2], &fd_bytes, &fds_len) != napi_ok || fds_len % sizeof(int) != 0 ||
      fds_len / sizeof(int) > SEND_FDS_MAX) {
    napi_throw_type_error(env, NULL, "expected at most 16 fds in a Buffer as an int array");
    return NULL;
  }
  size_t nfds = fds_len / sizeof(int);
  struct iovec iov = {.iov_base = data, .iov_len = len};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  // The control buffer as a union: CMSG_* need it aligned for struct cmsghdr.
  union {
    char bytes[CMSG_SPACE(SEND_FDS_MAX * sizeof(int))];
    struct cmsghdr align;
  } control;
  if (nfds > 0) {
    memset(&control, 0, sizeof control);
    msg.msg_control = control.bytes;
    msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(cmsg), fd_bytes, nfds * sizeof(int));
  }
  // MSG_NOSIGNAL: a client gone answers -EPIPE, not SIGPIPE.
  return result(env, (int)sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL));
}

// packetSocket(): socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), a capture's socket: with protocol 0 it queues
// nothing until packetBind names the link and the protocol, so its filter and membership are in place first;
// the fd or -errno.
static napi_value js_packet_socket(napi_env env, napi_callback_info info) {
  (void)info;
  return result(env, socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
}

// attachFilter(fd: number, program: Buffer /* struct sock_filter[n], n >= 1 */): SO_ATTACH_FILTER; 0 or -errno.
static napi_value js_attach_filter(napi_env env, napi_callback_info info) {
  int32_t fd;
  void *data = int_and_buffer(env, info, sizeof(struct sock_filter), &fd);
  if (data == NULL) return NULL;
  size_t argc = 2, len = 0;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  napi_get_buffer_info(env, argv[1], NULL, &len);
  if (len % sizeof(struct sock_filter) != 0 || len / sizeof(struct sock_filter) > 0xffff) {
    napi_throw_type_error(env, NULL, "expected a Buffer of whole struct sock_filter instructions");
    return NULL;
  }
  // The kernel copies the program in: it may stay in the caller's unaligned Buffer.
  struct sock_fprog prog = {.len = (unsigned short)(len / sizeof(struct sock_filter)), .filter = data};
  return result(env, setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog));
}

// packetMembership(fd: number, ifindex: number, type: number /* PACKET_MR_* */): PACKET_ADD_MEMBERSHIP; 0 or -errno.
static napi_value js_packet_membership(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd, ifindex, type;
  if (!int_arg(env, argv, argc, 0, &fd) || !int_arg(env, argv, argc, 1, &ifindex) || !int_arg(env, argv, argc, 2, &type)) return NULL;
  struct packet_mreq mreq;
  memset(&mreq, 0, sizeof mreq);
  mreq.mr_ifindex = ifindex;
  mreq.mr_type = (unsigned short)type;
  return result(env, setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq, sizeof mreq));
}

// packetBind(fd: number, ifindex: number, protocol: number /* ETH_P_*, host order */): bind(2) to the link; 0 or -errno.
static napi_value js_packet_bind(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd, ifindex, protocol;
  if (!int_arg(env, argv, argc, 0, &fd) || !int_arg(env, argv, argc, 1, &ifindex) || !int_arg(env, argv, argc, 2, &protocol)) return NULL;
  struct sockaddr_ll addr;
  memset(&addr, 0, sizeof addr);
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons((uint16_t)protocol);
  addr.sll_ifindex = ifindex;
  return result(env, bind(fd, (struct sockaddr *)&addr, sizeof addr));
}

#if !defined(__x86_64__)
static napi_value not_x86(napi_env env) {
  errno = ENOSYS;
  return result(env, -1);
}
#endif

// cpuid(leaf: number, regs: Buffer /* uint32 eax, ebx, ecx, edx */): 0, or -ENOSYS off x86.
static napi_value js_cpuid(napi_env env, napi_callback_info info) {
  int32_t leaf;
  void *data = int_and_buffer(env, info, 4 * sizeof(uint32_t), &leaf);
  if (data == NULL) return NULL;
#if defined(__x86_64__)
  uint32_t r[4];
  __cpuid_count((uint32_t)leaf, 0, r[0], r[1], r[2], r[3]);
  memcpy(data, r, sizeof r);
  return result(env, 0);
#else
  return not_x86(env);
#endif
}

#define VMWARE_BACKDOOR_PORT 0x5658

// vmwareBackdoor(regs: Buffer /* uint32 eax, ebx, ecx, edx, esi, edi */): one IN from the backdoor port
// with those registers, the registers it leaves written back; 0, or -errno when the port cannot be
// opened (-ENOSYS off x86). Only a VMware guest may call it: elsewhere the port is whatever the bus has.
static napi_value js_vmware_backdoor(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  void *data = buffer_arg(env, argv, argc, 0, 6 * sizeof(uint32_t));
  if (data == NULL) return NULL;
#if defined(__x86_64__)
  // The I/O permission bitmap is the calling thread's: granted here, on the thread that runs the IN,
  // for the four ports a 32-bit IN spans (one bit short and the IN faults).
  if (ioperm(VMWARE_BACKDOOR_PORT, 4, 1) < 0) return result(env, -1);
  uint32_t r[6];
  memcpy(r, data, sizeof r);
  r[3] = (r[3] & 0xffff0000u) | VMWARE_BACKDOOR_PORT;
  __asm__ __volatile__("inl %%dx, %%eax"
                       : "+a"(r[0]), "+b"(r[1]), "+c"(r[2]), "+d"(r[3]), "+S"(r[4]), "+D"(r[5])
                       :
                       : "memory");
  memcpy(data, r, sizeof r);
  return result(env, 0);
#else
  return not_x86(env);
#endif
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
      {"adjtimex", NULL, js_adjtimex, NULL, NULL, NULL, napi_enumerable, NULL},
      {"clockGettime", NULL, js_clock_gettime, NULL, NULL, NULL, napi_enumerable, NULL},
      {"rtcSetTime", NULL, js_rtc_set_time, NULL, NULL, NULL, napi_enumerable, NULL},
      {"vtActivate", NULL, js_vt_activate, NULL, NULL, NULL, napi_enumerable, NULL},
      {"ttyLinux", NULL, js_tty_linux, NULL, NULL, NULL, napi_enumerable, NULL},
      {"ttyWinsize", NULL, js_tty_winsize, NULL, NULL, NULL, napi_enumerable, NULL},
      {"packetBroadcast", NULL, js_packet_broadcast, NULL, NULL, NULL, napi_enumerable, NULL},
      {"pipe", NULL, js_pipe, NULL, NULL, NULL, napi_enumerable, NULL},
      {"sendFds", NULL, js_send_fds, NULL, NULL, NULL, napi_enumerable, NULL},
      {"packetSocket", NULL, js_packet_socket, NULL, NULL, NULL, napi_enumerable, NULL},
      {"attachFilter", NULL, js_attach_filter, NULL, NULL, NULL, napi_enumerable, NULL},
      {"packetMembership", NULL, js_packet_membership, NULL, NULL, NULL, napi_enumerable, NULL},
      {"packetBind", NULL, js_packet_bind, NULL, NULL, NULL, napi_enumerable, NULL},
      {"cpuid", NULL, js_cpuid, NULL, NULL, NULL, napi_enumerable, NULL},
      {"vmwareBackdoor", NULL, js_vmware_backdoor, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  return exports;
}
