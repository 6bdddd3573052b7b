// Harness for end-to-end tests: each test's namespace, Role and Lease on the
// real control plane; the processes themselves come from internal/sidecars.
package e2e

import (
	"encoding/json"
	"os"
	"testing"

	"baton/tests/internal/cptest"
	"baton/tests/internal/sidecars"
)

var cp cptest.ControlPlane

func TestMain(m *testing.M) { os.Exit(cptest.Main(m, &cp)) }

// env is one test's namespace and the kubeconfig of a ServiceAccount bound
// to the Role it asked for.
type env struct {
	t *testing.T
	sidecars.Election
}

func newEnv(t *testing.T, verbs ...string) *env {
	ns := cp.Namespace(t, "e2e")
	cp.GrantLeases(t, ns, verbs...)
	return &env{t: t, Election: sidecars.Election{
		Kubeconfig: cp.TokenKubeconfig(t, ns, "baton"), Namespace: ns, Lease: "app"}}
}

// withWatch grants what deploy/ grants a sidecar: get, create, update and
// watch on Leases.
func withWatch(t *testing.T) *env { return newEnv(t, "get", "create", "update", "watch") }

// sidecar starts a baton sidecar named name on e's Lease.
func (e *env) sidecar(name string) *sidecars.Member { return sidecars.Sidecar(e.t, e.Election, name) }

// batonRun starts `baton run` named name on e's Lease with more flags args
// (ending with "--" and the command).
func (e *env) batonRun(name string, args ...string) *sidecars.Member {
	e.t.Helper()
	return sidecars.StartInTest(e.t, sidecars.Spec{Kind: sidecars.Baton, Binary: sidecars.BatonBinary(e.t),
		Name: name, Election: e.Election, Subcommand: "run", Args: args})
}

// goElector starts a client-go LeaderElector named name on e's Lease.
func (e *env) goElector(name string) *sidecars.Member {
	return sidecars.GoElector(e.t, e.Election, name)
}

// Lease is the part of the Lease object the tests check.
type Lease struct {
	Metadata struct {
		ResourceVersion string            `json:"resourceVersion"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		HolderIdentity       *string `json:"holderIdentity"`
		LeaseDurationSeconds int     `json:"leaseDurationSeconds"`
		AcquireTime          string  `json:"acquireTime"`
		RenewTime            string  `json:"renewTime"`
		LeaseTransitions     int     `json:"leaseTransitions"`
	} `json:"spec"`
}

func (l Lease) holder() string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func (e *env) getLease() Lease {
	e.t.Helper()
	out := cp.MustKubectl(e.t, "", "get", "lease", e.Lease, "-n", e.Namespace, "-o", "json")
	var l Lease
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		e.t.Fatal(err)
	}
	return l
}
