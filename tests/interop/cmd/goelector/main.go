// Command goelector is a Go program using client-go's
// tools/leaderelection.LeaderElector on a Lease — the way Go controllers do
// leader election today. baton's tests run it beside baton sidecars on one
// Lease to prove the two interoperate, and benchmarks use it as the peer.
//
// It answers GET /leader with the subset of baton's JSON the tests read:
// {"isLeader", "identity", "holderIdentity", "fencingToken"}, plus
// "apiRequests", the number of API-server requests it has sent. isLeader is
// true from client-go's OnStartedLeading callback until the context it
// passes is cancelled (when a client-go controller must stop its leader
// work) or OnStoppedLeading, and only while the last successful write of the
// Lease as holder was sent less than --renew-deadline ago: client-go's own
// bound on a leader that cannot renew. (client-go cancels that context only
// after its release attempt, which with ReleaseOnCancel can take another
// renew deadline when the API server is unreachable.)
// When client-go's Run returns (leadership lost), it campaigns again, as a
// controller restarted by its Deployment would.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

type state struct {
	requests      atomic.Int64 // API requests sent, for the benchmarks
	renewDeadline time.Duration
	mu            sync.Mutex
	leading       bool
	term          int       // counts OnStartedLeading calls
	renewSent     time.Time // when the last successful write as holder was sent
	token         int32
	holder        string
	identity      string
}

func (s *state) serveHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	body := map[string]any{
		"isLeader":       s.leading && time.Since(s.renewSent) < s.renewDeadline,
		"identity":       s.identity,
		"holderIdentity": s.holder,
		"fencingToken":   s.token,
		"apiRequests":    s.requests.Load(),
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// timedLock notes when each successful create or update naming this
// elector as holder was sent.
type timedLock struct {
	resourcelock.Interface
	st *state
}

func (l timedLock) write(rec resourcelock.LeaderElectionRecord, do func() error) error {
	sent := time.Now()
	err := do()
	if err == nil && rec.HolderIdentity == l.st.identity {
		l.st.mu.Lock()
		l.st.renewSent = sent
		l.st.mu.Unlock()
	}
	return err
}

func (l timedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(rec, func() error { return l.Interface.Create(ctx, rec) })
}

func (l timedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(rec, func() error { return l.Interface.Update(ctx, rec) })
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	name := flag.String("lease-name", "", "Lease name")
	namespace := flag.String("lease-namespace", "", "Lease namespace")
	identity := flag.String("identity", "", "holder identity")
	httpAddr := flag.String("http-addr", "127.0.0.1:0", "address for GET /leader")
	leaseDuration := flag.Duration("lease-duration", 15*time.Second, "")
	renewDeadline := flag.Duration("renew-deadline", 10*time.Second, "")
	retryPeriod := flag.Duration("retry-period", 2*time.Second, "")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	cfg.UserAgent = "goelector (client-go leaderelection)"
	st := &state{identity: *identity, renewDeadline: *renewDeadline}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			st.requests.Add(1)
			return rt.RoundTrip(r)
		})
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: *name, Namespace: *namespace},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: *identity},
	}

	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving on %s", ln.Addr())
	go func() { _ = http.Serve(ln, http.HandlerFunc(st.serveHTTP)) }()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	for ctx.Err() == nil {
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            timedLock{lock, st},
			LeaseDuration:   *leaseDuration,
			RenewDeadline:   *renewDeadline,
			RetryPeriod:     *retryPeriod,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(leading context.Context) {
					rec, _, err := lock.Get(context.Background())
					st.mu.Lock()
					st.term++
					term := st.term
					st.leading = leading.Err() == nil
					if err == nil {
						st.token = int32(rec.LeaderTransitions)
					}
					st.mu.Unlock()
					log.Printf("started leading (token %d)", st.token)
					<-leading.Done()
					st.mu.Lock()
					if st.term == term {
						st.leading = false
					}
					st.mu.Unlock()
				},
				OnStoppedLeading: func() {
					st.mu.Lock()
					st.leading = false
					st.mu.Unlock()
					log.Printf("stopped leading")
				},
				OnNewLeader: func(holder string) {
					st.mu.Lock()
					st.holder = holder
					st.mu.Unlock()
				},
			},
		})
		if err != nil {
			log.Fatal(err)
		}
		elector.Run(ctx)
	}
	os.Exit(0)
}
