// What the gRPC Client and the HttpClient share: the operations built on a
// transport's primitives (one answer, one stream, the step-down
// acknowledgement) — the require-leader decision, the Lease check, the watch
// (news, validity running out without news, a silent stream, reconnecting
// with backoff), waitUntilLeader and runWhileLeader.

import { boottimeMs } from "./clock.js";
import { BatonError, WrongLeaseError, type LeaseRef } from "./errors.js";
import { checkLeader, Leadership } from "./leadership.js";

/** Options every call takes. */
export interface CallOptions {
  /** Abandons the call; it then rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/** Options of acknowledgeStepDown. */
export interface AcknowledgeOptions extends CallOptions {
  /**
   * The deadline to name: the validUntilBoottimeNs of the last leader answer
   * acted on. Default: the latest this client object received in the term.
   */
  validUntilBoottimeNs?: bigint | undefined;
}

/** Options both clients share. */
export interface ElectorOptions {
  /**
   * The name sent with every question (1 to 64 characters from
   * [A-Za-z0-9._-]): the sidecar records its leader answers under it as
   * promises acknowledgeStepDown can give back. Default: 16 random hex
   * digits per client object, which is what a client should normally use.
   */
  clientId?: string;
  /** Bounds each call, so a paused sidecar cannot block the caller (ms; default 2000). */
  callTimeoutMs?: number;
  /** Exponential backoff between reconnection attempts of a watch (ms; defaults 100 and 2000). */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /**
   * The Lease this application expects its sidecar to serve. An answer
   * from a sidecar that serves another (two sidecars on one network
   * namespace, a wrong address) is refused with a WrongLeaseError. Either
   * part may be left out. Default: any Lease.
   */
  expectLease?: Partial<LeaseRef>;
}

/** Defaults of ElectorOptions. */
export const DEFAULT_CALL_TIMEOUT_MS = 2000;
export const DEFAULT_MIN_BACKOFF_MS = 100;
export const DEFAULT_MAX_BACKOFF_MS = 2000;

/**
 * What requireLeader asks the sidecar for beyond minValidityMs: a promise of
 * at most minValidityMs + REQUIRE_LEADER_SLACK_MS (max_valid_for). The slack
 * covers the round trip, so that what is left when the client checks is
 * still at least minValidityMs. The caller learns only "at least
 * minValidityMs left" and the token, so a longer promise is of no use to it
 * and would only delay a handover when the application does not acknowledge.
 */
export const REQUIRE_LEADER_SLACK_MS = 1000;

/** The promise requireLeader(minValidityMs) asks the sidecar for (ms). */
export function requireLeaderBoundMs(minValidityMs: number): number {
  return Math.max(minValidityMs, 0) + REQUIRE_LEADER_SLACK_MS;
}

/**
 * How long a watch sleeps on Node's timers (which, like CLOCK_MONOTONIC,
 * stop during a suspend) before it compares a guarantee with CLOCK_BOOTTIME
 * again.
 */
export const CLOCK_RECHECK_MS = 100;

/** The leader work of runWhileLeader: it must stop acting as leader when `signal` aborts, and return. */
export type LeaderWork = (leadership: Leadership, signal: AbortSignal) => Promise<void> | void;

/** One stream of a transport: converted states, or `null` for a sign of life that carries none (an SSE comment). */
export type RawStream = AsyncIterator<Leadership | null>;

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Exponential backoff with ±20 % jitter. */
export class Backoff {
  private nextMs: number;

  constructor(
    private readonly minMs: number,
    private readonly maxMs: number,
  ) {
    this.nextMs = minMs;
  }

  reset(): void {
    this.nextMs = this.minMs;
  }

  /** The delay before the next attempt. */
  next(): number {
    const d = this.nextMs * (0.8 + 0.4 * Math.random());
    this.nextMs = Math.min(2 * this.nextMs, this.maxMs);
    return d;
  }
}

/** A stream that sent nothing for longer than its stall timeout. */
export class StreamStalledError extends BatonError {}

/**
 * The operations of a baton client over a transport. Subclasses provide
 * fetchLeadership (one answer), openStream (one watch stream) and
 * acknowledgeStepDown.
 */
export abstract class Elector {
  /** The name this client gives the sidecar (see ElectorOptions.clientId). */
  abstract readonly clientId: string;
  /** The sidecar's address. */
  abstract readonly addr: string;
  protected readonly callTimeoutMs: number;
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly expectLease: Partial<LeaseRef> | undefined;
  /** Aborted by close(): watches end, and with them waitUntilLeader and runWhileLeader. */
  private readonly closing = new AbortController();
  /**
   * The latest deadline among the leader answers received in the latest
   * term heard of: what an acknowledgement of that term names.
   */
  private heard = { identity: "", fencingToken: 0, deadlineNs: 0n };

  protected constructor(o: ElectorOptions) {
    this.callTimeoutMs = o.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.minBackoffMs = o.minBackoffMs ?? DEFAULT_MIN_BACKOFF_MS;
    this.maxBackoffMs = o.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS;
    this.expectLease = o.expectLease;
  }

  /**
   * One answer, converted (validity counted from when the request was sent
   * if the sidecar gives no deadline), promising at most `maxValidForMs`
   * (undefined: the whole promise).
   */
  protected abstract fetchLeadership(
    signal: AbortSignal | undefined,
    maxValidForMs?: number | undefined,
  ): Promise<Leadership>;
  /** Opens one watch stream; it ends when `signal` aborts. */
  protected abstract openStream(signal: AbortSignal): RawStream;
  /** How long a stream may stay silent before it is taken as stuck and reopened (ms). */
  protected abstract stallTimeoutMs(): number;
  /**
   * Whether the stream's heartbeats are states with a fresh validity (gRPC's
   * EVENT_HEARTBEAT). If not (the event stream's comments), the watch renews
   * a leader's validity with a fresh answer (fetchLeadership) once half of
   * it is gone, so a leader stays one while the sidecar confirms it.
   */
  protected abstract heartbeatsCarryState(): boolean;

  /**
   * Tells the sidecar that this application has stopped acting on the
   * leadership of the term with fencing token `token`: its leader work was
   * cancelled and has ended. It names a deadline (by default the latest
   * validUntilBoottimeNs among the leader answers of that term this client
   * object has received so far; 0n, naming nothing, if none), and the
   * promises the sidecar gave this client up to it are void from then on,
   * so a sidecar that is stepping down need not wait for them to run out
   * before it releases the Lease. A promise given later (the sidecar renewed
   * in between) stays outstanding however late the acknowledgement arrives,
   * and so does one given to another process using the same clientId.
   * Resolves to whether that settled this clientId's promises of the term.
   * runWhileLeader calls it for you; an application that never acknowledges
   * still gets a safe handover, only a slower one (up to the sidecar's
   * --renew-deadline).
   */
  abstract acknowledgeStepDown(token: number, options?: AcknowledgeOptions): Promise<boolean>;

  /** The deadline an acknowledgement of term `token` names (see acknowledgeStepDown). */
  protected acknowledgedUpTo(token: number, options: AcknowledgeOptions): bigint {
    if (options.validUntilBoottimeNs !== undefined) return options.validUntilBoottimeNs;
    return this.heard.fencingToken === token ? this.heard.deadlineNs : 0n;
  }

  /**
   * Ends every watch of this client (and so waitUntilLeader and
   * runWhileLeader, once running work has settled and been acknowledged);
   * later watches end at once. Subclasses release their transport too.
   */
  close(): void {
    this.closing.abort();
  }

  /** Throws WrongLeaseError if `l` comes from a sidecar of another Lease than expected. */
  protected checkLease(l: Leadership): Leadership {
    const want = this.expectLease;
    if (
      want &&
      ((want.name !== undefined && want.name !== l.leaseName) ||
        (want.namespace !== undefined && want.namespace !== l.leaseNamespace))
    ) {
      throw new WrongLeaseError(this.addr, want, { namespace: l.leaseNamespace, name: l.leaseName });
    }
    // Every answer this client takes in passes here: note its deadline.
    if (l.isLeader && l.validUntilBoottimeNs > 0n) {
      const h = this.heard;
      if (h.identity !== l.identity || h.fencingToken !== l.fencingToken) {
        this.heard = { identity: l.identity, fencingToken: l.fencingToken, deadlineNs: l.validUntilBoottimeNs };
      } else if (l.validUntilBoottimeNs > h.deadlineNs) {
        h.deadlineNs = l.validUntilBoottimeNs;
      }
    }
    return l;
  }

  /**
   * The current state. Rejects fast with SidecarUnavailableError when no
   * sidecar answers, and with WrongLeaseError when it serves another Lease
   * than expectLease; it never waits on the Kubernetes API.
   */
  async leadership(options: CallOptions = {}): Promise<Leadership> {
    return this.checkLease(await this.fetchLeadership(options.signal));
  }

  /** Whether this pod leads right now. A rejection (no sidecar, wrong Lease) means: not leader. */
  async isLeader(options: CallOptions = {}): Promise<boolean> {
    return (await this.leadership(options)).leadsNow();
  }

  /**
   * The state to write on, if this pod leads with at least `minValidityMs`
   * of guaranteed leadership left (counted from when the sidecar produced
   * the answer): its fencingToken and fencingRevision tag the write.
   * Otherwise rejects with NotLeaderError, or SidecarUnavailableError.
   *
   * It asks the sidecar for a promise of at most `minValidityMs` +
   * REQUIRE_LEADER_SLACK_MS, so an application that never acknowledges
   * holds up a handover by at most that much.
   */
  async requireLeadership(minValidityMs = 0, options: CallOptions = {}): Promise<Leadership> {
    const l = await this.fetchLeadership(options.signal, requireLeaderBoundMs(minValidityMs));
    return checkLeader(this.checkLease(l), minValidityMs);
  }

  /** The fencing token to tag a write with, as requireLeadership decides. */
  async requireLeader(minValidityMs = 0, options: CallOptions = {}): Promise<number> {
    return (await this.requireLeadership(minValidityMs, options)).fencingToken;
  }

  /**
   * Follows this pod's leadership until the loop breaks, `signal` aborts
   * (the iteration then rejects with its reason) or the client is closed
   * (the iteration ends):
   *
   *     for await (const l of client.watch({ signal })) {
   *       if (l.error) continue; // no sidecar: act as a follower; watch retries
   *       setLeader(l.isLeader, l.fencingToken);
   *     }
   *
   * It yields the current state first, then each change of isLeader, holder,
   * fencing token, stepping-down, observed or Lease UID (not every renew).
   * Between changes it watches the clock: when a leader's guarantee
   * (validUntilBoottimeMs) runs out before the sidecar confirms it again, it
   * yields the same state with isLeader false, so a paused or wedged
   * sidecar cannot leave the application believing it leads. (The gRPC
   * stream's heartbeats confirm it; over the HTTP event stream, whose
   * heartbeats are comments, the watch asks GET /leader once half of a
   * leader's validity is gone.)
   *
   * When the stream breaks, goes silent for its stall timeout, cannot be
   * opened, or serves the wrong Lease, it yields Leadership.NONE with
   * `error` set (a SidecarUnavailableError when no sidecar answers) and
   * reconnects with exponential backoff; the first state after a reconnect
   * is always yielded.
   */
  async *watch(options: CallOptions = {}): AsyncGenerator<Leadership, void, undefined> {
    const { signal } = options;
    const closed = this.closing.signal;
    const ends = signal ? AbortSignal.any([signal, closed]) : closed;
    const backoff = new Backoff(this.minBackoffMs, this.maxBackoffMs);
    for (;;) {
      signal?.throwIfAborted();
      if (closed.aborted) return;
      let error: Error;
      try {
        for await (const l of this.followStream(ends, () => backoff.reset())) yield l;
        error = new BatonError("baton: the watch stream ended");
      } catch (e) {
        error = e instanceof Error ? e : new BatonError(String(e));
      }
      signal?.throwIfAborted();
      if (closed.aborted) return;
      yield new Leadership({ error });
      await sleep(backoff.next(), ends).catch(() => undefined); // the loop's start tells why it woke early
    }
  }

  /**
   * One stream's states as watch yields them; throws when the stream fails,
   * stalls or serves the wrong Lease. `connected` is called on its first
   * message.
   */
  private async *followStream(signal: AbortSignal | undefined, connected: () => void): AsyncGenerator<Leadership> {
    const stream = new AbortController();
    const stop = () => stream.abort();
    signal?.addEventListener("abort", stop, { once: true });
    const it = this.openStream(stream.signal);
    const stallMs = this.stallTimeoutMs();
    let last: Leadership | undefined;
    let stallAt = boottimeMs() + stallMs;
    let refreshAt = Infinity; // when a leader's validity is half gone (streams whose heartbeats carry no state)
    let pending: Promise<IteratorResult<Leadership | null>> | undefined;
    // Records a state from the stream (or a refresh); returns it if it is news.
    const received = (l: Leadership): Leadership | undefined => {
      this.checkLease(l);
      if (last === undefined) connected();
      const news = last === undefined || !l.sameAs(last);
      last = l;
      const now = boottimeMs();
      refreshAt = this.heartbeatsCarryState() || !l.isLeader ? Infinity : now + l.remainingMs(now) / 2;
      return news ? l : undefined;
    };
    try {
      for (;;) {
        pending ??= it.next();
        const now = boottimeMs();
        let waitMs = Math.min(stallAt, refreshAt) - now;
        if (last?.isLeader) waitMs = Math.min(waitMs, last.remainingMs(now), CLOCK_RECHECK_MS);
        let timer: NodeJS.Timeout | undefined;
        const woke = await Promise.race([
          pending,
          new Promise<"timer">((resolve) => (timer = setTimeout(resolve, Math.max(0, waitMs), "timer"))),
        ]);
        clearTimeout(timer);
        if (woke === "timer") {
          const t = boottimeMs();
          if (last?.isLeader && last.remainingMs(t) <= 0) {
            last = last.expired();
            refreshAt = Infinity;
            yield last;
          } else if (t >= stallAt) {
            throw new StreamStalledError(`baton: no message from the sidecar at ${this.addr} for ${stallMs}ms`);
          } else if (t >= refreshAt) {
            // A fresh answer renews the leader's validity; if there is none, the guarantee lapses as usual.
            refreshAt = Infinity;
            const fresh = await this.fetchLeadership(stream.signal).catch(() => undefined);
            const news = fresh ? received(fresh) : undefined;
            if (news) yield news;
          }
          continue;
        }
        pending = undefined;
        if (woke.done) return;
        stallAt = boottimeMs() + stallMs;
        if (woke.value === null) continue;
        const news = received(woke.value);
        if (news) yield news;
      }
    } finally {
      signal?.removeEventListener("abort", stop);
      stream.abort(); // ends a read in flight, so that return() need not wait for a silent stream
      await it.return?.();
    }
  }

  /**
   * Resolves with the first state in which this pod leads. Keeps waiting
   * through sidecar restarts; rejects only when `signal` aborts (with its
   * reason) or the client is closed (a BatonError).
   */
  async waitUntilLeader(options: CallOptions = {}): Promise<Leadership> {
    for await (const l of this.watch(options)) {
      if (!l.error && l.leadsNow()) return l;
    }
    throw new BatonError("baton: the client was closed"); // the only way a watch ends by itself
  }

  /**
   * Runs `work` whenever this pod leads, and acknowledges the step-down when
   * it ends, so a graceful handover (sidecar shutdown or Resign) takes
   * milliseconds instead of a renew deadline:
   *
   *     await client.runWhileLeader(async (l, signal) => {
   *       while (!signal.aborted) await write(l.fencingToken, signal);
   *     }, { signal });
   *
   * When a watched state says this pod leads, it calls `work` with that
   * state and an AbortSignal that aborts as soon as the term ends: a state
   * says not leader or stepping down, the fencing token or the sidecar
   * changes, the guarantee runs out without news, the sidecar cannot be
   * reached, or `signal` aborts. It then waits for `work` to settle, and
   * only then acknowledges the term (acknowledgeStepDown; its errors are
   * dropped: without it the handover is only slower).
   *
   * A rejection of `work` after its signal aborted is dropped. If `work`
   * settles while the term goes on, the term is acknowledged: resolved, it
   * runs again at the next term; rejected, runWhileLeader rejects with that
   * error. Otherwise runWhileLeader rejects with `signal`'s reason once it
   * aborts and any running work has settled and been acknowledged.
   *
   * The acknowledgement speaks for this client (its clientId): while
   * runWhileLeader runs, do not act as leader on this client's other
   * answers outside `work`.
   */
  async runWhileLeader(work: LeaderWork, options: CallOptions = {}): Promise<void> {
    const { signal } = options;
    const watching = new AbortController();
    const states = this.watch({ signal: watching.signal });
    const onAbort = () => watching.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });

    interface Running {
      term: Leadership;
      cancel: AbortController;
      settled: Promise<{ error: unknown } | undefined>;
    }
    let running: Running | undefined;
    let finished: Leadership | undefined; // a term whose work ended on its own
    const sameTerm = (a: Leadership, b: Leadership) => a.identity === b.identity && a.fencingToken === b.fencingToken;
    const acknowledge = (term: Leadership) => this.acknowledgeStepDown(term.fencingToken).catch(() => false);
    const end = async (r: Running) => {
      r.cancel.abort();
      await r.settled;
      await acknowledge(r.term);
    };

    let next: Promise<IteratorResult<Leadership>> | undefined;
    try {
      for (;;) {
        next ??= states.next();
        const woke = await Promise.race([
          next.then((s) => ({ state: s })),
          ...(running ? [running.settled.then((r) => ({ returned: r }))] : []),
        ]).catch((e: unknown) => ({ watchError: e }));
        if ("watchError" in woke) {
          if (running) await end(running);
          running = undefined;
          throw woke.watchError; // the outer signal aborted
        }
        if ("returned" in woke) {
          const r = running!;
          running = undefined;
          await acknowledge(r.term);
          if (woke.returned) throw woke.returned.error;
          finished = r.term;
          continue;
        }
        next = undefined;
        if (woke.state.done) throw new BatonError("baton: the client was closed");
        const s = woke.state.value;
        const leading = !s.error && s.leadsNow();
        if (running && (!leading || !sameTerm(s, running.term))) {
          await end(running);
          running = undefined;
        }
        if (!leading) {
          // Answers after the work returned were promises too; nothing acts on them.
          if (!s.error && finished && sameTerm(s, finished)) await acknowledge(finished);
          finished = undefined;
        }
        if (leading && !running && !(finished && sameTerm(s, finished))) {
          finished = undefined;
          const cancel = new AbortController();
          const settled = Promise.resolve()
            .then(() => work(s, cancel.signal))
            .then(
              () => undefined,
              (error: unknown) => (cancel.signal.aborted ? undefined : { error }),
            );
          running = { term: s, cancel, settled };
        }
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      watching.abort();
      await states.return();
    }
  }
}
