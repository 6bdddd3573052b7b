// Original file: baton/v1/leader_election.proto

import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from '../../google/protobuf/Duration.js';

export interface AcknowledgeStepDownRequest {
  /**
   * The client_id the promises were given to (required). A client_id is one
   * reader however many processes use it: an acknowledgement from any of
   * them speaks for all, up to the deadline it names.
   */
  'clientId'?: (string);
  /**
   * The term being acknowledged: the fencing_token of the answers given.
   * An acknowledgement for any other term is ignored.
   */
  'fencingToken'?: (number);
  /**
   * The valid_until_boottime of the last leader answer the client acted on
   * (of this term). Set it: the acknowledgement then voids only the
   * client's promises of the term that end by this deadline. A promise
   * handed out after that answer ends later (the sidecar renewed in
   * between) and stays outstanding, so an acknowledgement that arrives
   * late (retried after a timeout, after the term resumed, or sent by
   * another process using the same client_id) cannot void a promise given
   * after the work it speaks of. Answers between two renews share one
   * deadline, so one of them given after the acknowledged work is covered
   * too: a client whose acknowledgement may still arrive (its call failed)
   * should start new leader work in that term only on an answer that ends
   * later than the deadline it named.
   * Unset (clients older than this field): every promise of the term given
   * to client_id so far is void, whenever the acknowledgement arrives, even
   * one that a process is acting on right now.
   */
  'validUntilBoottime'?: (_google_protobuf_Duration | null);
}

export interface AcknowledgeStepDownRequest__Output {
  /**
   * The client_id the promises were given to (required). A client_id is one
   * reader however many processes use it: an acknowledgement from any of
   * them speaks for all, up to the deadline it names.
   */
  'clientId': (string);
  /**
   * The term being acknowledged: the fencing_token of the answers given.
   * An acknowledgement for any other term is ignored.
   */
  'fencingToken': (number);
  /**
   * The valid_until_boottime of the last leader answer the client acted on
   * (of this term). Set it: the acknowledgement then voids only the
   * client's promises of the term that end by this deadline. A promise
   * handed out after that answer ends later (the sidecar renewed in
   * between) and stays outstanding, so an acknowledgement that arrives
   * late (retried after a timeout, after the term resumed, or sent by
   * another process using the same client_id) cannot void a promise given
   * after the work it speaks of. Answers between two renews share one
   * deadline, so one of them given after the acknowledged work is covered
   * too: a client whose acknowledgement may still arrive (its call failed)
   * should start new leader work in that term only on an answer that ends
   * later than the deadline it named.
   * Unset (clients older than this field): every promise of the term given
   * to client_id so far is void, whenever the acknowledgement arrives, even
   * one that a process is acting on right now.
   */
  'validUntilBoottime': (_google_protobuf_Duration__Output | null);
}
