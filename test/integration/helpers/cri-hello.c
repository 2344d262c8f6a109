/* The program of the images in test/integration/cri.test.ts: prints who it runs as and its
   arguments, then a tick every 200 ms until SIGTERM, then "bye" and exits 0. */
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv) {
  signal(SIGTERM, on_term);
  printf("hello uid=%d gid=%d", (int)getuid(), (int)getgid());
  for (int i = 1; i < argc; i++) printf(" %s", argv[i]);
  printf("\n");
  fflush(stdout);
  struct timespec t = {0, 200 * 1000 * 1000};
  for (int n = 1; !stop; n++) {
    printf("tick %d\n", n);
    fflush(stdout);
    nanosleep(&t, NULL);
  }
  printf("bye\n");
  return 0;
}
