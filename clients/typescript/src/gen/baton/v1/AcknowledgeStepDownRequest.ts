// Original file: /work/wt/ts/proto/baton/v1/leader_election.proto


export interface AcknowledgeStepDownRequest {
  /**
   * The client_id the promises were given to (required).
   */
  'clientId'?: (string);
  /**
   * The term being acknowledged: the fencing_token of the answers given.
   * An acknowledgement for any other term is ignored.
   */
  'fencingToken'?: (number);
}

export interface AcknowledgeStepDownRequest__Output {
  /**
   * The client_id the promises were given to (required).
   */
  'clientId': (string);
  /**
   * The term being acknowledged: the fencing_token of the answers given.
   * An acknowledgement for any other term is ignored.
   */
  'fencingToken': (number);
}
