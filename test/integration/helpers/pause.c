/* The pod sandbox image's program in test/integration/cri.test.ts: waits until told to stop. */
#include <signal.h>
#include <unistd.h>

static void on_term(int sig) { (void)sig; _exit(0); }

int main(void) {
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  for (;;) pause();
}
