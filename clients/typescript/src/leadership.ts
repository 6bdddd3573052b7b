// Leadership, the state a sidecar reports, and the pure logic around it:
// conversion from the wire (GET /leader JSON and baton.v1.Leadership), the
// remaining validity at a clock reading, and the require-leader decision.
// Nothing here reads a clock it is not given, so the conformance vectors
// can drive it.

import { boottimeMs, sharesSidecarClock } from "./clock.js";
import { MalformedAnswerError, NotLeaderError } from "./errors.js";
import { decimalRevision } from "./fence.js";
import type { Leadership__Output as LeadershipProto } from "./gen/baton/v1/Leadership.js";

/** The fields of a Leadership (see the class). */
export interface LeadershipFields {
  isLeader: boolean;
  identity: string;
  holderIdentity: string;
  fencingToken: number;
  fencingRevision: bigint;
  leaseName: string;
  leaseNamespace: string;
  leaseUid: string;
  acquireTime: Date | null;
  renewTime: Date | null;
  validForMs: number;
  validUntilBoottimeMs: number;
  validUntilBoottimeNs: bigint;
  leaseDurationMs: number;
  observed: boolean;
  steppingDown: boolean;
  error?: Error | undefined;
}

/**
 * What the sidecar reported at one moment. `Leadership.NONE` means "not
 * leader, nothing known", which is also what an application must assume
 * while the sidecar cannot be reached; a watch then yields such a state with
 * `error` set.
 */
export class Leadership implements LeadershipFields {
  /** This pod held the Lease, within its renew deadline, when the sidecar answered. */
  readonly isLeader: boolean;
  /** This sidecar's holder identity (new for every sidecar process). */
  readonly identity: string;
  /** The Lease's holder as last observed; "" when nobody holds it. */
  readonly holderIdentity: string;
  /** The token to tag writes with while isLeader (leaseTransitions); otherwise the last observed one. */
  readonly fencingToken: number;
  /**
   * The second fencing token: the Lease's resourceVersion as written by the
   * write that won this term while isLeader; otherwise that of the last
   * observed Lease. Keeps growing across Lease deletion and a restart of
   * every sidecar, on Kubernetes >= 1.35 (see RevisionFence). An integer of
   * up to 128 bits (KEP-5504), 0n to 2^128-1: compare it as a bigint. 0n
   * when unknown.
   */
  readonly fencingRevision: bigint;
  readonly leaseName: string;
  readonly leaseNamespace: string;
  /** metadata.uid of the Lease; changes when it is deleted and recreated. */
  readonly leaseUid: string;
  /** The Lease's acquireTime and renewTime (the holder's wall clock), if known. Information only. */
  readonly acquireTime: Date | null;
  readonly renewTime: Date | null;
  /** Guaranteed leadership left when the sidecar produced the answer (ms); 0 when not leader. */
  readonly validForMs: number;
  /**
   * When that guarantee ends, as a CLOCK_BOOTTIME reading in ms (see
   * boottimeMs): the sidecar's own deadline, exact however long the answer
   * took to arrive. From an older sidecar that sends none, counted from when
   * the request was sent (or a watch message arrived). 0 when not leader.
   */
  readonly validUntilBoottimeMs: number;
  /**
   * The validUntilBoottime of a leader answer exactly as the sidecar sent it,
   * in nanoseconds (0n if it sent none): the deadline an acknowledgement of
   * this answer names (acknowledgeStepDown), never a local estimate.
   */
  readonly validUntilBoottimeNs: bigint;
  /** The Lease's leaseDurationSeconds in ms; 0 when unknown. */
  readonly leaseDurationMs: number;
  /** The sidecar has read the Lease (or its absence) at least once. */
  readonly observed: boolean;
  /** The sidecar is shutting down or resigning. */
  readonly steppingDown: boolean;
  /** Set only on the states a watch yields while the sidecar cannot be reached or is refused. */
  readonly error: Error | undefined;

  static readonly NONE = new Leadership({});

  constructor(f: Partial<LeadershipFields>) {
    this.isLeader = f.isLeader ?? false;
    this.identity = f.identity ?? "";
    this.holderIdentity = f.holderIdentity ?? "";
    this.fencingToken = f.fencingToken ?? 0;
    this.fencingRevision = f.fencingRevision ?? 0n;
    this.leaseName = f.leaseName ?? "";
    this.leaseNamespace = f.leaseNamespace ?? "";
    this.leaseUid = f.leaseUid ?? "";
    this.acquireTime = f.acquireTime ?? null;
    this.renewTime = f.renewTime ?? null;
    this.validForMs = this.isLeader ? (f.validForMs ?? 0) : 0;
    this.validUntilBoottimeMs = this.isLeader ? (f.validUntilBoottimeMs ?? 0) : 0;
    this.validUntilBoottimeNs = this.isLeader ? (f.validUntilBoottimeNs ?? 0n) : 0n;
    this.leaseDurationMs = f.leaseDurationMs ?? 0;
    this.observed = f.observed ?? false;
    this.steppingDown = f.steppingDown ?? false;
    this.error = f.error;
    Object.freeze(this);
  }

  /** Guaranteed leadership left at CLOCK_BOOTTIME reading `nowMs` (default: now); 0 when not leader or lapsed. */
  remainingMs(nowMs: number = boottimeMs()): number {
    if (!this.isLeader || this.validUntilBoottimeMs <= 0) return 0;
    return Math.max(0, this.validUntilBoottimeMs - nowMs);
  }

  /** Whether this state lets this pod act as leader at `nowMs`: leader, not stepping down, guarantee not run out. */
  leadsNow(nowMs: number = boottimeMs()): boolean {
    return this.remainingMs(nowMs) > 0 && !this.steppingDown;
  }

  /** This state as a follower's: the guarantee ran out without news from the sidecar. */
  expired(): Leadership {
    return new Leadership({ ...this, isLeader: false });
  }

  /**
   * The server-side-apply field manager for Kubernetes writes made under
   * this answer's leadership: the sidecar's holder identity, or "" for a
   * state without one. Every sidecar process has an identity of its own, so
   * every term has a manager of its own. Leader work that writes Kubernetes
   * objects takes its fields over once at the start of the term
   * (`force: true`) and applies every later write without force; then if two
   * pods believe they lead at once, the one whose fields were taken over gets
   * 409 Conflict naming the other's manager instead of silently overwriting
   * its writes.
   *
   * The API server takes at most 128 printable characters: an identity that
   * is longer, or has anything but printable ASCII, becomes its first 111
   * bytes (of UTF-8; others replaced by `_`), `-` and the 16 hex digits of its
   * 64-bit FNV-1a hash, the same in every baton client.
   */
  get fieldManager(): string {
    const max = 128;
    const id = Buffer.from(this.identity, "utf8");
    const printable = (b: number) => b >= 0x20 && b <= 0x7e;
    if (id.length <= max && id.every(printable)) return this.identity;
    let hash = 0xcbf29ce484222325n;
    for (const b of id) hash = ((hash ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
    const prefix = Array.from(id.subarray(0, max - 17), (b) => (printable(b) ? String.fromCharCode(b) : "_")).join("");
    return `${prefix}-${hash.toString(16).padStart(16, "0")}`;
  }

  /** What a watch compares to decide whether a state is news: everything but the times that move on every renew. */
  sameAs(o: Leadership): boolean {
    return (
      this.isLeader === o.isLeader &&
      this.observed === o.observed &&
      this.steppingDown === o.steppingDown &&
      this.identity === o.identity &&
      this.holderIdentity === o.holderIdentity &&
      this.leaseUid === o.leaseUid &&
      this.fencingToken === o.fencingToken
    );
  }
}

// --- proto3 JSON -------------------------------------------------------------

const DURATION = /^(-)?(\d+)(?:\.(\d{1,9}))?s$/;
const RFC3339 = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$/i;
const INT64 = /^-?\d+$/;

function malformed(field: string, value: unknown): MalformedAnswerError {
  return new MalformedAnswerError(`baton: malformed answer: ${field} is ${JSON.stringify(value)}`);
}

/** A proto3 JSON Duration ("1.5s") in milliseconds, exact to the nanosecond digits given. */
export function parseDurationMs(value: string): number {
  const m = DURATION.exec(value);
  if (!m) throw malformed("a duration", value);
  const ms = Number(m[2]) * 1000 + Number((m[3] ?? "").padEnd(9, "0")) / 1e6;
  return m[1] ? -ms : ms;
}

function parseTime(field: string, value: string): Date {
  const m = RFC3339.exec(value);
  const t = m ? Date.parse(`${m[1]}${(m[2] ?? "").slice(0, 4)}${m[3]}`) : Number.NaN;
  if (Number.isNaN(t)) throw malformed(field, value);
  return new Date(t);
}

type Json = Record<string, unknown>;

function field<T>(obj: Json, name: string, kind: "boolean" | "string", fallback: T): T {
  const v = obj[name];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== kind) throw malformed(name, v);
  return v as T;
}

function int32(obj: Json, name: string): number {
  const v = obj[name];
  if (v === undefined || v === null) return 0;
  const n = typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n < -(2 ** 31) || n >= 2 ** 31) throw malformed(name, v);
  return n;
}

function int64(obj: Json, name: string): bigint {
  const v = obj[name];
  if (v === undefined || v === null) return 0n;
  const s = typeof v === "number" && Number.isSafeInteger(v) ? String(v) : v;
  if (typeof s !== "string" || !INT64.test(s)) throw malformed(name, v);
  const n = BigInt(s);
  if (n < -(2n ** 63n) || n >= 2n ** 63n) throw malformed(name, v);
  return n;
}

/** `text` as a fencing revision (see decimalRevision); MalformedAnswerError naming `field` otherwise. */
function revisionText(field: string, text: unknown): bigint {
  const n = typeof text === "string" ? decimalRevision(text) : undefined;
  if (n === undefined) throw malformed(field, text);
  return n;
}

/**
 * The fencing revision of an answer: fencingRevisionDecimal when present and
 * not empty, else the int64 fencingRevision that sidecars 0.2.0 and earlier
 * send alone.
 */
function revision(obj: Json): bigint {
  const v = obj.fencingRevisionDecimal;
  if (v === undefined || v === null || v === "") return int64(obj, "fencingRevision");
  return revisionText("fencingRevisionDecimal", v);
}

/** A proto3 JSON duration in exact nanoseconds; 0n when absent or negative. */
function durationNs(obj: Json, name: string): bigint {
  const v = obj[name];
  if (v === undefined || v === null) return 0n;
  const m = typeof v === "string" ? DURATION.exec(v) : null;
  if (!m) throw malformed(name, v);
  if (m[1]) return 0n;
  return BigInt(m[2]!) * 1_000_000_000n + BigInt((m[3] ?? "").padEnd(9, "0"));
}

/** Nanoseconds as a proto3 JSON duration ("12345.678901234s"), as POST /leader/ack takes it. */
export function formatDurationNs(ns: bigint): string {
  return `${ns / 1_000_000_000n}.${String(ns % 1_000_000_000n).padStart(9, "0")}s`;
}

function duration(obj: Json, name: string): number {
  const v = obj[name];
  if (v === undefined || v === null) return 0;
  if (typeof v !== "string") throw malformed(name, v);
  return parseDurationMs(v);
}

function time(obj: Json, name: string): Date | null {
  const v = obj[name];
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw malformed(name, v);
  return parseTime(name, v);
}

/**
 * The deadline of a leader answer on CLOCK_BOOTTIME: the sidecar's own if it
 * sent one and shares this clock, else `sinceMs` + validFor.
 */
function deadline(validForMs: number, sidecarDeadlineMs: number, sinceMs: number, sharesClock: boolean): number {
  return sidecarDeadlineMs > 0 && sharesClock ? sidecarDeadlineMs : sinceMs + validForMs;
}

/**
 * Converts the body of GET /leader (or one SSE `data:` line): proto3 JSON of
 * a baton.v1.Leadership. `sinceMs` is the CLOCK_BOOTTIME reading (ms) its
 * validity counts from if the sidecar sent no validUntilBoottime: when the
 * request was sent. Unknown fields are ignored; anything else that is not a
 * Leadership throws MalformedAnswerError.
 */
export function leadershipFromJson(text: string, sinceMs: number, sharesClock = sharesSidecarClock()): Leadership {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (e) {
    throw new MalformedAnswerError(`baton: malformed answer: not JSON: ${(e as Error).message}`);
  }
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) throw malformed("the answer", obj);
  const o = obj as Json;
  const isLeader = field(o, "isLeader", "boolean", false);
  const validForMs = duration(o, "validFor");
  const sidecarDeadlineMs = duration(o, "validUntilBoottime");
  return new Leadership({
    isLeader,
    identity: field(o, "identity", "string", ""),
    holderIdentity: field(o, "holderIdentity", "string", ""),
    fencingToken: int32(o, "fencingToken"),
    fencingRevision: revision(o),
    leaseName: field(o, "leaseName", "string", ""),
    leaseNamespace: field(o, "leaseNamespace", "string", ""),
    leaseUid: field(o, "leaseUid", "string", ""),
    acquireTime: time(o, "acquireTime"),
    renewTime: time(o, "renewTime"),
    validForMs,
    validUntilBoottimeMs: deadline(validForMs, sidecarDeadlineMs, sinceMs, sharesClock),
    validUntilBoottimeNs: durationNs(o, "validUntilBoottime"),
    leaseDurationMs: duration(o, "leaseDuration"),
    observed: field(o, "observed", "boolean", false),
    steppingDown: field(o, "steppingDown", "boolean", false),
  });
}

interface ProtoDuration {
  seconds: string;
  nanos: number;
}
interface ProtoTimestamp {
  seconds: string;
  nanos: number;
}

function protoDurationMs(d: ProtoDuration | null): number {
  return d ? Number(d.seconds) * 1000 + d.nanos / 1e6 : 0;
}

/** A proto Duration in exact nanoseconds; 0n when absent or negative. */
function protoDurationNs(d: ProtoDuration | null): bigint {
  if (!d) return 0n;
  const ns = BigInt(d.seconds) * 1_000_000_000n + BigInt(d.nanos);
  return ns > 0n ? ns : 0n;
}

function protoTime(t: ProtoTimestamp | null): Date | null {
  return t ? new Date(Number(t.seconds) * 1000 + Math.trunc(t.nanos / 1e6)) : null;
}

/**
 * Converts a baton.v1.Leadership as @grpc/proto-loader decodes it; `sinceMs`
 * as in leadershipFromJson. Throws MalformedAnswerError for a
 * fencing_revision_decimal that is not a fencing revision.
 */
export function leadershipFromProto(
  m: LeadershipProto,
  sinceMs: number,
  sharesClock = sharesSidecarClock(),
): Leadership {
  const validForMs = protoDurationMs(m.validFor);
  return new Leadership({
    isLeader: m.isLeader,
    identity: m.identity,
    holderIdentity: m.holderIdentity,
    fencingToken: m.fencingToken,
    // fencing_revision_decimal is empty only from sidecars 0.2.0 and earlier.
    fencingRevision: m.fencingRevisionDecimal
      ? revisionText("fencing_revision_decimal", m.fencingRevisionDecimal)
      : BigInt(m.fencingRevision),
    leaseName: m.leaseName,
    leaseNamespace: m.leaseNamespace,
    leaseUid: m.leaseUid,
    acquireTime: protoTime(m.acquireTime),
    renewTime: protoTime(m.renewTime),
    validForMs,
    validUntilBoottimeMs: deadline(validForMs, protoDurationMs(m.validUntilBoottime), sinceMs, sharesClock),
    validUntilBoottimeNs: protoDurationNs(m.validUntilBoottime),
    leaseDurationMs: protoDurationMs(m.leaseDuration),
    observed: m.observed,
    steppingDown: m.steppingDown,
  });
}

/**
 * The require-leader decision: `l` itself if it leads with at least
 * `minValidityMs` (and more than zero) of guaranteed leadership left at
 * `nowMs`; otherwise a NotLeaderError.
 */
export function checkLeader(l: Leadership, minValidityMs: number, nowMs: number = boottimeMs()): Leadership {
  const remaining = l.remainingMs(nowMs);
  if (!l.isLeader || l.steppingDown || remaining <= 0 || remaining < minValidityMs) {
    throw new NotLeaderError(l, minValidityMs, remaining);
  }
  return l;
}
