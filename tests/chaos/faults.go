package main

import (
	"fmt"
	"google.golang.org/grpc"
	"net/http"
	"strconv"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batonv1 "github.com/baton-sidecar/baton/clients/go/batonv1"

	"baton/tests/internal/netfault"
)

// AnonPoll is what the anonymous poller does in a round.
type AnonPoll int32

const (
	AnonOff     AnonPoll = iota
	AnonBounded          // GET /leader as is: promised at most --max-unnamed-valid-for
	AnonLong             // asks for max_valid_for=anonLongPromise: promised the whole term
)

// String is how a progress line names a.
func (a AnonPoll) String() string {
	switch a {
	case AnonBounded:
		return "an anonymous poller at the sidecar's bound"
	case AnonLong:
		return "an anonymous poller asking max_valid_for=" + anonLongPromise.String()
	}
	return "no anonymous poller"
}

// alternate says whether the nth round of a fault takes the second of two
// ways (of acknowledging, of polling anonymously): every other round, the
// pattern shifted every two rounds, so that over four rounds each way meets
// a mid-fault restart (nth odd) once and a round without one once. (Counting
// by the group's round instead would give a fault the same way every time
// when its group runs an even number of faults.)
func alternate(nth int) bool { return (nth+nth/2)%2 == 1 }

// anonPoll is what the anonymous poller does in the nth round of an Anon
// fault: AnonBounded and AnonLong in turn.
func anonPoll(nth int) AnonPoll {
	if alternate(nth) {
		return AnonLong
	}
	return AnonBounded
}

// anonLongPromise: at least any renew deadline the harness runs with (the
// defaults' is 10 s), so the answer promises as much as the sidecar can.
const anonLongPromise = 10 * time.Second

// fault is one kind of round: Inject does it to a group whose stable leader
// is leader, returns the instant the fault began (handover is timed from
// it), and has undone it (healed, resumed, restarted) when it returns; the
// round then waits for a stable leader again.
type fault struct {
	Name     string
	What     string
	ClientGo bool   // may target a client-go leader (else the leader must be baton)
	Anon     bool   // an anonymous poller (never acknowledges) runs during the round, AnonBounded and AnonLong in turn
	AckVia   AckVia // how the application acknowledges in this round
	// Disorderly: the application acknowledges late, twice and out of order,
	// naming its deadline, and a second process shares its client_id.
	Disorderly bool
	// Shared: it disturbs every group (the API server), so it runs while
	// no other group is in a round, and every round's fault is its own.
	Shared bool
	// NewMember: it replaces a follower itself, so the round adds no
	// mid-fault restart of its own (see group.inject).
	NewMember bool
	Inject    func(g *group, leader *slot, round int) (Instant, error)
}

// pastTheLease is how long pauses and partitions last in g: long enough for
// the followers to find the Lease expired and take it.
func (g *group) pastTheLease() time.Duration { return g.timing.Lease + 500*time.Millisecond }

var faults = []*fault{
	{Name: "kill9", What: "kill -9 of the leader, then a new process in its place", ClientGo: true,
		Inject: func(g *group, l *slot, _ int) (Instant, error) {
			t := Now()
			l.member.Kill()
			return t, g.replace(l)
		}},
	{Name: "sigterm", What: "SIGTERM of the leader (release on shutdown), then a new process", ClientGo: true,
		Inject: sigterm},
	{Name: "sigterm-anon", What: "sigterm while an anonymous poller holds promises nobody acknowledges",
		Anon: true, AckVia: AckHTTP, Inject: sigterm},
	{Name: "resign-grpc", What: "gRPC Resign on the leader", Inject: func(g *group, l *slot, _ int) (Instant, error) {
		ctx, cancel := requestContext()
		defer cancel()
		t := Now()
		// A member that has just been restarted may lead before its channel
		// has connected: wait for the connection rather than fail fast.
		_, err := batonv1.NewLeaderElectionClient(l.probe.conn).Resign(ctx, &batonv1.ResignRequest{},
			grpc.WaitForReady(true))
		return t, err
	}},
	{Name: "resign-http", What: "POST /resign on the leader; the application acknowledges over HTTP",
		AckVia: AckHTTP, Inject: resignHTTP},
	{Name: "acks", What: "POST /resign while 1,100 one-off client ids hold promises, a second process shares the application's client_id and never acknowledges, and the application acknowledges late, twice and out of order, naming its deadline",
		AckVia: AckGRPC, Disorderly: true, Inject: func(g *group, l *slot, round int) (Instant, error) {
			l.probe.oneOffReaders(round, 1100)
			return resignHTTP(g, l, round)
		}},
	{Name: "sigstop", What: "SIGSTOP of the leader past the lease, then SIGCONT", ClientGo: true,
		Inject: func(g *group, l *slot, _ int) (Instant, error) {
			t := Now()
			l.signal(syscall.SIGSTOP)
			time.Sleep(g.pastTheLease())
			l.signal(syscall.SIGCONT)
			return t, nil
		}},
	{Name: "blackhole", What: "the leader's link to the API server black-holed past the lease", ClientGo: true,
		Inject: degradeLink(func(_ *group, p *netfault.Proxy) { p.BlackHole() })},
	{Name: "lost-replies", What: "the API server's replies to the leader held past the lease: its writes land, their responses do not", ClientGo: true,
		Inject: degradeLink(func(_ *group, p *netfault.Proxy) { p.HoldReplies() })},
	{Name: "latency", What: "latency above the renew deadline on the leader's link, past the lease", ClientGo: true,
		Inject: degradeLink(func(g *group, p *netfault.Proxy) { p.Delay(g.timing.Renew + 500*time.Millisecond) })},
	{Name: "apiserver-restart", What: "kube-apiserver restarted (scripts/controlplane restart-apiserver)", ClientGo: true,
		Shared: true, Inject: func(g *group, _ *slot, _ int) (Instant, error) {
			t := Now()
			return t, g.h.cp.RestartAPIServer()
		}},
	{Name: "clock-step", What: "this machine's wall clock stepped back 30s for longer than the lease, then forward again (nothing may change; needs CAP_SYS_TIME)",
		ClientGo: true, Shared: true, Inject: func(g *group, _ *slot, _ int) (Instant, error) {
			t := Now()
			if err := wall.Step(-wallClockStep); err != nil {
				return t, err
			}
			time.Sleep(g.pastTheLease())
			return t, wall.Restore()
		}},
	{Name: "delete", What: "the Lease deleted under its leader", Inject: func(g *group, _ *slot, _ int) (Instant, error) {
		ctx, cancel := requestContext()
		defer cancel()
		t := Now()
		return t, g.h.admin.CoordinationV1().Leases(g.ns).Delete(ctx, g.lease, metav1.DeleteOptions{})
	}},
	{Name: "edit-holder", What: "a third party writes a bogus holderIdentity", Inject: func(g *group, _ *slot, round int) (Instant, error) {
		return g.editLease(func(l *coordinationv1.Lease) {
			bogus := fmt.Sprintf("chaos-bogus-%d", round)
			l.Spec.HolderIdentity = &bogus
		})
	}},
	{Name: "edit-duration", What: "a third party cuts leaseDurationSeconds to 1, then the leader's link is black-holed",
		Inject: func(g *group, l *slot, _ int) (Instant, error) {
			t, err := g.editLease(func(l *coordinationv1.Lease) {
				one := int32(1)
				l.Spec.LeaseDurationSeconds = &one
			})
			if err != nil {
				return t, err
			}
			time.Sleep(2 * g.timing.Retry) // a renew or two with the cut duration
			l.proxy.BlackHole()
			time.Sleep(g.pastTheLease())
			l.proxy.Forward()
			return t, nil
		}},
	{Name: "reapply-cut-off", What: "the leader's link black-holed; the Lease deleted and re-applied without a holder (replace --force, a GitOps sync)",
		Inject: func(g *group, l *slot, _ int) (Instant, error) {
			l.proxy.BlackHole()
			t := Now()
			err := g.reapplyWithoutHolder()
			time.Sleep(g.pastTheLease())
			l.proxy.Forward()
			return t, err
		}},
	{Name: "edit-duration-new-member", What: "the leader's link black-holed; leaseDurationSeconds cut to 1; a follower replaced by a new process with no history",
		NewMember: true, Inject: func(g *group, l *slot, _ int) (Instant, error) {
			l.proxy.BlackHole()
			t, err := g.editLease(func(l *coordinationv1.Lease) {
				one := int32(1)
				l.Spec.LeaseDurationSeconds = &one
			})
			if err == nil {
				for _, s := range g.slots {
					if s != l {
						s.member.Kill()
						err = g.replace(s)
						break
					}
				}
			}
			time.Sleep(g.pastTheLease())
			l.proxy.Forward()
			return t, err
		}},
	{Name: "watch-stall", What: "the followers' open connections to the API server stall (their watches go quiet; new connections work), then kill -9 of the leader; healed once another member leads",
		Inject: func(g *group, l *slot, _ int) (Instant, error) {
			for _, s := range g.slots {
				if s != l {
					s.proxy.StallOpen()
				}
			}
			defer func() {
				for _, s := range g.slots {
					s.proxy.Forward()
				}
			}()
			// Longer than a follower sleeps on a quiet watch (3 retry periods).
			time.Sleep(4 * g.timing.Retry)
			t := Now()
			l.member.Kill()
			if err := g.awaitLeaderBesides(l); err != nil {
				return t, err
			}
			return t, g.replace(l)
		}},
	{Name: "edit-annotations", What: "a third party adds annotations (nothing may change)",
		Inject: func(g *group, _ *slot, round int) (Instant, error) {
			return g.editLease(func(l *coordinationv1.Lease) {
				if l.Annotations == nil {
					l.Annotations = map[string]string{}
				}
				l.Annotations["chaos.baton.dev/round"] = strconv.Itoa(round)
			})
		}},
	{Name: "conflicts", What: "a competing writer: rapid GET+PUT of an annotation for 2s (409 storm)",
		Inject: func(g *group, _ *slot, round int) (Instant, error) {
			t := Now()
			end := time.Now().Add(2 * time.Second)
			for i := 0; i < 1000 && time.Now().Before(end); i++ {
				_, _ = g.editLeaseOnce(func(l *coordinationv1.Lease) {
					if l.Annotations == nil {
						l.Annotations = map[string]string{}
					}
					l.Annotations["chaos.baton.dev/writer"] = fmt.Sprintf("%d-%d", round, i)
				})
			}
			return t, nil
		}},
	{Name: "token-rotation", What: "the leader's token file rewritten with a fresh token; the old one revoked",
		Inject: func(g *group, l *slot, _ int) (Instant, error) {
			t := Now()
			return t, g.rotateToken(l)
		}},
}

func faultNamed(name string) *fault {
	for _, f := range faults {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// degradeLink is a fault that degrades the leader's link to the API server
// with degrade for the group's pastTheLease, then heals it.
func degradeLink(degrade func(*group, *netfault.Proxy)) func(*group, *slot, int) (Instant, error) {
	return func(g *group, l *slot, _ int) (Instant, error) {
		t := Now()
		degrade(g, l.proxy)
		time.Sleep(g.pastTheLease())
		l.proxy.Forward()
		return t, nil
	}
}

func resignHTTP(g *group, l *slot, _ int) (Instant, error) {
	t := Now()
	resp, err := l.probe.http.Post("http://"+l.member.HTTPAddr+"/resign", "", nil)
	if err != nil {
		return t, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return t, fmt.Errorf("POST /resign: %s", resp.Status)
	}
	return t, nil
}

func sigterm(g *group, l *slot, _ int) (Instant, error) {
	t := Now()
	l.signal(syscall.SIGTERM)
	return t, g.replace(l)
}

// editLease changes the Lease as the admin would with kubectl edit,
// retrying on conflicts (at most 10 times); it returns when the write
// succeeded.
func (g *group) editLease(change func(*coordinationv1.Lease)) (Instant, error) {
	var err error
	for i := 0; i < 10; i++ {
		var t Instant
		if t, err = g.editLeaseOnce(change); err == nil || !apierrors.IsConflict(err) {
			return t, err
		}
	}
	return Now(), err
}

// editLeaseOnce is one read and write of the Lease; the instant is just
// before the write.
func (g *group) editLeaseOnce(change func(*coordinationv1.Lease)) (Instant, error) {
	ctx, cancel := requestContext()
	defer cancel()
	leases := g.h.admin.CoordinationV1().Leases(g.ns)
	l, err := leases.Get(ctx, g.lease, metav1.GetOptions{})
	if err != nil {
		return Now(), err
	}
	change(l)
	t := Now()
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return t, err
}

// rotateToken revokes s's token (its ServiceAccount is deleted and made
// again, which kills every token bound to the old one), mints a new one and
// writes it to s's token file, as the kubelet rotates a projected token.
// reapplyWithoutHolder deletes the Lease and creates it again from a
// manifest with no holder, as `kubectl replace --force` of a pre-created
// Lease or a GitOps tool's delete and apply would.
func (g *group) reapplyWithoutHolder() error {
	ctx, cancel := requestContext()
	defer cancel()
	leases := g.h.admin.CoordinationV1().Leases(g.ns)
	if err := leases.Delete(ctx, g.lease, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	fifteen := int32(15)
	_, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: g.lease, Namespace: g.ns},
		Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: &fifteen},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A member that saw the deletion recreated it first, as it does at
		// once: the cut-off leader's Lease was still replaced by a new object.
		return nil
	}
	return err
}

func (g *group) rotateToken(s *slot) error {
	ctx, cancel := requestContext()
	defer cancel()
	sas := g.h.admin.CoreV1().ServiceAccounts(g.ns)
	if err := sas.Delete(ctx, s.sa, metav1.DeleteOptions{}); err != nil {
		return err
	}
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: s.sa}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	hour := int64(3600)
	tr, err := sas.CreateToken(ctx, s.sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return writeFileAtomically(s.tokenFile, []byte(tr.Status.Token))
}
