// Tests that the local control plane is a real Kubernetes API server: the
// server behaviours baton relies on, and that the launcher leaves nothing
// running behind it.
package controlplane_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"baton/tests/internal/cptest"
)

var cp cptest.ControlPlane

func TestMain(m *testing.M) { os.Exit(cptest.Main(m, &cp)) }

func TestLeaseRenewTimeWithoutMicrosecondsIsRejected(t *testing.T) {
	ns := cp.Namespace(t, "microtime")
	lease := fmt.Sprintf(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: bad, namespace: %s}
spec:
  holderIdentity: someone
  renewTime: "2026-09-17T13:37:24Z"
`, ns)
	_, err := cp.Kubectl(lease, "apply", "--server-side", "-f", "-")
	if err == nil {
		t.Fatal("server accepted a renewTime without six fractional digits")
	}
	want := `parsing time "2026-09-17T13:37:24Z" as "2006-01-02T15:04:05.000000Z07:00"`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain the MicroTime parse error %q", err, want)
	}
	good := strings.Replace(lease, "13:37:24Z", "13:37:24.807518Z", 1)
	cp.MustKubectl(t, good, "apply", "--server-side", "-f", "-")
}

func TestMinimalRoleGrantsExactlyGetCreateUpdate(t *testing.T) {
	ns := cp.Namespace(t, "rbac")
	kubeconfig := cp.TokenKubeconfig(t, ns, "baton")
	// The Role DESIGN.md gives a sidecar: get, create and update on Leases.
	cp.GrantLeases(t, ns, "get", "create", "update")
	for verb, want := range map[string]string{
		"get": "yes", "create": "yes", "update": "yes", "delete": "no", "list": "no", "watch": "no",
	} {
		// can-i exits 1 for "no"; the answer is on stdout either way.
		out, _ := cp.KubectlAs(kubeconfig, "", "auth", "can-i", verb, "leases.coordination.k8s.io", "-n", ns)
		if got := strings.TrimSpace(out); got != want {
			t.Errorf("can-i %s leases as the ServiceAccount = %q, want %q", verb, got, want)
		}
	}
	// The token is really the ServiceAccount's: a request outside the Role is refused.
	if _, err := cp.KubectlAs(kubeconfig, "", "get", "configmaps", "-n", ns); err == nil ||
		!strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("listing configmaps as the ServiceAccount: got %v, want Forbidden", err)
	}
}

func TestServerSideApplyConflictNamesTheFirstManager(t *testing.T) {
	ns := cp.Namespace(t, "ssa")
	cm := func(v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owned, namespace: %s}\ndata: {key: %s}\n", ns, v)
	}
	cp.MustKubectl(t, cm("a"), "apply", "--server-side", "--field-manager=alice", "-f", "-")
	_, err := cp.Kubectl(cm("b"), "apply", "--server-side", "--field-manager=bob", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `conflict with "alice": .data.key`) {
		t.Fatalf("second manager's apply: got %v, want a conflict naming alice", err)
	}
}

func TestAPIServerRestartKeepsData(t *testing.T) {
	ns := cp.Namespace(t, "restart")
	if out, err := exec.Command(cptest.Script(), "restart-apiserver", cp.Dir).CombinedOutput(); err != nil {
		t.Fatalf("restart-apiserver: %v: %s", err, out)
	}
	cp.MustKubectl(t, "", "get", "namespace", ns)
}

// startPrivate starts a second control plane owned by the process owner.
func startPrivate(t *testing.T, owner int) string {
	dir := t.TempDir()
	start := exec.Command(cptest.Script(), "start", dir)
	start.Env = append(os.Environ(), fmt.Sprintf("BATON_CONTROLPLANE_OWNER_PID=%d", owner))
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("start: %v: %s", err, out)
	}
	return dir
}

// childPIDs are the pids of etcd and kube-apiserver running with dir in their
// command line.
func childPIDs(t *testing.T, dir string) []string {
	out, _ := exec.Command("pgrep", "-f", filepath.Join(dir, "etcd")+"|"+filepath.Join(dir, "pki")).Output()
	return strings.Fields(string(out))
}

func waitGone(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if len(childPIDs(t, dir)) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("etcd/kube-apiserver still running for %s: pids %v", dir, childPIDs(t, dir))
}

func TestNothingSurvivesTheOwnerBeingKilled(t *testing.T) {
	owner := exec.Command("sleep", "600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	dir := startPrivate(t, owner.Process.Pid)
	if n := len(childPIDs(t, dir)); n != 2 {
		t.Fatalf("want etcd and kube-apiserver running, found %d processes", n)
	}
	_ = owner.Process.Kill()
	_ = owner.Wait()
	waitGone(t, dir)
}

func TestNothingSurvivesTheLauncherBeingKilled(t *testing.T) {
	dir := startPrivate(t, 0)
	pid, err := os.ReadFile(filepath.Join(dir, "launcher.pid"))
	if err != nil {
		t.Fatal(err)
	}
	var launcher int
	fmt.Sscan(string(pid), &launcher)
	if err := syscall.Kill(launcher, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, dir)
}

func TestStopIsClean(t *testing.T) {
	dir := startPrivate(t, 0)
	if out, err := exec.Command(cptest.Script(), "stop", dir).CombinedOutput(); err != nil {
		t.Fatalf("stop: %v: %s", err, out)
	}
	waitGone(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "launcher.pid")); !os.IsNotExist(err) {
		t.Errorf("launcher.pid left behind after stop")
	}
}
