// Original file: baton/v1/leader_election.proto

import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp.js';
import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from '../../google/protobuf/Duration.js';
import type { Long } from '@grpc/proto-loader';

/**
 * What this sidecar knows about its Lease, and whether this pod leads.
 */
export interface Leadership {
  /**
   * True only while this sidecar holds the Lease, is not stepping down, and
   * the time since its last successful renew (on the monotonic clock) is below
   * the renew deadline. Evaluated at the moment this message was produced.
   */
  'isLeader'?: (boolean);
  /**
   * This sidecar's own holder identity (unique per sidecar process, e.g.
   * "web-0_3f9a1c").
   */
  'identity'?: (string);
  /**
   * The Lease's holder as last observed; may be this sidecar or another
   * one. Empty when nobody holds the Lease or it has not been read yet.
   */
  'holderIdentity'?: (string);
  /**
   * The fencing token: the Lease's leaseTransitions as written by this
   * sidecar's winning acquisition while it holds the Lease; otherwise the last
   * observed leaseTransitions. Tag every write with it; a store that keeps the
   * highest token it has seen can refuse writes from a deposed leader. It only
   * grows for a given Lease name as far as this sidecar has seen.
   * 
   * int32 on purpose: Kubernetes' leaseTransitions is an int32 (never
   * negative), so this is lossless, and proto3 JSON prints 32-bit integers as
   * JSON numbers ("fencingToken": 7), whereas it would print an int64 as a
   * string.
   */
  'fencingToken'?: (number);
  /**
   * The coordination.k8s.io/v1 Lease this sidecar campaigns for.
   */
  'leaseName'?: (string);
  'leaseNamespace'?: (string);
  /**
   * metadata.uid of the Lease last observed. It changes when the Lease is
   * deleted and recreated. Empty before the first read or while no Lease
   * exists.
   */
  'leaseUid'?: (string);
  /**
   * spec.acquireTime of the Lease last observed: when its current holder took
   * it (the holder's wall clock). Absent when the Lease has none or has not
   * been read.
   */
  'acquireTime'?: (_google_protobuf_Timestamp | null);
  /**
   * spec.renewTime of the Lease last observed: the holder's last renew (the
   * holder's wall clock). Absent when the Lease has none or has not been read.
   * For information only; baton never compares it with local wall time.
   */
  'renewTime'?: (_google_protobuf_Timestamp | null);
  /**
   * How much longer this pod's leadership is guaranteed, counted from when
   * this message was produced; zero when is_leader is false. Do not start a
   * write that cannot finish within it. For a unary call or HTTP request,
   * count it from when you sent the request to stay on the safe side.
   */
  'validFor'?: (_google_protobuf_Duration | null);
  /**
   * spec.leaseDurationSeconds of the Lease last observed: how long its holder
   * promises to keep it after each renew. Absent when not known.
   */
  'leaseDuration'?: (_google_protobuf_Duration | null);
  /**
   * True once the Lease (or its absence) has been read successfully from the
   * API server at least once. Until then the other Lease fields are empty and
   * is_leader is false.
   */
  'observed'?: (boolean);
  /**
   * True once this sidecar has begun to step down (shutdown or Resign). It
   * never reports is_leader=true again for this term. On shutdown, watchers
   * receive a message with stepping_down=true before the Lease is released.
   */
  'steppingDown'?: (boolean);
  /**
   * The second fencing token: metadata.resourceVersion of the write that won
   * this term (this sidecar's create or take-over) while this sidecar holds
   * the Lease; otherwise that of the last observed Lease. Since Kubernetes
   * 1.35 (KEP-5504) resourceVersions of one resource type are comparable
   * integers, so this keeps growing across terms even after the Lease is
   * deleted and every sidecar restarted, which leaseTransitions cannot.
   * Zero when unknown (not read yet, or a resourceVersion that is not a
   * decimal integer), and when the value does not fit an int64 (KEP-5504
   * allows 128 bits): fencing_revision_decimal carries every value. Prints as
   * a JSON string ("fencingRevision": "4711"), as proto3 JSON does for every
   * int64: compare it as an integer.
   */
  'fencingRevision'?: (number | string | Long);
  /**
   * When the guarantee in valid_for ends, as a reading of the node's
   * CLOCK_BOOTTIME (time since boot, counting suspend). The sidecar and the
   * application share the node's kernel, so this deadline is exact for any
   * container of the Pod, however long the message took to arrive or sat in
   * a queue: lead only while clock_gettime(CLOCK_BOOTTIME) < this. Zero when
   * is_leader is false.
   */
  'validUntilBoottime'?: (_google_protobuf_Duration | null);
  /**
   * The fencing revision in decimal digits, whatever its size: a
   * resourceVersion is an integer of up to 128 bits (KEP-5504), so up to 39
   * digits, without a sign or leading zeros. The same value as
   * fencing_revision wherever that fits an int64; "0" when unknown. Compare
   * two of them as integers: the longer is the greater, and of two as long,
   * the first digit that differs decides. Empty only from a sidecar older
   * than this field (0.2.0 and earlier): read fencing_revision then.
   */
  'fencingRevisionDecimal'?: (string);
}

/**
 * What this sidecar knows about its Lease, and whether this pod leads.
 */
export interface Leadership__Output {
  /**
   * True only while this sidecar holds the Lease, is not stepping down, and
   * the time since its last successful renew (on the monotonic clock) is below
   * the renew deadline. Evaluated at the moment this message was produced.
   */
  'isLeader': (boolean);
  /**
   * This sidecar's own holder identity (unique per sidecar process, e.g.
   * "web-0_3f9a1c").
   */
  'identity': (string);
  /**
   * The Lease's holder as last observed; may be this sidecar or another
   * one. Empty when nobody holds the Lease or it has not been read yet.
   */
  'holderIdentity': (string);
  /**
   * The fencing token: the Lease's leaseTransitions as written by this
   * sidecar's winning acquisition while it holds the Lease; otherwise the last
   * observed leaseTransitions. Tag every write with it; a store that keeps the
   * highest token it has seen can refuse writes from a deposed leader. It only
   * grows for a given Lease name as far as this sidecar has seen.
   * 
   * int32 on purpose: Kubernetes' leaseTransitions is an int32 (never
   * negative), so this is lossless, and proto3 JSON prints 32-bit integers as
   * JSON numbers ("fencingToken": 7), whereas it would print an int64 as a
   * string.
   */
  'fencingToken': (number);
  /**
   * The coordination.k8s.io/v1 Lease this sidecar campaigns for.
   */
  'leaseName': (string);
  'leaseNamespace': (string);
  /**
   * metadata.uid of the Lease last observed. It changes when the Lease is
   * deleted and recreated. Empty before the first read or while no Lease
   * exists.
   */
  'leaseUid': (string);
  /**
   * spec.acquireTime of the Lease last observed: when its current holder took
   * it (the holder's wall clock). Absent when the Lease has none or has not
   * been read.
   */
  'acquireTime': (_google_protobuf_Timestamp__Output | null);
  /**
   * spec.renewTime of the Lease last observed: the holder's last renew (the
   * holder's wall clock). Absent when the Lease has none or has not been read.
   * For information only; baton never compares it with local wall time.
   */
  'renewTime': (_google_protobuf_Timestamp__Output | null);
  /**
   * How much longer this pod's leadership is guaranteed, counted from when
   * this message was produced; zero when is_leader is false. Do not start a
   * write that cannot finish within it. For a unary call or HTTP request,
   * count it from when you sent the request to stay on the safe side.
   */
  'validFor': (_google_protobuf_Duration__Output | null);
  /**
   * spec.leaseDurationSeconds of the Lease last observed: how long its holder
   * promises to keep it after each renew. Absent when not known.
   */
  'leaseDuration': (_google_protobuf_Duration__Output | null);
  /**
   * True once the Lease (or its absence) has been read successfully from the
   * API server at least once. Until then the other Lease fields are empty and
   * is_leader is false.
   */
  'observed': (boolean);
  /**
   * True once this sidecar has begun to step down (shutdown or Resign). It
   * never reports is_leader=true again for this term. On shutdown, watchers
   * receive a message with stepping_down=true before the Lease is released.
   */
  'steppingDown': (boolean);
  /**
   * The second fencing token: metadata.resourceVersion of the write that won
   * this term (this sidecar's create or take-over) while this sidecar holds
   * the Lease; otherwise that of the last observed Lease. Since Kubernetes
   * 1.35 (KEP-5504) resourceVersions of one resource type are comparable
   * integers, so this keeps growing across terms even after the Lease is
   * deleted and every sidecar restarted, which leaseTransitions cannot.
   * Zero when unknown (not read yet, or a resourceVersion that is not a
   * decimal integer), and when the value does not fit an int64 (KEP-5504
   * allows 128 bits): fencing_revision_decimal carries every value. Prints as
   * a JSON string ("fencingRevision": "4711"), as proto3 JSON does for every
   * int64: compare it as an integer.
   */
  'fencingRevision': (string);
  /**
   * When the guarantee in valid_for ends, as a reading of the node's
   * CLOCK_BOOTTIME (time since boot, counting suspend). The sidecar and the
   * application share the node's kernel, so this deadline is exact for any
   * container of the Pod, however long the message took to arrive or sat in
   * a queue: lead only while clock_gettime(CLOCK_BOOTTIME) < this. Zero when
   * is_leader is false.
   */
  'validUntilBoottime': (_google_protobuf_Duration__Output | null);
  /**
   * The fencing revision in decimal digits, whatever its size: a
   * resourceVersion is an integer of up to 128 bits (KEP-5504), so up to 39
   * digits, without a sign or leading zeros. The same value as
   * fencing_revision wherever that fits an int64; "0" when unknown. Compare
   * two of them as integers: the longer is the greater, and of two as long,
   * the first digit that differs decides. Empty only from a sidecar older
   * than this field (0.2.0 and earlier): read fencing_revision then.
   */
  'fencingRevisionDecimal': (string);
}
