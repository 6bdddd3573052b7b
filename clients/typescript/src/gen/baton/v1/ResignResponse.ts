// Original file: baton/v1/leader_election.proto

import type { Leadership as _baton_v1_Leadership, Leadership__Output as _baton_v1_Leadership__Output } from '../../baton/v1/Leadership.js';

export interface ResignResponse {
  /**
   * Whether this pod was leader when the request arrived.
   */
  'wasLeader'?: (boolean);
  /**
   * The state right after the resignation was accepted: is_leader is false.
   */
  'leadership'?: (_baton_v1_Leadership | null);
}

export interface ResignResponse__Output {
  /**
   * Whether this pod was leader when the request arrived.
   */
  'wasLeader': (boolean);
  /**
   * The state right after the resignation was accepted: is_leader is false.
   */
  'leadership': (_baton_v1_Leadership__Output | null);
}
