// Package cptest gives Go tests the real control plane that
// scripts/controlplane runs: the one named by $BATON_CONTROLPLANE_DIR when
// scripts/test started one, or a private one for the test binary otherwise.
package cptest

import (
	"bytes"
	"fmt"
	"io"
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
	got, stop, err := Acquire(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	*cp = got
	return m.Run()
}

// Acquire returns the shared control plane if $BATON_CONTROLPLANE_DIR names a
// ready one, else starts a private one in a temporary directory that stops
// when this process exits, whatever way it exits. stop stops a private one
// and removes its directory; it does nothing for the shared one. The start's
// progress goes to log.
func Acquire(log io.Writer) (cp ControlPlane, stop func(), err error) {
	if dir := os.Getenv("BATON_CONTROLPLANE_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			return ControlPlane{Dir: dir}, func() {}, nil
		}
	}
	dir, err := os.MkdirTemp("", "baton-cp-")
	if err != nil {
		return ControlPlane{}, nil, err
	}
	start := exec.Command(Script(), "start", dir)
	start.Env = append(os.Environ(), fmt.Sprintf("BATON_CONTROLPLANE_OWNER_PID=%d", os.Getpid()))
	start.Stdout, start.Stderr = log, log
	if err := start.Run(); err != nil {
		os.RemoveAll(dir)
		return ControlPlane{}, nil, fmt.Errorf("starting the control plane: %v", err)
	}
	return ControlPlane{Dir: dir}, func() {
		_ = exec.Command(Script(), "stop", dir).Run()
		os.RemoveAll(dir)
	}, nil
}

// RestartAPIServer restarts kube-apiserver on the same port and returns once
// it is ready again (scripts/controlplane restart-apiserver). Its error
// carries the end of kube-apiserver's log, which goes when the control
// plane's directory does.
func (cp *ControlPlane) RestartAPIServer() error {
	if out, err := exec.Command(Script(), "restart-apiserver", cp.Dir).CombinedOutput(); err != nil {
		return fmt.Errorf("restart-apiserver: %v: %s\nlast lines of kube-apiserver.log:\n%s", err, out,
			lastLines(filepath.Join(cp.Dir, "kube-apiserver.log"), 20))
	}
	return nil
}

// lastLines is the last n lines of the file at path, or why it cannot be read.
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
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
	ns, err := cp.CreateNamespace(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.DeleteNamespace(ns) })
	return ns
}

// CreateNamespace creates a namespace named prefix-PID-N that no other
// caller uses and returns its name.
func (cp *ControlPlane) CreateNamespace(prefix string) (string, error) {
	ns := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), namespaceSeq.Add(1))
	_, err := cp.Kubectl("", "create", "namespace", ns)
	return ns, err
}

// DeleteNamespace starts deleting ns and does not wait for it to go.
func (cp *ControlPlane) DeleteNamespace(ns string) {
	_, _ = cp.Kubectl("", "delete", "namespace", ns, "--wait=false")
}

// TokenKubeconfig writes a kubeconfig authenticating as ServiceAccount ns/sa
// (created if missing) with a bound token, and returns its path.
func (cp *ControlPlane) TokenKubeconfig(t testing.TB, ns, sa string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := cp.WriteTokenKubeconfig(ns, sa, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// WriteTokenKubeconfig writes to out a kubeconfig authenticating as
// ServiceAccount ns/sa (created if missing) with a bound token
// (scripts/controlplane token-kubeconfig).
func (cp *ControlPlane) WriteTokenKubeconfig(ns, sa, out string) error {
	cmd := exec.Command(Script(), "token-kubeconfig", cp.Dir, ns, sa, out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("token-kubeconfig: %v: %s", err, b)
	}
	return nil
}

// leaseRole is Role baton in namespace %[1]s granting verbs %[2]s on Leases,
// bound to ServiceAccounts %[3]s there.
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
%[3]s`

// GrantLeases applies a Role granting verbs on Leases in ns, and nothing
// else, bound to ServiceAccount ns/baton.
func (cp *ControlPlane) GrantLeases(t testing.TB, ns string, verbs ...string) {
	t.Helper()
	if err := cp.GrantLeasesTo(ns, []string{"baton"}, verbs...); err != nil {
		t.Fatal(err)
	}
}

// GrantLeasesTo is GrantLeases binding the Role to each of the
// ServiceAccounts serviceAccounts of ns.
func (cp *ControlPlane) GrantLeasesTo(ns string, serviceAccounts []string, verbs ...string) error {
	var subjects strings.Builder
	for _, sa := range serviceAccounts {
		fmt.Fprintf(&subjects, "- {kind: ServiceAccount, name: %s, namespace: %s}\n", sa, ns)
	}
	_, err := cp.Kubectl(fmt.Sprintf(leaseRole, ns, strings.Join(verbs, ", "), subjects.String()), "apply", "-f", "-")
	return err
}
