// Client: the sidecar's gRPC API (baton.v1.LeaderElection) over
// @grpc/grpc-js, the schema loaded with @grpc/proto-loader from the
// descriptor generated into src/gen.

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

import { clientIdOrRandom, DEFAULT_GRPC_ADDR, ENV_GRPC_ADDR, resolveAddr } from "./address.js";
import { boottimeMs } from "./clock.js";
import {
  type AcknowledgeOptions,
  type CallOptions,
  DEFAULT_MAX_BACKOFF_MS,
  DEFAULT_MIN_BACKOFF_MS,
  Elector,
  type ElectorOptions,
  type RawStream,
} from "./elector.js";
import { BatonError, SidecarUnavailableError } from "./errors.js";
import { descriptor } from "./gen/descriptor.js";
import type { AcknowledgeStepDownResponse__Output } from "./gen/baton/v1/AcknowledgeStepDownResponse.js";
import type { GetLeadershipRequest } from "./gen/baton/v1/GetLeadershipRequest.js";
import type { LeaderElectionClient } from "./gen/baton/v1/LeaderElection.js";
import type { Leadership__Output } from "./gen/baton/v1/Leadership.js";
import type { ResignResponse__Output } from "./gen/baton/v1/ResignResponse.js";
import type { WatchLeadershipResponse__Output } from "./gen/baton/v1/WatchLeadershipResponse.js";
import type { ProtoGrpcType } from "./gen/leader_election.js";
import { type Leadership, leadershipFromProto } from "./leadership.js";
import { checkWireFormat } from "./wire.js";

/** How @grpc/proto-loader decodes messages; src/gen's types are generated with the same options. */
const LOADER_OPTIONS: protoLoader.Options = { longs: String, enums: String, defaults: true, oneofs: true };

/**
 * baton.v1 as @grpc/proto-loader loads it, every answer checked by
 * checkWireFormat before protobufjs decodes it (exposed for tests that
 * decode raw messages).
 */
export const packageDefinition = protoLoader.fromJSON(descriptor, LOADER_OPTIONS);
for (const method of Object.values(packageDefinition["baton.v1.LeaderElection"] as protoLoader.ServiceDefinition)) {
  const decode = method.responseDeserialize;
  const type = `baton.v1.${(method.responseType.type as { name: string }).name}`; // a DescriptorProto
  method.responseDeserialize = (bytes: Buffer) => {
    checkWireFormat(bytes, type);
    return decode(bytes);
  };
}
const proto = grpc.loadPackageDefinition(packageDefinition) as unknown as ProtoGrpcType;

/**
 * The gRPC status codes that mean "no sidecar answered": act as a follower
 * and retry. Every other code is a BatonError carrying it.
 */
const UNAVAILABLE_CODES: ReadonlySet<grpc.status> = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.UNIMPLEMENTED,
  grpc.status.CANCELLED,
]);

/**
 * The error for a call to `addr` that failed with gRPC status `code`
 * (a grpc.status value): SidecarUnavailableError for the codes that mean
 * no sidecar answered, else a BatonError carrying the code.
 */
export function errorFromStatus(addr: string, code: number, details: string, cause?: unknown): BatonError {
  if (UNAVAILABLE_CODES.has(code)) {
    return new SidecarUnavailableError(addr, ENV_GRPC_ADDR, { cause: cause ?? new Error(details), grpcCode: code });
  }
  return new BatonError(`baton: ${addr}: ${grpc.status[code] ?? code}: ${details}`, { cause, grpcCode: code });
}

/** Options of Client. */
export interface ClientOptions extends ElectorOptions {
  /** The sidecar's gRPC address: "host:port", ":port" or "unix:PATH". Default $BATON_GRPC_ADDR, else 127.0.0.1:4041. */
  addr?: string;
  /**
   * How often watch asks the sidecar to repeat the current state when
   * nothing changes (ms; default 1000). A stream silent for twice that plus
   * a second is taken as stuck and reopened.
   */
  heartbeatIntervalMs?: number;
  /** More @grpc/grpc-js channel options (keepalive, interceptors' settings). */
  channelOptions?: grpc.ChannelOptions;
}

export const DEFAULT_HEARTBEAT_INTERVAL_MS = 1000;

/**
 * A client of one baton sidecar over gRPC. Make one per process and close()
 * it when done. It connects lazily and reconnects by itself when the sidecar
 * restarts; while no sidecar answers, every call rejects fast with
 * SidecarUnavailableError.
 *
 *     const baton = new Client(); // 127.0.0.1:4041, or $BATON_GRPC_ADDR
 *     const token = await baton.requireLeader(2000);
 *     await store.put(key, value, { headers: fencingHeaders(token) });
 */
export class Client extends Elector {
  readonly addr: string;
  readonly clientId: string;
  private readonly heartbeatMs: number;
  private readonly stub: LeaderElectionClient;

  constructor(options: ClientOptions = {}) {
    super(options);
    this.addr = resolveAddr(options.addr, ENV_GRPC_ADDR, DEFAULT_GRPC_ADDR, true);
    this.clientId = clientIdOrRandom(options.clientId);
    this.heartbeatMs = options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS;
    this.stub = new proto.baton.v1.LeaderElection(this.addr, grpc.credentials.createInsecure(), {
      // Loopback only: reconnect quickly after a sidecar restart.
      "grpc.initial_reconnect_backoff_ms": options.minBackoffMs ?? DEFAULT_MIN_BACKOFF_MS,
      "grpc.max_reconnect_backoff_ms": options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS,
      ...options.channelOptions,
    });
  }

  /** Ends every watch (see Elector.close) and closes the channel; calls in flight fail. */
  override close(): void {
    super.close();
    this.stub.close();
  }

  /**
   * Runs one unary call (`start` issues it) with the call timeout and
   * `signal`, mapping failures to the client's errors.
   */
  private unary<Res>(
    signal: AbortSignal | undefined,
    start: (options: grpc.CallOptions, callback: grpc.requestCallback<Res>) => grpc.ClientUnaryCall,
  ): Promise<Res> {
    signal?.throwIfAborted();
    return new Promise<Res>((resolve, reject) => {
      const call = start({ deadline: Date.now() + this.callTimeoutMs }, (err, res) => {
        signal?.removeEventListener("abort", onAbort);
        if (signal?.aborted) reject(signal.reason);
        else if (err) reject(errorFromStatus(this.addr, err.code, err.details, err));
        else resolve(res!);
      });
      const onAbort = () => call.cancel();
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  protected async fetchLeadership(signal: AbortSignal | undefined, maxValidForMs?: number): Promise<Leadership> {
    const request: GetLeadershipRequest = { clientId: this.clientId };
    if (maxValidForMs !== undefined) {
      const ns = BigInt(Math.round(maxValidForMs * 1e6));
      request.maxValidFor = { seconds: String(ns / 1_000_000_000n), nanos: Number(ns % 1_000_000_000n) };
    }
    const sent = boottimeMs();
    const m = await this.unary<Leadership__Output>(signal, (o, cb) => this.stub.GetLeadership(request, o, cb));
    return leadershipFromProto(m, sent);
  }

  /**
   * Asks the sidecar to step down now and release the Lease so another pod
   * takes over at once. When it resolves this sidecar already answers
   * not-leader; the value tells whether it led when asked. The sidecar goes
   * on campaigning and may lead again later.
   */
  async resign(options: CallOptions = {}): Promise<boolean> {
    const r = await this.unary<ResignResponse__Output>(options.signal, (o, cb) => this.stub.Resign({}, o, cb));
    return r.wasLeader;
  }

  async acknowledgeStepDown(token: number, options: AcknowledgeOptions = {}): Promise<boolean> {
    const upTo = this.acknowledgedUpTo(token, options);
    const validUntilBoottime = { seconds: String(upTo / 1_000_000_000n), nanos: Number(upTo % 1_000_000_000n) };
    const r = await this.unary<AcknowledgeStepDownResponse__Output>(options.signal, (o, cb) =>
      this.stub.AcknowledgeStepDown({ clientId: this.clientId, fencingToken: token, validUntilBoottime }, o, cb),
    );
    return r.acknowledged;
  }

  protected heartbeatsCarryState(): boolean {
    return true;
  }

  protected stallTimeoutMs(): number {
    return 2 * this.heartbeatMs + 1000;
  }

  protected openStream(signal: AbortSignal): RawStream {
    const call = this.stub.WatchLeadership({
      clientId: this.clientId,
      heartbeatInterval: {
        seconds: String(Math.floor(this.heartbeatMs / 1000)),
        nanos: (this.heartbeatMs % 1000) * 1e6,
      },
    });
    const onAbort = () => call.cancel();
    signal.addEventListener("abort", onAbort, { once: true });
    const addr = this.addr;
    return (async function* () {
      try {
        for await (const m of call as AsyncIterable<WatchLeadershipResponse__Output>) {
          if (m.leadership) yield leadershipFromProto(m.leadership, boottimeMs());
        }
        throw new SidecarUnavailableError(addr, ENV_GRPC_ADDR, {
          cause: new Error("the sidecar ended the stream (shutting down)"),
        });
      } catch (e) {
        const err = e as grpc.ServiceError;
        if (typeof err?.code === "number") throw errorFromStatus(addr, err.code, err.details, err);
        throw e;
      } finally {
        signal.removeEventListener("abort", onAbort);
        call.cancel();
      }
    })();
  }
}
