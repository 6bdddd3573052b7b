// The client of the baton leader-election sidecar for Node.js: whether this
// pod leads, for how long that is guaranteed, and which fencing token to tag
// writes with, over gRPC (Client) or HTTP (HttpClient).

export { DEFAULT_GRPC_ADDR, DEFAULT_HTTP_ADDR, ENV_GRPC_ADDR, ENV_HTTP_ADDR } from "./address.js";
export { Client, DEFAULT_HEARTBEAT_INTERVAL_MS, type ClientOptions } from "./client.js";
export { boottimeMs, sharesSidecarClock } from "./clock.js";
export {
  type AcknowledgeOptions,
  type CallOptions,
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_MAX_BACKOFF_MS,
  DEFAULT_MIN_BACKOFF_MS,
  Elector,
  type ElectorOptions,
  type LeaderWork,
  REQUIRE_LEADER_SLACK_MS,
  StreamStalledError,
} from "./elector.js";
export {
  BatonError,
  type BatonErrorOptions,
  type LeaseRef,
  MalformedAnswerError,
  NotLeaderError,
  SidecarUnavailableError,
  StaleRevisionError,
  StaleTokenError,
  WrongLeaseError,
} from "./errors.js";
export {
  Fence,
  fencingHeaders,
  formatRevision,
  formatToken,
  type HeaderSource,
  parseRevision,
  parseToken,
  REVISION_HEADER,
  RevisionFence,
  revisionFromHeaders,
  TOKEN_HEADER,
  tokenFromHeaders,
} from "./fence.js";
export { DEFAULT_SSE_HEARTBEAT_INTERVAL_MS, HttpClient, type HttpClientOptions } from "./http.js";
export { Leadership, type LeadershipFields } from "./leadership.js";
