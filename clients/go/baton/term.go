package baton

import (
	"fmt"
	"strconv"
)

// FenceOrder is what a store fence (pgfence, etcdfence, kubefence) compares
// to decide which of two terms is the newer. The zero value is ByRevision.
// One order per fenced key: a fence never compares a revision with a token.
type FenceOrder int

const (
	// ByRevision compares fencing revisions as integers (the default).
	// They keep growing across Lease deletion; Kubernetes 1.35 or later.
	ByRevision FenceOrder = iota
	// ByToken compares fencing tokens (leaseTransitions): for API servers
	// older than 1.35. A Lease deleted and recreated by a member with no
	// history starts them again at 0, and the fence then refuses every
	// later leader until the token passes the highest one accepted.
	ByToken
)

// String returns "revision" or "token", what o compares.
func (o FenceOrder) String() string {
	switch o {
	case ByRevision:
		return "revision"
	case ByToken:
		return "token"
	}
	return "Order(" + strconv.Itoa(int(o)) + ")"
}

// Term is what a leader tags its writes to a store fence with: the fencing
// numbers of the answer that said it leads.
type Term struct {
	// Revision is the fencing revision (Leadership.FencingRevision), an
	// integer of up to 128 bits; ParseRevision reads the sidecar's JSON
	// "fencingRevisionDecimal".
	Revision Revision
	// Token is the fencing token (Leadership.FencingToken).
	Token int32
}

// TermOf returns the term of a leader answer. Take it from the answer that
// said this pod leads (RunWhileLeader's, or a Leadership whose IsLeader is
// true), right before the write.
func TermOf(l Leadership) Term {
	return Term{Revision: l.FencingRevision, Token: l.FencingToken}
}

// String returns both numbers of t, as "revision 250, token 4".
func (t Term) String() string {
	return fmt.Sprintf("revision %v, token %d", t.Revision, t.Token)
}

// StaleError returns the baton package's error for a fence ordered o that
// refused term because it holds highest: a *StaleTokenError with their
// tokens when o is ByToken, else a *StaleRevisionError with their
// revisions. A store fence's refusal unwraps to it, so that errors.As with
// those types works as for the in-memory fences.
func (o FenceOrder) StaleError(term, highest Term) error {
	if o == ByToken {
		return &StaleTokenError{Token: term.Token, Highest: highest.Token}
	}
	return &StaleRevisionError{Revision: term.Revision, Highest: highest.Revision}
}

// ParseTerm reads the number a fence ordered o compares, written in decimal
// digits (a revision, or a token when o is ByToken), as the Term with that
// number and 0 for the other: what a fence that stores only the compared
// number holds, ready for StaleError.
func (o FenceOrder) ParseTerm(number string) (Term, error) {
	if o == ByToken {
		token, err := strconv.ParseInt(number, 10, 32)
		if err != nil {
			return Term{}, fmt.Errorf("baton: %q is not a fencing token", number)
		}
		return Term{Token: int32(token)}, nil
	}
	revision, err := ParseRevision(number)
	if err != nil {
		return Term{}, err
	}
	return Term{Revision: revision}, nil
}

// StaleTermError is a store fence's refusal of a write whose term is older
// than one the fence already accepted for Key: the writer is a deposed
// leader, and its write did not land. pgfence's StaleError is this type.
// Its Unwrap gives the in-memory fences' error for the same refusal
// (FenceOrder.StaleError), so errors.As with *StaleTokenError or
// *StaleRevisionError works as for a Fence or a RevisionFence.
type StaleTermError struct {
	Key   string
	Order FenceOrder
	// Term is the refused term; Highest is the one the fence holds.
	Term, Highest Term
}

func (e *StaleTermError) Error() string {
	return fmt.Sprintf("baton: stale write to %q refused (by %v): term %v; a write of term %v was already accepted",
		e.Key, e.Order, e.Term, e.Highest)
}

// Unwrap returns the in-memory fences' error for this refusal.
func (e *StaleTermError) Unwrap() error { return e.Order.StaleError(e.Term, e.Highest) }
