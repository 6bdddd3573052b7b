// `baton leases` as an operator runs it against the real API server: a
// kubeconfig found through $KUBECONFIG whose user is an exec credential
// plugin, and --watch following a handover between sidecars as it happens.
package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"baton/tests/internal/cptest"
	"baton/tests/internal/sidecars"
)

// execPlugin is a credential plugin as EKS or OIDC logins provide one: it
// prints an ExecCredential (client.authentication.k8s.io/v1) carrying a bound
// token of ServiceAccount $SA_NAMESPACE/$SA_NAME from `scripts/controlplane
// token`, valid for $TTL_SECONDS, and appends a line to $RUNS_FILE per run.
const execPlugin = `#!/bin/sh
set -eu
echo run >>"$RUNS_FILE"
token=$("$CONTROLPLANE" token "$CONTROLPLANE_DIR" "$SA_NAMESPACE" "$SA_NAME")
expiry=$(date -u -d "+$TTL_SECONDS seconds" +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
printf '"status":{"token":"%s","expirationTimestamp":"%s"}}\n' "$token" "$expiry"
`

// operatorKubeconfig is the first file of $KUBECONFIG: its current-context
// "ops" names the cluster "baton-test", which only the control plane's admin
// kubeconfig (a later file) defines, and the user "operator", which runs the
// plugin above from this file's directory.
const operatorKubeconfig = `apiVersion: v1
kind: Config
current-context: ops
contexts:
- name: ops
  context: {cluster: baton-test, user: operator, namespace: %[1]s}
users:
- name: operator
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./get-token
      interactiveMode: Never
      env:
      - {name: CONTROLPLANE, value: %[2]s}
      - {name: CONTROLPLANE_DIR, value: %[3]s}
      - {name: SA_NAMESPACE, value: %[1]s}
      - {name: SA_NAME, value: operator}
      - {name: TTL_SECONDS, value: "600"}
      - {name: RUNS_FILE, value: %[4]s}
`

// leasesReader lets ServiceAccount operator of %[1]s read Leases as
// `baton leases --watch` does.
const leasesReader = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: leases-reader, namespace: %[1]s}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: leases-reader, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leases-reader}
subjects:
- {kind: ServiceAccount, name: operator, namespace: %[1]s}
`

// writeOperatorKubeconfig writes the plugin and the kubeconfig naming it
// into a new directory and returns the kubeconfig's path and the plugin's
// runs file; the ServiceAccount it logs in as may read ns's Leases.
func writeOperatorKubeconfig(t *testing.T, ns string) (string, string) {
	t.Helper()
	cp.MustKubectl(t, "", "create", "serviceaccount", "operator", "-n", ns)
	cp.MustKubectl(t, fmt.Sprintf(leasesReader, ns), "apply", "-f", "-")
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	if err := os.WriteFile(filepath.Join(dir, "get-token"), []byte(execPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "operator.kubeconfig")
	text := fmt.Sprintf(operatorKubeconfig, ns, cptest.Script(), cp.Dir, runs)
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, runs
}

// leasesWatch starts `baton leases --watch` with env added to this process's
// environment and returns its stdout lines as they come.
func leasesWatch(t *testing.T, env ...string) <-chan string {
	t.Helper()
	cmd := exec.Command(sidecars.BatonBinary(t), "leases", "--watch")
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("baton leases --watch stderr:\n%s", stderr.String())
		}
	})
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		scan := bufio.NewScanner(stdout)
		for scan.Scan() {
			lines <- scan.Text()
		}
	}()
	return lines
}

// awaitLine returns the first line with prefix want, failing t after timeout.
func awaitLine(t *testing.T, lines <-chan string, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("baton leases --watch ended before printing %q", want)
			}
			if strings.HasPrefix(line, want) {
				return line
			}
		case <-deadline:
			t.Fatalf("no line %q within %v", want, timeout)
		}
	}
}

func TestLeasesWatchWithAnExecPluginFollowsAHandoverLive(t *testing.T) {
	e := withWatch(t)
	members := threeSidecars(e)
	leader, st := sidecars.WaitLeader(t, members, 10*time.Second)
	kubeconfig, runs := writeOperatorKubeconfig(t, e.Namespace)

	// $KUBECONFIG as kubectl merges it: a missing file (skipped), the
	// operator's context and user, then the admin kubeconfig for the cluster
	// (its own current-context and user lose to the earlier file's). HOME
	// elsewhere, so ~/.kube/config plays no part.
	list := strings.Join([]string{filepath.Join(t.TempDir(), "absent"), kubeconfig, cp.Kubeconfig()}, ":")
	lines := leasesWatch(t, "KUBECONFIG="+list, "HOME="+t.TempDir())
	awaitLine(t, lines, fmt.Sprintf("app holder=%s transitions=%d ", leader.Name, st.FencingToken), 10*time.Second)

	leader.Signal(syscall.SIGTERM)
	asked := time.Now()
	next, after := sidecars.WaitLeader(t, sidecars.Others(members, leader), 10*time.Second)
	line := awaitLine(t, lines, fmt.Sprintf("app holder=%s transitions=%d ", next.Name, after.FencingToken), 5*time.Second)
	t.Logf("%v after SIGTERM: %s", time.Since(asked), line)
	if !strings.HasSuffix(line, " LIVE") {
		t.Errorf("the new holder's line %q does not say LIVE", line)
	}
	if after.FencingToken != st.FencingToken+1 {
		t.Errorf("token %d after the handover, want %d", after.FencingToken, st.FencingToken+1)
	}

	// One credential, valid ten minutes, served the list and the watch.
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "run"); n != 1 {
		t.Errorf("the exec plugin ran %d times, want once", n)
	}
}
