// Where the sidecar is: an explicit address, else an environment variable,
// else baton's default.

/** Where the sidecar serves gRPC by default (baton --grpc-addr). */
export const DEFAULT_GRPC_ADDR = "127.0.0.1:4041";
/** Where the sidecar serves HTTP by default (baton --http-addr). */
export const DEFAULT_HTTP_ADDR = "127.0.0.1:4040";
/** Overrides DEFAULT_GRPC_ADDR: "host:port", ":port" (on 127.0.0.1) or "unix:PATH". */
export const ENV_GRPC_ADDR = "BATON_GRPC_ADDR";
/** Overrides DEFAULT_HTTP_ADDR: "host:port" or ":port". */
export const ENV_HTTP_ADDR = "BATON_HTTP_ADDR";

/**
 * `addr`, else `$envVar`, else `fallback`, normalized (":4041" means
 * 127.0.0.1:4041). Throws for anything but host:port, :port or (if
 * `allowUnix`) unix:PATH, naming where the address came from.
 */
export function resolveAddr(addr: string | undefined, envVar: string, fallback: string, allowUnix: boolean): string {
  let source = "address";
  if (!addr) {
    addr = process.env[envVar] ?? "";
    source = `$${envVar}`;
  }
  if (!addr) return fallback;
  if (allowUnix && addr.startsWith("unix:")) return addr;
  const m = /^(.*):(\d+)$/.exec(addr);
  const host = m?.[1] ?? "";
  if (!m || host.startsWith("[") !== host.endsWith("]")) {
    const form = allowUnix ? "host:port, :port or unix:PATH" : "host:port or :port";
    throw new TypeError(`baton: ${source} ${JSON.stringify(addr)} is not ${form}`);
  }
  return `${host || "127.0.0.1"}:${m[2]}`;
}

const CLIENT_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** `clientId` if given (checked: 1 to 64 characters from [A-Za-z0-9._-]), else 16 random hex digits. */
export function clientIdOrRandom(clientId: string | undefined): string {
  if (clientId === undefined) {
    const b = new Uint8Array(8);
    crypto.getRandomValues(b);
    return Buffer.from(b).toString("hex");
  }
  if (!CLIENT_ID.test(clientId)) {
    throw new TypeError(`baton: client ID ${JSON.stringify(clientId)} is not 1 to 64 characters from [A-Za-z0-9._-]`);
  }
  return clientId;
}
