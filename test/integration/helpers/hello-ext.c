/* The extension service of test/integration/containerd.test.ts: each run appends a line to
   /data/runs and prints $GREETING and /etc/hello.conf's first line; the first run prints one line and exits with status 3 (a failure its restart
   policy answers), later runs print a tick every 200 ms until SIGTERM, then exit 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_term(int sig) { (void)sig; stop = 1; }

int main(void) {
  int run = 1;
  char line[64];
  FILE *f = fopen("/data/runs", "r");
  if (f) {
    while (fgets(line, sizeof line, f)) run++;
    fclose(f);
  }
  f = fopen("/data/runs", "a");
  if (!f) return 2;
  fprintf(f, "run %d\n", run);
  fclose(f);
  char conf[64] = "";
  f = fopen("/etc/hello.conf", "r");
  if (f) {
    if (!fgets(conf, sizeof conf, f)) conf[0] = 0;
    fclose(f);
    for (char *p = conf; *p; p++) if (*p == '\n') *p = 0;
  }
  printf("hello run %d greeting=%s conf=%s site=%s\n", run, getenv("GREETING") ? getenv("GREETING") : "", conf, getenv("SITE") ? getenv("SITE") : "");
  fflush(stdout);
  if (run == 1) return 3;
  signal(SIGTERM, on_term);
  struct timespec ts = {0, 200 * 1000 * 1000};
  for (int tick = 0; !stop; tick++) {
    printf("hello run %d tick %d\n", run, tick);
    fflush(stdout);
    nanosleep(&ts, NULL);
  }
  return 0;
}
