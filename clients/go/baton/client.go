package baton

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/baton-sidecar/baton/clients/go/batonv1"
)

const (
	// DefaultGRPCAddr is where the sidecar serves gRPC by default
	// (baton --grpc-addr).
	DefaultGRPCAddr = "127.0.0.1:4041"
	// EnvGRPCAddr names the environment variable that overrides
	// DefaultGRPCAddr: "host:port", ":port" (on 127.0.0.1) or "unix:PATH".
	EnvGRPCAddr = "BATON_GRPC_ADDR"
	// EnvLeaseName and EnvLeaseNamespace name the environment variables
	// that give the Lease a Client expects when WithLease is not used.
	EnvLeaseName      = "BATON_LEASE_NAME"
	EnvLeaseNamespace = "BATON_LEASE_NAMESPACE"
)

// Defaults of the Options.
const (
	DefaultCallTimeout       = 2 * time.Second
	DefaultHeartbeatInterval = time.Second
	DefaultMinBackoff        = 100 * time.Millisecond
	DefaultMaxBackoff        = 2 * time.Second
)

// RequireLeaderSlack is what RequireLeader asks the sidecar for beyond
// minValidity: a promise of at most minValidity + RequireLeaderSlack
// (max_valid_for). The slack covers the round trip, so that what is left
// when the client checks is still at least minValidity. The caller learns
// only "at least minValidity left" and the token, so a longer promise is of
// no use to it and would only delay a handover when the application does not
// acknowledge.
const RequireLeaderSlack = time.Second

// Client talks to one baton sidecar. It is safe for concurrent use; make one
// per process and Close it when done.
type Client struct {
	addr string
	opts options
	conn *grpc.ClientConn
	api  batonv1.LeaderElectionClient

	mu    sync.Mutex
	heard heardTerm // guarded by mu
}

// heardTerm is the latest deadline among the leader answers a Client has
// received in one term (the latest term it heard of): what its
// acknowledgement of that term names.
type heardTerm struct {
	identity string
	token    int32
	deadline time.Duration
}

// noteAnswer records l's deadline if it is a leader answer with one.
func (c *Client) noteAnswer(l Leadership) {
	if !l.IsLeader || l.sidecarDeadline <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.heard.identity != l.Identity || c.heard.token != l.FencingToken {
		c.heard = heardTerm{l.Identity, l.FencingToken, l.sidecarDeadline}
		return
	}
	c.heard.deadline = max(c.heard.deadline, l.sidecarDeadline)
}

// heardUpTo is the latest deadline this Client has received in term token;
// zero if it has received none.
func (c *Client) heardUpTo(token int32) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.heard.token != token {
		return 0
	}
	return c.heard.deadline
}

type options struct {
	addr, clientID         string
	lease                  *LeaseRef
	callTimeout, heartbeat time.Duration
	minBackoff, maxBackoff time.Duration
	dialOptions            []grpc.DialOption
}

// An Option changes a Client's defaults.
type Option func(*options)

// WithAddr sets the sidecar's gRPC address, overriding $BATON_GRPC_ADDR and
// DefaultGRPCAddr.
func WithAddr(addr string) Option { return func(o *options) { o.addr = addr } }

// WithClientID sets the name this client gives the sidecar with every
// question: 1 to 64 characters from [A-Za-z0-9._-]. The sidecar records the
// leader answers it gives under this name as promises that
// AcknowledgeStepDown can give back. Default: 16 random hex digits per
// Client, which is what a Client should normally use.
func WithClientID(id string) Option { return func(o *options) { o.clientID = id } }

// WithLease sets the Lease this Client expects the sidecar to serve
// (overriding $BATON_LEASE_NAME and $BATON_LEASE_NAMESPACE). Every answer
// from a sidecar serving another Lease is then refused with a
// *WrongLeaseError (errors.Is(err, ErrWrongLease)): with two sidecars on one
// network namespace (hostNetwork), an address mix-up would otherwise let
// this application act on another workload's leadership. An empty namespace
// checks the name only. Without WithLease or $BATON_LEASE_NAME, any Lease is
// accepted.
func WithLease(name, namespace string) Option {
	return func(o *options) { o.lease = &LeaseRef{Name: name, Namespace: namespace} }
}

// expectedLease is the Lease of WithLease, else of $BATON_LEASE_NAME and
// $BATON_LEASE_NAMESPACE; nil when none is set.
func expectedLease(o options) (*LeaseRef, error) {
	lease := o.lease
	if lease == nil {
		name, ns := os.Getenv(EnvLeaseName), os.Getenv(EnvLeaseNamespace)
		if name == "" && ns == "" {
			return nil, nil
		}
		lease = &LeaseRef{Name: name, Namespace: ns}
	}
	if lease.Name == "" {
		return nil, fmt.Errorf("baton: the expected Lease (WithLease or $%s) needs a name", EnvLeaseName)
	}
	return lease, nil
}

// WithCallTimeout bounds each unary call whose context has no earlier
// deadline, so a paused sidecar cannot block the caller (default
// DefaultCallTimeout).
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.callTimeout = d } }

// WithHeartbeatInterval sets how often Watch asks the sidecar to repeat the
// current state when nothing changes (default DefaultHeartbeatInterval). A
// stream silent for twice that plus a second is taken as stuck and
// reconnected.
func WithHeartbeatInterval(d time.Duration) Option { return func(o *options) { o.heartbeat = d } }

// WithReconnectBackoff sets the exponential backoff between reconnection
// attempts (defaults DefaultMinBackoff, DefaultMaxBackoff).
func WithReconnectBackoff(minDelay, maxDelay time.Duration) Option {
	return func(o *options) { o.minBackoff, o.maxBackoff = minDelay, maxDelay }
}

// WithDialOptions adds gRPC dial options (interceptors, for example).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}

// ResolveAddr returns the gRPC address a Client without WithAddr uses:
// $BATON_GRPC_ADDR if set, else DefaultGRPCAddr, normalized (":4041" means
// 127.0.0.1:4041). It fails on an address that is not host:port or unix:PATH.
func ResolveAddr() (string, error) {
	if v := os.Getenv(EnvGRPCAddr); v != "" {
		addr, err := normalizeAddr(v)
		if err != nil {
			return "", fmt.Errorf("baton: $%s: %w", EnvGRPCAddr, err)
		}
		return addr, nil
	}
	return DefaultGRPCAddr, nil
}

func normalizeAddr(addr string) (string, error) {
	if strings.HasPrefix(addr, "unix:") {
		return addr, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", fmt.Errorf("%q is not host:port, :port or unix:PATH", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

var clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func randomClientID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b[:])
}

// New returns a Client of the sidecar at WithAddr, $BATON_GRPC_ADDR or
// DefaultGRPCAddr. It does not connect yet: a missing sidecar shows as
// ErrSidecarUnavailable on the first call, and the connection is re-made
// with backoff whenever the sidecar restarts.
func New(opts ...Option) (*Client, error) {
	o := options{callTimeout: DefaultCallTimeout, heartbeat: DefaultHeartbeatInterval,
		minBackoff: DefaultMinBackoff, maxBackoff: DefaultMaxBackoff}
	for _, opt := range opts {
		opt(&o)
	}
	addr := o.addr
	var err error
	if addr == "" {
		addr, err = ResolveAddr()
	} else {
		addr, err = normalizeAddr(addr)
	}
	if err != nil {
		return nil, err
	}
	if o.lease, err = expectedLease(o); err != nil {
		return nil, err
	}
	if o.clientID == "" {
		o.clientID = randomClientID()
	} else if !clientIDPattern.MatchString(o.clientID) {
		return nil, fmt.Errorf("baton: client ID %q is not 1 to 64 characters from [A-Za-z0-9._-]", o.clientID)
	}
	target := addr
	if !strings.HasPrefix(addr, "unix:") {
		target = "passthrough:///" + addr // an IP or a local name: no DNS round trip
	}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()), // loopback only
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: o.minBackoff, Multiplier: 1.6, Jitter: 0.2,
				MaxDelay: o.maxBackoff},
			MinConnectTimeout: o.callTimeout,
		}),
	}, o.dialOptions...)
	conn, err := grpc.NewClient(target, dial...)
	if err != nil {
		return nil, fmt.Errorf("baton: %s: %w", addr, err)
	}
	return &Client{addr: addr, opts: o, conn: conn, api: batonv1.NewLeaderElectionClient(conn)}, nil
}

// Addr is the sidecar address this client uses.
func (c *Client) Addr() string { return c.addr }

// ClientID is the name this client gives the sidecar (see WithClientID).
func (c *Client) ClientID() string { return c.opts.clientID }

// Close releases the connection. Calls in flight fail.
func (c *Client) Close() error { return c.conn.Close() }

// callContext bounds a unary call by the call timeout unless ctx already
// ends sooner.
func (c *Client) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= c.opts.callTimeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.opts.callTimeout)
}

// wrap turns a transport failure into an *UnavailableError and leaves the
// caller's own cancellation as it is.
func (c *Client) wrap(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("baton: %w", ctx.Err())
	}
	return translate(c.addr, err)
}

// translate is the one mapping of a failed call's gRPC status to this
// package's errors: the codes that mean "no usable sidecar here" become an
// *UnavailableError, the others keep their status.
func translate(addr string, err error) error {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Unimplemented, codes.Canceled:
		return &UnavailableError{Addr: addr, Err: err}
	}
	return fmt.Errorf("baton: %s: %w", addr, err)
}

// Leadership asks the sidecar for the current state. It fails fast with
// ErrSidecarUnavailable when no sidecar answers; it never waits on the
// Kubernetes API.
func (c *Client) Leadership(ctx context.Context) (Leadership, error) {
	return c.leadership(ctx, 0)
}

// leadership is Leadership asking for a promise of at most maxValidFor; zero
// asks for the whole promise.
func (c *Client) leadership(ctx context.Context, maxValidFor time.Duration) (Leadership, error) {
	cctx, cancel := c.callContext(ctx)
	defer cancel()
	req := &batonv1.GetLeadershipRequest{ClientId: c.opts.clientID}
	if maxValidFor > 0 {
		req.MaxValidFor = durationpb.New(maxValidFor)
	}
	sent := boottime()
	m, err := c.api.GetLeadership(cctx, req)
	if err != nil {
		return Leadership{}, c.wrap(ctx, err)
	}
	return c.answer(m, sent)
}

// answer converts an answer received since (see fromProto) and passes it on
// if it comes from a sidecar serving the expected Lease (or none is
// expected); it refuses a malformed answer, and one about another Lease.
// Every answer this Client receives goes through it: one it passes on is
// noted for AcknowledgeStepDown.
func (c *Client) answer(m *batonv1.Leadership, since time.Duration) (Leadership, error) {
	l, err := fromProto(m, since)
	if err != nil {
		return Leadership{}, err
	}
	served := LeaseRef{Name: l.LeaseName, Namespace: l.LeaseNamespace}
	if want := c.opts.lease; want != nil && !want.matches(served) {
		return Leadership{}, &WrongLeaseError{Addr: c.addr, Expected: *want, Served: served}
	}
	c.noteAnswer(l)
	return l, nil
}

// IsLeader reports whether this pod leads right now. An error (no sidecar)
// comes with false: treat it as "not leader".
func (c *Client) IsLeader(ctx context.Context) (bool, error) {
	l, err := c.Leadership(ctx)
	return l.IsLeader, err
}

// RequireLeader returns the fencing token to tag a write with, if this pod
// leads with at least minValidity of guaranteed leadership left (counted
// from when the sidecar answered). Otherwise it returns a *NotLeaderError
// (errors.Is(err, ErrNotLeader)), or ErrSidecarUnavailable.
//
// It asks the sidecar for a promise of at most minValidity +
// RequireLeaderSlack, so an application that never acknowledges holds up a
// handover by at most that much.
func (c *Client) RequireLeader(ctx context.Context, minValidity time.Duration) (int32, error) {
	l, err := c.requireLeader(ctx, minValidity, requireLeaderBound(minValidity))
	return l.FencingToken, err
}

// requireLeaderBound is the promise RequireLeader asks for.
func requireLeaderBound(minValidity time.Duration) time.Duration {
	return max(minValidity, 0) + RequireLeaderSlack
}

// requireLeader is RequireLeader's decision on a fresh answer promising at
// most maxValidFor (zero: the whole promise).
func (c *Client) requireLeader(ctx context.Context, minValidity, maxValidFor time.Duration) (Leadership, error) {
	l, err := c.leadership(ctx, maxValidFor)
	if err != nil {
		return Leadership{}, err
	}
	return requireLeaderAt(l, minValidity, boottime())
}

// requireLeaderAt is RequireLeader's decision on l at the CLOCK_BOOTTIME
// reading now: l if it leads with at least minValidity (and some) left.
func requireLeaderAt(l Leadership, minValidity, now time.Duration) (Leadership, error) {
	remaining := l.remainingAt(now)
	if !l.IsLeader || remaining <= 0 || remaining < minValidity {
		return Leadership{}, &NotLeaderError{Leadership: l, MinValidity: minValidity, Remaining: remaining}
	}
	return l, nil
}

// Fenced runs write with the fencing token if RequireLeader(ctx,
// minValidity) allows it. write's context is cancelled when the guaranteed
// leadership runs out, so a write that honours it cannot outlive it; the
// store must still check the token (see Fence). Unlike RequireLeader it asks
// for the whole promise, which write's context then runs to. It returns
// RequireLeader's error or write's.
func (c *Client) Fenced(ctx context.Context, minValidity time.Duration,
	write func(ctx context.Context, token int32) error) error {
	l, err := c.requireLeader(ctx, minValidity, 0)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithDeadline(ctx, l.ValidUntil)
	defer cancel()
	return write(wctx, l.FencingToken)
}

// WaitUntilLeader blocks until this pod leads and returns that state. It
// keeps waiting through sidecar restarts; it returns early only when ctx
// ends (with ctx's error and, if any, the last connection error).
func (c *Client) WaitUntilLeader(ctx context.Context) (Leadership, error) {
	var lastErr error
	for l, err := range c.Watch(ctx) {
		if err != nil {
			lastErr = err
			continue
		}
		if l.IsLeader {
			return l, nil
		}
	}
	if lastErr != nil {
		return Leadership{}, fmt.Errorf("baton: waiting for leadership: %w (last error: %v)", ctx.Err(), lastErr)
	}
	return Leadership{}, fmt.Errorf("baton: waiting for leadership: %w", ctx.Err())
}

// Resign asks the sidecar to step down now and release the Lease so another
// pod takes over at once. When it returns nil this sidecar already answers
// not-leader. wasLeader tells whether it led when asked. The sidecar goes on
// campaigning and may lead again later.
func (c *Client) Resign(ctx context.Context) (wasLeader bool, err error) {
	cctx, cancel := c.callContext(ctx)
	defer cancel()
	r, err := c.api.Resign(cctx, &batonv1.ResignRequest{})
	if err != nil {
		return false, c.wrap(ctx, err)
	}
	return r.GetWasLeader(), nil
}

// AcknowledgeStepDown tells the sidecar that this application has stopped
// acting on the leadership of the term with fencing token token: its leader
// work was cancelled and has ended. It names the latest deadline
// (valid_until_boottime) among the leader answers of that term this Client
// has received so far, and the promises the sidecar gave this client up to
// that deadline are void from then on, so a sidecar that is stepping down
// (shutdown or Resign) need not wait for them to run out before it releases
// the Lease. A promise the sidecar gives after those answers (the sidecar
// renewed in between) stays outstanding, however late the acknowledgement
// arrives, and so does one given to another process using the same client
// ID. acknowledged tells whether that settled this client ID's promises of
// the term (false too if this Client received no leader answer of it).
//
// Call it only once nothing in this process acts on this client's answers
// for that term any more. RunWhileLeader calls it for you. An application
// that never acknowledges still gets a safe handover, only a slower one: the
// sidecar then waits until the last promise it gave lapses (up to the
// sidecar's --renew-deadline after the last answer).
func (c *Client) AcknowledgeStepDown(ctx context.Context, token int32) (acknowledged bool, err error) {
	acknowledged, _, err = c.acknowledge(ctx, token)
	return acknowledged, err
}

// acknowledge is AcknowledgeStepDown; it also returns the deadline it named.
func (c *Client) acknowledge(ctx context.Context, token int32) (acknowledged bool, upTo time.Duration, err error) {
	upTo = c.heardUpTo(token)
	cctx, cancel := c.callContext(ctx)
	defer cancel()
	r, err := c.api.AcknowledgeStepDown(cctx, &batonv1.AcknowledgeStepDownRequest{
		ClientId: c.opts.clientID, FencingToken: token, ValidUntilBoottime: durationpb.New(upTo)})
	if err != nil {
		return false, upTo, c.wrap(ctx, err)
	}
	return r.GetAcknowledged(), upTo, nil
}

// errStalled is Watch's error for a stream that went silent.
var errStalled = errors.New("no message from the sidecar within the heartbeat timeout")
