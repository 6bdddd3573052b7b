// Original file: baton/v1/leader_election.proto

import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from '../../google/protobuf/Duration.js';

export interface WatchLeadershipRequest {
  /**
   * If set and positive, the server sends the current state again (event
   * HEARTBEAT) whenever nothing else was sent for this long, so a client can
   * tell a stuck stream from a quiet one: expect a message at least every
   * heartbeat_interval plus network delay. The server raises values below its
   * minimum (100ms by default) to that minimum. Unset or zero: no heartbeats.
   */
  'heartbeatInterval'?: (_google_protobuf_Duration | null);
  /**
   * Optional; as in GetLeadershipRequest. Every leader message on this stream
   * is a promise to this client.
   */
  'clientId'?: (string);
  /**
   * Optional; bounds each leader message's promise as in
   * GetLeadershipRequest, but unset means as long as the sidecar can
   * promise, named or not: a stream is told at once when its sidecar steps
   * down. A bounded stream should ask for a heartbeat_interval shorter than
   * the bound, or its promise lapses between messages.
   */
  'maxValidFor'?: (_google_protobuf_Duration | null);
}

export interface WatchLeadershipRequest__Output {
  /**
   * If set and positive, the server sends the current state again (event
   * HEARTBEAT) whenever nothing else was sent for this long, so a client can
   * tell a stuck stream from a quiet one: expect a message at least every
   * heartbeat_interval plus network delay. The server raises values below its
   * minimum (100ms by default) to that minimum. Unset or zero: no heartbeats.
   */
  'heartbeatInterval': (_google_protobuf_Duration__Output | null);
  /**
   * Optional; as in GetLeadershipRequest. Every leader message on this stream
   * is a promise to this client.
   */
  'clientId': (string);
  /**
   * Optional; bounds each leader message's promise as in
   * GetLeadershipRequest, but unset means as long as the sidecar can
   * promise, named or not: a stream is told at once when its sidecar steps
   * down. A bounded stream should ask for a heartbeat_interval shorter than
   * the bound, or its promise lapses between messages.
   */
  'maxValidFor': (_google_protobuf_Duration__Output | null);
}
