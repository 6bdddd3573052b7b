package etcdfence_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/baton-sidecar/baton/clients/go/baton"
	"github.com/baton-sidecar/baton/clients/go/etcdfence"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The tests share one real etcd, the binary scripts/controlplane builds
// ($BATON_ETCD, else build/controlplane/bin/etcd), started by TestMain on
// free loopback ports with its data in a temporary directory, and killed at
// the end (or with this process). Each test has keys of its own.
var (
	client     *clientv3.Client
	skipReason string
)

func TestMain(m *testing.M) {
	os.Exit(runWithEtcd(m))
}

func runWithEtcd(m *testing.M) int {
	bin := os.Getenv("BATON_ETCD")
	if bin == "" {
		root, err := filepath.Abs("../../..")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		bin = filepath.Join(root, "build", "controlplane", "bin", "etcd")
		if _, err := os.Stat(bin); err != nil {
			// Named explicitly (as clients/test does), a missing binary fails.
			skipReason = fmt.Sprintf("no etcd at %s (scripts/controlplane build, or set BATON_ETCD)", bin)
			return m.Run()
		}
	}
	dir, err := os.MkdirTemp("", "baton-etcdfence-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	stop, endpoint, err := startEtcd(bin, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	client, err = clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer client.Close()
	return m.Run()
}

// startEtcd starts a one-member etcd with its data under dir and returns once
// it answers /health.
func startEtcd(bin, dir string) (stop func(), endpoint string, err error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, "", err
	}
	endpoint = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	logFile, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin,
		"--name=etcdfence-test",
		"--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls="+endpoint,
		"--advertise-client-urls="+endpoint,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=etcdfence-test="+peer,
		"--log-level=warn",
		"--unsafe-no-fsync", // test data is thrown away
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Killed with this process, however it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, "", fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-exited
		logFile.Close()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := (&http.Client{Timeout: time.Second}).Get(endpoint + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stop, endpoint, nil
			}
		}
		select {
		case <-exited:
		default:
			if time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
		}
		stop()
		out, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
		return nil, "", fmt.Errorf("etcd at %s did not become healthy: %s", endpoint, out)
	}
}

// freePorts asks the kernel for n unused loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

var keySeq atomic.Int32

// newKey returns a data key no other test uses.
func newKey(t *testing.T) string {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	return fmt.Sprintf("etcdfence-test/%s/%d", t.Name(), keySeq.Add(1))
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// revision reads decimal digits as a revision.
func revision(r string) baton.Revision {
	v, err := baton.ParseRevision(r)
	if err != nil {
		panic(err)
	}
	return v
}

// rev is the term of revision r (token 0).
func rev(r string) etcdfence.Term { return etcdfence.Term{Revision: revision(r)} }

// write writes value to key under term through f.
func write(t *testing.T, f etcdfence.Fence, key string, term etcdfence.Term, value string) error {
	t.Helper()
	_, err := f.Write(ctx(t), client, key, term, clientv3.OpPut(key, value))
	return err
}

// value returns key's value, or "<none>".
func value(t *testing.T, key string) string {
	t.Helper()
	resp, err := client.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "<none>"
	}
	return string(resp.Kvs[0].Value)
}

func highest(t *testing.T, f etcdfence.Fence, key string) string {
	t.Helper()
	h, ok, err := f.Highest(ctx(t), client, key)
	if err != nil || !ok {
		t.Fatalf("Highest(%q) = %q, %v, %v", key, h, ok, err)
	}
	return h
}

func mustStale(t *testing.T, err error) *etcdfence.StaleError {
	t.Helper()
	var stale *etcdfence.StaleError
	if !errors.As(err, &stale) {
		t.Fatalf("want a *StaleError, got %v", err)
	}
	return stale
}

func TestNewerRevisionIsAdmittedAndItsWriteLands(t *testing.T) {
	key := newKey(t)
	var f etcdfence.Fence
	if err := write(t, f, key, rev("100"), "a"); err != nil {
		t.Fatalf("first write: %v", err)
	}
	if err := write(t, f, key, rev("250"), "b"); err != nil {
		t.Fatalf("newer write: %v", err)
	}
	if got := value(t, key); got != "b" {
		t.Errorf("value = %q, want b", got)
	}
	if got := highest(t, f, key); got != "250" {
		t.Errorf("fence holds %s, want 250", got)
	}
	raw := value(t, f.FenceKey(key))
	if want := strings.Repeat("0", 36) + "250"; raw != want {
		t.Errorf("fence key holds %q, want %q", raw, want)
	}
}

func TestOlderRevisionIsRefusedAndNothingIsWritten(t *testing.T) {
	key, other, kept := newKey(t), newKey(t), newKey(t)
	var f etcdfence.Fence
	if err := write(t, f, key, rev("250"), "new"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx(t), kept, "kept"); err != nil {
		t.Fatal(err)
	}
	before, err := client.Get(ctx(t), "", clientv3.WithLastRev()...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(ctx(t), client, key, rev("100"),
		clientv3.OpPut(key, "stale"), clientv3.OpPut(other, "stale too"), clientv3.OpDelete(kept))
	stale := mustStale(t, err)
	if stale.Key != key || stale.Term != rev("100") || stale.Highest != "250" || stale.Order != etcdfence.ByRevision {
		t.Errorf("StaleError = %+v", stale)
	}
	var batonStale *baton.StaleRevisionError
	if !errors.As(err, &batonStale) || batonStale.Revision != revision("100") || batonStale.Highest != revision("250") {
		t.Errorf("errors.As(*baton.StaleRevisionError) = %+v", batonStale)
	}
	if got := value(t, key); got != "new" {
		t.Errorf("value = %q, want new", got)
	}
	if got := value(t, other); got != "<none>" {
		t.Errorf("the refused Txn's other put landed: %q", got)
	}
	if got := value(t, kept); got != "kept" {
		t.Errorf("the refused Txn's delete ran: %q", got)
	}
	if got := highest(t, f, key); got != "250" {
		t.Errorf("fence holds %s, want 250", got)
	}
	after, err := client.Get(ctx(t), "", clientv3.WithLastRev()...)
	if err != nil {
		t.Fatal(err)
	}
	if after.Header.Revision != before.Header.Revision {
		t.Errorf("etcd's revision moved from %d to %d: the refused Txn wrote", before.Header.Revision, after.Header.Revision)
	}
}

func TestEqualRevisionIsAdmitted(t *testing.T) {
	key := newKey(t)
	var f etcdfence.Fence
	for i, v := range []string{"first", "second"} {
		if err := write(t, f, key, rev("300"), v); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if got := value(t, key); got != "second" {
		t.Errorf("value = %q, want second", got)
	}
}

func TestKeysAreFencedApart(t *testing.T) {
	a, b := newKey(t), newKey(t)
	var f etcdfence.Fence
	if err := write(t, f, a, rev("500"), "a"); err != nil {
		t.Fatal(err)
	}
	if err := write(t, f, b, rev("7"), "b"); err != nil {
		t.Errorf("a key fenced by another's term: %v", err)
	}
}

func TestWriteReturnsTheResponsesOfItsOps(t *testing.T) {
	key := newKey(t)
	var f etcdfence.Fence
	if err := write(t, f, key, rev("10"), "v1"); err != nil {
		t.Fatal(err)
	}
	resps, err := f.Write(ctx(t), client, key, rev("11"), clientv3.OpGet(key), clientv3.OpPut(key, "v2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resps) != 2 {
		t.Fatalf("%d responses, want 2", len(resps))
	}
	if kvs := resps[0].GetResponseRange().GetKvs(); len(kvs) != 1 || string(kvs[0].Value) != "v1" {
		t.Errorf("the get saw %v, want v1", kvs)
	}
	if resps[1].GetResponsePut() == nil {
		t.Errorf("second response %v is not a put's", resps[1])
	}
}

func TestRevisionsBeyond64BitsCompareAsIntegers(t *testing.T) {
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	max128 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))
	// Each is older than the next; as text, "9" > "10" and "99…" > "100…".
	ascending := []string{
		"9", "10", "99", "100",
		strconv.FormatUint(1<<63-1, 10), // int64's largest
		strconv.FormatUint(1<<63, 10),
		new(big.Int).Sub(two64, big.NewInt(1)).String(),
		two64.String(),
		max128.String(), // 39 digits
	}
	key := newKey(t)
	var f etcdfence.Fence
	for i, r := range ascending {
		if err := write(t, f, key, rev(r), r); err != nil {
			t.Fatalf("revision %s after %v: %v", r, ascending[:i], err)
		}
		for _, older := range ascending[:i] {
			err := write(t, f, key, rev(older), older)
			if stale := mustStale(t, err); stale.Highest != r {
				t.Errorf("refusing %s: Highest = %s, want %s", older, stale.Highest, r)
			}
		}
	}
	if got := value(t, key); got != max128.String() {
		t.Errorf("value = %s, want %s", got, max128)
	}
	var batonStale *baton.StaleRevisionError
	if err := write(t, f, key, rev(two64.String()), "stale"); !errors.As(err, &batonStale) ||
		batonStale.Highest.String() != max128.String() {
		t.Errorf("refusing 2^64 after 2^128-1: %v, want a *baton.StaleRevisionError naming 2^128-1", err)
	}
}

func TestRecreatedLeaseNewLeaderIsAdmittedByTheDefaultFence(t *testing.T) {
	// The Lease's fifth holder wrote (token 5). The Lease was deleted and a
	// member with no history recreated it: token 0, but a higher revision.
	old := etcdfence.Term{Revision: revision("4100"), Token: 5}
	recreated := etcdfence.Term{Revision: revision("5200"), Token: 0}

	key := newKey(t)
	var byRevision etcdfence.Fence
	if err := write(t, byRevision, key, old, "old lease"); err != nil {
		t.Fatal(err)
	}
	if err := write(t, byRevision, key, recreated, "recreated lease"); err != nil {
		t.Fatalf("the recreated Lease's leader was refused by the default fence: %v", err)
	}
	if got := value(t, key); got != "recreated lease" {
		t.Errorf("value = %q", got)
	}
	// And the old Lease's deposed leader is still refused.
	mustStale(t, write(t, byRevision, key, old, "late"))

	// A token fence refuses the new leader: why the default is the revision.
	key = newKey(t)
	byToken := etcdfence.Fence{Order: etcdfence.ByToken}
	if err := write(t, byToken, key, old, "old lease"); err != nil {
		t.Fatal(err)
	}
	err := write(t, byToken, key, recreated, "recreated lease")
	var batonStale *baton.StaleTokenError
	if !errors.As(err, &batonStale) || batonStale.Token != 0 || batonStale.Highest != 5 {
		t.Errorf("token fence after a recreated Lease: got %v, want a stale token 0 < 5", err)
	}
}

func TestByTokenComparesTokens(t *testing.T) {
	key := newKey(t)
	f := etcdfence.Fence{Order: etcdfence.ByToken}
	for _, tok := range []int32{9, 10, 10, 2147483647} {
		// Revisions are ignored: these terms have none.
		if err := write(t, f, key, etcdfence.Term{Token: tok}, "x"); err != nil {
			t.Fatalf("token %d: %v", tok, err)
		}
	}
	mustStale(t, write(t, f, key, etcdfence.Term{Revision: revision("999"), Token: 11}, "stale"))
}

func TestTermsWithoutAnOrderableNumberAreRefused(t *testing.T) {
	key := newKey(t)
	var f etcdfence.Fence
	if err := write(t, f, key, rev("0"), "x"); !errors.Is(err, etcdfence.ErrNoRevision) {
		t.Errorf("revision 0: %v, want ErrNoRevision", err)
	}
	if err := write(t, etcdfence.Fence{Order: etcdfence.ByToken}, key, etcdfence.Term{Token: -1}, "x"); err == nil {
		t.Error("token -1 admitted")
	}
	if got := value(t, key); got != "<none>" {
		t.Errorf("value = %q after refused terms", got)
	}
}

func TestTermOfALeadership(t *testing.T) {
	max128 := revision("340282366920938463463374607431768211455")
	term := etcdfence.TermOf(baton.Leadership{FencingToken: 3, FencingRevision: max128})
	if term != (etcdfence.Term{Revision: max128, Token: 3}) {
		t.Errorf("TermOf = %+v", term)
	}
	if v, err := (etcdfence.Fence{}).Value(term); err != nil || v != max128.String() {
		t.Errorf("Value(%v) = %q, %v; want all 39 digits", term, v, err)
	}
}

// TestRacingWritersCommitInTermOrder races writers of many terms on one key
// and reads back, from etcd's own history of the data key, the order in
// which their writes committed: the terms never go down.
func TestRacingWritersCommitInTermOrder(t *testing.T) {
	key := newKey(t)
	var f etcdfence.Fence
	start, err := client.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	const writers, writesEach = 8, 25
	type attempt struct {
		term    int
		stale   *etcdfence.StaleError
		etcdRev int64
	}
	var (
		mu       sync.Mutex
		attempts []attempt
		wg       sync.WaitGroup
		errs     = make(chan error, writers)
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range writesEach {
				// Terms grow as the race goes on, but the writers' overlap.
				term := 1000 + 8*i + rng.IntN(40)
				val := fmt.Sprintf("%d/writer-%d/%d", term, w, i)
				var header int64
				resps, err := f.Write(context.Background(), client, key, rev(strconv.Itoa(term)), clientv3.OpPut(key, val))
				var stale *etcdfence.StaleError
				switch {
				case errors.As(err, &stale):
				case err != nil:
					errs <- err
					return
				default:
					header = resps[0].GetResponsePut().GetHeader().GetRevision()
				}
				mu.Lock()
				attempts = append(attempts, attempt{term, stale, header})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	admitted, maxTerm := 0, 0
	for _, a := range attempts {
		if a.stale == nil {
			admitted++
			maxTerm = max(maxTerm, a.term)
			continue
		}
		// A refusal names a newer term that was already accepted.
		if h, _ := strconv.Atoi(a.stale.Highest); h <= a.term {
			t.Errorf("term %d refused in favour of %s", a.term, a.stale.Highest)
		}
	}
	if admitted < 2 || admitted == len(attempts) {
		t.Fatalf("%d of %d writes admitted: the race did not exercise the fence", admitted, len(attempts))
	}

	// etcd's history of the data key, oldest first.
	var history []string
	watchCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for resp := range client.Watch(watchCtx, key, clientv3.WithRev(start.Header.Revision+1)) {
		if err := resp.Err(); err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.Events {
			history = append(history, string(ev.Kv.Value))
		}
		if len(history) >= admitted {
			break
		}
	}
	if len(history) != admitted {
		t.Fatalf("etcd holds %d writes of %q, the writers were told %d landed", len(history), key, admitted)
	}
	last := 0
	for i, v := range history {
		term, _ := strconv.Atoi(strings.SplitN(v, "/", 2)[0])
		if term < last {
			t.Errorf("write %d of %d (%q) committed after one of term %d", i, len(history), v, last)
		}
		last = term
	}
	if last != maxTerm {
		t.Errorf("the last write is of term %d, the newest admitted is %d", last, maxTerm)
	}
	// The writers' own view agrees: sorted by etcd revision, terms never go down.
	sort.Slice(attempts, func(i, j int) bool { return attempts[i].etcdRev < attempts[j].etcdRev })
	last = 0
	for _, a := range attempts {
		if a.stale == nil {
			if a.term < last {
				t.Errorf("term %d admitted at etcd revision %d after term %d", a.term, a.etcdRev, last)
			}
			last = a.term
		}
	}
	t.Logf("%d writes admitted, %d refused", admitted, len(attempts)-admitted)
}
