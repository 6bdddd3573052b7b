// Package cptest gives Go tests the real control plane that
// scripts/controlplane runs: the one named by $BATON_CONTROLPLANE_DIR when
// scripts/test started one, or a private one for the test binary otherwise.
package cptest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// ControlPlane is a running kube-apiserver + etcd.
type ControlPlane struct {
	Dir string
}

// Root is the repository's top directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Script is the path of scripts/controlplane.
func Script() string { return filepath.Join(Root(), "scripts", "controlplane") }

// Main runs a test binary's tests against a control plane: the shared one if
// $BATON_CONTROLPLANE_DIR names a ready one, else one it starts and stops.
// Use it from TestMain: os.Exit(cptest.Main(m, &cp)).
func Main(m *testing.M, cp *ControlPlane) int {
	if dir := os.Getenv("BATON_CONTROLPLANE_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			cp.Dir = dir
			return m.Run()
		}
	}
	dir, err := os.MkdirTemp("", "baton-cp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	start := exec.Command(Script(), "start", dir)
	start.Env = append(os.Environ(), fmt.Sprintf("BATON_CONTROLPLANE_OWNER_PID=%d", os.Getpid()))
	start.Stdout, start.Stderr = os.Stderr, os.Stderr
	if err := start.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "starting the control plane: %v\n", err)
		return 1
	}
	defer exec.Command(Script(), "stop", dir).Run()
	cp.Dir = dir
	return m.Run()
}

// Kubeconfig is the admin kubeconfig.
func (cp *ControlPlane) Kubeconfig() string { return filepath.Join(cp.Dir, "kubeconfig") }

// KubectlPath is the kubectl built with the control plane.
func (cp *ControlPlane) KubectlPath() string { return filepath.Join(cp.Dir, "bin", "kubectl") }

// Kubectl runs kubectl as the admin with stdin, returning stdout and an error
// carrying stderr when it exits non-zero.
func (cp *ControlPlane) Kubectl(stdin string, args ...string) (string, error) {
	return cp.KubectlAs(cp.Kubeconfig(), stdin, args...)
}

// KubectlAs is Kubectl with another kubeconfig.
func (cp *ControlPlane) KubectlAs(kubeconfig, stdin string, args ...string) (string, error) {
	cmd := exec.Command(cp.KubectlPath(), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// MustKubectl is Kubectl that fails the test on error.
func (cp *ControlPlane) MustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := cp.Kubectl(stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var namespaceSeq atomic.Int64

// Namespace creates a namespace no other test uses and deletes it when the
// test ends.
func (cp *ControlPlane) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), namespaceSeq.Add(1))
	cp.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { _, _ = cp.Kubectl("", "delete", "namespace", ns, "--wait=false") })
	return ns
}

// TokenKubeconfig writes a kubeconfig authenticating as ServiceAccount ns/sa
// (created if missing) with a bound token, and returns its path.
func (cp *ControlPlane) TokenKubeconfig(t testing.TB, ns, sa string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), sa+".kubeconfig")
	cmd := exec.Command(Script(), "token-kubeconfig", cp.Dir, ns, sa, out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("token-kubeconfig: %v: %s", err, b)
	}
	return out
}

// leaseRole is Role baton in namespace %[1]s granting verbs %[2]s on Leases,
// bound to ServiceAccount baton there.
const leaseRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: baton, namespace: %[1]s}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [%[2]s]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: baton, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: baton}
subjects:
- {kind: ServiceAccount, name: baton, namespace: %[1]s}
`

// GrantLeases applies a Role granting verbs on Leases in ns, and nothing
// else, bound to ServiceAccount ns/baton.
func (cp *ControlPlane) GrantLeases(t testing.TB, ns string, verbs ...string) {
	t.Helper()
	cp.MustKubectl(t, fmt.Sprintf(leaseRole, ns, strings.Join(verbs, ", ")), "apply", "-f", "-")
}
