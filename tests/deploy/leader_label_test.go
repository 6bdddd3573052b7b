// The leader Pod label as deployed: deploy/components/leader-label (through
// deploy/examples/leader-label) and the chart's leaderLabel values, applied
// to the real API server. Their extra Role lets the ServiceAccount list and
// patch Pods; their ValidatingAdmissionPolicy lets those patches change only
// the label and its annotation, checked with the ServiceAccount's own token
// on plain Pod objects (no kubelet runs them; they stay Pending), and with
// real sidecars whose label follows a handover.
package deploy

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"baton/tests/internal/sidecars"
)

// leaderOf is the annotation naming the Lease a labelled Pod leads.
const leaderOf = "baton.dev/leader-of"

// deleteClusterScopedOnCleanup deletes the named cluster-scoped policy and
// binding when the test ends: deleting the namespace leaves them behind.
func deleteClusterScopedOnCleanup(t *testing.T, name string) {
	t.Cleanup(func() {
		_, _ = cp.Kubectl("", "delete", "--ignore-not-found", "validatingadmissionpolicybinding/"+name,
			"validatingadmissionpolicy/"+name)
	})
}

func TestLeaderLabelComponentIsAcceptedByTheAPIServer(t *testing.T) {
	ns := cp.Namespace(t, "leaderlabel")
	deleteClusterScopedOnCleanup(t, "api-baton-leader-label")
	applyServerSide(t, kustomizeIn(t, "deploy/examples/leader-label", ns, ""))

	spec := podTemplateOf(t, ns, "deployment", "api")
	if spec.ServiceAccountName != "api-baton" {
		t.Errorf("serviceAccountName %q, want api-baton", spec.ServiceAccountName)
	}
	baton := findContainer(spec.InitContainers, "baton")
	if baton == nil {
		t.Fatalf("no baton init container in %v", spec.InitContainers)
	}
	if !slices.Contains(baton.Args, "--lease-name=api") {
		t.Errorf("args %v, want --lease-name=api", baton.Args)
	}
	env := map[string]string{}
	for _, e := range baton.Env {
		env[e.Name] = e.Value
	}
	if env["BATON_LEADER_LABEL"] != "baton.dev/leader" || !slices.ContainsFunc(baton.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAME" }) {
		t.Errorf("baton env %+v, want BATON_LEADER_LABEL=baton.dev/leader beside the Component's POD_NAME", baton.Env)
	}

	var svc corev1.Service
	if err := json.Unmarshal([]byte(cp.MustKubectl(t, "", "get", "service", "api-leader", "-n", ns, "-o", "json")), &svc); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"app.kubernetes.io/name": "api", "baton.dev/leader": "true"}; !maps.Equal(svc.Spec.Selector, want) {
		t.Errorf("Service api-leader selects %v, want %v", svc.Spec.Selector, want)
	}

	checkRoleNamesLease(t, ns, "api-baton", "api")
	checkSidecarRBAC(t, ns, "api-baton", "api", grants{events: true, leaderLabel: true})
	checkLeaderLabelPolicy(t, ns, "api-baton", "baton.dev/leader")
	checkLabelFollowsTheLeader(t, ns, spec, "api", "baton.dev/leader")
}

// checkLabelFollowsTheLeader runs two sidecars from spec, each in a Pod of
// its own, through the Role and the admission policy deployed for them:
// the leader's Pod carries key=true, then after a SIGTERM handover the new
// leader's alone, and neither sidecar was refused anything.
func checkLabelFollowsTheLeader(t *testing.T, ns string, spec corev1.PodSpec, lease, key string) {
	t.Helper()
	pods := []string{"api-1", "api-2"}
	for _, pod := range pods {
		createPod(t, ns, pod, map[string]string{"app.kubernetes.io/name": "api"}, nil)
	}
	members := runTemplate(t, ns, lease, spec, pods...)
	labelled := func() string {
		return cp.MustKubectl(t, "", "get", "pods", "-n", ns, "-l", key+"=true", "-o", "jsonpath={.items[*].metadata.name}")
	}
	await := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for labelled() != want {
			if time.Now().After(deadline) {
				t.Fatalf("Pods labelled %s=true: %q, want %q", key, labelled(), want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	leader, st := sidecars.WaitLeader(t, members, 30*time.Second)
	await(leader.Name)
	go leader.AcknowledgeOnceSteppedDown(st.FencingToken)
	leader.Signal(syscall.SIGTERM)
	next, _ := sidecars.WaitLeader(t, sidecars.Others(members, leader), 10*time.Second)
	await(next.Name)
	sidecars.CheckExitAfterSIGTERM(t, leader)
	for _, m := range members {
		if log := m.Log(); strings.Contains(log, "leader_label_failed") || strings.Contains(log, "HTTP 403") {
			t.Errorf("%s was refused something:\n%s", m.Name, log)
		}
	}
}

func TestHelmChartLeaderLabelPolicy(t *testing.T) {
	ns := cp.Namespace(t, "leaderlabel")
	deleteClusterScopedOnCleanup(t, "rel-baton-leader-label."+ns)
	manifests := helm(t, "template", "rel", repo("deploy", "helm", "baton"), "--namespace", ns,
		"--set", "leaderLabel.key=example.com/leader")
	cp.MustKubectl(t, manifests, "apply", "--server-side", "--field-manager=baton-deploy-test", "-n", ns, "-f", "-")
	// The chart's native sidecar also reads its Pod (get, in the chart's own
	// Role); the leader label's Role adds list and patch.
	checkSidecarRBAC(t, ns, "rel-baton", "rel-baton", grants{events: true, leaderLabel: true, podStatus: true})
	checkLeaderLabelPolicy(t, ns, "rel-baton", "example.com/leader")
}

// TestHelmChartLeaderLabelParts: which objects each combination of values
// renders. Without the label the only thing about Pods is a native
// sidecar's get, a rule of the chart's own Role; no Pod rule appears twice.
func TestHelmChartLeaderLabelParts(t *testing.T) {
	for _, tc := range []struct {
		set                  string
		role, policy, podGet bool
	}{
		{"", false, false, true},
		{"sidecarMode=classic", false, false, false},
		{"nativeSidecarShutdown=false", false, false, false},
		{"leaderLabel.key=baton.dev/leader", true, true, true},
		{"leaderLabel.key=baton.dev/leader,sidecarMode=classic", true, true, false},
		{"leaderLabel.key=baton.dev/leader,leaderLabel.admissionPolicy.create=false", true, false, true},
		{"leaderLabel.key=baton.dev/leader,rbac.create=false", false, true, false},
	} {
		args := []string{"template", "rel", repo("deploy", "helm", "baton"), "--namespace", "ns1"}
		if tc.set != "" {
			args = append(args, "--set", tc.set)
		}
		out := helm(t, args...)
		role := strings.Contains(out, "kind: Role\nmetadata:\n  name: rel-baton-leader-label\n") &&
			strings.Contains(out, "kind: RoleBinding\nmetadata:\n  name: rel-baton-leader-label\n")
		policy := strings.Contains(out, "kind: ValidatingAdmissionPolicy\nmetadata:\n  name: rel-baton-leader-label.ns1\n") &&
			strings.Contains(out, "kind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: rel-baton-leader-label.ns1\n")
		if role != tc.role || policy != tc.policy {
			t.Errorf("--set %q: Pod Role and RoleBinding %v, policy and binding %v; want %v, %v", tc.set, role, policy, tc.role, tc.policy)
		}
		podGet := strings.Contains(out, "- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get]\n")
		if podGet != tc.podGet {
			t.Errorf("--set %q: get on Pods in the Role rendered = %v, want %v", tc.set, podGet, tc.podGet)
		}
		// One mention each: the leader label's Role, the policy's match, the get rule.
		want := 0
		for _, b := range []bool{tc.role, tc.policy, tc.podGet} {
			if b {
				want++
			}
		}
		if pods := strings.Count(out, "resources: [pods]"); pods != want {
			t.Errorf("--set %q: %d mentions of Pods rendered, want %d", tc.set, pods, want)
		}
	}
}

// podClient is a client authenticated as ServiceAccount ns/sa. kubectl
// patch would not do: it reads the Pod first, and the leader label's Role
// grants no get.
func podClient(t *testing.T, ns, sa string) kubernetes.Interface {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", cp.TokenKubeconfig(t, ns, sa))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// createPod creates, as the admin, a Pod object with these labels and
// annotations.
func createPod(t *testing.T, ns, name string, labels, annotations map[string]string) {
	t.Helper()
	pod := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}}},
	}
	manifest, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	cp.MustKubectl(t, string(manifest), "create", "-f", "-")
}

// checkLeaderLabelPolicy: as ServiceAccount ns/sa, patches that set or
// remove the label key=true and the annotation leaderOf, on its own Pod or
// another one, are accepted; patches that change anything else are refused
// by the admission policy. The admin is not restricted.
func checkLeaderLabelPolicy(t *testing.T, ns, sa, key string) {
	t.Helper()
	createPod(t, ns, "own", map[string]string{"app": "x", "tier": "a"}, map[string]string{"note": "a"})
	createPod(t, ns, "stale", map[string]string{"app": "x", key: "true"}, map[string]string{leaderOf: ns + "/lease"})
	client := podClient(t, ns, sa)
	ctx := context.Background()
	patch := func(pod string, metadata any) error {
		body, err := json.Marshal(map[string]any{"metadata": metadata})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	}
	refusedByPolicy := func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
	}

	// A new policy takes effect once the API server has loaded it.
	deadline := time.Now().Add(30 * time.Second)
	for !refusedByPolicy(patch("own", map[string]any{"labels": map[string]any{key: "yes"}})) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s the API server still accepts %s=yes from %s: the policy is not in effect or lets that through", key, sa)
		}
		time.Sleep(200 * time.Millisecond)
	}

	set := map[string]any{"labels": map[string]any{key: "true"}, "annotations": map[string]any{leaderOf: ns + "/lease"}}
	unset := map[string]any{"labels": map[string]any{key: nil}, "annotations": map[string]any{leaderOf: nil}}
	if err := patch("own", set); err != nil {
		t.Errorf("setting the label and annotation on its own Pod: %v", err)
	}
	leaders, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: key + "=true"})
	if err != nil {
		t.Errorf("listing the labelled Pods: %v", err)
	} else if names := podNames(leaders.Items); !slices.Equal(names, []string{"own", "stale"}) {
		t.Errorf("Pods labelled %s=true: %v, want [own stale]", key, names)
	}
	if err := patch("stale", unset); err != nil {
		t.Errorf("removing a previous leader's label and annotation: %v", err)
	}
	if err := patch("own", unset); err != nil {
		t.Errorf("removing the label and annotation from its own Pod: %v", err)
	}
	for _, name := range []string{"own", "stale"} {
		var pod corev1.Pod
		if err := json.Unmarshal([]byte(cp.MustKubectl(t, "", "get", "pod", name, "-n", ns, "-o", "json")), &pod); err != nil {
			t.Fatal(err)
		}
		if _, ok := pod.Labels[key]; ok {
			t.Errorf("Pod %s still has the label %s: %v", name, key, pod.Labels)
		}
		if _, ok := pod.Annotations[leaderOf]; ok {
			t.Errorf("Pod %s still has the annotation %s: %v", name, leaderOf, pod.Annotations)
		}
	}

	for _, refused := range []struct {
		what     string
		metadata any
	}{
		{"changing another label", map[string]any{"labels": map[string]any{"tier": "b"}}},
		{"removing another label", map[string]any{"labels": map[string]any{"app": nil}}},
		{"adding another label with the leader label", map[string]any{"labels": map[string]any{key: "true", "extra": "1"}}},
		{"setting the leader label to another value", map[string]any{"labels": map[string]any{key: "false"}}},
		{"adding another annotation", map[string]any{"annotations": map[string]any{"other": "x"}}},
		{"changing another annotation", map[string]any{"annotations": map[string]any{"note": "b"}}},
		{"adding a finalizer", map[string]any{"finalizers": []string{"example.com/hold"}}},
	} {
		if err := patch("own", refused.metadata); !refusedByPolicy(err) {
			t.Errorf("%s as %s: %v, want a refusal by the admission policy", refused.what, sa, err)
		}
	}
	image := []byte(`{"spec":{"containers":[{"name":"app","image":"registry.example.com/other:1"}]}}`)
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, "own", types.StrategicMergePatchType, image, metav1.PatchOptions{}); !refusedByPolicy(err) {
		t.Errorf("changing a container image as %s: %v, want a refusal by the admission policy", sa, err)
	}

	// Anyone else's updates are not the policy's business.
	cp.MustKubectl(t, "", "label", "pod", "own", "-n", ns, "tier=admin", "--overwrite")
	cp.MustKubectl(t, "", "set", "image", "pod/own", "-n", ns, "app=registry.example.com/app:2")
}

func podNames(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}
