import type { ResourceState } from "../resources/state.js";

/** The spec of a resource once it exists (and satisfies `holds`); undefined when `signal` aborts first. */
export function published<S>(
  state: ResourceState,
  namespace: string,
  type: string,
  id: string,
  signal: AbortSignal,
  holds: (spec: S) => boolean = () => true,
): Promise<S | undefined> {
  return new Promise((resolve) => {
    const ac = new AbortController();
    const done = (spec: S | undefined) => {
      ac.abort();
      signal.removeEventListener("abort", stop);
      resolve(spec);
    };
    const stop = () => done(undefined);
    signal.addEventListener("abort", stop, { once: true });
    state.watch<S>({ namespace, type, id }, { signal: ac.signal }, (ev) => {
      if (ev.type !== "destroyed" && ev.resource.spec !== undefined && holds(ev.resource.spec)) done(ev.resource.spec);
    });
  });
}
