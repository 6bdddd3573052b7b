// Fenced writes end to end: a toy key-value store that refuses stale fencing
// tokens, and a writer that writes only while its baton sidecar says this
// pod leads, tagging every write with the token.
//
//   node build/examples/fenced-writes.js store  --listen 127.0.0.1:7070
//   node build/examples/fenced-writes.js writer --store http://127.0.0.1:7070 [--key counter] [--every 1000] [--http]
//
// Run one store and one writer beside each sidecar (BATON_GRPC_ADDR, or
// BATON_HTTP_ADDR with --http, selects the sidecar). Only the leader's writer
// writes: it writes inside runWhileLeader, which stops the writes when the
// term ends and then acknowledges the step-down, so a graceful handover takes
// milliseconds. After a handover the new leader's writes carry a higher
// token, and a late write from the old leader is answered 409 Conflict.

import { createServer } from "node:http";
import { hostname } from "node:os";
import { parseArgs } from "node:util";

import {
  BatonError,
  Client,
  Fence,
  fencingHeaders,
  HttpClient,
  NotLeaderError,
  SidecarUnavailableError,
  StaleTokenError,
  tokenFromHeaders,
} from "@baton-sidecar/client";

const log = (msg: string) => console.log(`${new Date().toISOString()} ${msg}`);

/** Ends on SIGINT or SIGTERM. */
function stopSignal(): AbortSignal {
  const ac = new AbortController();
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => ac.abort());
  return ac.signal;
}

/**
 * The toy store. Node runs one callback at a time, and the fence check and
 * the write below happen in one synchronous step, so no stale write can slip
 * in between (a store that awaits between them needs a lock or transaction).
 */
function runStore(listen: string, stop: AbortSignal): void {
  const fence = new Fence();
  const data = new Map<string, string>();
  const server = createServer((req, res) => {
    const key = req.url?.startsWith("/kv/") ? decodeURIComponent(req.url.slice(4)) : "";
    if (!key) return void res.writeHead(404).end("use /kv/KEY\n");
    if (req.method === "GET") {
      const v = data.get(key);
      return void (v === undefined ? res.writeHead(404).end("no such key\n") : res.end(`${v}\n`));
    }
    if (req.method !== "PUT") return void res.writeHead(405, { allow: "GET, PUT" }).end("GET or PUT\n");
    let token: number;
    try {
      token = tokenFromHeaders(req.headers);
    } catch (e) {
      return void res.writeHead(400).end(`${(e as Error).message}\n`);
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const value = Buffer.concat(chunks)
        .toString("utf8")
        .slice(0, 1 << 16);
      try {
        fence.admit(token);
      } catch (e) {
        if (!(e instanceof StaleTokenError)) throw e;
        log(`refused ${key}=${JSON.stringify(value)}: ${e.message}`);
        return void res.writeHead(409).end(`${e.message}\n`);
      }
      data.set(key, value);
      log(`wrote ${key}=${JSON.stringify(value)} with token ${token}`);
      res.end();
    });
  });
  const [host, port] = [listen.slice(0, listen.lastIndexOf(":")), Number(listen.slice(listen.lastIndexOf(":") + 1))];
  server.listen(port, host, () => log(`toy store on ${listen}`));
  stop.addEventListener("abort", () => server.close());
}

/** One fenced write: the token travels in the Baton-Fencing-Token header. */
async function put(url: string, value: string, token: number, signal: AbortSignal): Promise<void> {
  const res = await fetch(url, { method: "PUT", body: value, headers: fencingHeaders(token), signal });
  if (!res.ok) throw new Error(`store: ${res.status}: ${(await res.text()).trim()}`);
}

async function runWriter(
  o: { store: string; key: string; every: number; minValidity: number; http: boolean },
  stop: AbortSignal,
): Promise<void> {
  // $BATON_GRPC_ADDR or 127.0.0.1:4041; with --http, $BATON_HTTP_ADDR or 127.0.0.1:4040.
  const baton = o.http ? new HttpClient() : new Client();
  const host = hostname();
  let n = 0;
  log(`waiting for leadership (sidecar ${baton.addr})`);
  try {
    // Rejects with the stop signal's reason once the writes have stopped
    // and the step-down is acknowledged.
    await baton.runWhileLeader(
      async (l, signal) => {
        log(`leading with token ${l.fencingToken} (revision ${l.fencingRevision})`);
        while (!signal.aborted) {
          try {
            // A fresh answer before each write, with enough validity left for it.
            const { fencingToken } = await baton.requireLeadership(o.minValidity, { signal });
            n++;
            await put(`${o.store}/kv/${o.key}`, `${host} #${n}`, fencingToken, signal);
            log(`write ${n} done with token ${fencingToken}`);
          } catch (e) {
            if (signal.aborted) break;
            if (e instanceof NotLeaderError || e instanceof SidecarUnavailableError) log(`not writing: ${e.message}`);
            else log(`write ${n} failed: ${(e as Error).message}`);
          }
          await new Promise((r) => setTimeout(r, o.every));
        }
        log(`term with token ${l.fencingToken} ended: stopped writing`);
      },
      { signal: stop },
    );
  } catch (e) {
    if (!stop.aborted) throw e;
  } finally {
    if (baton instanceof Client) baton.close();
  }
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  const { values } = parseArgs({
    args: rest,
    options: {
      listen: { type: "string", default: "127.0.0.1:7070" },
      store: { type: "string", default: "http://127.0.0.1:7070" },
      key: { type: "string", default: "counter" },
      every: { type: "string", default: "1000" },
      "min-validity": { type: "string", default: "500" },
      http: { type: "boolean", default: false },
    },
  });
  const stop = stopSignal();
  if (command === "store") return runStore(values.listen, stop);
  if (command === "writer") {
    return runWriter(
      {
        store: values.store,
        key: values.key,
        every: Number(values.every),
        minValidity: Number(values["min-validity"]),
        http: values.http,
      },
      stop,
    );
  }
  console.error("usage: fenced-writes store|writer [flags]");
  process.exitCode = 2;
}

main().catch((e: unknown) => {
  console.error(e instanceof BatonError ? e.message : e);
  process.exitCode = 1;
});
