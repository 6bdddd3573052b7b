"""The Lease a client expects and the field manager for Kubernetes writes:
unit tests, then tests against the fixture's sidecars and its real API
server (see conftest.py)."""

import asyncio
import base64
import json
import os
import ssl
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from baton_client import AsyncClient, Client, HttpClient, Leadership, WrongLeaseError
from baton_client._lease import LeaseRef, check_lease, expected_lease
from conformance import passed

# The same identities and managers as the Go and C++ clients' tests.
FIELD_MANAGERS = [
    ("web-0_3f9a1c", "web-0_3f9a1c"),
    ("x" * 200 + "_1", "x" * 111 + "-090fac22cfc2b4ad"),
    ("tab\there", "tab_here-778309ed1f28b0f9"),
    ("ünïcode", "__n__code-b1b0d40350a25beb"),
    ("", ""),
]


@pytest.mark.parametrize("identity,manager", FIELD_MANAGERS)
def test_field_manager_is_the_identity_or_a_valid_distinct_stand_in(identity, manager):
    got = Leadership(identity=identity).field_manager()
    assert got == manager
    assert len(got) <= 128 and got.isprintable() and got.isascii()


def test_field_managers_of_identities_differing_only_at_the_end_differ():
    long = "statefulset-replica-" * 10
    assert (Leadership(identity=long + "_1").field_manager()
            != Leadership(identity=long + "_2").field_manager())


def test_the_expected_lease_comes_from_the_arguments_else_the_environment(monkeypatch):
    monkeypatch.delenv("BATON_LEASE_NAME", raising=False)
    monkeypatch.delenv("BATON_LEASE_NAMESPACE", raising=False)
    assert expected_lease(None, None) is None
    assert expected_lease("app", None) == LeaseRef("app", "")
    monkeypatch.setenv("BATON_LEASE_NAME", "from-env")
    monkeypatch.setenv("BATON_LEASE_NAMESPACE", "ns")
    assert expected_lease(None, None) == LeaseRef("from-env", "ns")
    assert expected_lease("app", "other") == LeaseRef("app", "other")
    with pytest.raises(ValueError, match="needs a name"):
        expected_lease(None, "ns-only")


def test_an_answer_about_another_lease_is_refused_naming_both():
    lead = Leadership(is_leader=True, lease_name="clients", lease_namespace="ns")
    assert check_lease(lead, None, "a") is lead
    assert check_lease(lead, LeaseRef("clients", "ns"), "a") is lead
    assert check_lease(lead, LeaseRef("clients", ""), "a") is lead
    for wrong in (LeaseRef("other", "ns"), LeaseRef("clients", "other-ns")):
        with pytest.raises(WrongLeaseError) as e:
            check_lease(lead, wrong, "127.0.0.1:4041")
        assert str(wrong) in str(e.value) and "ns/clients" in str(e.value)


def test_clients_expecting_another_lease_refuse_the_sidecars_answers(settled):
    fx, li = settled
    s = fx["sidecars"][li]
    wrong = dict(lease_name="not-this-lease", lease_namespace=fx["namespace"])
    right = dict(lease_name=fx["leaseName"], lease_namespace=fx["namespace"])
    served = f"{fx['namespace']}/{fx['leaseName']}"
    with Client(s["grpc"], **wrong) as c:
        with pytest.raises(WrongLeaseError) as e:
            c.leadership()
        assert e.value.expected == f"{fx['namespace']}/not-this-lease"
        assert e.value.served == served
        assert "not-this-lease" in str(e.value) and served in str(e.value)
        with pytest.raises(WrongLeaseError):
            c.is_leader()
        with pytest.raises(WrongLeaseError):
            c.require_leader()
        states = c.watch()
        first = next(states)
        states.close()
        assert not first.is_leader and isinstance(first.error, WrongLeaseError)
    with Client(s["grpc"], **right) as c:
        assert c.is_leader()
    http = HttpClient(s["http"], **wrong)
    with pytest.raises(WrongLeaseError):
        http.leadership()
    assert HttpClient(s["http"], **right).is_leader()

    async def over_asyncio():
        async with AsyncClient(s["grpc"], **wrong) as c:
            with pytest.raises(WrongLeaseError):
                await c.leadership()
        async with AsyncClient(s["grpc"], **right) as c:
            assert await c.is_leader()

    asyncio.run(over_asyncio())
    passed("lease-identity")


class KubeAPI:
    """The fixture's API server as its admin, from the control plane's
    kubeconfig (server, CA and client certificate inline)."""

    def __init__(self, kubeconfig: str, tmp: str) -> None:
        fields = {}
        with open(kubeconfig) as f:
            for line in f:
                key, sep, value = line.strip().removeprefix("- ").partition(": ")
                if sep:
                    fields[key] = value
        self.server = fields["server"]
        paths = {}
        for key in ("certificate-authority-data", "client-certificate-data", "client-key-data"):
            paths[key] = os.path.join(tmp, key)
            with open(paths[key], "wb") as out:
                out.write(base64.b64decode(fields[key]))
        self.tls = ssl.create_default_context(cafile=paths["certificate-authority-data"])
        self.tls.load_cert_chain(paths["client-certificate-data"], paths["client-key-data"])

    def apply(self, namespace: str, name: str, manager: str, data: dict, force: bool = False):
        """Server-side-applies a ConfigMap; returns (HTTP status, body)."""
        query = urllib.parse.urlencode({"fieldManager": manager, "force": str(force).lower()})
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name}, "data": data}).encode()
        req = urllib.request.Request(
            f"{self.server}/api/v1/namespaces/{namespace}/configmaps/{name}?{query}",
            data=body, method="PATCH", headers={"Content-Type": "application/apply-patch+yaml"})
        try:
            with urllib.request.urlopen(req, context=self.tls, timeout=10) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)


def test_two_leaders_field_managers_get_a_named_conflict_not_an_overwrite(settled):
    fx, li = settled
    leader = HttpClient(fx["sidecars"][li]["http"]).leadership()
    other = HttpClient(fx["sidecars"][(li + 1) % len(fx["sidecars"])]["http"]).leadership()
    first, second = leader.field_manager(), other.field_manager()
    assert first and second and first != second
    name = f"python-ssa-{time.time_ns()}"
    with tempfile.TemporaryDirectory() as tmp:
        kube = KubeAPI(fx["kubeconfig"], tmp)

        def expect_conflict(manager: str, owner: str) -> None:
            code, status = kube.apply(fx["namespace"], name, manager, {"owner": manager})
            assert code == 409 and status["reason"] == "Conflict", status
            assert f'conflict with "{owner}"' in status["message"]

        code, status = kube.apply(fx["namespace"], name, first, {"owner": first})
        assert code in (200, 201), status
        expect_conflict(second, first)  # the second leader cannot overwrite silently
        code, status = kube.apply(fx["namespace"], name, second, {"owner": second}, force=True)
        assert code == 200, status  # its term starts by taking the field over
        expect_conflict(first, second)  # and the first one's next write is refused by name
        odd = Leadership(identity="replica-" * 30 + "\t1").field_manager()
        code, status = kube.apply(fx["namespace"], name, odd, {"note": "x"})
        assert code == 200, status  # the API server takes a derived manager
