// The manifests in deploy/ — kustomize base and examples, the rendered Helm
// chart — as the real API server accepts and stores them, and the RBAC they
// grant, asked as the ServiceAccount itself.
package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// sidecarMode says where a workload runs baton.
type sidecarMode int

const (
	native  sidecarMode = iota // an init container with restartPolicy: Always
	classic                    // a second entry in containers
)

// workload is what a test expects of one applied Deployment.
type workload struct {
	name            string
	lease           string
	mode            sidecarMode
	leaderReadiness bool
	// --native-sidecar: a native sidecar that reads its Pod on SIGTERM. Never
	// for a classic one, which stops together with the application.
	nativeSidecar bool
	flags         []string // more flags the sidecar must have; --leader-label only if listed
}

func getDeployment(t *testing.T, ns, name string) appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	out := cp.MustKubectl(t, "", "get", "deployment", name, "-n", ns, "-o", "json")
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// checkWorkload checks the Deployment as the API server stored it: the
// sidecar's placement, its flags, environment, probes, resources and
// security settings.
func checkWorkload(t *testing.T, ns string, w workload) {
	t.Helper()
	d := getDeployment(t, ns, w.name)
	pod := d.Spec.Template.Spec
	var baton *corev1.Container
	switch w.mode {
	case native:
		baton = findContainer(pod.InitContainers, "baton")
		if baton == nil {
			t.Fatalf("no init container named baton in %v", pod.InitContainers)
		}
		if baton.RestartPolicy == nil || *baton.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			t.Errorf("native sidecar: restartPolicy %v, want Always", baton.RestartPolicy)
		}
		if baton.StartupProbe == nil || baton.StartupProbe.HTTPGet == nil || baton.StartupProbe.HTTPGet.Path != "/healthz" {
			t.Errorf("native sidecar: startupProbe %+v, want GET /healthz (the application starts once baton answers)", baton.StartupProbe)
		}
	case classic:
		if len(pod.InitContainers) != 0 {
			t.Errorf("classic sidecar: unexpected init containers %v", pod.InitContainers)
		}
		baton = findContainer(pod.Containers, "baton")
		if baton == nil {
			t.Fatalf("no container named baton in %v", pod.Containers)
		}
	}

	for _, want := range append([]string{"--lease-name=" + w.lease, "--metrics-addr=0.0.0.0:9090",
		"--http-addr=127.0.0.1:4040", "--grpc-addr=127.0.0.1:4041"}, w.flags...) {
		if !slices.Contains(baton.Args, want) {
			t.Errorf("baton args %v lack %s", baton.Args, want)
		}
	}
	isLeaderLabel := func(a string) bool { return strings.HasPrefix(a, "--leader-label") }
	if slices.ContainsFunc(baton.Args, isLeaderLabel) && !slices.ContainsFunc(w.flags, isLeaderLabel) {
		t.Errorf("baton args %v set --leader-label by default; the label must be opt-in", baton.Args)
	}
	isNativeSidecar := func(a string) bool { return strings.HasPrefix(a, "--native-sidecar") }
	switch {
	case w.mode == classic && slices.ContainsFunc(baton.Args, isNativeSidecar):
		t.Errorf("classic sidecar with args %v: --native-sidecar is for a sidecar the kubelet stops after the application", baton.Args)
	case w.nativeSidecar && !slices.Contains(baton.Args, "--native-sidecar"):
		t.Errorf("baton args %v lack --native-sidecar", baton.Args)
	case !w.nativeSidecar && slices.ContainsFunc(baton.Args, isNativeSidecar):
		t.Errorf("baton args %v set --native-sidecar; want it off here", baton.Args)
	}
	env := map[string]string{}
	for _, e := range baton.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	// The identity and the Lease's namespace; --native-sidecar reads the Pod
	// they name (and refuses to start without POD_NAME).
	if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("downward API env %v, want POD_NAME=metadata.name POD_NAMESPACE=metadata.namespace", env)
	}

	if p := baton.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "metrics" {
		t.Errorf("livenessProbe %+v, want GET /healthz on the metrics port", p)
	}
	if w.leaderReadiness {
		if p := baton.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz/leader" {
			t.Errorf("readinessProbe %+v, want GET /readyz/leader", p)
		}
		if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.String() != "100%" {
			t.Errorf("leader-only readiness without maxUnavailable: 100%%: %+v (the rollout would stall)", d.Spec.Strategy)
		}
	} else if baton.ReadinessProbe != nil {
		t.Errorf("readinessProbe %+v by default; leader-only readiness must be opt-in", baton.ReadinessProbe)
	}

	res := baton.Resources
	if res.Requests.Cpu().String() != "10m" || res.Requests.Memory().String() != "24Mi" ||
		res.Limits.Memory().String() != "64Mi" {
		t.Errorf("resources %v, want requests cpu 10m memory 24Mi, limits memory 64Mi", res)
	}
	if _, ok := res.Limits[corev1.ResourceCPU]; ok {
		t.Errorf("a CPU limit %v: throttling delays a leader's renews", res.Limits.Cpu())
	}

	for _, c := range append(slices.Clone(pod.Containers), pod.InitContainers...) {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
			sc.RunAsUser == nil || *sc.RunAsUser == 0 {
			t.Errorf("container %s: securityContext %+v, want non-root, read-only root, no privilege escalation, drop ALL", c.Name, sc)
		}
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil ||
		psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v, want runAsNonRoot and seccomp RuntimeDefault", psc)
	}
	// Release (--shutdown-grace: the renew deadline + 1s, 11s) then closing
	// the servers (11s again), after the application's own shutdown.
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 25 {
		t.Errorf("terminationGracePeriodSeconds %v, want at least 25 (2 × --shutdown-grace plus the application)", g)
	}
}

func TestKustomizeExamplesAreAcceptedByTheAPIServer(t *testing.T) {
	for _, tc := range []struct {
		dir string
		w   workload
	}{
		{"deploy/examples/native-sidecar", workload{name: "example-app", lease: "example-app", mode: native, nativeSidecar: true}},
		{"deploy/examples/classic-sidecar", workload{name: "example-app", lease: "example-app", mode: classic}},
		{"deploy/examples/leader-service", workload{name: "example-app", lease: "example-app", mode: native, nativeSidecar: true, leaderReadiness: true}},
	} {
		t.Run(tc.dir[strings.LastIndex(tc.dir, "/")+1:], func(t *testing.T) {
			t.Parallel() // a namespace each; the can-i checks take seconds
			ns := cp.Namespace(t, "kustomize")
			applyServerSide(t, kustomizeIn(t, tc.dir, ns, ""))
			checkWorkload(t, ns, tc.w)
			checkRoleNamesLease(t, ns, "baton", tc.w.lease)
			checkSidecarRBAC(t, ns, "baton", tc.w.lease, grants{events: true, podStatus: tc.w.nativeSidecar})
			if tc.w.leaderReadiness {
				cp.MustKubectl(t, "", "get", "service", "example-app-leader", "-n", ns)
			}
		})
	}
}

// TestRunExampleIsAcceptedByTheAPIServer: deploy/examples/run, the
// singleton command under `baton run`, as the API server stores it: baton
// is the container's process, its Lease is the one the Role names, and the
// grace period covers the stop grace plus the release and the servers.
func TestRunExampleIsAcceptedByTheAPIServer(t *testing.T) {
	ns := cp.Namespace(t, "kustomize")
	applyServerSide(t, kustomizeIn(t, "deploy/examples/run", ns, ""))
	d := getDeployment(t, ns, "singleton-job")
	pod := d.Spec.Template.Spec
	job := findContainer(pod.Containers, "job")
	if job == nil {
		t.Fatalf("no container job in %+v", pod.Containers)
	}
	if len(job.Args) == 0 || job.Args[0] != "run" || !slices.Contains(job.Args, "--") ||
		!slices.Contains(job.Args, "--lease-name=singleton-job") || !slices.Contains(job.Args, "--stop-grace=5s") {
		t.Errorf("args %q, want run --lease-name=singleton-job --stop-grace=5s ... -- CMD", job.Args)
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 27 {
		t.Errorf("terminationGracePeriodSeconds %v, want at least 27 (--stop-grace plus 2 × --shutdown-grace)", g)
	}
	checkRoleNamesLease(t, ns, "baton", "singleton-job")
}

// checkRoleNamesLease: the Role's resourceNames is the sidecar's --lease-name,
// or the sidecar would be refused its own Lease.
func checkRoleNamesLease(t *testing.T, ns, role, lease string) {
	t.Helper()
	names := cp.MustKubectl(t, "", "get", "role", role, "-n", ns, "-o", "jsonpath={.rules[0].resourceNames}")
	if names != fmt.Sprintf(`["%s"]`, lease) {
		t.Errorf("Role %s resourceNames %s, want [%q] (the sidecar's --lease-name)", role, names, lease)
	}
}

func TestHelmChartLints(t *testing.T) {
	for _, set := range []string{"", "sidecarMode=classic,leaderReadiness.enabled=true,rbac.create=false,serviceAccount.create=false,serviceAccount.name=mine",
		"leaderLabel.key=baton.dev/leader,events=false,logFormat=json,logLevel=warn,sseHeartbeat=500ms",
		"nativeSidecarShutdown=false", "sidecarMode=classic,nativeSidecarShutdown=true"} {
		args := []string{"lint", "--strict", repo("deploy", "helm", "baton")}
		if set != "" {
			args = append(args, "--set", set)
		}
		helm(t, args...)
	}
}

func TestHelmChartRendersAndIsAcceptedByTheAPIServer(t *testing.T) {
	defaults := []string{"--sse-heartbeat=15s", "--events=true", "--log-format=logfmt", "--log-level=info"}
	for _, tc := range []struct {
		name        string
		set         string
		w           workload
		leaderLabel string // the label the leader Service selects besides the chart's
	}{
		{"native", "", workload{mode: native, nativeSidecar: true, flags: defaults}, ""},
		{"classic-leader-readiness", "sidecarMode=classic,leaderReadiness.enabled=true", workload{mode: classic, leaderReadiness: true, flags: defaults}, ""},
		// nativeSidecarShutdown is for native sidecars only: a classic one never gets the flag.
		{"classic-native-sidecar-shutdown", "sidecarMode=classic,nativeSidecarShutdown=true", workload{mode: classic, flags: defaults}, ""},
		{"native-sidecar-shutdown-off", "nativeSidecarShutdown=false", workload{mode: native, flags: defaults}, ""},
		{"lease-name", "leaseName=my-lock", workload{mode: native, nativeSidecar: true, lease: "my-lock", flags: defaults}, ""},
		// The cluster-scoped policy is left out here; TestHelmChartLeaderLabelPolicy applies it.
		{"leader-label-logging-events",
			"leaderLabel.key=example.com/leader,leaderLabel.admissionPolicy.create=false,events=false,logFormat=json,logLevel=debug,sseHeartbeat=5s",
			workload{mode: native, nativeSidecar: true, flags: []string{"--leader-label=example.com/leader", "--events=false",
				"--log-format=json", "--log-level=debug", "--sse-heartbeat=5s"}}, "example.com/leader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := cp.Namespace(t, "helm")
			args := []string{"template", "rel", repo("deploy", "helm", "baton"), "--namespace", ns}
			if tc.set != "" {
				args = append(args, "--set", tc.set)
			}
			manifests := helm(t, args...)
			cp.MustKubectl(t, manifests, "apply", "--server-side", "--field-manager=baton-deploy-test", "-n", ns, "-f", "-")
			w := tc.w
			w.name = "rel-baton"
			if w.lease == "" {
				w.lease = "rel-baton"
			}
			checkWorkload(t, ns, w)
			checkRoleNamesLease(t, ns, "rel-baton", w.lease)
			if w.leaderReadiness || tc.leaderLabel != "" {
				checkLeaderServiceSelects(t, ns, "rel-baton-leader", tc.leaderLabel)
			}
		})
	}
}

// checkLeaderServiceSelects: the stored Service selects the chart's Pods,
// and with a leader label only those that carry it.
func checkLeaderServiceSelects(t *testing.T, ns, service, leaderLabel string) {
	t.Helper()
	var svc corev1.Service
	if err := json.Unmarshal([]byte(cp.MustKubectl(t, "", "get", "service", service, "-n", ns, "-o", "json")), &svc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"app.kubernetes.io/name": "baton", "app.kubernetes.io/instance": "rel"}
	if leaderLabel != "" {
		want[leaderLabel] = "true"
	}
	if !maps.Equal(svc.Spec.Selector, want) {
		t.Errorf("Service %s selects %v, want %v", service, svc.Spec.Selector, want)
	}
}

func TestHelmChartRefusesNativeSidecarsBefore129(t *testing.T) {
	cmd := []string{"template", "rel", repo("deploy", "helm", "baton"), "--kube-version", "1.28.0", "--set", "sidecarMode=classic"}
	helm(t, cmd...) // classic works on 1.28
	out, err := helmResult(t, "template", "rel", repo("deploy", "helm", "baton"), "--kube-version", "1.28.0")
	if err == nil || !strings.Contains(out, "sidecarMode=native needs Kubernetes >= 1.29") {
		t.Errorf("native sidecar on 1.28: err %v, output %q; want a refusal naming sidecarMode", err, out)
	}
}

func TestHelmChartSchemaRejectsMalformedValues(t *testing.T) {
	for _, set := range []string{
		"logFormat=text",
		"logLevel=trace",
		"sseHeartbeat=15",
		"events=yes",
		"nativeSidecarShutdown=yes",
		"leaderLabel.key=Baton.dev/leader", // upper-case prefix
		"leaderLabel.key=a/b/c",
		"leaderLabel.key=-leader",
		"leaderLabel.key=" + strings.Repeat("x", 64),
	} {
		out, err := helmResult(t, "template", "rel", repo("deploy", "helm", "baton"), "--set", set)
		if err == nil || !strings.Contains(out, "values don't meet the specifications of the schema") {
			t.Errorf("--set %s: err %v, output %q; want a schema refusal", set, err, out)
		}
	}
	for _, set := range []string{"leaderLabel.key=baton.dev/leader", "leaderLabel.key=leader", "leaderLabel.key=a.b-c/x_y.z"} {
		helm(t, "template", "rel", repo("deploy", "helm", "baton"), "--set", set)
	}
}

// canI asks the API server, as the holder of kubeconfig, whether it may do
// verb on resource in ns ("yes" or "no").
func canI(t *testing.T, kubeconfig, ns, verb, resource string) string {
	t.Helper()
	// can-i exits 1 for "no"; the answer is on stdout either way.
	out, _ := cp.KubectlAs(kubeconfig, "", "auth", "can-i", verb, resource, "-n", ns)
	return strings.TrimSpace(out)
}

// grants says which optional rules a deployment gives its ServiceAccount.
type grants struct {
	events      bool // create on events.k8s.io Events (--events, on by default)
	leaderLabel bool // list and patch on Pods (--leader-label)
	podStatus   bool // get on Pods (--native-sidecar)
}

// defaultGrants: what deploy/base grants, and any deployment unless told
// otherwise.
var defaultGrants = grants{events: true}

// yesIf is can-i's answer for a permission granted when granted is true.
func yesIf(granted bool) string {
	if granted {
		return "yes"
	}
	return "no"
}

// checkSidecarRBAC: exactly get/update/watch on the one Lease and create on
// Leases, plus what g names; nothing else, nowhere else. Where two grants
// touch Pods (a native sidecar's get, the leader label's list and patch),
// together they allow those three verbs and no other.
func checkSidecarRBAC(t *testing.T, ns, sa, lease string, g grants) {
	t.Helper()
	kubeconfig := cp.TokenKubeconfig(t, ns, sa)
	const leases = "leases.coordination.k8s.io"
	for _, c := range []struct{ verb, resource, want string }{
		{"create", "events.events.k8s.io", yesIf(g.events)},
		{"list", "pods", yesIf(g.leaderLabel)},
		{"patch", "pods", yesIf(g.leaderLabel)},
		{"patch", "pods/some-pod", yesIf(g.leaderLabel)},
		{"watch", "pods", "no"},
		{"update", "pods", "no"},
		{"delete", "pods", "no"},
		{"get", "events.events.k8s.io", "no"},
		{"get", leases + "/" + lease, "yes"},
		{"update", leases + "/" + lease, "yes"},
		{"watch", leases + "/" + lease, "yes"},
		{"create", leases, "yes"},
		{"delete", leases + "/" + lease, "no"},
		{"patch", leases + "/" + lease, "no"},
		{"list", leases, "no"},
		{"watch", leases, "no"}, // only the one Lease, by name
		{"get", leases + "/someone-elses", "no"},
		{"update", leases + "/someone-elses", "no"},
		{"deletecollection", leases, "no"},
		{"get", "configmaps", "no"},
		{"get", "secrets", "no"},
		{"create", "pods", "no"},
		{"get", "pods", yesIf(g.podStatus)},
		{"get", "pods/some-pod", yesIf(g.podStatus)},
	} {
		if got := canI(t, kubeconfig, ns, c.verb, c.resource); got != c.want {
			t.Errorf("as %s/%s: can-i %s %s = %q, want %q", ns, sa, c.verb, c.resource, got, c.want)
		}
	}
	for _, other := range []struct{ verb, resource string }{{"get", leases + "/" + lease}, {"patch", "pods"}, {"list", "pods"}, {"get", "pods"}} {
		if got := canI(t, kubeconfig, "kube-system", other.verb, other.resource); got != "no" {
			t.Errorf("as %s/%s: can-i %s %s in kube-system = %q, want no (a Role, not a ClusterRole)", ns, sa, other.verb, other.resource, got)
		}
	}
	// The token really is the ServiceAccount's: a request outside the Role is refused.
	if _, err := cp.KubectlAs(kubeconfig, "", "get", "leases", "-n", ns); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("listing leases as the ServiceAccount: got %v, want Forbidden", err)
	}
}

func TestKustomizeBaseGrantsExactlyWhatTheSidecarNeeds(t *testing.T) {
	ns := cp.Namespace(t, "rbac")
	applyServerSide(t, kustomizeIn(t, "deploy/base", ns, ""))
	checkSidecarRBAC(t, ns, "baton", "example-app", defaultGrants)
}

func TestKustomizeBaseLeaseNameIsPatchable(t *testing.T) {
	// What the base's kustomization.yaml tells users to write.
	ns := cp.Namespace(t, "rbac")
	patch := `patches:
- target: {kind: Role, name: baton}
  patch: |-
    - op: replace
      path: /rules/0/resourceNames/0
      value: my-lease
`
	applyServerSide(t, kustomizeIn(t, "deploy/base", ns, patch))
	checkSidecarRBAC(t, ns, "baton", "my-lease", defaultGrants)
}

func TestHelmChartRBACGrantsExactlyWhatTheSidecarNeeds(t *testing.T) {
	for _, tc := range []struct {
		name, set string
		g         grants
	}{
		{"default", "", grants{events: true, podStatus: true}},
		{"no-events", "events=false", grants{podStatus: true}},
		{"native-sidecar-shutdown-off", "nativeSidecarShutdown=false", defaultGrants},
		{"classic", "sidecarMode=classic", defaultGrants},
		// The policy is left out here: it is cluster-scoped, and
		// TestHelmChartLeaderLabelPolicy tests it.
		{"leader-label", "leaderLabel.key=baton.dev/leader,leaderLabel.admissionPolicy.create=false", grants{events: true, leaderLabel: true, podStatus: true}},
		{"leader-label-classic", "sidecarMode=classic,leaderLabel.key=baton.dev/leader,leaderLabel.admissionPolicy.create=false", grants{events: true, leaderLabel: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a namespace each; the can-i checks take seconds
			ns := cp.Namespace(t, "rbac")
			set := "leaseName=my-lock"
			if tc.set != "" {
				set += "," + tc.set
			}
			manifests := helm(t, "template", "rel", repo("deploy", "helm", "baton"), "--namespace", ns, "--set", set)
			cp.MustKubectl(t, manifests, "apply", "--server-side", "--field-manager=baton-deploy-test", "-n", ns, "-f", "-")
			checkSidecarRBAC(t, ns, "rel-baton", "my-lock", tc.g)
		})
	}
}
