import { promises as fs } from "node:fs";

/**
 * Follows a file another process appends to (a container's output, which containerd's shim writes to
 * a file: a FIFO needs mkfifo, which Node does not have) and hands each new chunk to `sink` in order.
 */
export class LogFollower {
  private offset = 0;
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> = Promise.resolve();

  constructor(
    private readonly file: string,
    private readonly sink: (chunk: Buffer) => void,
    private readonly intervalMs = 200,
  ) {}

  /** Starts following from `from`, by default the file's current end (earlier runs' output is not sent again). */
  async start(from?: number): Promise<void> {
    this.offset =
      from ??
      (await fs.stat(this.file).then(
        (s) => s.size,
        () => 0,
      ));
    this.timer = setInterval(() => this.poll(), this.intervalMs);
    this.timer.unref();
  }

  /** Sends what is left and stops. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.poll();
    await this.reading;
  }

  private poll(): void {
    this.reading = this.reading.then(() => this.readNew()).catch(() => undefined);
  }

  private async readNew(): Promise<void> {
    const fh = await fs.open(this.file, "r").catch(() => undefined);
    if (!fh) return;
    try {
      for (;;) {
        const buf = Buffer.alloc(64 * 1024);
        const { bytesRead } = await fh.read(buf, 0, buf.length, this.offset);
        if (bytesRead === 0) return;
        this.offset += bytesRead;
        this.sink(buf.subarray(0, bytesRead));
      }
    } finally {
      await fh.close();
    }
  }
}
