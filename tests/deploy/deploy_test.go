// Package deploy tests what a platform team deploys: the kustomize base and
// examples and the Helm chart in deploy/, applied to the real control plane;
// the RBAC they grant, checked as the ServiceAccount itself; the leader
// label's admission policy, tried with that ServiceAccount's token; a baton sidecar
// running with that ServiceAccount's token; a native sidecar's release once
// its Pod's application has exited (--native-sidecar); the `baton leases` audit
// command; and the Dockerfile's runtime stage against what the built binary
// needs.
package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"baton/tests/internal/cptest"
)

var cp cptest.ControlPlane

func TestMain(m *testing.M) { os.Exit(cptest.Main(m, &cp)) }

// repo is a path inside the repository.
func repo(parts ...string) string {
	return filepath.Join(append([]string{cptest.Root()}, parts...)...)
}

// kustomizeIn renders the kustomization in repository directory dir with its
// namespace replaced by ns, through an overlay in a temporary directory (the
// examples name their own namespace; kustomize accepts only relative
// resource paths).
func kustomizeIn(t *testing.T, dir, ns string, extra string) string {
	t.Helper()
	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, repo(dir))
	if err != nil {
		t.Fatal(err)
	}
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"+
		"namespace: %s\nresources:\n- %s\n%s", ns, rel, extra)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return cp.MustKubectl(t, "", "kustomize", overlay)
}

// applyServerSide applies manifests with server-side apply as the admin.
func applyServerSide(t *testing.T, manifests string) string {
	t.Helper()
	return cp.MustKubectl(t, manifests, "apply", "--server-side", "--field-manager=baton-deploy-test", "-f", "-")
}

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmResult runs the Helm binary scripts/helm builds (built once per test
// binary) and returns its stdout, or an error carrying its stderr.
func helmResult(t *testing.T, args ...string) (string, error) {
	t.Helper()
	helmOnce.Do(func() {
		out, err := exec.Command(repo("scripts", "helm"), "build").Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				err = fmt.Errorf("%v: %s", err, ee.Stderr)
			}
			helmErr = fmt.Errorf("scripts/helm build: %v", err)
			return
		}
		helmPath = strings.TrimSpace(string(out))
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	cmd := exec.Command(helmPath, args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out), nil
}

// helm is helmResult that fails the test on error.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmResult(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
