// Package sidecars runs real leader-election processes for Go tests: baton
// sidecars and client-go's LeaderElector (tests/interop/cmd/goelector), each
// on free loopback ports against a Lease of the real control plane, observed
// through GET /leader the way an application would. It also waits for a
// single leader and watches that there is never more than one.
package sidecars

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"baton/tests/internal/cptest"
)

// The short durations every Member runs on, so that expiries and handovers
// take seconds.
const (
	LeaseDuration = 3 * time.Second         // --lease-duration
	RenewDeadline = 1500 * time.Millisecond // --renew-deadline
	RetryPeriod   = 250 * time.Millisecond  // --retry-period
)

// Election is the Lease members campaign for and the credentials they use.
type Election struct {
	Kubeconfig string // the kubeconfig members authenticate with
	Namespace  string // the Lease's namespace
	Lease      string // the Lease's name
}

// Member is one running process campaigning for a Lease: a baton sidecar or
// a client-go elector.
type Member struct {
	Name     string // also its holder identity
	HTTPAddr string // where it answers GET /leader
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

// BatonBinary is build/bin/baton, or $BATON_BIN/baton when CTest or the
// caller points elsewhere; it fails t if the binary is missing.
func BatonBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(cptest.Root(), "build", "bin", "baton")
	if dir := os.Getenv("BATON_BIN"); dir != "" {
		bin = filepath.Join(dir, "baton")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the baton binary is missing (%v): build it first (README, Building)", err)
	}
	return bin
}

// GoElectorBinary builds tests/interop/cmd/goelector and returns its path.
func GoElectorBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(cptest.Root(), "build", "controlplane", "bin", "goelector")
	build := exec.Command("go", "build", "-o", bin, "./interop/cmd/goelector")
	build.Dir = filepath.Join(cptest.Root(), "tests")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building goelector: %v: %s", err, out)
	}
	return bin
}

// Sidecar starts a baton sidecar named name campaigning in el.
func Sidecar(t testing.TB, el Election, name string) *Member {
	t.Helper()
	return start(t, el, BatonBinary(t), name, "--grpc-addr="+freeAddr(t))
}

// GoElector starts a client-go LeaderElector named name campaigning in el.
func GoElector(t testing.TB, el Election, name string) *Member {
	t.Helper()
	return start(t, el, GoElectorBinary(t), name)
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs binary with args and the flags both kinds of member share, kills
// it when the test ends (printing its log if the test failed), and waits
// until it answers GET /leader.
func start(t testing.TB, el Election, binary, name string, args ...string) *Member {
	t.Helper()
	m := &Member{Name: name, HTTPAddr: freeAddr(t), done: make(chan struct{}),
		logPath: filepath.Join(t.TempDir(), name+".log")}
	args = append(args,
		"--kubeconfig="+el.Kubeconfig, "--lease-name="+el.Lease, "--lease-namespace="+el.Namespace,
		"--identity="+m.Name, "--http-addr="+m.HTTPAddr,
		"--lease-duration="+LeaseDuration.String(), "--renew-deadline="+RenewDeadline.String(),
		"--retry-period="+RetryPeriod.String())
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
		m.Signal(syscall.SIGCONT)
		m.Signal(syscall.SIGKILL)
		<-m.done
		if t.Failed() {
			t.Logf("--- log of %s:\n%s", m.Name, m.Log())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := m.State(); err == nil {
			return m
		}
		select {
		case <-m.done:
			t.Fatalf("%s exited at start: %v", m.Name, m.cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%s does not answer on %s", m.Name, m.HTTPAddr)
	return nil
}

var httpClient = &http.Client{Timeout: 500 * time.Millisecond}

// Get sends GET path to m's HTTP API, with a 500ms timeout.
func (m *Member) Get(path string) (*http.Response, error) {
	return httpClient.Get("http://" + m.HTTPAddr + path)
}

// State asks m GET /leader.
func (m *Member) State() (State, error) {
	var s State
	resp, err := m.Get("/leader")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET /leader: %s", resp.Status)
	}
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// Signal sends sig to m's process.
func (m *Member) Signal(sig syscall.Signal) { _ = m.cmd.Process.Signal(sig) }

// Done is closed once m's process has exited.
func (m *Member) Done() <-chan struct{} { return m.done }

func (m *Member) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// Log is what m has written to stdout and stderr so far.
func (m *Member) Log() string {
	b, _ := os.ReadFile(m.logPath)
	return string(b)
}

// CheckExitAfterSIGTERM fails t unless m, sent SIGTERM, exits 0 within 5s.
func CheckExitAfterSIGTERM(t testing.TB, m *Member) {
	t.Helper()
	select {
	case <-m.done:
		if code := m.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%s exited %d after SIGTERM, want 0", m.Name, code)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("%s still running 5s after SIGTERM", m.Name)
	}
}
