// @peculiar/x509 signs and verifies through a WebCrypto provider; Node's is the one.
import { webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";

// The library's `Crypto` parameter type is the DOM one, which this project's libs do not include.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
