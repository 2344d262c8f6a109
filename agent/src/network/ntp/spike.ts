// Spike detection over the last 8 samples (Talos's, after systemd-timesyncd): a
// sample whose offset moved more than 3x the observed jitter from the previous one
// is a spike and is not followed, unless its offset exceeds its round trip.

const CAPACITY = 8;

export interface Sample {
  offsetS: number;
  rttS: number;
}

export class SpikeDetector {
  private packets = 0;
  private readonly samples: Sample[] = Array.from({ length: CAPACITY }, () => ({ offsetS: 0, rttS: 0 }));
  private index = 0;
  private jitterS = 0;

  get jitter(): number {
    return this.jitterS;
  }

  isSpike(sample: Sample): boolean {
    this.packets++;
    // The first packet is taken as it is.
    if (this.packets === 1) return false;
    const current = this.index;
    this.index = (this.index + 1) % CAPACITY;
    this.samples[this.index] = sample;
    let best = current;
    for (let i = 0; i < CAPACITY; i++) {
      if (this.samples[i]!.rttS === 0) continue;
      if (this.samples[i]!.rttS < this.samples[best]!.rttS) best = i;
    }
    let sum = 0;
    for (const s of this.samples) sum += (s.offsetS - this.samples[best]!.offsetS) ** 2;
    this.jitterS = Math.sqrt(sum / (CAPACITY - 1));
    if (Math.abs(sample.offsetS) > sample.rttS) return false;
    if (this.packets < 4) return false;
    return Math.abs(sample.offsetS - this.samples[current]!.offsetS) > 3 * this.jitterS;
  }
}
