package baton

import (
	"cmp"
	"fmt"
	"math/bits"
	"strconv"
)

// Revision is a fencing revision (Leadership.FencingRevision): the
// resourceVersion of the Lease write that won a term, an integer from 0 to
// 2^128-1 (KEP-5504 allows resourceVersions of up to 128 bits, so up to 39
// decimal digits). The zero value is 0, the revision of an answer that knew
// none. Revisions are comparable with ==, and Compare orders them as
// integers. String and ParseRevision convert them to and from decimal
// digits, the form the sidecar's JSON and RevisionHeader carry.
type Revision struct{ hi, lo uint64 }

// ParseRevision reads a revision written as String writes it: decimal
// digits only, no sign, no leading zero ("0" itself aside), at most
// 2^128-1.
func ParseRevision(s string) (Revision, error) {
	r, ok := parseRevision(s)
	if !ok {
		return Revision{}, fmt.Errorf("baton: %q is not a fencing revision (decimal digits without sign or leading zero, at most 2^128-1)", s)
	}
	return r, nil
}

// parseRevision is the one reading of a revision in decimal digits, for
// ParseRevision, the answers and the header: ok is false when s is not
// digits only, has a leading zero or exceeds 2^128-1.
func parseRevision(s string) (r Revision, ok bool) {
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return Revision{}, false
	}
	for i := 0; i < len(s); i++ {
		d := s[i] - '0' // a byte: below '0' wraps around above 9
		if d > 9 {
			return Revision{}, false
		}
		if r, ok = r.times10Plus(uint64(d)); !ok {
			return Revision{}, false
		}
	}
	return r, true
}

// times10Plus returns 10*r + d (d < 10); ok is false when that exceeds
// 2^128-1.
func (r Revision) times10Plus(d uint64) (_ Revision, ok bool) {
	over, hi := bits.Mul64(r.hi, 10)
	carry, lo := bits.Mul64(r.lo, 10)
	hi, c1 := bits.Add64(hi, carry, 0)
	lo, c2 := bits.Add64(lo, d, 0)
	hi, c3 := bits.Add64(hi, 0, c2)
	return Revision{hi, lo}, over|c1|c3 == 0
}

// String returns r in decimal digits, without leading zeros.
func (r Revision) String() string {
	if r.hi == 0 {
		return strconv.FormatUint(r.lo, 10)
	}
	// r = q*10^19 + rest with rest < 10^19: q's digits, then rest's 19.
	const e19 = 10_000_000_000_000_000_000
	q := Revision{hi: r.hi / e19}
	var rest uint64
	q.lo, rest = bits.Div64(r.hi%e19, r.lo, e19)
	return q.String() + fmt.Sprintf("%019d", rest)
}

// Compare returns -1, 0 or +1 as r is less than, equal to or greater than
// o, as integers.
func (r Revision) Compare(o Revision) int {
	if c := cmp.Compare(r.hi, o.hi); c != 0 {
		return c
	}
	return cmp.Compare(r.lo, o.lo)
}

// MarshalText writes r as String does, so that encoding/json and the like
// give a revision as a string of digits.
func (r Revision) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a revision as ParseRevision does.
func (r *Revision) UnmarshalText(text []byte) error {
	v, err := ParseRevision(string(text))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
