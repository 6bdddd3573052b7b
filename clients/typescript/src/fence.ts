// The store side of fencing: Fence (tokens) and RevisionFence (revisions),
// and the HTTP headers that carry them with a write.

import { BatonError, StaleRevisionError, StaleTokenError } from "./errors.js";

/** The HTTP header that carries a fencing token with a write. */
export const TOKEN_HEADER = "Baton-Fencing-Token";
/** The HTTP header that carries a fencing revision with a write. */
export const REVISION_HEADER = "Baton-Fencing-Revision";

const DECIMAL = /^\d+$/;
const MAX_INT32 = 2 ** 31 - 1;
/** The largest fencing revision: a resourceVersion is an integer of up to 128 bits (KEP-5504). */
const MAX_REVISION = 2n ** 128n - 1n;
/** A fencing revision's text: decimal digits without sign or leading zero, at most 39 (as 2^128-1 has). */
const REVISION = /^(?:0|[1-9]\d{0,38})$/;

/** The header value of a fencing token (a non-negative int32). */
export function formatToken(token: number): string {
  if (!Number.isInteger(token) || token < 0 || token > MAX_INT32) {
    throw new BatonError(`baton: ${token} is not a fencing token`);
  }
  return String(token);
}

/** The header value of a fencing revision (an integer from 0 to 2^128-1): its decimal digits. */
export function formatRevision(revision: bigint): string {
  if (revision < 0n || revision > MAX_REVISION) throw new BatonError(`baton: ${revision} is not a fencing revision`);
  return revision.toString();
}

/**
 * The fencing revision `text` spells, or undefined unless it is decimal
 * digits without sign or leading zero (but "0") of at most 2^128-1. The one
 * rule for revisions as text: parseRevision (headers) and the answer readers
 * (fencingRevisionDecimal) both use it.
 */
export function decimalRevision(text: string): bigint | undefined {
  if (!REVISION.test(text)) return undefined;
  const n = BigInt(text);
  return n <= MAX_REVISION ? n : undefined;
}

/** Headers as Node (IncomingHttpHeaders), fetch (Headers) or a plain object hold them. */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  const h = headers as Record<string, string | string[] | undefined>;
  const v = h[name.toLowerCase()] ?? h[name];
  return Array.isArray(v) ? v.join(",") : v;
}

/**
 * Parses a Baton-Fencing-Token value (`undefined` or `null`: the header is
 * missing). Throws BatonError unless it is a non-negative 32-bit integer in
 * decimal.
 */
export function parseToken(value: string | null | undefined): number {
  if (value === undefined || value === null) throw new BatonError(`baton: missing ${TOKEN_HEADER} header`);
  const n = DECIMAL.test(value) ? Number(value) : Number.NaN;
  if (!(n <= MAX_INT32)) throw new BatonError(`baton: ${TOKEN_HEADER} ${JSON.stringify(value)} is not a fencing token`);
  return n;
}

/**
 * Parses a Baton-Fencing-Revision value (`undefined` or `null`: the header
 * is missing). Throws BatonError unless it is decimal digits without sign or
 * leading zero of at most 2^128-1 (see decimalRevision).
 */
export function parseRevision(value: string | null | undefined): bigint {
  if (value === undefined || value === null) throw new BatonError(`baton: missing ${REVISION_HEADER} header`);
  const n = decimalRevision(value);
  if (n === undefined) {
    throw new BatonError(`baton: ${REVISION_HEADER} ${JSON.stringify(value)} is not a fencing revision`);
  }
  return n;
}

/** The fencing token of a request's headers (see parseToken). */
export function tokenFromHeaders(headers: HeaderSource): number {
  return parseToken(headerValue(headers, TOKEN_HEADER));
}

/** The fencing revision of a request's headers (see parseRevision). */
export function revisionFromHeaders(headers: HeaderSource): bigint {
  return parseRevision(headerValue(headers, REVISION_HEADER));
}

/** Headers that tag an outgoing write: `fetch(url, {headers: fencingHeaders(token)})`. */
export function fencingHeaders(token: number, revision?: bigint): Record<string, string> {
  const h: Record<string, string> = { [TOKEN_HEADER]: formatToken(token) };
  if (revision !== undefined) h[REVISION_HEADER] = formatRevision(revision);
  return h;
}

/**
 * The store side of fencing for one Lease: remembers the highest token it
 * admitted and refuses lower ones; equal tokens are admitted (the same
 * leader writing again).
 *
 * `admit` must be atomic with the write it guards. JavaScript runs one
 * callback at a time, so calling it in the same synchronous step as the
 * write is enough; a write that awaits in between (a database call) must
 * hold the store's own lock or transaction across both. A store that
 * persists its data should persist `highest` with it and admit it again
 * after a restart.
 *
 * The token (leaseTransitions) grows across leaders as far as any running
 * sidecar has seen; if the Lease is deleted while every sidecar restarts it
 * starts again from 0, and this fence refuses the new leader. Use a
 * RevisionFence where that matters.
 */
export class Fence {
  #highest: number | undefined;

  /** Accepts `token` unless a higher one was admitted, and records it; otherwise throws StaleTokenError. */
  admit(token: number): void {
    if (this.#highest !== undefined && token < this.#highest) throw new StaleTokenError(token, this.#highest);
    this.#highest = token;
  }

  /** The highest token admitted; undefined before the first. */
  get highest(): number | undefined {
    return this.#highest;
  }
}

/**
 * Fence for fencing revisions (Leadership.fencingRevision: bigints from 0n
 * to 2^128-1, compared as integers). Revisions come from the API server's
 * own counter, so they keep growing after the Lease is deleted and every
 * sidecar restarted — on Kubernetes >= 1.35 (KEP-5504); on older servers use
 * Fence. A revision of 0n (unknown) is refused once any revision was
 * admitted. Atomicity as for Fence.
 */
export class RevisionFence {
  #highest: bigint | undefined;

  /** Accepts `revision` unless a higher one was admitted, and records it; otherwise throws StaleRevisionError. */
  admit(revision: bigint): void {
    if (this.#highest !== undefined && revision < this.#highest) {
      throw new StaleRevisionError(revision, this.#highest);
    }
    this.#highest = revision;
  }

  /** The highest revision admitted; undefined before the first. */
  get highest(): bigint | undefined {
    return this.#highest;
  }
}
