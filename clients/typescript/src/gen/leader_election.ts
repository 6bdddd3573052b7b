import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { AcknowledgeStepDownRequest as _baton_v1_AcknowledgeStepDownRequest, AcknowledgeStepDownRequest__Output as _baton_v1_AcknowledgeStepDownRequest__Output } from './baton/v1/AcknowledgeStepDownRequest.js';
import type { AcknowledgeStepDownResponse as _baton_v1_AcknowledgeStepDownResponse, AcknowledgeStepDownResponse__Output as _baton_v1_AcknowledgeStepDownResponse__Output } from './baton/v1/AcknowledgeStepDownResponse.js';
import type { GetLeadershipRequest as _baton_v1_GetLeadershipRequest, GetLeadershipRequest__Output as _baton_v1_GetLeadershipRequest__Output } from './baton/v1/GetLeadershipRequest.js';
import type { LeaderElectionClient as _baton_v1_LeaderElectionClient, LeaderElectionDefinition as _baton_v1_LeaderElectionDefinition } from './baton/v1/LeaderElection.js';
import type { Leadership as _baton_v1_Leadership, Leadership__Output as _baton_v1_Leadership__Output } from './baton/v1/Leadership.js';
import type { ResignRequest as _baton_v1_ResignRequest, ResignRequest__Output as _baton_v1_ResignRequest__Output } from './baton/v1/ResignRequest.js';
import type { ResignResponse as _baton_v1_ResignResponse, ResignResponse__Output as _baton_v1_ResignResponse__Output } from './baton/v1/ResignResponse.js';
import type { WatchLeadershipRequest as _baton_v1_WatchLeadershipRequest, WatchLeadershipRequest__Output as _baton_v1_WatchLeadershipRequest__Output } from './baton/v1/WatchLeadershipRequest.js';
import type { WatchLeadershipResponse as _baton_v1_WatchLeadershipResponse, WatchLeadershipResponse__Output as _baton_v1_WatchLeadershipResponse__Output } from './baton/v1/WatchLeadershipResponse.js';
import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from './google/protobuf/Duration.js';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from './google/protobuf/Timestamp.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  baton: {
    v1: {
      AcknowledgeStepDownRequest: MessageTypeDefinition<_baton_v1_AcknowledgeStepDownRequest, _baton_v1_AcknowledgeStepDownRequest__Output>
      AcknowledgeStepDownResponse: MessageTypeDefinition<_baton_v1_AcknowledgeStepDownResponse, _baton_v1_AcknowledgeStepDownResponse__Output>
      GetLeadershipRequest: MessageTypeDefinition<_baton_v1_GetLeadershipRequest, _baton_v1_GetLeadershipRequest__Output>
      /**
       * The leader-election questions an application asks its sidecar, on
       * 127.0.0.1 by default.
       */
      LeaderElection: SubtypeConstructor<typeof grpc.Client, _baton_v1_LeaderElectionClient> & { service: _baton_v1_LeaderElectionDefinition }
      Leadership: MessageTypeDefinition<_baton_v1_Leadership, _baton_v1_Leadership__Output>
      ResignRequest: MessageTypeDefinition<_baton_v1_ResignRequest, _baton_v1_ResignRequest__Output>
      ResignResponse: MessageTypeDefinition<_baton_v1_ResignResponse, _baton_v1_ResignResponse__Output>
      WatchLeadershipRequest: MessageTypeDefinition<_baton_v1_WatchLeadershipRequest, _baton_v1_WatchLeadershipRequest__Output>
      WatchLeadershipResponse: MessageTypeDefinition<_baton_v1_WatchLeadershipResponse, _baton_v1_WatchLeadershipResponse__Output>
    }
  }
  google: {
    protobuf: {
      Duration: MessageTypeDefinition<_google_protobuf_Duration, _google_protobuf_Duration__Output>
      Timestamp: MessageTypeDefinition<_google_protobuf_Timestamp, _google_protobuf_Timestamp__Output>
    }
  }
}

