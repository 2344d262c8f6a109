// Basalt /init: the first and only PID 1 of a Basalt node.
//
// In the initramfs it mounts the pseudo filesystems, loads the kernel modules
// needed to reach the root (/etc/modules.root, in dependency order) and starts
// loading the first disk's and NIC's (/etc/modules.order) in a child beside it,
// loop-mounts /rootfs.sqsh read-only, prepares the writable tmpfs trees and
// switches root. It then stays PID 1: it starts machined,
// relays machined's output to the kernel log (so it shows on every console
// and in `dmesg`), reaps orphans, restarts machined when it dies (rebooting
// after repeated failures), and performs reboot, poweroff, halt or kexec when
// machined asks through the control FIFO (see initramfs/README.md).
//
// Built with `gcc -static -Os`; no libc features beyond syscalls are needed.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <linux/reboot.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NEWROOT "/newroot"
#define SQUASHFS "/rootfs.sqsh"
#define MODULES_DIR "/lib/modules"
#define MODULES_ROOT "/etc/modules.root"
#define MODULES_ORDER "/etc/modules.order"
#define CONTROL_DIR "/run/init"
#define CONTROL_FIFO CONTROL_DIR "/control"
#define NODE_BIN "/usr/bin/node"
#define AGENT_DIR "/agent"
#define AGENT_MOUNT "/usr/lib/basalt"
#define AGENT_BUNDLE AGENT_MOUNT "/basalt.mjs"
#define MODPROBE "/usr/sbin/modprobe"

// machined is restarted at most this many times in a row (a run longer than
// STABLE_SECONDS resets the count); then the node reboots. Few: a machined that fails
// three times in a row will not start by being retried, and the reboot is what gets
// the node back (to the last good slot after an upgrade); Talos's machined is PID 1,
// so there a crash reboots at once.
#define MAX_RESTARTS 2
#define STABLE_SECONDS 60
#define TERM_GRACE_MS 5000

static int kmsg_fd = -1;

static double uptime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// Messages go to the kernel log (every console= and dmesg); stderr before /dev exists.
static void say(const char *fmt, ...) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "<5>basalt-init: ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2) n = sizeof buf - 2;
  buf[n++] = '\n';
  if (kmsg_fd < 0 || write(kmsg_fd, buf, n) < 0) {
    if (write(2, buf + 3, n - 3) < 0) { /* nowhere left to report */ }
  }
}

static void mount_or_say(const char *src, const char *dst, const char *type, unsigned long flags, const char *data) {
  mkdir(dst, 0755);
  if (mount(src, dst, type, flags, data) < 0 && errno != EBUSY) say("mount %s on %s: %s", type, dst, strerror(errno));
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

// Last resort when the root cannot be reached: say why, wait, reboot.
static void fatal(const char *why) {
  say("FATAL: %s; rebooting in 10 s", why);
  sync();
  sleep_ms(10000);
  reboot(RB_AUTOBOOT);
  for (;;) pause();
}

// Loads each module `list` names from the directory dirfd, in order; says how many.
static void load_modules(int dirfd, FILE *list, const char *what) {
  char name[256];
  int loaded = 0;
  while (fgets(name, sizeof name, list)) {
    name[strcspn(name, "\r\n")] = 0;
    if (!name[0] || name[0] == '#') continue;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { say("module %s: %s", name, strerror(errno)); continue; }
    if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST) say("module %s: %s", name, strerror(errno));
    else loaded++;
    close(fd);
  }
  say("loaded %d modules %s", loaded, what);
}

// The root's modules now; the others in a child that goes on while init mounts the root and starts machined
// (~1 s under TCG). The child reads through descriptors opened here: after switch_root, paths name the new root.
static void load_all_modules(void) {
  int dirfd = open(MODULES_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) return;
  FILE *root = fopen(MODULES_ROOT, "re");
  if (root) { load_modules(dirfd, root, "for the root"); fclose(root); }
  FILE *rest = fopen(MODULES_ORDER, "re");
  if (rest && fork() == 0) {
    load_modules(dirfd, rest, "beside machined");
    _exit(0);
  }
  if (rest) fclose(rest);
  close(dirfd);
}

// Attaches the squashfs to a free loop device (read-only): its path in dev, its fd returned.
static int attach_loop(const char *file, char *dev, size_t devlen) {
  int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (ctl < 0) return -1;
  int n = ioctl(ctl, LOOP_CTL_GET_FREE);
  close(ctl);
  if (n < 0) return -1;
  snprintf(dev, devlen, "/dev/loop%d", n);
  int lfd = open(dev, O_RDWR | O_CLOEXEC);
  int ffd = open(file, O_RDONLY | O_CLOEXEC);
  if (lfd < 0 || ffd < 0) {
    if (lfd >= 0) close(lfd);
    if (ffd >= 0) close(ffd);
    return -1;
  }
  struct loop_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.fd = ffd;
  cfg.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
  strncpy((char *)cfg.info.lo_file_name, file, LO_NAME_SIZE - 1);
  int rc = ioctl(lfd, LOOP_CONFIGURE, &cfg);
  if (rc < 0 && errno == EINVAL) {  // kernels before 5.8
    rc = ioctl(lfd, LOOP_SET_FD, ffd);
    if (rc == 0) rc = ioctl(lfd, LOOP_SET_STATUS64, &cfg.info);
  }
  close(ffd);
  // AUTOCLEAR detaches the device on its last close: the caller closes lfd only
  // after mounting, so that from then on the mount holds it.
  if (rc < 0) { close(lfd); return -1; }
  return lfd;
}

static void write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) { say("create %s: %s", path, strerror(errno)); return; }
  if (write(fd, text, strlen(text)) < 0) say("write %s: %s", path, strerror(errno));
  close(fd);
}

// Writable copies live under /system/etc; bind mounts put them over the read-only /etc.
static void bind_writable_etc(const char *name, const char *initial) {
  char src[256], dst[256];
  snprintf(src, sizeof src, NEWROOT "/system/etc/%s", name);
  snprintf(dst, sizeof dst, NEWROOT "/etc/%s", name);
  write_file(src, initial);
  if (mount(src, dst, NULL, MS_BIND, NULL) < 0) say("bind %s: %s", dst, strerror(errno));
}

static void prepare_root(void) {
  char loopdev[64];
  int loopfd;
  for (int attempt = 0; (loopfd = attach_loop(SQUASHFS, loopdev, sizeof loopdev)) < 0; attempt++) {
    if (attempt == 50) fatal("cannot attach " SQUASHFS " to a loop device");
    sleep_ms(100);
  }
  mkdir(NEWROOT, 0755);
  if (mount(loopdev, NEWROOT, "squashfs", MS_RDONLY | MS_NODEV, NULL) < 0) fatal("cannot mount the root squashfs");
  close(loopfd);
  mount_or_say("tmpfs", NEWROOT "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
  mount_or_say("tmpfs", NEWROOT "/system", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
  mount_or_say("tmpfs", NEWROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
  // /var is a tmpfs until machined mounts EPHEMERAL over it.
  mount_or_say("tmpfs", NEWROOT "/var", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
  mkdir(NEWROOT "/system/etc", 0755);
  mkdir(NEWROOT "/system/run", 0755);
  mkdir(NEWROOT "/system/state", 0700);
  bind_writable_etc("hosts", "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n");
  bind_writable_etc("resolv.conf", "");
  bind_writable_etc("machine-id", "");
  // The agent travels in the small compressed cpio (so agent changes never rebuild
  // rootfs.sqsh); bind it read-only where the root tree expects it.
  if (mount(AGENT_DIR, NEWROOT AGENT_MOUNT, NULL, MS_BIND, NULL) < 0 ||
      mount(NULL, NEWROOT AGENT_MOUNT, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NODEV | MS_NOSUID, NULL) < 0)
    say("bind %s: %s", AGENT_MOUNT, strerror(errno));
  const char *moves[] = {"/dev", "/proc", "/sys"};
  for (unsigned i = 0; i < 3; i++) {
    char dst[64];
    snprintf(dst, sizeof dst, NEWROOT "%s", moves[i]);
    if (mount(moves[i], dst, NULL, MS_MOVE, NULL) < 0) say("move %s: %s", moves[i], strerror(errno));
  }
}

// The initramfs stays in memory (the loop device holds rootfs.sqsh); no cleanup is
// needed because nothing else lives there.
static void switch_root(void) {
  if (chdir(NEWROOT) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 || chdir("/") < 0)
    fatal("switch_root failed");
  mount_or_say("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "gid=5,mode=0620,ptmxmode=0666");
  mount_or_say("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
  mount_or_say("cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, "nsdelegate");
  mkdir(CONTROL_DIR, 0700);
  if (mkfifo(CONTROL_FIFO, 0600) < 0 && errno != EEXIST) say("mkfifo %s: %s", CONTROL_FIFO, strerror(errno));
}

static sigset_t init_signals;

static pid_t spawn(char *const argv[], int out_fd) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  sigprocmask(SIG_UNBLOCK, &init_signals, NULL);
  setsid();
  int null = open("/dev/null", O_RDWR);
  dup2(null, 0);
  dup2(out_fd >= 0 ? out_fd : null, 1);
  dup2(out_fd >= 0 ? out_fd : null, 2);
  // MALLOC_ARENA_MAX=2: glibc otherwise keeps up to 8 arenas per core for node's
  // worker threads; two cut machined's idle memory (measured by bench/memory.ts).
  // BASALT_V8_FLAGS: V8 flags machined sets itself once its modules are loaded (agent/src/cmd/main.ts):
  // on node's command line they would make Node refuse the code cache of its own built-in modules.
  char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/", "TERM=linux",
                  "NODE_COMPILE_CACHE=/run/node-compile-cache", "MALLOC_ARENA_MAX=2",
                  "BASALT_V8_FLAGS=--optimize-for-size", NULL};
  execve(argv[0], argv, envp);
  _exit(127);
}

// Loads drivers for every device present (what udev's coldplug does), in the background.
static void coldplug(void) {
  static char *argv[2048];
  static char store[256 * 1024];
  int argc = 0;
  size_t used = 0;
  argv[argc++] = MODPROBE;
  argv[argc++] = "-b";
  argv[argc++] = "-q";
  argv[argc++] = "-a";
  DIR *buses = opendir("/sys/bus");
  struct dirent *b;
  while (buses && (b = readdir(buses))) {
    if (b->d_name[0] == '.') continue;
    char dpath[300];
    snprintf(dpath, sizeof dpath, "/sys/bus/%s/devices", b->d_name);
    DIR *devs = opendir(dpath);
    struct dirent *d;
    while (devs && (d = readdir(devs))) {
      if (d->d_name[0] == '.') continue;
      char mpath[600];
      snprintf(mpath, sizeof mpath, "%s/%s/modalias", dpath, d->d_name);
      int fd = open(mpath, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      ssize_t n = read(fd, store + used, 1024);
      close(fd);
      if (n <= 1 || used + n + 1 >= sizeof store || argc >= 2046) continue;
      store[used + n] = 0;
      store[used + strcspn(store + used, "\n")] = 0;
      int dup = 0;
      for (int i = 4; i < argc && !dup; i++) dup = strcmp(argv[i], store + used) == 0;
      if (!dup) { argv[argc++] = store + used; used += n + 1; }
    }
    if (devs) closedir(devs);
  }
  if (buses) closedir(buses);
  argv[argc] = NULL;
  if (argc > 4 && access(MODPROBE, X_OK) == 0) spawn(argv, -1);
}

// ---- supervision -------------------------------------------------------------

static pid_t machined = 0;
static int restarts = 0;
static double started_at = 0;
static int out_pipe[2] = {-1, -1};

static void start_machined(void) {
  // No V8 flags here: machined applies BASALT_V8_FLAGS (see spawn) itself; it gives apid its own.
  char *argv[] = {NODE_BIN, AGENT_BUNDLE, "machined", NULL};
  machined = spawn(argv, out_pipe[1]);
  started_at = uptime();
  say("kernel uptime %.3f s: machined started (pid %d)", started_at, machined);
}

// Relays machined's output to the kernel log, one record per line.
static char relay_buf[4096];
static size_t relay_len = 0;

static void relay_line(const char *line, size_t len) {
  char rec[1024];
  if (len > sizeof rec - 8) len = sizeof rec - 8;
  int n = snprintf(rec, sizeof rec, "<6>%.*s\n", (int)len, line);
  if (kmsg_fd < 0 || write(kmsg_fd, rec, n) < 0) { if (write(1, rec + 3, n - 3) < 0) {} }
}

static void relay_output(void) {
  ssize_t n = read(out_pipe[0], relay_buf + relay_len, sizeof relay_buf - relay_len);
  if (n <= 0) return;
  relay_len += n;
  size_t start = 0;
  for (size_t i = 0; i < relay_len; i++) {
    if (relay_buf[i] == '\n') { relay_line(relay_buf + start, i - start); start = i + 1; }
  }
  if (start == 0 && relay_len == sizeof relay_buf) { relay_line(relay_buf, relay_len); start = relay_len; }
  memmove(relay_buf, relay_buf + start, relay_len - start);
  relay_len -= start;
}

static void reap_until_gone(long ms) {
  for (long waited = 0; waited < ms; waited += 100) {
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
    if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD) return;
    sleep_ms(100);
  }
}

// Every process but init: SIGTERM, TERM_GRACE_MS to go, then SIGKILL.
static void stop_all_processes(void) {
  kill(-1, SIGTERM);
  reap_until_gone(TERM_GRACE_MS);
  kill(-1, SIGKILL);
  reap_until_gone(2000);
}

static void unmount_all(void) {
  // Reverse order of /proc/self/mounts; whatever is busy is remounted read-only.
  char lines[256][256];
  int n = 0;
  FILE *f = fopen("/proc/self/mounts", "r");
  char src[256], dst[256], type[64];
  while (f && n < 256 && fscanf(f, "%255s %255s %63s %*[^\n]", src, dst, type) == 3) {
    if (!strcmp(type, "proc") || !strcmp(type, "sysfs") || !strcmp(type, "devtmpfs") || !strcmp(dst, "/")) continue;
    snprintf(lines[n++], 256, "%s", dst);
  }
  if (f) fclose(f);
  for (int i = n - 1; i >= 0; i--)
    if (umount2(lines[i], 0) < 0) mount(NULL, lines[i], NULL, MS_REMOUNT | MS_RDONLY, NULL);
}

// Every network link but lo down before the final reboot(2): a NIC still up while the kernel shuts its
// devices down can hang it there (virtio-net's NAPI spins on the TX queue device_shutdown broke: a soft
// lockup instead of a kexec, seen after an upgrade under TCG). A link that is down has its NAPI stopped.
static void links_down(void) {
  struct if_nameindex *links = if_nameindex();
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  for (struct if_nameindex *l = links; l && s >= 0 && l->if_index; l++) {
    struct ifreq ifr = {0};
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", l->if_name);
    if (!strcmp(l->if_name, "lo") || ioctl(s, SIOCGIFFLAGS, &ifr) < 0 || !(ifr.ifr_flags & IFF_UP)) continue;
    ifr.ifr_flags &= ~IFF_UP;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) say("link %s down: %s", l->if_name, strerror(errno));
  }
  if (s >= 0) close(s);
  if (links) if_freenameindex(links);
}

enum action { ACT_REBOOT, ACT_POWEROFF, ACT_HALT, ACT_KEXEC };

static void final_action(enum action act, const char *why) {
  static const char *names[] = {"reboot", "poweroff", "halt", "kexec"};
  say("%s (%s): stopping all processes", names[act], why);
  stop_all_processes();
  links_down();
  sync();
  unmount_all();
  sync();
  say("%s now", names[act]);
  switch (act) {
    case ACT_KEXEC: reboot(LINUX_REBOOT_CMD_KEXEC); say("kexec: %s; rebooting", strerror(errno)); /* fallthrough */
    case ACT_REBOOT: reboot(RB_AUTOBOOT); break;
    case ACT_POWEROFF: reboot(RB_POWER_OFF); break;
    case ACT_HALT: reboot(RB_HALT_SYSTEM); break;
  }
  for (;;) pause();
}

static char ctl_buf[4096];
static size_t ctl_len = 0;

static void handle_request(char *line) {
  while (*line == ' ') line++;
  if (!strcmp(line, "reboot")) final_action(ACT_REBOOT, "requested by machined");
  else if (!strcmp(line, "poweroff")) final_action(ACT_POWEROFF, "requested by machined");
  else if (!strcmp(line, "halt")) final_action(ACT_HALT, "requested by machined");
  // machined loaded the kernel (kexec_file_load) and knows it will boot; if it does not, reboot.
  else if (!strcmp(line, "kexec")) final_action(ACT_KEXEC, "requested by machined");
  else if (line[0]) say("unknown control request: %.100s", line);
}

static void read_control(int fd) {
  ssize_t n = read(fd, ctl_buf + ctl_len, sizeof ctl_buf - ctl_len - 1);
  if (n <= 0) return;
  ctl_len += n;
  char *nl;
  while ((nl = memchr(ctl_buf, '\n', ctl_len))) {
    *nl = 0;
    handle_request(ctl_buf);
    size_t used = nl - ctl_buf + 1;
    memmove(ctl_buf, nl + 1, ctl_len - used);
    ctl_len -= used;
  }
  if (ctl_len == sizeof ctl_buf - 1) ctl_len = 0;  // garbage without a newline
}

static void machined_exited(int status) {
  char why[128];
  if (WIFEXITED(status)) snprintf(why, sizeof why, "exited with code %d", WEXITSTATUS(status));
  else snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(status));
  machined = 0;
  if (uptime() - started_at > STABLE_SECONDS) restarts = 0;
  if (++restarts > MAX_RESTARTS) {
    char reason[192];
    snprintf(reason, sizeof reason, "machined failed %d times in a row, last %s", MAX_RESTARTS + 1, why);
    final_action(ACT_REBOOT, reason);
  }
  // Every other process is a service machined started; the new machined starts them again, so the
  // old ones go first (they would hold its ports and sockets). Mounts stay: machined keeps those it finds.
  say("machined %s; stopping its processes, restarting (%d/%d) in %d s", why, restarts, MAX_RESTARTS, restarts);
  stop_all_processes();
  sleep_ms(1000L * restarts);
  start_machined();
}

// Memory of the agent (every process running NODE_BIN), for bench/: printed
// MEMORY_REPORT_AFTER seconds after the first machined start and every
// MEMORY_REPORT_EVERY seconds after that. The main figure is the sum of PSS
// (shared pages such as the node binary's split between the processes using
// them); the sum of VmRSS, which counts those pages once per process, is beside it.
#define MEMORY_REPORT_AFTER 60
#define MEMORY_REPORT_EVERY 600

// Adds the first "<key> N kB" line of a /proc/<pid>/ file to *kib; 1 if found.
static int add_kib_field(const char *pid, const char *file, const char *key, long *kib) {
  char path[300], line[160], fmt[48];
  snprintf(path, sizeof path, "/proc/%s/%s", pid, file);
  snprintf(fmt, sizeof fmt, "%s %%ld kB", key);
  FILE *f = fopen(path, "r");
  long v;
  int found = 0;
  while (f && !found && fgets(line, sizeof line, f))
    if (sscanf(line, fmt, &v) == 1) { *kib += v; found = 1; }
  if (f) fclose(f);
  return found;
}

static void report_agent_memory(void) {
  DIR *proc = opendir("/proc");
  struct dirent *e;
  long pss_kib = 0, rss_kib = 0;
  int count = 0;
  while (proc && (e = readdir(proc))) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char path[300], exe[64];
    snprintf(path, sizeof path, "/proc/%s/exe", e->d_name);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n <= 0) continue;
    exe[n] = 0;
    if (strcmp(exe, NODE_BIN)) continue;
    long pss = 0, rss = 0;  // a process that exits between the two reads is left out
    if (add_kib_field(e->d_name, "smaps_rollup", "Pss:", &pss) && add_kib_field(e->d_name, "status", "VmRSS:", &rss)) {
      pss_kib += pss;
      rss_kib += rss;
      count++;
    }
  }
  if (proc) closedir(proc);
  say("kernel uptime %.3f s: agent memory PSS %ld KiB (RSS sum %ld KiB) in %d node processes", uptime(), pss_kib,
      rss_kib, count);
}

static void supervise(void) {
  int sfd = signalfd(-1, &init_signals, SFD_CLOEXEC | SFD_NONBLOCK);
  int ctl = open(CONTROL_FIFO, O_RDWR | O_NONBLOCK | O_CLOEXEC);  // RDWR: never sees EOF
  int tfd = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
  struct itimerspec every = {{MEMORY_REPORT_EVERY, 0}, {MEMORY_REPORT_AFTER, 0}};
  timerfd_settime(tfd, 0, &every, NULL);
  for (;;) {
    struct pollfd fds[4] = {{ctl, POLLIN, 0}, {out_pipe[0], POLLIN, 0}, {sfd, POLLIN, 0}, {tfd, POLLIN, 0}};
    if (poll(fds, 4, -1) < 0) continue;
    if (fds[0].revents & POLLIN) read_control(ctl);
    if (fds[3].revents & POLLIN) {
      uint64_t ticks;
      if (read(tfd, &ticks, sizeof ticks) == sizeof ticks) report_agent_memory();
    }
    if (fds[1].revents & POLLIN) relay_output();
    if (fds[2].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGPWR) final_action(ACT_POWEROFF, "signal");
        if (si.ssi_signo == SIGINT) final_action(ACT_REBOOT, "ctrl-alt-del");
      }
      int status;
      pid_t pid;
      while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        if (pid == machined) machined_exited(status);
    }
  }
}

int main(void) {
  sigemptyset(&init_signals);
  sigaddset(&init_signals, SIGCHLD);
  sigaddset(&init_signals, SIGTERM);
  sigaddset(&init_signals, SIGINT);
  sigaddset(&init_signals, SIGPWR);
  sigprocmask(SIG_BLOCK, &init_signals, NULL);

  mount_or_say("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
  mount_or_say("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  mount_or_say("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  int console = open("/dev/console", O_RDWR | O_NOCTTY);
  if (console >= 0) { dup2(console, 0); dup2(console, 1); dup2(console, 2); if (console > 2) close(console); }
  kmsg_fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  say("kernel uptime %.3f s: init started", uptime());
  reboot(RB_DISABLE_CAD);  // ctrl-alt-del arrives as SIGINT

  load_all_modules();
  prepare_root();
  switch_root();
  say("kernel uptime %.3f s: switched root", uptime());

  coldplug();
  if (pipe2(out_pipe, O_CLOEXEC) < 0) fatal("pipe");
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  start_machined();
  supervise();
  return 0;
}
