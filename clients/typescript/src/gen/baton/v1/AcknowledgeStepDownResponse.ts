// Original file: baton/v1/leader_election.proto


export interface AcknowledgeStepDownResponse {
  /**
   * True if this acknowledgement settled the client for that term: it had
   * promises still outstanding, none ending after the deadline named, and
   * they are void now. False if it had none outstanding, or if it holds a
   * promise that ends later than the deadline named (that one stays
   * outstanding: acknowledge again once done with it).
   */
  'acknowledged'?: (boolean);
}

export interface AcknowledgeStepDownResponse__Output {
  /**
   * True if this acknowledgement settled the client for that term: it had
   * promises still outstanding, none ending after the deadline named, and
   * they are void now. False if it had none outstanding, or if it holds a
   * promise that ends later than the deadline named (that one stays
   * outstanding: acknowledge again once done with it).
   */
  'acknowledged': (boolean);
}
