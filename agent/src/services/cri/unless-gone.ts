// CRI objects come and go under the kubelet: a call on one that is gone already is no error.
import { NotFoundError } from "../../errors.js";

/** The call's result; NotFound (the thing is gone already) as undefined. */
export async function unlessGone<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
}
