package baton

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNotLeader matches (errors.Is) a *NotLeaderError: this pod does not
	// lead, or not for long enough.
	ErrNotLeader = errors.New("baton: not leader")
	// ErrSidecarUnavailable matches (errors.Is) an *UnavailableError: no
	// sidecar answered.
	ErrSidecarUnavailable = errors.New("baton: sidecar unavailable")
	// ErrWrongLease matches (errors.Is) a *WrongLeaseError: the sidecar
	// serves another Lease than the one this Client expects.
	ErrWrongLease = errors.New("baton: wrong Lease")
)

// NotLeaderError is RequireLeader's answer when this pod must not write.
type NotLeaderError struct {
	// Leadership is the state the decision was made on.
	Leadership Leadership
	// MinValidity is the remaining validity that was asked for.
	MinValidity time.Duration
	// Remaining is the validity that was left (zero when not leader).
	Remaining time.Duration
}

func (e *NotLeaderError) Error() string {
	l := e.Leadership
	switch {
	case l.IsLeader:
		return fmt.Sprintf("baton: leader, but only %v of guaranteed leadership left (%v needed)",
			e.Remaining.Round(time.Millisecond), e.MinValidity)
	case !l.Observed:
		return "baton: not leader: the sidecar has not read the Lease yet"
	case l.SteppingDown:
		return "baton: not leader: the sidecar is stepping down"
	case l.HolderIdentity == "":
		return "baton: not leader: the Lease has no holder"
	case l.HolderIdentity == l.Identity:
		return "baton: not leader: the renew deadline passed"
	default:
		return fmt.Sprintf("baton: not leader: the Lease is held by %s", l.HolderIdentity)
	}
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// UnavailableError says that no sidecar answered at Addr; Err is the
// transport's error.
type UnavailableError struct {
	Addr string
	Err  error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("baton: no sidecar answering at %s (is the baton container running, and is $%s right?): %v",
		e.Addr, EnvGRPCAddr, e.Err)
}

// Is makes errors.Is(err, ErrSidecarUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrSidecarUnavailable }

// Unwrap returns the transport's error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// LeaseRef names a Lease.
type LeaseRef struct {
	Name, Namespace string
}

func (r LeaseRef) String() string { return r.Namespace + "/" + r.Name }

// matches reports whether a sidecar serving served serves r; an empty
// Namespace in r matches any.
func (r LeaseRef) matches(served LeaseRef) bool {
	return r.Name == served.Name && (r.Namespace == "" || r.Namespace == served.Namespace)
}

// WrongLeaseError says that the sidecar at Addr serves the Lease Served, not
// the Lease Expected this Client was told to expect (WithLease): its answers
// are about another workload's leadership and were refused. Act as a
// follower and fix the address or the expected Lease.
type WrongLeaseError struct {
	Addr             string
	Expected, Served LeaseRef
}

func (e *WrongLeaseError) Error() string {
	return fmt.Sprintf("baton: the sidecar at %s serves Lease %s, not the expected %s (is $%s right?)",
		e.Addr, e.Served, e.Expected, EnvGRPCAddr)
}

// Is makes errors.Is(err, ErrWrongLease) true.
func (e *WrongLeaseError) Is(target error) bool { return target == ErrWrongLease }
