/** A value machined owns (the boot's stage, mounted volumes, META keys) that controllers read and follow. */
export interface Source<T> {
  get(): T;
  subscribe(onChange: () => void, signal: AbortSignal): void;
}

/** The Source machined writes: every set() notifies the controllers that follow it. */
export class Observed<T> implements Source<T> {
  private readonly listeners = new Set<() => void>();

  constructor(private value: T) {}

  get(): T {
    return this.value;
  }

  set(value: T): void {
    this.value = value;
    for (const l of [...this.listeners]) l();
  }

  subscribe(onChange: () => void, signal: AbortSignal): void {
    if (signal.aborted) return;
    this.listeners.add(onChange);
    signal.addEventListener("abort", () => this.listeners.delete(onChange), { once: true });
  }
}
