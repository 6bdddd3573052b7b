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
// where offset is an upper bound of that difference. Each read of
// /proc/uptime that began at monotonic time s and returned u bounds it:
// boottime was below u + 10 ms at some instant after s, so offset < u + 10 -
// s. The estimate is the least such bound seen: the first reading spins on
// the file for up to one tick (so that some read falls just before the value
// changes, which makes its bound tight to within the read's few
// microseconds), and every later reading reads the file once more (a pread
// of an open file, ~2 µs) and keeps a tighter bound if it finds one. A read
// that shows boottime beyond the estimate (u above monotonic + offset) means
// the machine was suspended since: the estimate restarts from that read.
// Readings therefore err late, never early — by the read time once a read
// fell just before a tick, by up to 10 ms right after the first reading or a
// suspend — so a deadline is never thought further away than it is. A
// suspend shorter than the estimate's error may go unnoticed.
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
/** How long the first reading spins on /proc/uptime: a little over one tick. */
const CALIBRATION_SPIN_MS = 12;

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
    else this.sample();
    return this.monotonic() + this.offsetMs;
  }

  /** Reads /proc/uptime once and tightens the estimate, or restarts it after a suspend. */
  private sample(): void {
    const start = this.monotonic();
    const u = this.uptime();
    const end = this.monotonic();
    const bound = u + TICK_MS - start;
    if (Number.isNaN(this.offsetMs) || u - end > this.offsetMs)
      this.offsetMs = bound; // first, or suspended
    else this.offsetMs = Math.min(this.offsetMs, bound);
  }

  /** Samples /proc/uptime for up to CALIBRATION_SPIN_MS, past its next change. */
  private calibrate(): void {
    const first = this.uptime();
    const giveUp = this.monotonic() + CALIBRATION_SPIN_MS;
    do this.sample();
    while (this.uptime() === first && this.monotonic() < giveUp);
    this.sample();
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
