package fencecheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/baton-sidecar/baton/clients/go/baton"
	"github.com/baton-sidecar/baton/clients/go/pgfence"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is a PostgreSQL database that fenced writers write into through
// clients/go/pgfence: the fence table (pgfence's baton_fence, ordered by
// revision) and a table of the writes it accepted, fence_writes, to which
// every accepted write adds one row in the fenced transaction. Safe for
// concurrent use.
type Store struct {
	pool  *pgxpool.Pool
	fence pgfence.Fence
}

// writesTable keeps what the store accepted: seq is taken while the
// transaction holds the key's fence row lock, so per key it is the commit
// order.
const writesTable = `CREATE TABLE IF NOT EXISTS fence_writes (
  seq      bigserial PRIMARY KEY,
  key      text NOT NULL,
  attempt  bigint NOT NULL,
  holder   text NOT NULL,
  token    integer NOT NULL,
  revision numeric(39, 0) NOT NULL
)`

// OpenStore connects to dsn and creates both tables unless they exist.
func OpenStore(ctx context.Context, dsn string, maxConns int32) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool}
	if err := s.fence.EnsureSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := pool.Exec(ctx, writesTable); err != nil {
		pool.Close()
		return nil, fmt.Errorf("creating fence_writes: %w", err)
	}
	return s, nil
}

// Close closes the connections.
func (s *Store) Close() { s.pool.Close() }

// Write writes a (its ID, Key and Term) through the fence and returns the
// store's verdict; err is the refusal (a *pgfence.StaleError) or the failure.
// With bypass it writes without the fence, as an application that skips it
// would: then stale writes land, and Check must say so.
func (s *Store) Write(ctx context.Context, a Attempt, bypass bool) (Verdict, error) {
	insert := func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO fence_writes (key, attempt, holder, token, revision) VALUES ($1, $2, $3, $4, $5::text::numeric)",
			a.Key, a.ID, a.Term.Holder, a.Term.Token, a.Term.Revision)
		return err
	}
	var err error
	if bypass {
		err = pgx.BeginFunc(ctx, s.pool, insert)
	} else {
		var revision baton.Revision
		if revision, err = baton.ParseRevision(a.Term.Revision); err == nil {
			err = s.fence.Write(ctx, s.pool, a.Key, pgfence.Term{Revision: revision, Token: a.Term.Token}, insert)
		}
	}
	var stale *pgfence.StaleError
	switch {
	case err == nil:
		return Accepted, nil
	case errors.As(err, &stale):
		return Refused, err
	}
	return Failed, err
}

// Read returns what the store kept: the accepted writes in commit order per
// key, and the fence table.
func (s *Store) Read(ctx context.Context) ([]Row, []Fence, error) {
	rows, err := s.pool.Query(ctx, "SELECT seq, key, attempt, holder, token, revision::text FROM fence_writes ORDER BY seq")
	if err != nil {
		return nil, nil, err
	}
	accepted, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Row, error) {
		var w Row
		err := r.Scan(&w.Seq, &w.Key, &w.Attempt, &w.Term.Holder, &w.Term.Token, &w.Term.Revision)
		return w, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading fence_writes: %w", err)
	}
	rows, err = s.pool.Query(ctx, "SELECT key, revision::text, token FROM "+pgfence.DefaultTable+" ORDER BY key")
	if err != nil {
		return nil, nil, err
	}
	fences, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Fence, error) {
		var f Fence
		err := r.Scan(&f.Key, &f.Revision, &f.Token)
		return f, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", pgfence.DefaultTable, err)
	}
	return accepted, fences, nil
}

// ErrNoPostgres is StartPostgres's answer where the PostgreSQL binaries are
// missing (clients/testing/postgres exits 77).
var ErrNoPostgres = errors.New("PostgreSQL is not installed")

// Postgres is a throwaway PostgreSQL started by clients/testing/postgres.
type Postgres struct {
	DSN    string
	script string
	dir    string
}

// StartPostgres starts a throwaway PostgreSQL in dir (which must be
// reachable by nobody when run as root: under /tmp) with the script
// clients/testing/postgres of the repository at root. It stops by itself
// when this process exits; Stop stops it sooner.
func StartPostgres(root, dir string) (*Postgres, error) {
	script := filepath.Join(root, "clients", "testing", "postgres")
	cmd := exec.Command(script, "start", dir)
	cmd.Env = append(os.Environ(), "BATON_POSTGRES_OWNER_PID="+strconv.Itoa(os.Getpid()))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 77 {
		return nil, fmt.Errorf("%w: %s", ErrNoPostgres, out)
	}
	if err != nil {
		return nil, fmt.Errorf("clients/testing/postgres start %s: %v\n%s", dir, err, out)
	}
	var info struct{ DSN string }
	raw, err := os.ReadFile(filepath.Join(dir, "postgres.json"))
	if err == nil {
		err = json.Unmarshal(raw, &info)
	}
	if err != nil {
		return nil, err
	}
	return &Postgres{DSN: info.DSN, script: script, dir: dir}, nil
}

// Stop stops the server and removes its data.
func (p *Postgres) Stop() error { return exec.Command(p.script, "stop", p.dir).Run() }
