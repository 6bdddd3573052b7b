"""The conformance suite's vector files (clients/conformance/vectors), each
case checked through the client's pure functions with the vectors' clock
readings; a scenario is reported once every case of its file passed."""

import base64
import datetime
import socket

import grpc
import pytest
from google.protobuf.message import DecodeError

from baton_client import (BatonError, Fence, Leadership, NotLeaderError, SidecarUnavailableError,
                          StaleTokenError, token_headers, revision_headers, token_from_headers,
                          revision_from_headers, HttpClient, TOKEN_HEADER, REVISION_HEADER)
from baton_client._grpc_common import translate
from baton_client.http import status_error
from baton_client.leadership import check_leader, from_proto, parse_json, require_leader_bound_ns
from baton_client.v1 import leader_election_pb2 as pb
from conformance import load, passed

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def ms(seconds: float) -> int:
    """Whole milliseconds of a client value in seconds, truncated toward
    zero at nanosecond precision (what the float holds of the wire's
    value)."""
    return int(round(seconds * 1e9)) // 1_000_000


def as_expected(lead: Leadership) -> dict:
    """``lead`` in the vectors' form of an expected Leadership."""
    def unix_ms(t):
        return None if t is None else (t - EPOCH) // datetime.timedelta(milliseconds=1)
    return {
        "isLeader": lead.is_leader, "observed": lead.observed, "steppingDown": lead.stepping_down,
        "identity": lead.identity, "holderIdentity": lead.holder_identity,
        "leaseName": lead.lease_name, "leaseNamespace": lead.lease_namespace,
        "leaseUid": lead.lease_uid, "fencingToken": lead.fencing_token,
        "fencingRevision": str(lead.fencing_revision),
        "acquireTimeUnixMs": unix_ms(lead.acquire_time), "renewTimeUnixMs": unix_ms(lead.renew_time),
        "validForMs": ms(lead.valid_for), "validUntilBoottimeMs": ms(lead.valid_until),
        "leaseDurationMs": ms(lead.lease_duration or 0.0),
    }


def cases(name: str, key: str = "cases") -> list:
    return [pytest.param(c, id=c.get("name", c.get("code"))) for c in load(name)[key]]


class Scenario:
    """Counts a vector file's passing cases; the last one to pass reports
    the scenario, so it is reported only when every case passed."""

    def __init__(self, scenario: str, total: int) -> None:
        self.scenario, self.left = scenario, total

    def case_passed(self) -> None:
        self.left -= 1
        if self.left == 0:
            passed(self.scenario)


def scenario(sid: str, name: str, *keys: str) -> Scenario:
    data = load(name)
    return Scenario(sid, sum(len(data[k]) for k in keys or ("cases",)))


LEADERSHIP_JSON = scenario("leadership-json", "leadership_json.json")
LEADERSHIP_PROTO = scenario("leadership-proto", "leadership_proto.json")
VALIDITY = scenario("validity", "validity.json")
REQUIRE_LEADER = scenario("require-leader", "require_leader.json")
FENCE = scenario("fence", "fence.json")
FENCE_HEADERS = scenario("fence-headers", "fence_headers.json")
ERRORS = scenario("errors", "errors.json", "grpc", "http")


@pytest.mark.parametrize("case", cases("leadership_json.json"))
def test_leadership_json(case):
    since = case["sinceMs"] / 1000
    if case["expect"].get("error"):
        with pytest.raises(BatonError):
            parse_json(case["text"], since)
    else:
        assert as_expected(parse_json(case["text"], since)) == case["expect"]
    LEADERSHIP_JSON.case_passed()


@pytest.mark.parametrize("case", cases("leadership_proto.json"))
def test_leadership_proto(case):
    since = case["sinceMs"] / 1000
    wire = base64.b64decode(case["base64"])
    decode = lambda: from_proto(pb.Leadership.FromString(wire), since)  # noqa: E731
    if case["expect"].get("error"):
        with pytest.raises((DecodeError, BatonError)):  # bad wire format, or a malformed field
            decode()
    else:
        assert as_expected(decode()) == case["expect"]
    LEADERSHIP_PROTO.case_passed()


@pytest.mark.parametrize("case", cases("validity.json"))
def test_validity(case):
    lead = parse_json(case["text"], case["sinceMs"] / 1000)
    for check in case["checks"]:
        assert ms(lead.remaining(check["nowMs"] / 1000)) == check["remainingMs"], check
    VALIDITY.case_passed()


@pytest.mark.parametrize("case", cases("require_leader.json"))
def test_require_leader(case):
    bound_ns = require_leader_bound_ns(case["minValidityMs"] / 1000)
    assert bound_ns // 1_000_000 == case["requestMaxValidForMs"]
    lead = parse_json(case["text"], case["sinceMs"] / 1000)
    decide = lambda: check_leader(lead, case["minValidityMs"] / 1000, case["nowMs"] / 1000)  # noqa: E731
    if case["expect"].get("notLeader"):
        with pytest.raises(NotLeaderError):
            decide()
    else:
        assert decide() == case["expect"]["token"]
        assert str(lead.fencing_revision) == case["expect"]["revision"]
    REQUIRE_LEADER.case_passed()


@pytest.mark.parametrize("case", cases("fence.json"))
def test_fence(case):
    fence = Fence()  # one class for tokens and revisions, compared as integers
    for step in case["steps"]:
        value = int(step["admit"])
        if step["ok"]:
            fence.admit(value)
        else:
            with pytest.raises(StaleTokenError):
                fence.admit(value)
        assert fence.highest == int(step["highest"]), step
    FENCE.case_passed()


@pytest.mark.parametrize("case", cases("fence_headers.json"))
def test_fence_headers(case):
    vectors = load("fence_headers.json")
    assert (TOKEN_HEADER, REVISION_HEADER) == (vectors["tokenHeader"], vectors["revisionHeader"])
    token = case["kind"] == "token"
    if "format" in case:
        headers = token_headers(case["format"]) if token else revision_headers(int(case["format"]))
        assert headers == {TOKEN_HEADER if token else REVISION_HEADER: case["expect"]}
    else:
        name = TOKEN_HEADER if token else REVISION_HEADER
        headers = {} if case["header"] is None else {name.lower(): case["header"]}
        read = token_from_headers if token else revision_from_headers
        if case["expect"] == "error":
            with pytest.raises(ValueError):
                read(headers)
        else:
            assert read(headers) == int(case["expect"])
    FENCE_HEADERS.case_passed()


class _Failed(grpc.RpcError):
    """A failed call with a status, as grpc raises it."""

    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "from the vector"


@pytest.mark.parametrize("row", cases("errors.json", "grpc"))
def test_errors_grpc(row):
    code = grpc.StatusCode[row["code"]]
    err = translate("127.0.0.1:4041", _Failed(code))
    assert isinstance(err, SidecarUnavailableError) == (row["error"] == "unavailable")
    assert isinstance(err, BatonError) and code.name in str(err)
    ERRORS.case_passed()


def _closed_addr() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.parametrize("row", cases("errors.json", "http"))
def test_errors_http(row):
    outcome = row["outcome"]
    if outcome == "refused":
        with pytest.raises(BatonError) as e:
            HttpClient(_closed_addr(), timeout=2).leadership()
        err = e.value
    elif outcome == "timeout":
        with socket.socket() as silent:  # accepts, never answers
            silent.bind(("127.0.0.1", 0))
            silent.listen(4)
            with pytest.raises(BatonError) as e:
                HttpClient(f"127.0.0.1:{silent.getsockname()[1]}", timeout=0.3).leadership()
        err = e.value
    else:
        err = status_error("127.0.0.1:4040", "GET /leader", outcome, "from the vector")
        assert str(outcome) in str(err)
    assert isinstance(err, SidecarUnavailableError) == (row["error"] == "unavailable")
    ERRORS.case_passed()
