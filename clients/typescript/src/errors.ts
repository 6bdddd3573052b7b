// The errors of the baton client. Every one is a BatonError: catch that to
// treat any failure as "act as a follower".

import type { Leadership } from "./leadership.js";

/** What BatonError carries beyond the message. */
export interface BatonErrorOptions {
  cause?: unknown;
  /** The gRPC status code of a failed call (a grpc.status value). */
  grpcCode?: number;
  /** The HTTP status of a failed request. */
  httpStatus?: number;
}

/** The base of every error this package throws. */
export class BatonError extends Error {
  readonly grpcCode: number | undefined;
  readonly httpStatus: number | undefined;

  constructor(message: string, options: BatonErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.grpcCode = options.grpcCode;
    this.httpStatus = options.httpStatus;
  }
}

/**
 * No baton sidecar answered at `addr` (nothing listening, no answer within
 * the call timeout, or it is shutting down). Act as a follower; the clients
 * reconnect by themselves when the sidecar is back.
 */
export class SidecarUnavailableError extends BatonError {
  constructor(
    readonly addr: string,
    envVar: string,
    options: BatonErrorOptions = {},
  ) {
    const why = options.cause instanceof Error ? `: ${options.cause.message}` : "";
    super(
      `baton: no sidecar answering at ${addr} (is the baton container running, and is $${envVar} right?)${why}`,
      options,
    );
  }
}

/**
 * This pod must not write: it does not lead, or not with the remaining
 * validity that was asked for.
 */
export class NotLeaderError extends BatonError {
  constructor(
    /** The state the decision was made on. */
    readonly leadership: Leadership,
    /** The remaining validity asked for (ms). */
    readonly minValidityMs: number,
    /** The validity that was left (ms; 0 when not leader). */
    readonly remainingMs: number,
  ) {
    super(`baton: ${NotLeaderError.reason(leadership, minValidityMs, remainingMs)}`);
  }

  private static reason(l: Leadership, minValidityMs: number, remainingMs: number): string {
    if (l.isLeader) {
      return `leader, but only ${Math.trunc(remainingMs)}ms of guaranteed leadership left (${minValidityMs}ms needed)`;
    }
    if (!l.observed) return "not leader: the sidecar has not read the Lease yet";
    if (l.steppingDown) return "not leader: the sidecar is stepping down";
    if (l.holderIdentity === "") return "not leader: the Lease has no holder";
    if (l.holderIdentity === l.identity) return "not leader: the renew deadline passed";
    return `not leader: the Lease is held by ${l.holderIdentity}`;
  }
}

/** A Lease: namespace and name. */
export interface LeaseRef {
  namespace: string;
  name: string;
}

/**
 * The sidecar that answered serves another Lease than the client was told
 * to expect (two sidecars on one network namespace, a wrong address): its
 * answers say nothing about this application's leadership.
 */
export class WrongLeaseError extends BatonError {
  constructor(
    readonly addr: string,
    readonly expected: Partial<LeaseRef>,
    readonly served: LeaseRef,
  ) {
    const want = `${expected.namespace ?? "*"}/${expected.name ?? "*"}`;
    super(`baton: the sidecar at ${addr} serves Lease ${served.namespace}/${served.name}, not the expected ${want}`);
  }
}

/** The sidecar's answer could not be read (not a Leadership). */
export class MalformedAnswerError extends BatonError {}

/** A Fence refused a write: a higher token was admitted before, so the writer is a deposed leader. */
export class StaleTokenError extends BatonError {
  constructor(
    readonly token: number,
    readonly highest: number,
  ) {
    super(`baton: stale fencing token ${token}: a write with token ${highest} was already accepted`);
  }
}

/** A RevisionFence refused a write: a higher revision (a bigint of up to 128 bits) was admitted before. */
export class StaleRevisionError extends BatonError {
  constructor(
    readonly revision: bigint,
    readonly highest: bigint,
  ) {
    super(`baton: stale fencing revision ${revision}: a write with revision ${highest} was already accepted`);
  }
}
