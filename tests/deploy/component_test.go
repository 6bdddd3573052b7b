// Adding baton to workloads you already have: deploy/components/baton, the
// kustomize Component, as deploy/examples/component uses it (a Deployment
// and a StatefulSet in one namespace), and deploy/helm/baton-lib, the Helm
// library, as deploy/examples/helm-library uses it (two releases in one
// namespace), each applied to the real API server. Without a kubelet, the test runs what the stored Pod templates
// describe: baton processes authenticated as the template's ServiceAccount,
// with the sidecar container's own arguments.
package deploy

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"baton/tests/internal/sidecars"
)

// podTemplateOf is the Pod template of the stored kind/name in ns.
func podTemplateOf(t *testing.T, ns, kind, name string) corev1.PodSpec {
	t.Helper()
	var w struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	out := cp.MustKubectl(t, "", "get", kind, name, "-n", ns, "-o", "json")
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatal(err)
	}
	return w.Spec.Template.Spec
}

// runTemplate starts one baton process for each of pods as that Pod of spec
// would run it: with its ServiceAccount's token, the baton container's
// arguments and literal environment (BATON_* settings), and POD_NAME and
// POD_NAMESPACE as the Downward API sets them, but local addresses of its
// own (the test runs them side by side). The pod name is also the identity.
func runTemplate(t *testing.T, ns, lease string, spec corev1.PodSpec, pods ...string) []*sidecars.Member {
	t.Helper()
	baton := findContainer(spec.InitContainers, "baton")
	var args []string
	for _, a := range baton.Args {
		if !strings.HasPrefix(a, "--http-addr=") && !strings.HasPrefix(a, "--grpc-addr=") &&
			!strings.HasPrefix(a, "--metrics-addr=") {
			args = append(args, a)
		}
	}
	var env []string
	for _, e := range baton.Env {
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	el := sidecars.Election{Kubeconfig: cp.TokenKubeconfig(t, ns, spec.ServiceAccountName), Namespace: ns, Lease: lease}
	var members []*sidecars.Member
	for _, pod := range pods {
		members = append(members, sidecars.StartInTest(t, sidecars.Spec{Kind: sidecars.Baton,
			Binary: sidecars.BatonBinary(t), Name: pod, Election: el, Args: args,
			Env: append([]string{"POD_NAME=" + pod, "POD_NAMESPACE=" + ns}, env...)}))
	}
	return members
}

func TestComponentAddsBatonToTwoWorkloadsSharingANamespace(t *testing.T) {
	ns := cp.Namespace(t, "component")
	workloads := []struct{ dir, kind, name, app string }{
		{"web", "deployment", "web", "web"},
		{"worker", "statefulset", "worker", "worker"},
	}
	for _, w := range workloads {
		applyServerSide(t, kustomizeIn(t, filepath.Join("deploy", "examples", "component", w.dir), ns, ""))
	}
	for _, w := range workloads {
		t.Run(w.dir, func(t *testing.T) {
			t.Parallel() // each waits out a lease duration before its first election
			sa := w.name + "-baton"
			checkRoleNamesLease(t, ns, sa, w.name)
			checkSidecarRBAC(t, ns, sa, w.name, defaultGrants)

			spec := podTemplateOf(t, ns, w.kind, w.name)
			if spec.ServiceAccountName != sa {
				t.Errorf("serviceAccountName %q, want %q", spec.ServiceAccountName, sa)
			}
			if findContainer(spec.Containers, w.app) == nil {
				t.Errorf("the workload's own container %s is gone: %v", w.app, spec.Containers)
			}
			baton := findContainer(spec.InitContainers, "baton")
			if baton == nil {
				t.Fatalf("no baton init container in %v", spec.InitContainers)
			}
			if baton.RestartPolicy == nil || *baton.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				t.Errorf("restartPolicy %v, want Always (a native sidecar)", baton.RestartPolicy)
			}
			if !slices.Contains(baton.Args, "--lease-name="+w.name) {
				t.Errorf("args %v, want --lease-name=%s", baton.Args, w.name)
			}
			if baton.Image != "ghcr.io/baton-sidecar/baton:0.2.0" {
				t.Errorf("image %q, want the one the example's images: names", baton.Image)
			}

			checkElects(t, ns, w.kind, w.name, w.name)
		})
	}
}

// checkElects runs two sidecars from the stored Pod template of kind/name
// and waits until one of them holds lease, with nothing refused by RBAC.
func checkElects(t *testing.T, ns, kind, name, lease string) {
	t.Helper()
	spec := podTemplateOf(t, ns, kind, name)
	// With the template's 15s lease duration a sidecar that finds no Lease
	// waits out a lease duration (and margins) before creating it.
	members := runTemplate(t, ns, lease, spec, "a", "b")
	leader, st := sidecars.WaitLeader(t, members, 30*time.Second)
	holder := cp.MustKubectl(t, "", "get", "lease", lease, "-n", ns, "-o", "jsonpath={.spec.holderIdentity}")
	if holder != leader.Name || st.HolderIdentity != leader.Name {
		t.Errorf("Lease %s holder %q, /leader holder %q; want the leader %q", lease, holder, st.HolderIdentity, leader.Name)
	}
	for _, m := range members {
		if log := m.Log(); strings.Contains(log, "HTTP 403") || strings.Contains(log, "Forbidden") {
			t.Errorf("%s was refused something by RBAC:\n%s", m.Name, log)
		}
	}
}

func TestHelmLibraryAddsBatonToTwoReleasesSharingANamespace(t *testing.T) {
	chart := repo("deploy", "examples", "helm-library")
	helm(t, "lint", "--strict", chart)
	ns := cp.Namespace(t, "helmlib")
	releases := []string{"web", "api"}
	for _, r := range releases {
		manifests := helm(t, "template", r, chart, "--namespace", ns)
		cp.MustKubectl(t, manifests, "apply", "--server-side", "--field-manager=baton-deploy-test", "-n", ns, "-f", "-")
	}
	for _, r := range releases {
		t.Run(r, func(t *testing.T) {
			t.Parallel()         // each waits out a lease duration before its first election
			name := r + "-baton" // ServiceAccount, Role, RoleBinding and Lease
			checkRoleNamesLease(t, ns, name, name)
			// The library's native sidecar reads its Pod on SIGTERM (get on Pods).
			checkSidecarRBAC(t, ns, name, name, grants{events: true, podStatus: true})
			spec := podTemplateOf(t, ns, "deployment", r)
			if spec.ServiceAccountName != name {
				t.Errorf("serviceAccountName %q, want %q", spec.ServiceAccountName, name)
			}
			c := findContainer(spec.InitContainers, "baton")
			if c == nil || c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				t.Fatalf("no native baton sidecar in %v", spec.InitContainers)
			}
			if !slices.Contains(c.Args, "--native-sidecar") {
				t.Errorf("args %v, want --native-sidecar (the library's default for a native sidecar)", c.Args)
			}
			checkElects(t, ns, "deployment", r, name)
		})
	}
}
