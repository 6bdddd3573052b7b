// A fake sidecar HTTP API for unit tests: GET /leader, GET /leader/watch
// (Server-Sent Events in the format the sidecar sends), POST /leader/ack,
// with the state and the stream under the test's control.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import { boottimeMs } from "../src/clock.js";

/** proto3 JSON of a Leadership; a leader's deadline `validForMs` from now on CLOCK_BOOTTIME. */
export function leadershipJson(o: {
  isLeader: boolean;
  token?: number;
  identity?: string;
  validForMs?: number;
  steppingDown?: boolean;
  leaseName?: string;
  leaseNamespace?: string;
}): Record<string, unknown> {
  const valid = o.isLeader ? (o.validForMs ?? 1500) : 0;
  return {
    isLeader: o.isLeader,
    identity: o.identity ?? "pod-0_abc",
    holderIdentity: o.isLeader ? (o.identity ?? "pod-0_abc") : "pod-1_def",
    fencingToken: o.token ?? 3,
    fencingRevision: "4711",
    leaseName: o.leaseName ?? "app",
    leaseNamespace: o.leaseNamespace ?? "default",
    leaseUid: "uid-1",
    validFor: `${valid / 1000}s`,
    validUntilBoottime: o.isLeader ? `${((boottimeMs() + valid) / 1000).toFixed(9)}s` : "0s",
    observed: true,
    steppingDown: o.steppingDown ?? false,
  };
}

/** One event of GET /leader/watch, as the sidecar writes it. */
function event(state: Record<string, unknown>): string {
  return `event: leadership\ndata: ${JSON.stringify(state)}\n\n`;
}

export class FakeSidecar {
  state: Record<string, unknown> = leadershipJson({ isLeader: false });
  readonly acks: { clientId: string; token: number }[] = [];
  /** The valid_until_boottime each acknowledgement named, as sent (null: none). */
  readonly ackDeadlines: (string | null)[] = [];
  readonly watchClientIds: string[] = [];
  readonly watchHeartbeats: string[] = [];
  /** The max_valid_for of each GET /leader and each GET /leader/watch, as sent (null: none). */
  readonly leaderBounds: (string | null)[] = [];
  readonly watchBounds: (string | null)[] = [];
  /** If set, GET /leader answers leader with this fresh validity (ms), as a sidecar that keeps renewing does. */
  confirmLeaderMs: number | undefined;
  leaderGets = 0;
  private readonly streams = new Set<ServerResponse>();
  private server: Server | undefined;
  addr = "";

  async start(): Promise<this> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.addr = `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.dropStreams();
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** How many watch streams are open. */
  get openStreams(): number {
    return this.streams.size;
  }

  /** Sets the state and sends it to every stream. */
  publish(state: Record<string, unknown>): void {
    this.state = state;
    for (const s of this.streams) s.write(event(state));
  }

  /** Writes `text` to every stream as it is. */
  raw(text: string): void {
    for (const s of this.streams) s.write(text);
  }

  heartbeat(): void {
    for (const s of this.streams) s.write(": heartbeat\n\n");
  }

  /** Cuts every stream's connection, as a sidecar that exits does. */
  dropStreams(): void {
    for (const s of this.streams) s.destroy();
    this.streams.clear();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", "http://x");
    const clientId = url.searchParams.get("client_id") ?? "";
    if (req.method === "GET" && url.pathname === "/leader") {
      this.leaderGets++;
      this.leaderBounds.push(url.searchParams.get("max_valid_for"));
      if (this.confirmLeaderMs !== undefined) {
        this.state = leadershipJson({
          isLeader: true,
          token: this.state.fencingToken as number,
          validForMs: this.confirmLeaderMs,
        });
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(this.state));
    } else if (req.method === "GET" && url.pathname === "/leader/watch") {
      this.watchClientIds.push(clientId);
      this.watchHeartbeats.push(url.searchParams.get("heartbeat") ?? "");
      this.watchBounds.push(url.searchParams.get("max_valid_for"));
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
      res.write(event(this.state));
      this.streams.add(res);
      res.on("close", () => this.streams.delete(res));
    } else if (req.method === "POST" && url.pathname === "/leader/ack") {
      this.acks.push({ clientId, token: Number(url.searchParams.get("fencing_token")) });
      this.ackDeadlines.push(url.searchParams.get("valid_until_boottime"));
      res.writeHead(200, { "content-type": "application/json" }).end('{"acknowledged":true}');
    } else {
      res.writeHead(404).end("no such route\n");
    }
  }
}
