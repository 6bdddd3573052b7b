// Package sidecars runs real leader-election processes for Go tests: baton
// sidecars and client-go's LeaderElector (tests/interop/cmd/goelector), each
// on free loopback ports against a Lease of the real control plane, observed
// through GET /leader the way an application would. It also waits for a
// single leader and watches that there is never more than one, and runs
// readers (Recorder) whose answers Check judges against the promises they
// carry. Tests use the testing.TB helpers (Sidecar, GoElector); programs
// such as bench/chaos use Start, which returns errors instead.
package sidecars

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"baton/tests/internal/cptest"
)

// The short durations every Member runs on unless its Election says
// otherwise, so that expiries and handovers take seconds.
const (
	LeaseDuration = 3 * time.Second         // --lease-duration
	RenewDeadline = 1500 * time.Millisecond // --renew-deadline
	RetryPeriod   = 250 * time.Millisecond  // --retry-period
)

// Durations are the timing flags of an election, which baton and client-go's
// elector both take.
type Durations struct {
	Lease time.Duration // --lease-duration
	Renew time.Duration // --renew-deadline
	Retry time.Duration // --retry-period
}

// Short is LeaseDuration, RenewDeadline and RetryPeriod: what members run on
// when their Election names no Durations.
var Short = Durations{LeaseDuration, RenewDeadline, RetryPeriod}

// Defaults are baton's flag defaults, which are also client-go's usual ones.
var Defaults = Durations{15 * time.Second, 10 * time.Second, 2 * time.Second}

func (d Durations) String() string {
	return fmt.Sprintf("lease %v, renew deadline %v, retry period %v", d.Lease, d.Renew, d.Retry)
}

// Election is the Lease members campaign for, the credentials they use, and
// the durations they campaign with.
type Election struct {
	Kubeconfig string    // the kubeconfig members authenticate with
	Namespace  string    // the Lease's namespace
	Lease      string    // the Lease's name
	Durations  Durations // zero: Short
}

// Timing is el.Durations, or Short when el names none.
func (el Election) Timing() Durations {
	if el.Durations == (Durations{}) {
		return Short
	}
	return el.Durations
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

// State is what GET /leader answers (the fields the tests read). A
// client-go elector answers only isLeader, identity, holderIdentity and
// fencingToken.
type State struct {
	IsLeader       bool   `json:"isLeader"`
	Identity       string `json:"identity"`
	HolderIdentity string `json:"holderIdentity"`
	FencingToken   int64  `json:"fencingToken"`
	ValidFor       string `json:"validFor"`
	// CLOCK_BOOTTIME deadline of a leader answer's promise, as printed
	// ("86523.118402311s"): what an acknowledgement echoes.
	ValidUntilBoottime string `json:"validUntilBoottime"`
	SteppingDown       bool   `json:"steppingDown"`
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

var goElector struct {
	once sync.Once
	bin  string
	err  error
}

// BuildGoElector is GoElectorBinary returning an error. It builds once per
// process.
func BuildGoElector() (string, error) {
	goElector.once.Do(func() {
		bin := filepath.Join(cptest.Root(), "build", "controlplane", "bin", "goelector")
		build := exec.Command("go", "build", "-o", bin, "./interop/cmd/goelector")
		build.Dir = filepath.Join(cptest.Root(), "tests")
		if out, err := build.CombinedOutput(); err != nil {
			goElector.err = fmt.Errorf("building goelector: %v: %s", err, out)
			return
		}
		goElector.bin = bin
	})
	return goElector.bin, goElector.err
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
	el, d := spec.Election, spec.Election.Timing()
	args := []string{
		"--kubeconfig=" + el.Kubeconfig, "--lease-name=" + el.Lease, "--lease-namespace=" + el.Namespace,
		"--identity=" + m.Name, "--http-addr=" + m.HTTPAddr,
		"--lease-duration=" + d.Lease.String(), "--renew-deadline=" + d.Renew.String(),
		"--retry-period=" + d.Retry.String()}
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
func (m *Member) State() (State, error) { return m.StateAs(ClientID) }

// AnonymousState asks m GET /leader without a client_id: a promise only time
// ends.
func (m *Member) AnonymousState() (State, error) { return m.StateAs("") }

// StateAs asks m GET /leader as client (anonymously if client is "").
func (m *Member) StateAs(client string) (State, error) {
	if client == "" {
		return m.state("/leader")
	}
	return m.state("/leader?client_id=" + url.QueryEscape(client))
}

// Acknowledge tells m that ClientID has stopped acting on term token (POST
// /leader/ack), the step-down handshake's answer, voiding every promise of
// the term to ClientID so far.
func (m *Member) Acknowledge(token int64) error {
	_, err := m.AcknowledgeAs(ClientID, token, "")
	return err
}

// AcknowledgeAs tells m that client has stopped acting on term token up to
// validUntil, the validUntilBoottime of the last leader answer it acted on,
// echoed as printed (POST /leader/ack; without valid_until_boottime when
// validUntil is ""). It returns what the sidecar answered: whether that
// settled client for the term.
func (m *Member) AcknowledgeAs(client string, token int64, validUntil string) (bool, error) {
	q := url.Values{"client_id": {client}, "fencing_token": {strconv.FormatInt(token, 10)}}
	if validUntil != "" {
		q.Set("valid_until_boottime", validUntil)
	}
	var body struct {
		Acknowledged bool `json:"acknowledged"`
	}
	err := m.post("/leader/ack?"+q.Encode(), &body)
	return body.Acknowledged, err
}

// Resign asks m to stop leading (POST /resign): it answers not leader at
// once and releases the Lease once the promises of the term are settled.
func (m *Member) Resign() error { return m.post("/resign", nil) }

// post sends POST path to m's HTTP API and decodes the JSON answer into
// into, unless it is nil.
func (m *Member) post(path string, into any) error {
	resp, err := httpClient.Post("http://"+m.HTTPAddr+path, "text/plain", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", path, resp.Status)
	}
	if into == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(into)
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
