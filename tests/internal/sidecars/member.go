// Package sidecars runs real leader-election processes for Go tests: baton
// sidecars and client-go's LeaderElector (tests/interop/cmd/goelector), each
// on free loopback ports against a Lease of the real control plane, observed
// through GET /leader the way an application would. It also waits for a
// single leader and watches that there is never more than one. Tests use the
// testing.TB helpers (Sidecar, GoElector); programs such as bench/chaos use
// Start, which returns errors instead.
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

// Kind says which program a Member runs.
type Kind int

const (
	Baton    Kind = iota // a baton sidecar (build/bin/baton)
	ClientGo             // client-go's LeaderElector (tests/interop/cmd/goelector)
)

// Member is one running process campaigning for a Lease: a baton sidecar or
// a client-go elector.
type Member struct {
	Name     string // also its holder identity
	Kind     Kind
	HTTPAddr string // where it answers GET /leader
	GRPCAddr string // where a baton sidecar serves gRPC; empty for ClientGo
	cmd      *exec.Cmd
	logPath  string
	done     chan struct{}
}

// Spec says what Start runs.
type Spec struct {
	Kind     Kind
	Binary   string // BatonBinaryPath or BuildGoElector
	Name     string // holder identity
	Election Election
	LogDir   string // the process writes LogDir/Name.log
	// A baton subcommand before every flag ("run"); empty for the sidecar.
	Subcommand string
	Args       []string // more flags, after the common ones
	Env        []string // more environment ("KEY=value"), after the test's own
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
	bin, err := BatonBinaryPath()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// BatonBinaryPath is BatonBinary returning an error.
func BatonBinaryPath() (string, error) {
	bin := filepath.Join(cptest.Root(), "build", "bin", "baton")
	if dir := os.Getenv("BATON_BIN"); dir != "" {
		bin = filepath.Join(dir, "baton")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("the baton binary is missing (%v): build it first (README, Building)", err)
	}
	return bin, nil
}

// GoElectorBinary builds tests/interop/cmd/goelector and returns its path.
func GoElectorBinary(t testing.TB) string {
	t.Helper()
	bin, err := BuildGoElector()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// BuildGoElector is GoElectorBinary returning an error.
func BuildGoElector() (string, error) {
	bin := filepath.Join(cptest.Root(), "build", "controlplane", "bin", "goelector")
	build := exec.Command("go", "build", "-o", bin, "./interop/cmd/goelector")
	build.Dir = filepath.Join(cptest.Root(), "tests")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building goelector: %v: %s", err, out)
	}
	return bin, nil
}

// Sidecar starts a baton sidecar named name campaigning in el.
func Sidecar(t testing.TB, el Election, name string) *Member {
	t.Helper()
	return StartInTest(t, Spec{Kind: Baton, Binary: BatonBinary(t), Name: name, Election: el})
}

// GoElector starts a client-go LeaderElector named name campaigning in el.
func GoElector(t testing.TB, el Election, name string) *Member {
	t.Helper()
	return StartInTest(t, Spec{Kind: ClientGo, Binary: GoElectorBinary(t), Name: name, Election: el})
}

// FreeAddr is a 127.0.0.1 address with a port nobody listened on a moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// StartInTest is Start for a test: the log goes to a temporary directory
// of t's, a failure to start fails t, and the process is killed when the
// test ends, its log printed if the test failed.
func StartInTest(t testing.TB, spec Spec) *Member {
	t.Helper()
	spec.LogDir = t.TempDir()
	m, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Kill()
		if t.Failed() {
			t.Logf("--- log of %s:\n%s", m.Name, m.Log())
		}
	})
	return m
}

// Start runs spec.Binary with the flags both kinds of member share and
// spec.Args, and waits (at most 10s) until it answers GET /leader. The
// process gets SIGKILL if the calling process dies; Kill ends it earlier.
func Start(spec Spec) (*Member, error) {
	m := &Member{Name: spec.Name, Kind: spec.Kind, done: make(chan struct{}),
		logPath: filepath.Join(spec.LogDir, spec.Name+".log")}
	var err error
	if m.HTTPAddr, err = FreeAddr(); err != nil {
		return nil, err
	}
	el := spec.Election
	args := []string{
		"--kubeconfig=" + el.Kubeconfig, "--lease-name=" + el.Lease, "--lease-namespace=" + el.Namespace,
		"--identity=" + m.Name, "--http-addr=" + m.HTTPAddr,
		"--lease-duration=" + LeaseDuration.String(), "--renew-deadline=" + RenewDeadline.String(),
		"--retry-period=" + RetryPeriod.String()}
	if spec.Kind == Baton {
		if m.GRPCAddr, err = FreeAddr(); err != nil {
			return nil, err
		}
		args = append(args, "--grpc-addr="+m.GRPCAddr)
	}
	if spec.Subcommand != "" {
		args = append([]string{spec.Subcommand}, args...)
	}
	logFile, err := os.Create(m.logPath)
	if err != nil {
		return nil, err
	}
	m.cmd = exec.Command(spec.Binary, append(args, spec.Args...)...)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	if len(spec.Env) > 0 {
		m.cmd.Env = append(os.Environ(), spec.Env...)
	}
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		_ = m.cmd.Wait()
		logFile.Close()
		close(m.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := m.State(); err == nil {
			return m, nil
		}
		select {
		case <-m.done:
			return nil, fmt.Errorf("%s exited at start: %v: %s", m.Name, m.cmd.ProcessState, m.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
	m.Kill()
	return nil, fmt.Errorf("%s does not answer on %s: %s", m.Name, m.HTTPAddr, m.Log())
}

// Kill ends m's process with SIGKILL (after SIGCONT, in case it was
// stopped) and waits for it to exit.
func (m *Member) Kill() {
	m.Signal(syscall.SIGCONT)
	m.Signal(syscall.SIGKILL)
	<-m.done
}

var httpClient = &http.Client{Timeout: 500 * time.Millisecond}

// Get sends GET path to m's HTTP API, with a 500ms timeout.
func (m *Member) Get(path string) (*http.Response, error) {
	return httpClient.Get("http://" + m.HTTPAddr + path)
}

// ClientID is the client_id the tests ask baton sidecars with, as an
// application's client would: their leader answers are promises the tests
// can acknowledge (Acknowledge) so a graceful handover need not wait for them
// to lapse.
const ClientID = "baton-tests"

// State asks m GET /leader as ClientID.
func (m *Member) State() (State, error) {
	return m.state("/leader?client_id=" + ClientID)
}

// AnonymousState asks m GET /leader without a client_id: a promise only time
// ends.
func (m *Member) AnonymousState() (State, error) { return m.state("/leader") }

// Acknowledge tells m that ClientID has stopped acting on term token (POST
// /leader/ack), the step-down handshake's answer.
func (m *Member) Acknowledge(token int64) error {
	resp, err := httpClient.Post(fmt.Sprintf("http://%s/leader/ack?client_id=%s&fencing_token=%d",
		m.HTTPAddr, ClientID, token), "text/plain", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /leader/ack: %s", resp.Status)
	}
	return nil
}

// AcknowledgeOnceSteppedDown is what a cooperating application does on a
// step-down: it waits (at most 5s) until m no longer says it leads — its
// leader work would stop there — then acknowledges term token.
func (m *Member) AcknowledgeOnceSteppedDown(token int64) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if s, err := m.State(); err == nil && !s.IsLeader {
			_ = m.Acknowledge(token)
			return
		}
	}
}

func (m *Member) state(path string) (State, error) {
	var s State
	resp, err := m.Get(path)
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

// ExitCode is the exit code of m's process once Done is closed (-1 if a
// signal ended it).
func (m *Member) ExitCode() int {
	<-m.done
	return m.cmd.ProcessState.ExitCode()
}

// Pid is m's process id.
func (m *Member) Pid() int { return m.cmd.Process.Pid }

// Exited says whether m's process has exited.
func (m *Member) Exited() bool {
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
