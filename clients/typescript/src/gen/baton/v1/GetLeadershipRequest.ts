// Original file: baton/v1/leader_election.proto

import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from '../../google/protobuf/Duration.js';

export interface GetLeadershipRequest {
  /**
   * Optional. Who is asking: an opaque name of 1 to 64 characters from
   * [A-Za-z0-9._-], stable for one application process (the clients use a
   * random one per client object). A leader answer to a named client is a
   * promise that client can give back with AcknowledgeStepDown, so a
   * graceful handover need not wait for it to lapse. Answers to unnamed
   * callers are promises too, but only time ends them: the sidecar waits for
   * the last one to lapse before it releases the Lease.
   */
  'clientId'?: (string);
  /**
   * Optional. The longest promise this caller wants: a leader answer's
   * valid_for is then at most this (its deadline is rounded down to the
   * millisecond), so a step-down waits for it at most this long. At least
   * 1ms. Unset: as long as the sidecar can promise for a named caller, and
   * at most the sidecar's --max-unnamed-valid-for (default 500ms) for an
   * unnamed one. A caller that checks again at least this often stays
   * covered between its calls.
   */
  'maxValidFor'?: (_google_protobuf_Duration | null);
}

export interface GetLeadershipRequest__Output {
  /**
   * Optional. Who is asking: an opaque name of 1 to 64 characters from
   * [A-Za-z0-9._-], stable for one application process (the clients use a
   * random one per client object). A leader answer to a named client is a
   * promise that client can give back with AcknowledgeStepDown, so a
   * graceful handover need not wait for it to lapse. Answers to unnamed
   * callers are promises too, but only time ends them: the sidecar waits for
   * the last one to lapse before it releases the Lease.
   */
  'clientId': (string);
  /**
   * Optional. The longest promise this caller wants: a leader answer's
   * valid_for is then at most this (its deadline is rounded down to the
   * millisecond), so a step-down waits for it at most this long. At least
   * 1ms. Unset: as long as the sidecar can promise for a named caller, and
   * at most the sidecar's --max-unnamed-valid-for (default 500ms) for an
   * unnamed one. A caller that checks again at least this often stays
   * covered between its calls.
   */
  'maxValidFor': (_google_protobuf_Duration__Output | null);
}
