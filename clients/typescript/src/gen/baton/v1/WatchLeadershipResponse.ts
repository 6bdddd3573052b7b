// Original file: baton/v1/leader_election.proto

import type { Leadership as _baton_v1_Leadership, Leadership__Output as _baton_v1_Leadership__Output } from '../../baton/v1/Leadership.js';

// Original file: baton/v1/leader_election.proto

/**
 * Why this message was sent.
 */
export const _baton_v1_WatchLeadershipResponse_Event = {
  EVENT_UNSPECIFIED: 'EVENT_UNSPECIFIED',
  /**
   * The first message of the stream: the current state, sent at once.
   */
  EVENT_INITIAL: 'EVENT_INITIAL',
  /**
   * The holder, the fencing token, is_leader, stepping_down, observed or the
   * Lease's uid changed. Renew-only changes (renew_time) are not sent.
   */
  EVENT_CHANGED: 'EVENT_CHANGED',
  /**
   * Nothing changed for heartbeat_interval; this is the current state, with
   * a fresh valid_for.
   */
  EVENT_HEARTBEAT: 'EVENT_HEARTBEAT',
} as const;

/**
 * Why this message was sent.
 */
export type _baton_v1_WatchLeadershipResponse_Event =
  | 'EVENT_UNSPECIFIED'
  | 0
  /**
   * The first message of the stream: the current state, sent at once.
   */
  | 'EVENT_INITIAL'
  | 1
  /**
   * The holder, the fencing token, is_leader, stepping_down, observed or the
   * Lease's uid changed. Renew-only changes (renew_time) are not sent.
   */
  | 'EVENT_CHANGED'
  | 2
  /**
   * Nothing changed for heartbeat_interval; this is the current state, with
   * a fresh valid_for.
   */
  | 'EVENT_HEARTBEAT'
  | 3

/**
 * Why this message was sent.
 */
export type _baton_v1_WatchLeadershipResponse_Event__Output = typeof _baton_v1_WatchLeadershipResponse_Event[keyof typeof _baton_v1_WatchLeadershipResponse_Event]

export interface WatchLeadershipResponse {
  'event'?: (_baton_v1_WatchLeadershipResponse_Event);
  'leadership'?: (_baton_v1_Leadership | null);
}

export interface WatchLeadershipResponse__Output {
  'event': (_baton_v1_WatchLeadershipResponse_Event__Output);
  'leadership': (_baton_v1_Leadership__Output | null);
}
