package baton

import (
	"time"

	"github.com/baton-sidecar/baton/clients/go/batonv1"
)

// Leadership is what the sidecar reported at one moment. The zero value
// means "not leader, nothing known", which is also what an application must
// assume while the sidecar cannot be reached.
type Leadership struct {
	// IsLeader: this pod held the Lease, within its renew deadline, when the
	// sidecar produced this answer.
	IsLeader bool
	// Identity is this sidecar's holder identity (new for every sidecar
	// process).
	Identity string
	// HolderIdentity is the Lease's holder as last observed; empty when
	// nobody holds it.
	HolderIdentity string
	// FencingToken is the token to tag writes with while IsLeader (see the
	// package documentation); otherwise the last observed leaseTransitions.
	FencingToken int32
	// LeaseName, LeaseNamespace and LeaseUID identify the Lease.
	LeaseName, LeaseNamespace, LeaseUID string
	// AcquireTime and RenewTime are the Lease's (holder's wall clock); zero
	// when unknown. For information only.
	AcquireTime, RenewTime time.Time
	// ValidFor is how much longer leadership was guaranteed when the sidecar
	// answered; zero when not leader.
	ValidFor time.Duration
	// ValidUntil is when that guarantee ends on this process's monotonic
	// clock, counted from when the request was sent (unary calls) or the
	// message arrived (Watch). Zero when not leader. See Remaining.
	ValidUntil time.Time
	// LeaseDuration is the Lease's leaseDurationSeconds; zero when unknown.
	LeaseDuration time.Duration
	// Observed: the sidecar has read the Lease (or its absence) at least once.
	Observed bool
	// SteppingDown: the sidecar is shutting down or resigning.
	SteppingDown bool
}

// Remaining is how much guaranteed leadership is left now: zero when not
// leader or when ValidUntil has passed.
func (l Leadership) Remaining() time.Duration {
	if !l.IsLeader || l.ValidUntil.IsZero() {
		return 0
	}
	return max(time.Until(l.ValidUntil), 0)
}

// key is what Watch compares to decide whether a state is news: everything
// but the times that move on every renew or answer.
type key struct {
	isLeader, observed, steppingDown bool
	identity, holder, uid            string
	token                            int32
}

func (l Leadership) key() key {
	return key{l.IsLeader, l.Observed, l.SteppingDown, l.Identity, l.HolderIdentity, l.LeaseUID,
		l.FencingToken}
}

// expired is l after its guarantee ran out without news from the sidecar.
func (l Leadership) expired() Leadership {
	l.IsLeader, l.ValidFor, l.ValidUntil = false, 0, time.Time{}
	return l
}

// fromProto converts an answer; since is when its validity starts counting.
func fromProto(m *batonv1.Leadership, since time.Time) Leadership {
	l := Leadership{
		IsLeader:       m.GetIsLeader(),
		Identity:       m.GetIdentity(),
		HolderIdentity: m.GetHolderIdentity(),
		FencingToken:   m.GetFencingToken(),
		LeaseName:      m.GetLeaseName(),
		LeaseNamespace: m.GetLeaseNamespace(),
		LeaseUID:       m.GetLeaseUid(),
		Observed:       m.GetObserved(),
		SteppingDown:   m.GetSteppingDown(),
	}
	if m.AcquireTime != nil {
		l.AcquireTime = m.AcquireTime.AsTime()
	}
	if m.RenewTime != nil {
		l.RenewTime = m.RenewTime.AsTime()
	}
	if m.LeaseDuration != nil {
		l.LeaseDuration = m.LeaseDuration.AsDuration()
	}
	if l.IsLeader && m.ValidFor != nil {
		l.ValidFor = m.ValidFor.AsDuration()
		l.ValidUntil = since.Add(l.ValidFor)
	}
	return l
}
