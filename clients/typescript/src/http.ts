// HttpClient: the sidecar's HTTP API with nothing but Node's own fetch, for
// applications that do not want gRPC. Its watch follows the sidecar's
// Server-Sent Events stream, GET /leader/watch: an `event: leadership` whose
// one `data:` line is GET /leader's JSON, at once and at every change, and
// `: heartbeat` comments while nothing changes.

import { clientIdOrRandom, DEFAULT_HTTP_ADDR, ENV_HTTP_ADDR, resolveAddr } from "./address.js";
import { boottimeMs } from "./clock.js";
import { type AcknowledgeOptions, type CallOptions, Elector, type ElectorOptions, type RawStream } from "./elector.js";
import { BatonError, MalformedAnswerError, SidecarUnavailableError } from "./errors.js";
import { formatDurationNs, type Leadership, leadershipFromJson } from "./leadership.js";
import { SseParser } from "./sse.js";

/** HTTP statuses that mean "no sidecar to answer" (shutting down, or at its stream limit): act as a follower, retry. */
const UNAVAILABLE_STATUSES: ReadonlySet<number> = new Set([503]);

/** The error for a request to `addr` answered with HTTP `status`: SidecarUnavailableError for 503, else a BatonError carrying it. */
export function errorFromHttpStatus(addr: string, status: number, what: string, reason: string): BatonError {
  const message = `${what}: HTTP ${status}${reason ? `: ${reason}` : ""}`;
  if (UNAVAILABLE_STATUSES.has(status)) {
    return new SidecarUnavailableError(addr, ENV_HTTP_ADDR, { cause: new Error(message), httpStatus: status });
  }
  return new BatonError(`baton: ${addr}: ${message}`, { httpStatus: status });
}

/** The boolean `field` of a JSON answer (false when absent); MalformedAnswerError if it is not JSON. */
function jsonField(body: string, field: string): boolean {
  let obj: unknown;
  try {
    obj = JSON.parse(body);
  } catch (e) {
    throw new MalformedAnswerError(`baton: malformed answer: not JSON: ${(e as Error).message}`);
  }
  return typeof obj === "object" && obj !== null && (obj as Record<string, unknown>)[field] === true;
}

/** Options of HttpClient. */
export interface HttpClientOptions extends ElectorOptions {
  /** The sidecar's HTTP address, "host:port" or ":port". Default $BATON_HTTP_ADDR, else 127.0.0.1:4040. */
  addr?: string;
  /**
   * How often the event stream should carry a heartbeat when nothing
   * changes (ms; default 1000), asked of the sidecar with `?heartbeat=`
   * (it sends none more often than every 100 ms). A GET /leader/watch stream
   * silent for twice that plus a second is taken as stuck and reopened.
   */
  heartbeatIntervalMs?: number;
}

export const DEFAULT_SSE_HEARTBEAT_INTERVAL_MS = 1000;

/**
 * A client of one baton sidecar over its HTTP API: GET /leader, POST
 * /resign, POST /leader/ack and the event stream GET /leader/watch. It holds
 * no state beyond fetch's connection pool; every call rejects fast with
 * SidecarUnavailableError while no sidecar answers.
 */
export class HttpClient extends Elector {
  readonly addr: string;
  readonly clientId: string;
  private readonly heartbeatMs: number;

  constructor(options: HttpClientOptions = {}) {
    super(options);
    this.addr = resolveAddr(options.addr, ENV_HTTP_ADDR, DEFAULT_HTTP_ADDR, false);
    this.clientId = clientIdOrRandom(options.clientId);
    this.heartbeatMs = options.heartbeatIntervalMs ?? DEFAULT_SSE_HEARTBEAT_INTERVAL_MS;
  }

  private url(path: string, query: Record<string, string> = {}): string {
    const q = new URLSearchParams(query).toString();
    return `http://${this.addr}${path}${q ? `?${q}` : ""}`;
  }

  /**
   * Sends one request; resolves with the response once its status is 2xx.
   * `timeoutMs` bounds the request until the caller calls `done` (after
   * reading the body, or at once for a stream).
   */
  private async send(
    method: string,
    path: string,
    query: Record<string, string>,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
  ): Promise<{ response: Response; done: () => void }> {
    signal?.throwIfAborted();
    const timeout = new AbortController();
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => timeout.abort(new DOMException("no answer in time", "TimeoutError")), timeoutMs);
    const both = signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal;
    const done = () => clearTimeout(timer);
    let response: Response;
    try {
      response = await fetch(this.url(path, query), { method, signal: both, headers: { accept: "*/*" } });
    } catch (e) {
      done();
      if (signal?.aborted) throw signal.reason;
      throw new SidecarUnavailableError(this.addr, ENV_HTTP_ADDR, { cause: (e as Error).cause ?? e });
    }
    if (!response.ok) {
      const reason = (await response.text().catch(() => "")).slice(0, 512).trim();
      done();
      throw errorFromHttpStatus(this.addr, response.status, `${method} ${path}`, reason);
    }
    return { response, done };
  }

  /** One request whose JSON-ish body is read whole within the call timeout. */
  private async request(
    method: string,
    path: string,
    query: Record<string, string>,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const { response, done } = await this.send(method, path, query, signal, this.callTimeoutMs);
    try {
      return await response.text();
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      throw new SidecarUnavailableError(this.addr, ENV_HTTP_ADDR, { cause: e });
    } finally {
      done();
    }
  }

  protected async fetchLeadership(signal: AbortSignal | undefined, maxValidForMs?: number): Promise<Leadership> {
    const query: Record<string, string> = { client_id: this.clientId };
    if (maxValidForMs !== undefined) query.max_valid_for = `${Math.ceil(maxValidForMs)}ms`; // never less than asked
    const sent = boottimeMs();
    return leadershipFromJson(await this.request("GET", "/leader", query, signal), sent);
  }

  /** POST /resign: steps down now and releases the Lease; resolves to whether this pod was leader. */
  async resign(options: CallOptions = {}): Promise<boolean> {
    const body = await this.request("POST", "/resign", {}, options.signal);
    return jsonField(body, "wasLeader");
  }

  async acknowledgeStepDown(token: number, options: AcknowledgeOptions = {}): Promise<boolean> {
    const body = await this.request(
      "POST",
      "/leader/ack",
      {
        client_id: this.clientId,
        fencing_token: String(token),
        valid_until_boottime: formatDurationNs(this.acknowledgedUpTo(token, options)),
      },
      options.signal,
    );
    return jsonField(body, "acknowledged");
  }

  protected heartbeatsCarryState(): boolean {
    return false; // `: heartbeat` comments
  }

  protected stallTimeoutMs(): number {
    return 2 * this.heartbeatMs + 1000;
  }

  protected openStream(signal: AbortSignal): RawStream {
    const self = this;
    return (async function* () {
      const { response, done } = await self.send(
        "GET",
        "/leader/watch",
        { client_id: self.clientId, heartbeat: `${Math.round(self.heartbeatMs)}ms` },
        signal,
        self.callTimeoutMs,
      );
      done(); // the stall timeout guards the body from here
      if (!response.body) throw new BatonError("baton: GET /leader/watch: no body");
      const parser = new SseParser();
      const decoder = new TextDecoder();
      const reader = response.body.getReader();
      try {
        for (;;) {
          let chunk: Awaited<ReturnType<typeof reader.read>>;
          try {
            chunk = await reader.read();
          } catch (e) {
            if (signal.aborted) throw signal.reason;
            throw new SidecarUnavailableError(self.addr, ENV_HTTP_ADDR, { cause: e });
          }
          if (chunk.done) {
            throw new SidecarUnavailableError(self.addr, ENV_HTTP_ADDR, {
              cause: new Error("the sidecar ended the stream (shutting down)"),
            });
          }
          const arrived = boottimeMs();
          for (const item of parser.push(decoder.decode(chunk.value, { stream: true }))) {
            // Events named "leadership" (or unnamed) carry the state; the rest, and comments, are signs of life.
            const state = item.kind === "event" && (item.event === "leadership" || item.event === "message");
            yield state ? leadershipFromJson(item.data, arrived) : null;
          }
        }
      } finally {
        await reader.cancel().catch(() => undefined);
      }
    })();
  }
}
