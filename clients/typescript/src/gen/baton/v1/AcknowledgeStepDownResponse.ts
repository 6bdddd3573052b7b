// Original file: /work/wt/ts/proto/baton/v1/leader_election.proto


export interface AcknowledgeStepDownResponse {
  /**
   * True if this sidecar had given this client promises for that term that
   * were still outstanding; they are void now.
   */
  'acknowledged'?: (boolean);
}

export interface AcknowledgeStepDownResponse__Output {
  /**
   * True if this sidecar had given this client promises for that term that
   * were still outstanding; they are void now.
   */
  'acknowledged': (boolean);
}
