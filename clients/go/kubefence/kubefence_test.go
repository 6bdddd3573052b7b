package kubefence_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sidecar/baton/clients/go/baton"
	"github.com/baton-sidecar/baton/clients/go/kubefence"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// The tests run against the real kube-apiserver + etcd of
// scripts/controlplane: the one $BATON_CONTROLPLANE_DIR names when it is
// ready (clients/test passes its fixture's), else one started for this test
// binary in a temporary directory and stopped at the end. Each test has a
// namespace of its own.
var clientset *kubernetes.Clientset

func TestMain(m *testing.M) {
	os.Exit(runWithControlPlane(m))
}

func runWithControlPlane(m *testing.M) int {
	dir := os.Getenv("BATON_CONTROLPLANE_DIR")
	if _, err := os.Stat(filepath.Join(dir, "ready")); dir == "" || err != nil {
		script, err := filepath.Abs("../../../scripts/controlplane")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if dir, err = os.MkdirTemp("", "baton-kubefence-cp-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		start := exec.Command(script, "start", dir)
		// The control plane stops by itself when this process exits.
		start.Env = append(os.Environ(), fmt.Sprintf("BATON_CONTROLPLANE_OWNER_PID=%d", os.Getpid()))
		start.Stdout, start.Stderr = os.Stderr, os.Stderr
		if err := start.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "scripts/controlplane start: %v\n", err)
			return 1
		}
		defer exec.Command(script, "stop", dir).Run() //nolint:errcheck // it stops with this process too
	}
	config, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err == nil {
		config.QPS, config.Burst = 200, 400 // the racing test is a burst of writes
		clientset, err = kubernetes.NewForConfig(config)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

var nsSeq atomic.Int32

// configMaps returns the ConfigMaps of a new namespace, deleted at the end.
func configMaps(t *testing.T) typedcorev1.ConfigMapInterface {
	t.Helper()
	ns := fmt.Sprintf("kubefence-%d-%d", os.Getpid(), nsSeq.Add(1))
	_, err := clientset.CoreV1().Namespaces().Create(ctx(t),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	cms := clientset.CoreV1().ConfigMaps(ns)
	namespaces.Store(cms, ns)
	return cms
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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

// term returns the term of revision r (token 0), with a manager of its own.
func term(r string) kubefence.Term {
	return kubefence.Term{Revision: revision(r), FieldManager: "leader-rv" + r}
}

// stateIn is the ConfigMap "state" of namespace ns holding leader = v.
func stateIn(ns, v string) *applycorev1.ConfigMapApplyConfiguration {
	return applycorev1.ConfigMap("state", ns).WithData(map[string]string{"leader": v})
}

// write writes leader = v into ns's ConfigMap "state" under tm through f.
func write(t *testing.T, f kubefence.Fence, cms typedcorev1.ConfigMapInterface, tm kubefence.Term, v string) (*corev1.ConfigMap, error) {
	t.Helper()
	return f.ApplyConfigMap(ctx(t), cms, stateIn(namespace(t, cms), v), tm)
}

// namespaces maps each ConfigMapInterface configMaps made to its namespace.
var namespaces sync.Map

// namespace is the namespace of cms.
func namespace(t *testing.T, cms typedcorev1.ConfigMapInterface) string {
	t.Helper()
	if ns, ok := namespaces.Load(cms); ok {
		return ns.(string)
	}
	t.Fatal("ConfigMaps not made by configMaps()")
	return ""
}

// get returns the ConfigMap "state".
func get(t *testing.T, cms typedcorev1.ConfigMapInterface) *corev1.ConfigMap {
	t.Helper()
	cm, err := cms.Get(ctx(t), "state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func mustStale(t *testing.T, err error) *kubefence.StaleError {
	t.Helper()
	var stale *kubefence.StaleError
	if !errors.As(err, &stale) {
		t.Fatalf("want a *StaleError, got %v", err)
	}
	return stale
}

// managers returns the field managers in cm's managedFields.
func managers(cm *corev1.ConfigMap) map[string]bool {
	m := map[string]bool{}
	for _, e := range cm.ManagedFields {
		m[e.Manager] = true
	}
	return m
}

// --- what the API server does, without the fence ------------------------------

// TestFieldOwnershipAloneDoesNotOrderTerms is why the fence compares terms:
// server-side apply's ownership conflicts refuse a newer term as readily as
// an older one, and force lets either through.
func TestFieldOwnershipAloneDoesNotOrderTerms(t *testing.T) {
	cms := configMaps(t)
	ns := namespace(t, cms)
	apply := func(manager, v string, force bool) error {
		_, err := cms.Apply(ctx(t), stateIn(ns, v), metav1.ApplyOptions{FieldManager: manager, Force: force})
		return err
	}
	if err := apply("old-term", "old", true); err != nil {
		t.Fatal(err)
	}
	// The newer term, without force, conflicts with the older one's field.
	if err := apply("new-term", "new", false); !apierrors.IsConflict(err) {
		t.Fatalf("newer term without force: %v, want 409 Conflict", err)
	}
	if err := apply("new-term", "new", true); err != nil {
		t.Fatal(err)
	}
	// The older term, forcing, overwrites the newer one's write.
	if err := apply("old-term", "stale", true); err != nil {
		t.Fatalf("older term with force: %v", err)
	}
	if got := get(t, cms).Data["leader"]; got != "stale" {
		t.Fatalf("leader = %q; the stale forced apply was expected to land", got)
	}
}

// TestApplyWithAnOutdatedResourceVersionIsAConflict is the atomic half of the
// fence: metadata.resourceVersion in an applied configuration is a
// precondition, even for a forced apply.
func TestApplyWithAnOutdatedResourceVersionIsAConflict(t *testing.T) {
	cms := configMaps(t)
	ns := namespace(t, cms)
	first, err := cms.Apply(ctx(t), stateIn(ns, "a"), metav1.ApplyOptions{FieldManager: "m1", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Apply(ctx(t), stateIn(ns, "b"), metav1.ApplyOptions{FieldManager: "m2", Force: true}); err != nil {
		t.Fatal(err)
	}
	_, err = cms.Apply(ctx(t), stateIn(ns, "c").WithResourceVersion(first.ResourceVersion),
		metav1.ApplyOptions{FieldManager: "m1", Force: true})
	if !apierrors.IsConflict(err) {
		t.Fatalf("apply at an outdated resourceVersion: %v, want 409 Conflict", err)
	}
	if got := get(t, cms).Data["leader"]; got != "b" {
		t.Errorf("leader = %q, want b", got)
	}
}

// --- the fence ------------------------------------------------------------------

func TestFirstWriteCreatesTheConfigMap(t *testing.T) {
	cms := configMaps(t)
	var f kubefence.Fence
	cm, err := write(t, f, cms, term("100"), "a")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["leader"] != "a" || cm.Annotations[kubefence.DefaultAnnotation] != "100" {
		t.Errorf("created %v %v", cm.Data, cm.Annotations)
	}
	if !managers(get(t, cms))["leader-rv100"] {
		t.Errorf("managers %v, want leader-rv100", managers(cm))
	}
}

func TestNewerRevisionIsAdmittedAndItsWriteLands(t *testing.T) {
	cms := configMaps(t)
	var f kubefence.Fence
	if _, err := write(t, f, cms, term("100"), "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := write(t, f, cms, term("250"), "b"); err != nil {
		t.Fatalf("newer write: %v", err)
	}
	cm := get(t, cms)
	if cm.Data["leader"] != "b" || cm.Annotations[kubefence.DefaultAnnotation] != "250" {
		t.Errorf("ConfigMap holds %v %v", cm.Data, cm.Annotations)
	}
	if !managers(cm)["leader-rv250"] {
		t.Errorf("managers %v, want leader-rv250 among them", managers(cm))
	}
}

func TestOlderRevisionIsRefusedAndNothingIsWritten(t *testing.T) {
	cms := configMaps(t)
	var f kubefence.Fence
	if _, err := write(t, f, cms, term("250"), "new"); err != nil {
		t.Fatal(err)
	}
	before := get(t, cms)
	_, err := write(t, f, cms, term("100"), "stale")
	stale := mustStale(t, err)
	if stale.Name != "state" || stale.Highest != "250" || stale.Term != term("100") {
		t.Errorf("StaleError = %+v", stale)
	}
	var batonStale *baton.StaleRevisionError
	if !errors.As(err, &batonStale) || batonStale.Revision != revision("100") || batonStale.Highest != revision("250") {
		t.Errorf("errors.As(*baton.StaleRevisionError) = %+v", batonStale)
	}
	after := get(t, cms)
	if after.ResourceVersion != before.ResourceVersion || after.Data["leader"] != "new" {
		t.Errorf("the refused write changed the ConfigMap: %s %v -> %s %v",
			before.ResourceVersion, before.Data, after.ResourceVersion, after.Data)
	}
}

func TestEqualRevisionIsAdmitted(t *testing.T) {
	cms := configMaps(t)
	var f kubefence.Fence
	for _, v := range []string{"first", "second"} {
		if _, err := write(t, f, cms, term("300"), v); err != nil {
			t.Fatalf("write %q: %v", v, err)
		}
	}
	if got := get(t, cms).Data["leader"]; got != "second" {
		t.Errorf("leader = %q, want second", got)
	}
}

func TestRevisionsCompareAsIntegers(t *testing.T) {
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	max128 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))
	// As text, "9" > "10".
	ascending := []string{"9", "10", strconv.FormatUint(1<<63, 10), two64.String(), max128.String()}
	cms := configMaps(t)
	var f kubefence.Fence
	for i, r := range ascending {
		if _, err := write(t, f, cms, term(r), r); err != nil {
			t.Fatalf("revision %s after %v: %v", r, ascending[:i], err)
		}
		if i > 0 {
			_, err := write(t, f, cms, term(ascending[i-1]), "stale")
			mustStale(t, err)
			var batonStale *baton.StaleRevisionError
			if !errors.As(err, &batonStale) || batonStale.Highest.String() != r {
				t.Errorf("refusing %s after %s: %v, want a *baton.StaleRevisionError naming %s", ascending[i-1], r, err, r)
			}
		}
	}
	if got := get(t, cms).Data["leader"]; got != max128.String() {
		t.Errorf("leader = %s", got)
	}
}

func TestRecreatedLeaseNewLeaderIsAdmittedByTheDefaultFence(t *testing.T) {
	// The Lease's fifth holder wrote (token 5). The Lease was deleted and a
	// member with no history recreated it: token 0, but a higher revision.
	old := kubefence.Term{Revision: revision("4100"), Token: 5, FieldManager: "old-lease"}
	recreated := kubefence.Term{Revision: revision("5200"), Token: 0, FieldManager: "recreated-lease"}

	cms := configMaps(t)
	var byRevision kubefence.Fence
	if _, err := write(t, byRevision, cms, old, "old lease"); err != nil {
		t.Fatal(err)
	}
	if _, err := write(t, byRevision, cms, recreated, "recreated lease"); err != nil {
		t.Fatalf("the recreated Lease's leader was refused by the default fence: %v", err)
	}
	_, err := write(t, byRevision, cms, old, "late")
	mustStale(t, err)
	if got := get(t, cms).Data["leader"]; got != "recreated lease" {
		t.Errorf("leader = %q", got)
	}

	// A token fence refuses the new leader: why the default is the revision.
	cms = configMaps(t)
	byToken := kubefence.Fence{Order: kubefence.ByToken, Annotation: "baton.dev/fencing-token"}
	if _, err := write(t, byToken, cms, old, "old lease"); err != nil {
		t.Fatal(err)
	}
	_, err = write(t, byToken, cms, recreated, "recreated lease")
	var batonStale *baton.StaleTokenError
	if !errors.As(err, &batonStale) || batonStale.Token != 0 || batonStale.Highest != 5 {
		t.Errorf("token fence after a recreated Lease: got %v, want a stale token 0 < 5", err)
	}
}

func TestTermsThatCannotBeFencedAreRefused(t *testing.T) {
	cms := configMaps(t)
	var f kubefence.Fence
	if _, err := write(t, f, cms, term("0"), "x"); !errors.Is(err, kubefence.ErrNoRevision) {
		t.Errorf("revision 0: %v, want ErrNoRevision", err)
	}
	if _, err := write(t, f, cms, kubefence.Term{Revision: revision("5")}, "x"); err == nil {
		t.Error("a term without a field manager admitted")
	}
	if _, err := cms.Get(ctx(t), "state", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after refused terms the ConfigMap exists (%v)", err)
	}
}

// TestStaleWriterThatReadBeforeTheNewerWroteIsRefused opens the window
// between the fence's read and its write: the older term reads the
// ConfigMap, the newer term writes, then the older term's apply carries a
// resourceVersion that is no longer current. It gets 409, reads again, and
// is refused.
func TestStaleWriterThatReadBeforeTheNewerWroteIsRefused(t *testing.T) {
	cms := configMaps(t)
	var f kubefence.Fence
	if _, err := write(t, f, cms, term("100"), "first"); err != nil {
		t.Fatal(err)
	}
	reads := 0
	slow := kubefence.WithAfterRead(f, func() {
		reads++
		if reads == 1 {
			if _, err := write(t, f, cms, term("200"), "newer"); err != nil {
				t.Errorf("the newer term's write: %v", err)
			}
		}
	})
	_, err := write(t, slow, cms, term("150"), "stale")
	if stale := mustStale(t, err); stale.Highest != "200" {
		t.Errorf("refused in favour of %s, want 200", stale.Highest)
	}
	if reads != 1 {
		t.Errorf("%d reads passed the comparison, want 1", reads)
	}
	if got := get(t, cms).Data["leader"]; got != "newer" {
		t.Errorf("leader = %q, want newer", got)
	}
}

// TestNewerWriterThatReadBeforeAnOlderWroteStillLands is the same window the
// other way round: the write in between is an older (but not yet refused)
// term's, and the newer term lands after it.
func TestNewerWriterThatReadBeforeAnOlderWroteStillLands(t *testing.T) {
	cms := configMaps(t)
	var f kubefence.Fence
	if _, err := write(t, f, cms, term("100"), "first"); err != nil {
		t.Fatal(err)
	}
	reads := 0
	slow := kubefence.WithAfterRead(f, func() {
		reads++
		if reads == 1 {
			if _, err := write(t, f, cms, term("150"), "older"); err != nil {
				t.Errorf("the older term's write: %v", err)
			}
		}
	})
	if _, err := write(t, slow, cms, term("200"), "newer"); err != nil {
		t.Fatal(err)
	}
	if reads != 2 {
		t.Errorf("%d reads, want 2 (the first one's apply is a conflict)", reads)
	}
	cm := get(t, cms)
	if cm.Data["leader"] != "newer" || cm.Annotations[kubefence.DefaultAnnotation] != "200" {
		t.Errorf("ConfigMap holds %v %v", cm.Data, cm.Annotations)
	}
}

// TestRacingWritersCommitInTermOrder races writers of many terms on one
// ConfigMap, starting from none (so they race to create it too), and reads
// the order their writes committed in from a watch: the terms never go down.
func TestRacingWritersCommitInTermOrder(t *testing.T) {
	cms := configMaps(t)
	ns := namespace(t, cms)
	var f kubefence.Fence
	w, err := cms.Watch(ctx(t), metav1.ListOptions{FieldSelector: "metadata.name=state"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const writers, writesEach = 6, 8
	type attempt struct {
		term, resourceVersion int
		stale                 *kubefence.StaleError
	}
	var (
		mu       sync.Mutex
		attempts []attempt
		wg       sync.WaitGroup
		errs     = make(chan error, writers)
	)
	for wr := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(wr), 2))
			for i := range writesEach {
				// Terms grow as the race goes on, but the writers' overlap.
				tm := 1000 + 8*i + rng.IntN(24)
				cm, err := f.ApplyConfigMap(context.Background(), cms,
					stateIn(ns, fmt.Sprintf("%d/writer-%d/%d", tm, wr, i)),
					kubefence.Term{Revision: revision(strconv.Itoa(tm)), FieldManager: fmt.Sprintf("writer-%d-term-%d", wr, tm)})
				a := attempt{term: tm}
				switch {
				case errors.As(err, &a.stale):
				case err != nil:
					errs <- err
					return
				default:
					a.resourceVersion, _ = strconv.Atoi(cm.ResourceVersion)
				}
				mu.Lock()
				attempts = append(attempts, a)
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
		} else if h, _ := strconv.Atoi(a.stale.Highest); h <= a.term {
			t.Errorf("term %d refused in favour of %s", a.term, a.stale.Highest)
		}
	}
	if admitted < 2 || admitted == len(attempts) {
		t.Fatalf("%d of %d writes admitted: the race did not exercise the fence", admitted, len(attempts))
	}

	// The API server's history of the ConfigMap, oldest first.
	var history []string
	timeout := time.After(30 * time.Second)
	for len(history) < admitted {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d events", len(history))
			}
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				t.Fatalf("watch event %v: %v", ev.Type, ev.Object)
			}
			history = append(history, ev.Object.(*corev1.ConfigMap).Data["leader"])
		case <-timeout:
			t.Fatalf("the watch saw %d writes, the writers were told %d landed", len(history), admitted)
		}
	}
	last := 0
	for i, v := range history {
		var tm int
		fmt.Sscanf(v, "%d/", &tm)
		if tm < last {
			t.Errorf("write %d of %d (%q) committed after one of term %d", i, len(history), v, last)
		}
		last = tm
	}
	if last != maxTerm {
		t.Errorf("the last write is of term %d, the newest admitted is %d", last, maxTerm)
	}
	// The writers' own view agrees: sorted by resourceVersion, terms never go down.
	sort.Slice(attempts, func(i, j int) bool { return attempts[i].resourceVersion < attempts[j].resourceVersion })
	last = 0
	for _, a := range attempts {
		if a.stale == nil {
			if a.term < last {
				t.Errorf("term %d admitted at resourceVersion %d after term %d", a.term, a.resourceVersion, last)
			}
			last = a.term
		}
	}
	t.Logf("%d writes admitted, %d refused", admitted, len(attempts)-admitted)
}

func TestTermOfALeadership(t *testing.T) {
	max128 := revision("340282366920938463463374607431768211455")
	l := baton.Leadership{FencingToken: 3, FencingRevision: max128, Identity: "pod-a_1234"}
	got := kubefence.TermOf(l)
	if got != (kubefence.Term{Revision: max128, Token: 3, FieldManager: "pod-a_1234"}) {
		t.Errorf("TermOf = %+v", got)
	}
	if v, err := (kubefence.Fence{}).Value(got); err != nil || v != max128.String() {
		t.Errorf("Value(%v) = %q, %v; want all 39 digits", got, v, err)
	}
}
