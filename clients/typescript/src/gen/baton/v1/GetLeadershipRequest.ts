// Original file: /work/wt/ts/proto/baton/v1/leader_election.proto


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
}
