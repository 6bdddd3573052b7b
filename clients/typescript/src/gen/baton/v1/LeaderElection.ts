// Original file: baton/v1/leader_election.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AcknowledgeStepDownRequest as _baton_v1_AcknowledgeStepDownRequest, AcknowledgeStepDownRequest__Output as _baton_v1_AcknowledgeStepDownRequest__Output } from '../../baton/v1/AcknowledgeStepDownRequest.js';
import type { AcknowledgeStepDownResponse as _baton_v1_AcknowledgeStepDownResponse, AcknowledgeStepDownResponse__Output as _baton_v1_AcknowledgeStepDownResponse__Output } from '../../baton/v1/AcknowledgeStepDownResponse.js';
import type { GetLeadershipRequest as _baton_v1_GetLeadershipRequest, GetLeadershipRequest__Output as _baton_v1_GetLeadershipRequest__Output } from '../../baton/v1/GetLeadershipRequest.js';
import type { Leadership as _baton_v1_Leadership, Leadership__Output as _baton_v1_Leadership__Output } from '../../baton/v1/Leadership.js';
import type { ResignRequest as _baton_v1_ResignRequest, ResignRequest__Output as _baton_v1_ResignRequest__Output } from '../../baton/v1/ResignRequest.js';
import type { ResignResponse as _baton_v1_ResignResponse, ResignResponse__Output as _baton_v1_ResignResponse__Output } from '../../baton/v1/ResignResponse.js';
import type { WatchLeadershipRequest as _baton_v1_WatchLeadershipRequest, WatchLeadershipRequest__Output as _baton_v1_WatchLeadershipRequest__Output } from '../../baton/v1/WatchLeadershipRequest.js';
import type { WatchLeadershipResponse as _baton_v1_WatchLeadershipResponse, WatchLeadershipResponse__Output as _baton_v1_WatchLeadershipResponse__Output } from '../../baton/v1/WatchLeadershipResponse.js';

/**
 * The leader-election questions an application asks its sidecar, on
 * 127.0.0.1 by default.
 */
export interface LeaderElectionClient extends grpc.Client {
  /**
   * The step-down handshake. A client calls it once the application has
   * stopped acting on the leadership of term fencing_token (its leader work
   * was cancelled and has ended), typically after a message with
   * stepping_down=true, naming the deadline of the last answer it acted on.
   * The promises given to client_id for that term up to that deadline are
   * void from then on: on shutdown or Resign the sidecar releases the Lease
   * as soon as every promise it handed out is acknowledged or has lapsed,
   * instead of waiting for the last one to run out. Calling it while still
   * leader is allowed (the application is done for now); later leader
   * answers make new promises. INVALID_ARGUMENT for a missing or malformed
   * client_id or a negative valid_until_boottime.
   */
  AcknowledgeStepDown(argument: _baton_v1_AcknowledgeStepDownRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_AcknowledgeStepDownResponse__Output>): grpc.ClientUnaryCall;
  AcknowledgeStepDown(argument: _baton_v1_AcknowledgeStepDownRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_baton_v1_AcknowledgeStepDownResponse__Output>): grpc.ClientUnaryCall;
  AcknowledgeStepDown(argument: _baton_v1_AcknowledgeStepDownRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_AcknowledgeStepDownResponse__Output>): grpc.ClientUnaryCall;
  AcknowledgeStepDown(argument: _baton_v1_AcknowledgeStepDownRequest, callback: grpc.requestCallback<_baton_v1_AcknowledgeStepDownResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The step-down handshake. A client calls it once the application has
   * stopped acting on the leadership of term fencing_token (its leader work
   * was cancelled and has ended), typically after a message with
   * stepping_down=true, naming the deadline of the last answer it acted on.
   * The promises given to client_id for that term up to that deadline are
   * void from then on: on shutdown or Resign the sidecar releases the Lease
   * as soon as every promise it handed out is acknowledged or has lapsed,
   * instead of waiting for the last one to run out. Calling it while still
   * leader is allowed (the application is done for now); later leader
   * answers make new promises. INVALID_ARGUMENT for a missing or malformed
   * client_id or a negative valid_until_boottime.
   */
  acknowledgeStepDown(argument: _baton_v1_AcknowledgeStepDownRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_AcknowledgeStepDownResponse__Output>): grpc.ClientUnaryCall;
  acknowledgeStepDown(argument: _baton_v1_AcknowledgeStepDownRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_baton_v1_AcknowledgeStepDownResponse__Output>): grpc.ClientUnaryCall;
  acknowledgeStepDown(argument: _baton_v1_AcknowledgeStepDownRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_AcknowledgeStepDownResponse__Output>): grpc.ClientUnaryCall;
  acknowledgeStepDown(argument: _baton_v1_AcknowledgeStepDownRequest, callback: grpc.requestCallback<_baton_v1_AcknowledgeStepDownResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The current state. Answered from the sidecar's latest snapshot; never
   * waits on the API server.
   */
  GetLeadership(argument: _baton_v1_GetLeadershipRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_Leadership__Output>): grpc.ClientUnaryCall;
  GetLeadership(argument: _baton_v1_GetLeadershipRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_baton_v1_Leadership__Output>): grpc.ClientUnaryCall;
  GetLeadership(argument: _baton_v1_GetLeadershipRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_Leadership__Output>): grpc.ClientUnaryCall;
  GetLeadership(argument: _baton_v1_GetLeadershipRequest, callback: grpc.requestCallback<_baton_v1_Leadership__Output>): grpc.ClientUnaryCall;
  /**
   * The current state. Answered from the sidecar's latest snapshot; never
   * waits on the API server.
   */
  getLeadership(argument: _baton_v1_GetLeadershipRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_Leadership__Output>): grpc.ClientUnaryCall;
  getLeadership(argument: _baton_v1_GetLeadershipRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_baton_v1_Leadership__Output>): grpc.ClientUnaryCall;
  getLeadership(argument: _baton_v1_GetLeadershipRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_Leadership__Output>): grpc.ClientUnaryCall;
  getLeadership(argument: _baton_v1_GetLeadershipRequest, callback: grpc.requestCallback<_baton_v1_Leadership__Output>): grpc.ClientUnaryCall;
  
  /**
   * Step down now: stop reporting is_leader, then release the Lease so
   * another candidate takes over without waiting for it to expire. When this
   * returns OK this sidecar already answers is_leader=false; the release
   * itself may still be in flight. OK (with was_leader=false) when not leader.
   */
  Resign(argument: _baton_v1_ResignRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_ResignResponse__Output>): grpc.ClientUnaryCall;
  Resign(argument: _baton_v1_ResignRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_baton_v1_ResignResponse__Output>): grpc.ClientUnaryCall;
  Resign(argument: _baton_v1_ResignRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_ResignResponse__Output>): grpc.ClientUnaryCall;
  Resign(argument: _baton_v1_ResignRequest, callback: grpc.requestCallback<_baton_v1_ResignResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Step down now: stop reporting is_leader, then release the Lease so
   * another candidate takes over without waiting for it to expire. When this
   * returns OK this sidecar already answers is_leader=false; the release
   * itself may still be in flight. OK (with was_leader=false) when not leader.
   */
  resign(argument: _baton_v1_ResignRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_ResignResponse__Output>): grpc.ClientUnaryCall;
  resign(argument: _baton_v1_ResignRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_baton_v1_ResignResponse__Output>): grpc.ClientUnaryCall;
  resign(argument: _baton_v1_ResignRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_baton_v1_ResignResponse__Output>): grpc.ClientUnaryCall;
  resign(argument: _baton_v1_ResignRequest, callback: grpc.requestCallback<_baton_v1_ResignResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The current state at once (EVENT_INITIAL), then one message per change of
   * holder, fencing token, is_leader (including when the guarantee runs out
   * with time alone), stepping_down, observed or Lease uid (EVENT_CHANGED),
   * and heartbeats if requested. Only the latest state matters: a client that
   * reads slowly gets the newest state, not every intermediate one. On
   * shutdown the stream receives a message with stepping_down=true before the
   * Lease is released, and then ends with OK. RESOURCE_EXHAUSTED when the
   * sidecar already serves its maximum number of watchers; UNAVAILABLE once
   * it is shutting down.
   */
  WatchLeadership(argument: _baton_v1_WatchLeadershipRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_baton_v1_WatchLeadershipResponse__Output>;
  WatchLeadership(argument: _baton_v1_WatchLeadershipRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_baton_v1_WatchLeadershipResponse__Output>;
  /**
   * The current state at once (EVENT_INITIAL), then one message per change of
   * holder, fencing token, is_leader (including when the guarantee runs out
   * with time alone), stepping_down, observed or Lease uid (EVENT_CHANGED),
   * and heartbeats if requested. Only the latest state matters: a client that
   * reads slowly gets the newest state, not every intermediate one. On
   * shutdown the stream receives a message with stepping_down=true before the
   * Lease is released, and then ends with OK. RESOURCE_EXHAUSTED when the
   * sidecar already serves its maximum number of watchers; UNAVAILABLE once
   * it is shutting down.
   */
  watchLeadership(argument: _baton_v1_WatchLeadershipRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_baton_v1_WatchLeadershipResponse__Output>;
  watchLeadership(argument: _baton_v1_WatchLeadershipRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_baton_v1_WatchLeadershipResponse__Output>;
  
}

/**
 * The leader-election questions an application asks its sidecar, on
 * 127.0.0.1 by default.
 */
export interface LeaderElectionHandlers extends grpc.UntypedServiceImplementation {
  /**
   * The step-down handshake. A client calls it once the application has
   * stopped acting on the leadership of term fencing_token (its leader work
   * was cancelled and has ended), typically after a message with
   * stepping_down=true, naming the deadline of the last answer it acted on.
   * The promises given to client_id for that term up to that deadline are
   * void from then on: on shutdown or Resign the sidecar releases the Lease
   * as soon as every promise it handed out is acknowledged or has lapsed,
   * instead of waiting for the last one to run out. Calling it while still
   * leader is allowed (the application is done for now); later leader
   * answers make new promises. INVALID_ARGUMENT for a missing or malformed
   * client_id or a negative valid_until_boottime.
   */
  AcknowledgeStepDown: grpc.handleUnaryCall<_baton_v1_AcknowledgeStepDownRequest__Output, _baton_v1_AcknowledgeStepDownResponse>;
  
  /**
   * The current state. Answered from the sidecar's latest snapshot; never
   * waits on the API server.
   */
  GetLeadership: grpc.handleUnaryCall<_baton_v1_GetLeadershipRequest__Output, _baton_v1_Leadership>;
  
  /**
   * Step down now: stop reporting is_leader, then release the Lease so
   * another candidate takes over without waiting for it to expire. When this
   * returns OK this sidecar already answers is_leader=false; the release
   * itself may still be in flight. OK (with was_leader=false) when not leader.
   */
  Resign: grpc.handleUnaryCall<_baton_v1_ResignRequest__Output, _baton_v1_ResignResponse>;
  
  /**
   * The current state at once (EVENT_INITIAL), then one message per change of
   * holder, fencing token, is_leader (including when the guarantee runs out
   * with time alone), stepping_down, observed or Lease uid (EVENT_CHANGED),
   * and heartbeats if requested. Only the latest state matters: a client that
   * reads slowly gets the newest state, not every intermediate one. On
   * shutdown the stream receives a message with stepping_down=true before the
   * Lease is released, and then ends with OK. RESOURCE_EXHAUSTED when the
   * sidecar already serves its maximum number of watchers; UNAVAILABLE once
   * it is shutting down.
   */
  WatchLeadership: grpc.handleServerStreamingCall<_baton_v1_WatchLeadershipRequest__Output, _baton_v1_WatchLeadershipResponse>;
  
}

export interface LeaderElectionDefinition extends grpc.ServiceDefinition {
  AcknowledgeStepDown: MethodDefinition<_baton_v1_AcknowledgeStepDownRequest, _baton_v1_AcknowledgeStepDownResponse, _baton_v1_AcknowledgeStepDownRequest__Output, _baton_v1_AcknowledgeStepDownResponse__Output>
  GetLeadership: MethodDefinition<_baton_v1_GetLeadershipRequest, _baton_v1_Leadership, _baton_v1_GetLeadershipRequest__Output, _baton_v1_Leadership__Output>
  Resign: MethodDefinition<_baton_v1_ResignRequest, _baton_v1_ResignResponse, _baton_v1_ResignRequest__Output, _baton_v1_ResignResponse__Output>
  WatchLeadership: MethodDefinition<_baton_v1_WatchLeadershipRequest, _baton_v1_WatchLeadershipResponse, _baton_v1_WatchLeadershipRequest__Output, _baton_v1_WatchLeadershipResponse__Output>
}
