// Package pgfence fences writes into PostgreSQL with the term a baton
// leader was given: a write lands only if no write of a newer term was
// accepted for the same key before it, and the check and the write commit
// together.
//
// The store keeps one row per fenced key in a fence table (EnsureSchema
// creates it):
//
//	CREATE TABLE baton_fence (
//	  key        text PRIMARY KEY,
//	  revision   numeric(39, 0) NOT NULL CHECK (revision >= 0),
//	  token      integer NOT NULL CHECK (token >= 0),
//	  updated_at timestamptz NOT NULL DEFAULT now()
//	);
//
// Fence.Admit runs one statement inside the writer's transaction:
//
//	INSERT INTO baton_fence AS f (key, revision, token) VALUES ($1, $2, $3)
//	ON CONFLICT (key) DO UPDATE
//	  SET revision = excluded.revision, token = excluded.token, updated_at = now()
//	  WHERE f.revision <= excluded.revision
//	RETURNING f.revision
//
// A row back means the term is admitted, and PostgreSQL holds the fence
// row's lock until the transaction ends, so a writer of another term waits
// and then compares with what this one committed: there is no window
// between the check and the write. No row means a newer term was accepted:
// Admit returns a *StaleError and the caller rolls back. Fence.Write does
// all of it around the caller's write.
//
// Which order (see docs/fencing.md): the fencing revision, the
// resourceVersion of the write that won the term, keeps growing across
// leaders even when the Lease is deleted and recreated by a member that has
// no history (its leaseTransitions, the fencing token, start again at 0).
// It is comparable on Kubernetes 1.35 or later (KEP-5504) and is this
// package's default, ByRevision; the token is stored beside it. On older
// servers fence ByToken. One order per table.
package pgfence

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/baton-sidecar/baton/clients/go/baton"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// DefaultTable is the fence table's name when Fence.Table is empty.
const DefaultTable = "baton_fence"

// Fence fences writes through one fence table. The zero value fences by
// revision through the table baton_fence in the connection's search path;
// it holds no state and is safe for concurrent use.
type Fence struct {
	// Table names the fence table: {"baton_fence"} when empty, or e.g.
	// {"myschema", "fence"}.
	Table pgx.Identifier
	// Order is what the fence compares; ByRevision when zero.
	Order Order
}

// Order is what decides which of two terms is the newer:
// baton.FenceOrder, the order of every store fence.
type Order = baton.FenceOrder

const (
	// ByRevision compares fencing revisions as integers (the default):
	// baton.ByRevision.
	ByRevision = baton.ByRevision
	// ByToken compares fencing tokens, for API servers older than 1.35:
	// baton.ByToken.
	ByToken = baton.ByToken
)

func (f Fence) table() string {
	if len(f.Table) == 0 {
		return pgx.Identifier{DefaultTable}.Sanitize()
	}
	return f.Table.Sanitize()
}

// Beginner is what EnsureSchema and Write need of a database: *pgx.Conn,
// *pgxpool.Pool and pgx.Tx (a savepoint) all are.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// EnsureSchema creates the fence table unless it exists. Safe to call from
// every replica at start-up at once: the creation is serialized by a
// transaction-scoped advisory lock (CREATE TABLE IF NOT EXISTS alone is not
// safe to race).
func (f Fence) EnsureSchema(ctx context.Context, db Beginner) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", f.table()); err != nil {
			return fmt.Errorf("pgfence: locking to create %s: %w", f.table(), err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+f.table()+` (
  key        text PRIMARY KEY,
  revision   numeric(39, 0) NOT NULL CHECK (revision >= 0),
  token      integer NOT NULL CHECK (token >= 0),
  updated_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
			return fmt.Errorf("pgfence: creating %s: %w", f.table(), err)
		}
		return nil
	})
}

// admitSQL is the fenced statement; %s are the table and the compared
// column. RETURNING yields a row only when the row was inserted or updated.
const admitSQL = `INSERT INTO %[1]s AS f (key, revision, token) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE
  SET revision = excluded.revision, token = excluded.token, updated_at = now()
  WHERE f.%[2]s <= excluded.%[2]s
RETURNING f.revision`

// Term is what a leader tags its writes with, its fencing revision and
// token: baton.Term.
type Term = baton.Term

// TermOf returns the term of a leader answer, as baton.TermOf does. Take it
// from the answer that said this pod leads (RunWhileLeader's, or a
// Leadership whose IsLeader is true), right before the write.
func TermOf(l baton.Leadership) Term { return baton.TermOf(l) }

// StaleError is the refusal of a write whose term is older than one the
// fence already accepted for Key: baton.StaleTermError. The writer is a
// deposed leader, and its write did not land. Its Unwrap gives the baton
// package's error for the same refusal (a *baton.StaleTokenError when
// ordered ByToken, a *baton.StaleRevisionError when ordered ByRevision), so
// errors.As with those works as for the in-memory fences.
type StaleError = baton.StaleTermError

// Admit records term as the newest for key inside tx, or returns a
// *StaleError when the fence holds a newer term for key (then tx must be
// rolled back; nothing was recorded). An equal term is admitted: the same
// leader writing again. On success tx holds the fence row's lock until it
// ends: do the write in tx, then commit. Other errors are PostgreSQL's or
// the term's (ErrNoRevision, a negative token).
//
// Under REPEATABLE READ or SERIALIZABLE, a term another transaction
// admitted concurrently fails tx with a serialization failure (SQLSTATE
// 40001): retry the whole transaction, which compares again.
func (f Fence) Admit(ctx context.Context, tx pgx.Tx, key string, term Term) error {
	rev, err := f.revision(term)
	if err != nil {
		return err
	}
	if term.Token < 0 {
		return fmt.Errorf("pgfence: fencing token %d is negative", term.Token)
	}
	col := "revision"
	if f.Order == ByToken {
		col = "token"
	}
	var got pgtype.Numeric
	err = tx.QueryRow(ctx, fmt.Sprintf(admitSQL, f.table(), col), key, rev, term.Token).Scan(&got)
	if err == nil {
		return nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("pgfence: admitting %v for %q: %w", term, key, err)
	}
	highest, err := f.held(ctx, tx, key)
	if err != nil {
		return fmt.Errorf("pgfence: term %v for %q refused; reading the fence: %w", term, key, err)
	}
	return &StaleError{Key: key, Order: f.Order, Term: term, Highest: highest}
}

// ErrNoRevision is the answer of a Fence ordered ByRevision to a term
// without a fencing revision (0): the sidecar did not know one (a
// resourceVersion that is not an integer, or beyond an int64 from a sidecar
// of 0.2.0 or earlier). Writing with it would be fenced by nothing; fence
// ByToken on such a cluster.
var ErrNoRevision = errors.New("pgfence: the term has no fencing revision (0); fence ByToken where the sidecar reports none")

// revision returns term's revision as a numeric, all of its digits; a
// term without one is ErrNoRevision when the fence compares revisions.
func (f Fence) revision(term Term) (pgtype.Numeric, error) {
	if term.Revision == (baton.Revision{}) && f.Order == ByRevision {
		return pgtype.Numeric{}, ErrNoRevision
	}
	n, _ := new(big.Int).SetString(term.Revision.String(), 10)
	return pgtype.Numeric{Int: n, Valid: true}, nil
}

// held reads the term the fence row of key holds (pgx.ErrNoRows when
// there is none).
func (f Fence) held(ctx context.Context, db Querier, key string) (Term, error) {
	var revision string
	var term Term
	err := db.QueryRow(ctx, "SELECT revision::text, token FROM "+f.table()+" WHERE key = $1", key).
		Scan(&revision, &term.Token)
	if err != nil {
		return Term{}, err
	}
	term.Revision, err = baton.ParseRevision(revision)
	return term, err
}

// Write runs write in a transaction on db that first admits term for key,
// and commits both together. When the fence holds a newer term for key it
// returns a *StaleError without calling write, and nothing changes. An
// error from write rolls everything back and is returned as is.
func (f Fence) Write(ctx context.Context, db Beginner, key string, term Term, write func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := f.Admit(ctx, tx, key, term); err != nil {
			return err
		}
		return write(tx)
	})
}

// Highest returns the term the fence holds for key; ok is false when no
// write to key was admitted yet.
func (f Fence) Highest(ctx context.Context, db Querier, key string) (term Term, ok bool, err error) {
	term, err = f.held(ctx, db, key)
	if errors.Is(err, pgx.ErrNoRows) {
		return Term{}, false, nil
	}
	if err != nil {
		return Term{}, false, fmt.Errorf("pgfence: reading the fence of %q: %w", key, err)
	}
	return term, true, nil
}

// Querier is what Highest needs: *pgx.Conn, *pgxpool.Pool and pgx.Tx all
// are.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
