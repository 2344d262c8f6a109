// Holds the kernel-facing network controllers back while a reply that may travel on an
// address or route about to change is still on its way (Talos #8566): an apply-config
// NO_REBOOT that removes the address its client connected to must answer first. The
// specs are recomputed meanwhile; only the kernel waits.

export class NetworkChangeHold {
  private readonly pending = new Set<Promise<void>>();

  /**
   * Holds kernel changes until the returned function is called, or for at most `maxMs`
   * (a reply that never reports its delivery must not keep the network from changing).
   */
  hold(maxMs: number, onExpired?: () => void): () => void {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const timer = setTimeout(() => {
      onExpired?.();
      release();
    }, maxMs);
    this.pending.add(held);
    void held.then(() => {
      clearTimeout(timer);
      this.pending.delete(held);
    });
    return release;
  }

  /** Resolves once no hold is pending (at once when none is). */
  async released(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
