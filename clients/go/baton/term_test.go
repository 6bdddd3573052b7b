package baton_test

import (
	"errors"
	"testing"

	"github.com/baton-sidecar/baton/clients/go/baton"
)

func TestTermOfTakesBothFencingNumbers(t *testing.T) {
	term := baton.TermOf(baton.Leadership{FencingToken: 3, FencingRevision: mustRevision(t, max128)})
	if term != (baton.Term{Revision: mustRevision(t, max128), Token: 3}) {
		t.Errorf("TermOf = %+v", term)
	}
	if got, want := term.String(), "revision "+max128+", token 3"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}

func TestTheZeroFenceOrderComparesRevisions(t *testing.T) {
	var zero baton.FenceOrder
	if zero != baton.ByRevision || zero.String() != "revision" || baton.ByToken.String() != "token" {
		t.Errorf("orders: zero %v, ByToken %v; want revision, token", zero, baton.ByToken)
	}
}

func TestStaleTermErrorUnwrapsToTheErrorOfItsOrder(t *testing.T) {
	term := baton.Term{Revision: mustRevision(t, "100"), Token: 7}
	highest := baton.Term{Revision: mustRevision(t, "250"), Token: 5}

	var err error = &baton.StaleTermError{Key: "k", Order: baton.ByRevision, Term: term, Highest: highest}
	var rev *baton.StaleRevisionError
	if !errors.As(err, &rev) || rev.Revision != term.Revision || rev.Highest != highest.Revision {
		t.Errorf("ByRevision: errors.As(*StaleRevisionError) = %+v; want revision 100, highest 250", rev)
	}
	if errors.As(err, new(*baton.StaleTokenError)) {
		t.Error("ByRevision: the refusal matches *StaleTokenError too")
	}

	err = &baton.StaleTermError{Key: "k", Order: baton.ByToken, Term: term, Highest: highest}
	var tok *baton.StaleTokenError
	if !errors.As(err, &tok) || tok.Token != 7 || tok.Highest != 5 {
		t.Errorf("ByToken: errors.As(*StaleTokenError) = %+v; want token 7, highest 5", tok)
	}
}

func TestParseTermReadsTheNumberOfItsOrder(t *testing.T) {
	for _, c := range []struct {
		order  baton.FenceOrder
		number string
		want   baton.Term
		ok     bool
	}{
		{baton.ByRevision, max128, baton.Term{Revision: mustRevision(t, max128)}, true},
		{baton.ByRevision, "0250", baton.Term{}, false}, // a leading zero
		{baton.ByRevision, "x", baton.Term{}, false},
		{baton.ByToken, "5", baton.Term{Token: 5}, true},
		{baton.ByToken, "2147483648", baton.Term{}, false}, // beyond an int32
		{baton.ByToken, "x", baton.Term{}, false},
	} {
		got, err := c.order.ParseTerm(c.number)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%v ParseTerm(%q) = %+v, %v; want %+v, ok %v", c.order, c.number, got, err, c.want, c.ok)
		}
	}
}
