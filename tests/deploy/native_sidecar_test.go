// --native-sidecar as deployed: the native-sidecar example and the chart's
// native mode, applied to the real API server, run from their stored Pod
// templates with their ServiceAccount's token. Without a kubelet, the test
// plays its part: it creates each sidecar's Pod object and, before the
// SIGTERM, records the application's container as terminated, which is how
// the kubelet leaves a Pod before it stops a native sidecar.
package deploy

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"baton/tests/internal/sidecars"
)

// TestNativeSidecarReleasesOnceTheAppHasExited: with the RBAC deployed for
// it, a native sidecar reads its own Pod on SIGTERM and, the application's
// container having terminated, releases the Lease at once although the
// promise it gave a reader has seconds left: the next leader does not wait
// it out, and nothing was refused.
func TestNativeSidecarReleasesOnceTheAppHasExited(t *testing.T) {
	for _, tc := range []struct {
		name, workload, lease string
		apply                 func(t *testing.T, ns string)
	}{
		{"kustomize", "example-app", "example-app", func(t *testing.T, ns string) {
			applyServerSide(t, kustomizeIn(t, "deploy/examples/native-sidecar", ns, ""))
		}},
		{"helm", "rel-baton", "rel-baton", func(t *testing.T, ns string) {
			manifests := helm(t, "template", "rel", repo("deploy", "helm", "baton"), "--namespace", ns)
			cp.MustKubectl(t, manifests, "apply", "--server-side", "--field-manager=baton-deploy-test", "-n", ns, "-f", "-")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits out a lease duration before its first election
			ns := cp.Namespace(t, "nativesidecar")
			tc.apply(t, ns)
			spec := podTemplateOf(t, ns, "deployment", tc.workload)
			app := spec.Containers[0].Name
			pods := []string{"a", "b"}
			for _, pod := range pods {
				createPod(t, ns, pod, nil, nil) // one container, app
			}
			members := runTemplate(t, ns, tc.lease, spec, pods...)
			leader, st := sidecars.WaitLeader(t, members, 30*time.Second)
			promised, err := time.ParseDuration(st.ValidFor)
			if err != nil || promised < 5*time.Second {
				t.Fatalf("the leader promised %q (%v); the test needs a promise of seconds to outlast", st.ValidFor, err)
			}

			// The application has exited; the kubelet now stops the sidecar.
			status := `{"status":{"containerStatuses":[{"name":"` + app + `","image":"registry.example.com/app:1",` +
				`"imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}}`
			cp.MustKubectl(t, "", "patch", "pod", leader.Name, "-n", ns, "--subresource=status", "--type=merge", "-p", status)
			start := time.Now()
			leader.Signal(syscall.SIGTERM) // and no acknowledgement
			next, after := sidecars.WaitLeader(t, sidecars.Others(members, leader), promised+10*time.Second)
			took := time.Since(start)
			t.Logf("next leader %v after SIGTERM, with %v promised", took, promised)
			if after.FencingToken != st.FencingToken+1 {
				t.Errorf("%s leads with token %d, want %d", next.Name, after.FencingToken, st.FencingToken+1)
			}
			if took > 2*time.Second {
				t.Errorf("handover took %v; with the application exited the Lease should be released at once, not after the promise (%v)", took, promised)
			}
			sidecars.CheckExitAfterSIGTERM(t, leader)
			if log := leader.Log(); !strings.Contains(log, "event=app_exited") {
				t.Errorf("%s did not log event=app_exited:\n%s", leader.Name, log)
			}
			for _, m := range members {
				if log := m.Log(); strings.Contains(log, "HTTP 403") || strings.Contains(log, "Forbidden") {
					t.Errorf("%s was refused something by RBAC:\n%s", m.Name, log)
				}
			}
		})
	}
}
