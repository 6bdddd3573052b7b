// Harness for end-to-end tests: real baton processes (and client-go electors)
// against the real control plane, observed through their HTTP API the way an
// application would.
package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"baton/tests/internal/cptest"
)

var cp cptest.ControlPlane

func TestMain(m *testing.M) { os.Exit(cptest.Main(m, &cp)) }

// Short durations, as the issue suggests: lease 2s / renew 1.5s / retry 250ms.
const (
	leaseDuration = 2 * time.Second
	renewDeadline = 1500 * time.Millisecond
	retryPeriod   = 250 * time.Millisecond
)

// leaseRole grants what deploy/ grants a sidecar: get, create, update and
// watch on Leases. minimalRole drops watch (baton must then poll).
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

// env is one test's namespace and the kubeconfig of a ServiceAccount bound
// to the Role it asked for.
type env struct {
	t          *testing.T
	ns         string
	kubeconfig string
	lease      string
}

func newEnv(t *testing.T, verbs string) *env {
	ns := cp.Namespace(t, "e2e")
	cp.MustKubectl(t, fmt.Sprintf(leaseRole, ns, verbs), "apply", "-f", "-")
	return &env{t: t, ns: ns, kubeconfig: cp.TokenKubeconfig(t, ns, "baton"), lease: "app"}
}

func withWatch(t *testing.T) *env { return newEnv(t, "get, create, update, watch") }

// member is one process campaigning for the Lease: a baton sidecar or a
// client-go elector.
type member struct {
	name     string
	identity string
	httpAddr string
	cmd      *exec.Cmd
	logPath  string
	done     chan struct{}
}

// State is what GET /leader answers (the fields the tests read).
type State struct {
	IsLeader       bool   `json:"isLeader"`
	Identity       string `json:"identity"`
	HolderIdentity string `json:"holderIdentity"`
	FencingToken   int64  `json:"fencingToken"`
	ValidFor       string `json:"validFor"`
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func batonBinary() string {
	if b := os.Getenv("BATON_BIN"); b != "" {
		return filepath.Join(b, "baton")
	}
	return filepath.Join(cptest.Root(), "build", "bin", "baton")
}

func goElectorBinary(t *testing.T) string {
	bin := filepath.Join(cptest.Root(), "build", "controlplane", "bin", "goelector")
	build := exec.Command("go", "build", "-o", bin, "./interop/cmd/goelector")
	build.Dir = filepath.Join(cptest.Root(), "tests")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building goelector: %v: %s", err, out)
	}
	return bin
}

func (e *env) start(name, binary string, args []string) *member {
	t := e.t
	m := &member{name: name, identity: name, httpAddr: freeAddr(t), done: make(chan struct{}),
		logPath: filepath.Join(t.TempDir(), name+".log")}
	args = append(args,
		"--kubeconfig="+e.kubeconfig, "--lease-name="+e.lease, "--lease-namespace="+e.ns,
		"--identity="+m.identity, "--http-addr="+m.httpAddr,
		"--lease-duration="+leaseDuration.String(), "--renew-deadline="+renewDeadline.String(),
		"--retry-period="+retryPeriod.String())
	logFile, err := os.Create(m.logPath)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(binary, args...)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = m.cmd.Wait()
		logFile.Close()
		close(m.done)
	}()
	t.Cleanup(func() {
		m.signal(syscall.SIGCONT)
		m.signal(syscall.SIGKILL)
		<-m.done
		if t.Failed() {
			b, _ := os.ReadFile(m.logPath)
			t.Logf("--- log of %s:\n%s", m.name, b)
		}
	})
	e.waitAnswering(m)
	return m
}

// sidecar starts a baton sidecar named name.
func (e *env) sidecar(name string, extra ...string) *member {
	return e.start(name, batonBinary(), append([]string{"--grpc-addr=" + freeAddr(e.t)}, extra...))
}

// goElector starts a client-go LeaderElector named name.
func (e *env) goElector(name string) *member {
	return e.start(name, goElectorBinary(e.t), nil)
}

func (e *env) waitAnswering(m *member) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := m.state(); err == nil {
			return
		}
		select {
		case <-m.done:
			e.t.Fatalf("%s exited at start: %v", m.name, m.cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
	}
	e.t.Fatalf("%s does not answer on %s", m.name, m.httpAddr)
}

var httpClient = &http.Client{Timeout: 500 * time.Millisecond}

func (m *member) state() (State, error) {
	var s State
	resp, err := httpClient.Get("http://" + m.httpAddr + "/leader")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET /leader: %s", resp.Status)
	}
	return s, jsonDecode(resp, &s)
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

func (m *member) signal(sig syscall.Signal) { _ = m.cmd.Process.Signal(sig) }

func (m *member) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// sample asks every live member at once; it returns their answers (nil for
// members that did not answer).
func sample(members []*member) []*State {
	out := make([]*State, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		if m.exited() {
			continue
		}
		wg.Add(1)
		go func(i int, m *member) {
			defer wg.Done()
			if s, err := m.state(); err == nil {
				out[i] = &s
			}
		}(i, m)
	}
	wg.Wait()
	return out
}

// safety samples members continuously until stopped and records any round in
// which two of them claimed leadership at once, and any leader whose token
// was lower than an earlier leader's.
type safety struct {
	t       *testing.T
	stop    chan struct{}
	stopped chan struct{}
	mu      sync.Mutex
	members []*member
	rounds  int
	errs    []string
}

func watchSafety(t *testing.T, members []*member) *safety {
	s := &safety{t: t, stop: make(chan struct{}), stopped: make(chan struct{}), members: members}
	go func() {
		defer close(s.stopped)
		lastToken := map[string]int64{}
		var highest int64 = -1
		var highestBy string
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			s.mu.Lock()
			members := s.members
			s.mu.Unlock()
			states := sample(members)
			var leaders []string
			for i, st := range states {
				if st == nil || !st.IsLeader {
					continue
				}
				leaders = append(leaders, members[i].name)
				if prev, ok := lastToken[members[i].name]; !ok || prev != st.FencingToken {
					if st.FencingToken < highest || (st.FencingToken == highest && highestBy != members[i].name) {
						s.record(fmt.Sprintf("%s leads with token %d, not above %s's %d", members[i].name, st.FencingToken, highestBy, highest))
					}
					if st.FencingToken > highest {
						highest, highestBy = st.FencingToken, members[i].name
					}
					lastToken[members[i].name] = st.FencingToken
				}
			}
			if len(leaders) > 1 {
				s.record("two leaders at once: " + strings.Join(leaders, ", "))
			}
			s.mu.Lock()
			s.rounds++
			s.mu.Unlock()
		}
	}()
	return s
}

// watch replaces the members being sampled (after one was replaced).
func (s *safety) watch(members []*member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members = members
}

func (s *safety) record(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, time.Now().Format("15:04:05.000")+" "+msg)
}

// check stops sampling and fails the test on any violation.
func (s *safety) check() {
	close(s.stop)
	<-s.stopped
	s.t.Helper()
	s.t.Logf("safety: %d sampling rounds", s.rounds)
	for _, e := range s.errs {
		s.t.Error(e)
	}
}

// waitLeader waits until exactly one of members reports isLeader and returns
// it with its state.
func waitLeader(t *testing.T, members []*member, timeout time.Duration) (*member, State) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		states := sample(members)
		var leader *member
		var ls State
		n := 0
		for i, st := range states {
			if st != nil && st.IsLeader {
				leader, ls = members[i], *st
				n++
			}
		}
		if n == 1 {
			return leader, ls
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no single leader among %d members within %v", len(members), timeout)
	return nil, State{}
}

// others is members without m.
func others(members []*member, m *member) []*member {
	var out []*member
	for _, x := range members {
		if x != m {
			out = append(out, x)
		}
	}
	return out
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
	out := cp.MustKubectl(e.t, "", "get", "lease", e.lease, "-n", e.ns, "-o", "json")
	var l Lease
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		e.t.Fatal(err)
	}
	return l
}
