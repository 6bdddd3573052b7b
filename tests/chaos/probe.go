package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	batonv1 "github.com/baton-sidecar/baton/clients/go/batonv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"

	"baton/tests/internal/sidecars"
)

// samplePeriod is how often every surface of every member is asked: above
// 100 Hz with room for a slow answer now and then.
const samplePeriod = 8 * time.Millisecond

// askTimeout bounds every question; a member that does not answer in time
// (stopped, starved) gives no answer, which the checker never counts as one.
const askTimeout = 500 * time.Millisecond

// Recorder keeps the answers and acknowledgements of one group. Safe for
// concurrent use.
type Recorder struct {
	mu      sync.Mutex
	answers []Answer
	acks    []Ack
}

func (r *Recorder) add(a Answer) {
	r.mu.Lock()
	r.answers = append(r.answers, a)
	r.mu.Unlock()
}

func (r *Recorder) addAck(a Ack) {
	r.mu.Lock()
	r.acks = append(r.acks, a)
	r.mu.Unlock()
}

// Snapshot copies what was recorded.
func (r *Recorder) Snapshot() ([]Answer, []Ack) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Answer(nil), r.answers...), append([]Ack(nil), r.acks...)
}

// Prune forgets answers received and acknowledgements sent before t.
func (r *Recorder) Prune(t Instant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	keep := r.answers[:0]
	for _, a := range r.answers {
		if a.Recv >= t {
			keep = append(keep, a)
		}
	}
	r.answers = keep
	acks := r.acks[:0]
	for _, a := range r.acks {
		if a.At >= t {
			acks = append(acks, a)
		}
	}
	r.acks = acks
}

// AckVia says how the application acknowledges a step-down.
type AckVia int32

const (
	AckGRPC AckVia = iota // AcknowledgeStepDown
	AckHTTP               // POST /leader/ack
)

// probe asks one member every surface it has, at samplePeriod each, and
// records every answer. For a baton member it also plays the cooperating
// application: it leads while the member says so and, when an answer says
// the member is not leader or is stepping down, stops its leader work and
// acknowledges that term's promises.
type probe struct {
	m      *sidecars.Member
	client string // the application's client_id
	rec    *Recorder
	ackVia *atomic.Int32 // AckVia, set per round by the group
	anon   *atomic.Int32 // AnonPoll: also poll without client_id (set per round)
	// The round's fault is Disorderly: acknowledge late, twice and out of
	// order, naming the deadline; a second process polls with client.
	disorder *atomic.Bool
	http     *http.Client
	conn     *grpc.ClientConn
	stop     chan struct{}
	stopped  sync.Once
	wg       sync.WaitGroup
	last     atomic.Pointer[Answer] // the latest HTTP (or client-go) answer

	mu       sync.Mutex
	working  bool    // the application's leader work is running
	token    int32   // the term it runs (or last ran) for
	since    Instant // when the answer that started the work arrived
	ledOn    uint8   // bit s: surface s has answered leader for token since
	acked    int32   // the last term it acknowledged, if ackedAny
	ackedAny bool
	// The leader answers of the term it works for, as its writer sees them.
	revision int64   // their fencing revision
	until    Instant // the latest validUntilBoottime among them

	// writeMu is held by the member's writer during a write; an
	// acknowledgement waits for it, so no write outlives the work.
	writeMu sync.Mutex
}

// leaderView is what the application was last told of its term.
type leaderView struct {
	working  bool // its leader work runs
	token    int32
	revision int64
	until    Instant // validity: the latest validUntilBoottime of the term's answers
}

func (p *probe) view() leaderView {
	p.mu.Lock()
	defer p.mu.Unlock()
	return leaderView{p.working, p.token, p.revision, p.until}
}

func startProbe(m *sidecars.Member, rec *Recorder, ackVia, anon *atomic.Int32, disorder *atomic.Bool) (*probe, error) {
	p := &probe{m: m, client: "app-" + m.Name, rec: rec, ackVia: ackVia, anon: anon, disorder: disorder,
		http: &http.Client{Timeout: askTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
		stop: make(chan struct{})}
	if m.Kind == sidecars.ClientGo {
		p.loop(p.askClientGo)
		return p, nil
	}
	conn, err := grpc.NewClient(m.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	p.conn = conn
	p.loop(p.askHTTP)
	p.loop(p.askGRPC)
	p.loop(p.askHealth)
	p.loop(p.askAnonymous)
	p.loop(p.askShared)
	p.wg.Add(1)
	go p.watch()
	return p, nil
}

// Stop ends every loop and waits for them. Only the first call does
// anything: a slot whose refill failed (group.replace) keeps its stopped
// probe until Close stops it again.
func (p *probe) Stop() {
	p.stopped.Do(func() {
		close(p.stop)
		p.wg.Wait()
		if p.conn != nil {
			p.conn.Close()
		}
		p.http.CloseIdleConnections()
	})
}

// done says whether the probe should stop: Stop was called or the member's
// process exited.
func (p *probe) done() bool {
	select {
	case <-p.stop:
		return true
	case <-p.m.Done():
		return true
	default:
		return false
	}
}

// loop runs ask every samplePeriod until done.
func (p *probe) loop(ask func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(samplePeriod)
		defer tick.Stop()
		for !p.done() {
			ask()
			select {
			case <-tick.C:
			case <-p.stop:
			case <-p.m.Done():
			}
		}
	}()
}

func (p *probe) record(a Answer) {
	a.Member = p.m.Name
	p.rec.add(a)
	if a.Surface == HTTP || a.Surface == ClientGo {
		p.last.Store(&a)
	}
	if a.Surface.application() {
		p.application(a)
	}
}

func fromLeadership(l *batonv1.Leadership, a *Answer) {
	a.IsLeader = l.GetIsLeader()
	a.SteppingDown = l.GetSteppingDown()
	a.Token = l.GetFencingToken()
	a.Revision = l.GetFencingRevision()
	a.ValidFor = l.GetValidFor().AsDuration()
	if u := l.GetValidUntilBoottime(); u != nil {
		a.ValidUntil = Instant(u.AsDuration())
	}
}

var lenient = protojson.UnmarshalOptions{DiscardUnknown: true}

// getLeader asks GET /leader with the query `query` (may be empty) naming
// the reader `client` (empty: anonymous).
func (p *probe) getLeader(surface Surface, client, query string) {
	u := "http://" + p.m.HTTPAddr + "/leader"
	if query != "" {
		u += "?" + query
	}
	a := Answer{Surface: surface, Client: client, Send: Now()}
	resp, err := p.http.Get(u)
	if err != nil {
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	a.Recv = Now()
	var l batonv1.Leadership
	if err != nil || resp.StatusCode != http.StatusOK || lenient.Unmarshal(body, &l) != nil {
		return
	}
	fromLeadership(&l, &a)
	p.record(a)
}

func (p *probe) askHTTP() { p.getLeader(HTTP, p.client, "client_id="+url.QueryEscape(p.client)) }

func (p *probe) askAnonymous() {
	switch AnonPoll(p.anon.Load()) {
	case AnonBounded:
		p.getLeader(AnonHTTP, "", "")
	case AnonLong:
		p.getLeader(AnonHTTP, "", "max_valid_for="+anonLongPromise.String())
	}
}

// askShared is the second process that shares the application's client_id
// in Disorderly rounds: it reads, is promised, and never acknowledges.
func (p *probe) askShared() {
	if p.disorder.Load() {
		p.getLeader(SharedHTTP, p.client, "client_id="+url.QueryEscape(p.client))
	}
}

// oneOffReaders asks GET /leader once for each of n client ids never used
// before, as an application that makes a client per request does; none
// acknowledges.
func (p *probe) oneOffReaders(round, n int) {
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("one-off-%d-%d", round, i)
		p.getLeader(OneOffHTTP, id, "client_id="+id)
	}
}

func (p *probe) askGRPC() {
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	a := Answer{Surface: GRPC, Client: p.client, Send: Now()}
	l, err := batonv1.NewLeaderElectionClient(p.conn).GetLeadership(ctx,
		&batonv1.GetLeadershipRequest{ClientId: p.client})
	a.Recv = Now()
	if err != nil {
		return
	}
	fromLeadership(l, &a)
	p.record(a)
}

func (p *probe) askHealth() {
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	a := Answer{Surface: Health, Send: Now()}
	resp, err := healthpb.NewHealthClient(p.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "leader"})
	a.Recv = Now()
	if err != nil {
		return
	}
	a.IsLeader = resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	p.record(a)
}

// watch keeps one WatchLeadership stream open (reopening it when it breaks)
// and records every message.
func (p *probe) watch() {
	defer p.wg.Done()
	client := batonv1.NewLeaderElectionClient(p.conn)
	for !p.done() {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-p.stop:
			case <-p.m.Done():
			case <-ctx.Done():
			}
			cancel()
		}()
		opened := Now()
		stream, err := client.WatchLeadership(ctx, &batonv1.WatchLeadershipRequest{
			ClientId: p.client, HeartbeatInterval: durationpb.New(100 * time.Millisecond)})
		for err == nil {
			var msg *batonv1.WatchLeadershipResponse
			if msg, err = stream.Recv(); err == nil {
				a := Answer{Surface: Watch, Client: p.client, Send: opened, Recv: Now()}
				fromLeadership(msg.GetLeadership(), &a)
				p.record(a)
			}
		}
		cancel()
		select {
		case <-p.stop:
		case <-p.m.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// askClientGo asks goelector's GET /leader: isLeader and fencingToken.
func (p *probe) askClientGo() {
	a := Answer{Surface: ClientGo, Send: Now()}
	resp, err := p.http.Get("http://" + p.m.HTTPAddr + "/leader")
	if err != nil {
		return
	}
	var body struct {
		IsLeader     bool  `json:"isLeader"`
		FencingToken int32 `json:"fencingToken"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	a.Recv = Now()
	if err != nil {
		return
	}
	a.IsLeader, a.Token = body.IsLeader, body.FencingToken
	p.record(a)
}

// application is the cooperating application: it starts its leader work on
// a leader answer and, on the first answer after that saying not leader or
// stepping down (or naming a new term), stops it and acknowledges the term.
// It never resumes work for a term it acknowledged: an answer that arrives
// late does not restart it.
//
// Only news stops the work: an answer asked after the work began, or one
// from a surface that has answered leader for the term since. Each surface
// answers in order, but the surfaces are asked concurrently, so an answer
// asked just before the term began can arrive just after another surface's
// first leader answer of it; stopping on that would acknowledge the term as
// it begins, and every promise of the term given after the acknowledgement
// would then hold up its handover until it lapsed.
func (p *probe) application(a Answer) {
	leading := a.IsLeader && !a.SteppingDown
	p.mu.Lock()
	news := a.Send >= p.since || p.ledOn&(1<<a.Surface) != 0
	stopped, until := p.token, p.until
	ack := p.working && news && (!leading || a.Token != p.token)
	if ack {
		p.working, p.acked = false, p.token
	}
	if leading && !p.working && (a.Token != p.acked || !p.ackedAny) {
		p.working, p.token, p.since, p.ledOn = true, a.Token, a.Recv, 0
		p.revision, p.until = a.Revision, 0
	}
	if p.working && leading && a.Token == p.token {
		p.ledOn |= 1 << a.Surface
		p.until = max(p.until, a.ValidUntil)
	}
	p.ackedAny = p.ackedAny || ack
	p.mu.Unlock()
	if ack {
		p.wg.Add(1) // the caller's loop holds the group open
		go func() {
			defer p.wg.Done()
			p.acknowledge(stopped, until)
		}()
	}
}

// acknowledge tells the sidecar the application's leader work for token,
// whose latest leader answer promised until, has ended, and records it. In
// Disorderly rounds it does so late, naming until, then again naming an
// earlier deadline (an older acknowledgement overtaken by the newer), and
// once more later (a retry whose reply was lost).
func (p *probe) acknowledge(token int32, until Instant) {
	// The work has stopped (p.working is false): once a write in flight
	// has ended, none will start.
	p.writeMu.Lock()
	p.writeMu.Unlock() // a barrier, not a critical section
	if !p.disorder.Load() {
		p.sendAck(token, 0)
		return
	}
	time.Sleep(150 * time.Millisecond)
	p.sendAck(token, until)
	p.sendAck(token, until.Add(-100*time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	p.sendAck(token, until)
}

// sendAck acknowledges token, up to the deadline until if it is not 0, and
// records the acknowledgement.
func (p *probe) sendAck(token int32, until Instant) {
	ack := Ack{Member: p.m.Name, Client: p.client, Token: token, At: Now()}
	var err error
	if AckVia(p.ackVia.Load()) == AckHTTP {
		ack.Acknowledged, err = p.ackHTTP(token, until)
	} else {
		req := &batonv1.AcknowledgeStepDownRequest{ClientId: p.client, FencingToken: token}
		if until != 0 {
			req.ValidUntilBoottime = durationpb.New(time.Duration(until))
		}
		ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
		var resp *batonv1.AcknowledgeStepDownResponse
		resp, err = batonv1.NewLeaderElectionClient(p.conn).AcknowledgeStepDown(ctx, req)
		cancel()
		ack.Acknowledged = err == nil && resp.GetAcknowledged()
	}
	ack.Done = Now()
	p.rec.addAck(ack)
}

func (p *probe) ackHTTP(token int32, until Instant) (bool, error) {
	u := fmt.Sprintf("http://%s/leader/ack?client_id=%s&fencing_token=%d", p.m.HTTPAddr, url.QueryEscape(p.client), token)
	if until != 0 {
		u += fmt.Sprintf("&valid_until_boottime=%d.%09ds", until/Instant(time.Second), until%Instant(time.Second))
	}
	resp, err := p.http.Post(u, "", nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("POST /leader/ack: %s", resp.Status)
	}
	var body struct {
		Acknowledged bool `json:"acknowledged"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	return body.Acknowledged, err
}
