// CLOCK_BOOTTIME for Node.js, which has no binding for it.
//
// The sidecar's deadlines (validUntilBoottime) are readings of the node's
// CLOCK_BOOTTIME: time since boot, counting suspend. Node offers only
// CLOCK_MONOTONIC (process.hrtime, performance.now), which stops during a
// suspend, and /proc/uptime, which is CLOCK_BOOTTIME but truncated to 10 ms.
// Their difference, CLOCK_BOOTTIME - CLOCK_MONOTONIC, is the total time the
// machine has spent suspended: constant between suspends, and it only grows.
// So this module reads
//
//   boottime = CLOCK_MONOTONIC + offset
//
// where offset is an upper bound of that difference, measured at a tick of
// /proc/uptime: spinning on the file until its value changes pins the instant
// it equals a multiple of 10 ms to within the few microseconds of one read.
// Every reading also reads /proc/uptime (a pread of an open file, ~2 µs) and
// re-measures the offset when the file is ahead of the estimate: a suspend
// happened. Readings err late, never early — by the read time at
// calibration (microseconds), or by up to 10 ms right after a suspend until
// the re-measurement — so a deadline is never thought further away than it
// is. A suspend shorter than 10 ms may go unnoticed.
//
// Where /proc/uptime is missing (not Linux) or is not the kernel's
// CLOCK_BOOTTIME (LXCFS and similar give a container its own, smaller
// uptime: it is then below CLOCK_MONOTONIC), boottime is CLOCK_MONOTONIC and
// sharesSidecarClock() is false: the sidecar's deadlines are then not used
// and validity counts from when a request was sent.

import { closeSync, openSync, readSync } from "node:fs";

const UPTIME = "/proc/uptime";
/** /proc/uptime's resolution. */
const TICK_MS = 10;
/** A tick edge counts as measured if one read before and after it took at most this. */
const GOOD_EDGE_MS = 0.1;
/** How long a calibration may spin looking for a good edge (a few ticks). */
const CALIBRATION_SPIN_MS = 35;

/** CLOCK_MONOTONIC in milliseconds (libuv reads it for process.hrtime). */
function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** A source of /proc/uptime readings, in whole milliseconds (multiples of 10). */
export type UptimeReader = () => number;

/** Opens /proc/uptime once; undefined where it cannot be read. */
function openUptime(): UptimeReader | undefined {
  let fd: number;
  try {
    fd = openSync(UPTIME, "r");
  } catch {
    return undefined;
  }
  const buf = Buffer.alloc(64);
  const read = (): number => {
    const n = readSync(fd, buf, 0, buf.length, 0);
    const text = buf.toString("latin1", 0, n);
    const m = /^(\d+)\.(\d\d) /.exec(text);
    if (!m) throw new Error(`${UPTIME}: unexpected contents ${JSON.stringify(text)}`);
    return Number(m[1]) * 1000 + Number(m[2]) * TICK_MS;
  };
  try {
    read();
  } catch {
    closeSync(fd);
    return undefined;
  }
  return read;
}

/**
 * A CLOCK_BOOTTIME estimate from CLOCK_MONOTONIC and /proc/uptime, as the
 * module comment describes. Exposed for tests, which feed it fake clocks.
 */
export class BoottimeClock {
  private offsetMs = Number.NaN;

  /**
   * @param uptime reads /proc/uptime (ms, truncated to 10 ms)
   * @param monotonic reads CLOCK_MONOTONIC (ms)
   */
  constructor(
    private readonly uptime: UptimeReader,
    private readonly monotonic: () => number = monotonicMs,
  ) {}

  /** Whether /proc/uptime is the kernel's CLOCK_BOOTTIME: never behind CLOCK_MONOTONIC. */
  isKernelBoottime(): boolean {
    const before = this.monotonic();
    const u = this.uptime();
    return u + TICK_MS >= before;
  }

  /** The current CLOCK_BOOTTIME reading in milliseconds, never early. */
  now(): number {
    if (Number.isNaN(this.offsetMs)) this.calibrate();
    const u = this.uptime();
    const after = this.monotonic();
    if (u > after + this.offsetMs) this.calibrate(); // suspended since: the offset grew
    return this.monotonic() + this.offsetMs;
  }

  /**
   * Measures the offset: spins on /proc/uptime for a tick edge whose two
   * reads were quick, for at most CALIBRATION_SPIN_MS, and keeps the
   * tightest upper bound seen (each read alone bounds it by a whole tick).
   */
  private calibrate(): void {
    let start = this.monotonic();
    let prev = this.uptime();
    let best = prev + TICK_MS - start;
    const giveUp = start + CALIBRATION_SPIN_MS;
    for (;;) {
      const readStart = this.monotonic();
      const u = this.uptime();
      const readEnd = this.monotonic();
      best = Math.min(best, u + TICK_MS - readStart);
      if (u !== prev) {
        // The value reached u after the previous read began, so at that
        // instant boottime - monotonic <= u - start.
        best = Math.min(best, u - start);
        if (readEnd - start <= GOOD_EDGE_MS) break;
      }
      if (readEnd >= giveUp) break;
      prev = u;
      start = readStart;
    }
    this.offsetMs = best;
  }
}

const reader = openUptime();
const clock = reader ? new BoottimeClock(reader) : undefined;
const kernelBoottime = clock?.isKernelBoottime() ?? false;

/**
 * The node's CLOCK_BOOTTIME in milliseconds (fractional): the clock of the
 * sidecar's validUntilBoottime deadlines, shared by every container of the
 * Pod. Never reads early; see the module comment for how it is measured.
 * Falls back to CLOCK_MONOTONIC where sharesSidecarClock() is false.
 */
export function boottimeMs(): number {
  return kernelBoottime && clock ? clock.now() : monotonicMs();
}

/** Whether boottimeMs() is the kernel's CLOCK_BOOTTIME, so the sidecar's deadlines can be compared with it. */
export function sharesSidecarClock(): boolean {
  return kernelBoottime;
}
