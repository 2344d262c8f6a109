/*
 * The pod sandbox's first process: it holds the pod's namespaces open, reaps the
 * zombies that processes sharing its PID namespace leave behind, and exits 0 on
 * SIGINT or SIGTERM (how the runtime stops a sandbox). Kubernetes' own pause does
 * the same job; this one is written for Basalt's images and built static.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PAUSE_VERSION
#define PAUSE_VERSION "unknown"
#endif

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  int saved = errno;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

static void on(int sig, void (*handler)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, NULL) < 0) {
    perror("pause: sigaction");
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "-v") == 0) {
    printf("pause %s\n", PAUSE_VERSION);
    return 0;
  }
  if (getpid() != 1) fprintf(stderr, "pause: not running as PID 1: zombies of this namespace are not reaped here\n");
  on(SIGINT, stop, 0);
  on(SIGTERM, stop, 0);
  on(SIGCHLD, reap, SA_NOCLDSTOP | SA_RESTART);
  for (;;) pause();
}
