import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Leadership(_message.Message):
    __slots__ = ("is_leader", "identity", "holder_identity", "fencing_token", "lease_name", "lease_namespace", "lease_uid", "acquire_time", "renew_time", "valid_for", "lease_duration", "observed", "stepping_down", "fencing_revision", "valid_until_boottime", "fencing_revision_decimal")
    IS_LEADER_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    HOLDER_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEASE_NAME_FIELD_NUMBER: _ClassVar[int]
    LEASE_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LEASE_UID_FIELD_NUMBER: _ClassVar[int]
    ACQUIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    RENEW_TIME_FIELD_NUMBER: _ClassVar[int]
    VALID_FOR_FIELD_NUMBER: _ClassVar[int]
    LEASE_DURATION_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_FIELD_NUMBER: _ClassVar[int]
    STEPPING_DOWN_FIELD_NUMBER: _ClassVar[int]
    FENCING_REVISION_FIELD_NUMBER: _ClassVar[int]
    VALID_UNTIL_BOOTTIME_FIELD_NUMBER: _ClassVar[int]
    FENCING_REVISION_DECIMAL_FIELD_NUMBER: _ClassVar[int]
    is_leader: bool
    identity: str
    holder_identity: str
    fencing_token: int
    lease_name: str
    lease_namespace: str
    lease_uid: str
    acquire_time: _timestamp_pb2.Timestamp
    renew_time: _timestamp_pb2.Timestamp
    valid_for: _duration_pb2.Duration
    lease_duration: _duration_pb2.Duration
    observed: bool
    stepping_down: bool
    fencing_revision: int
    valid_until_boottime: _duration_pb2.Duration
    fencing_revision_decimal: str
    def __init__(self, is_leader: _Optional[bool] = ..., identity: _Optional[str] = ..., holder_identity: _Optional[str] = ..., fencing_token: _Optional[int] = ..., lease_name: _Optional[str] = ..., lease_namespace: _Optional[str] = ..., lease_uid: _Optional[str] = ..., acquire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., renew_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_for: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., lease_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., observed: _Optional[bool] = ..., stepping_down: _Optional[bool] = ..., fencing_revision: _Optional[int] = ..., valid_until_boottime: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., fencing_revision_decimal: _Optional[str] = ...) -> None: ...

class GetLeadershipRequest(_message.Message):
    __slots__ = ("client_id", "max_valid_for")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_VALID_FOR_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    max_valid_for: _duration_pb2.Duration
    def __init__(self, client_id: _Optional[str] = ..., max_valid_for: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class WatchLeadershipRequest(_message.Message):
    __slots__ = ("heartbeat_interval", "client_id", "max_valid_for")
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_VALID_FOR_FIELD_NUMBER: _ClassVar[int]
    heartbeat_interval: _duration_pb2.Duration
    client_id: str
    max_valid_for: _duration_pb2.Duration
    def __init__(self, heartbeat_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., client_id: _Optional[str] = ..., max_valid_for: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class WatchLeadershipResponse(_message.Message):
    __slots__ = ("event", "leadership")
    class Event(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        EVENT_UNSPECIFIED: _ClassVar[WatchLeadershipResponse.Event]
        EVENT_INITIAL: _ClassVar[WatchLeadershipResponse.Event]
        EVENT_CHANGED: _ClassVar[WatchLeadershipResponse.Event]
        EVENT_HEARTBEAT: _ClassVar[WatchLeadershipResponse.Event]
    EVENT_UNSPECIFIED: WatchLeadershipResponse.Event
    EVENT_INITIAL: WatchLeadershipResponse.Event
    EVENT_CHANGED: WatchLeadershipResponse.Event
    EVENT_HEARTBEAT: WatchLeadershipResponse.Event
    EVENT_FIELD_NUMBER: _ClassVar[int]
    LEADERSHIP_FIELD_NUMBER: _ClassVar[int]
    event: WatchLeadershipResponse.Event
    leadership: Leadership
    def __init__(self, event: _Optional[_Union[WatchLeadershipResponse.Event, str]] = ..., leadership: _Optional[_Union[Leadership, _Mapping]] = ...) -> None: ...

class ResignRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResignResponse(_message.Message):
    __slots__ = ("was_leader", "leadership")
    WAS_LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADERSHIP_FIELD_NUMBER: _ClassVar[int]
    was_leader: bool
    leadership: Leadership
    def __init__(self, was_leader: _Optional[bool] = ..., leadership: _Optional[_Union[Leadership, _Mapping]] = ...) -> None: ...

class AcknowledgeStepDownRequest(_message.Message):
    __slots__ = ("client_id", "fencing_token", "valid_until_boottime")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    VALID_UNTIL_BOOTTIME_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    fencing_token: int
    valid_until_boottime: _duration_pb2.Duration
    def __init__(self, client_id: _Optional[str] = ..., fencing_token: _Optional[int] = ..., valid_until_boottime: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class AcknowledgeStepDownResponse(_message.Message):
    __slots__ = ("acknowledged",)
    ACKNOWLEDGED_FIELD_NUMBER: _ClassVar[int]
    acknowledged: bool
    def __init__(self, acknowledged: _Optional[bool] = ...) -> None: ...
