// Command fencedwrites shows fenced writes end to end: a toy key-value store
// that refuses stale fencing tokens, and a writer that writes only while its
// baton sidecar says this pod leads, tagging every write with the token.
//
//	fencedwrites store  -listen=127.0.0.1:7070
//	fencedwrites writer -store=http://127.0.0.1:7070 [-key=counter] [-every=1s]
//
// Run one store and one writer beside each sidecar (BATON_GRPC_ADDR selects
// the sidecar). Only the leader's writer writes: it writes inside
// RunWhileLeader, which stops the writes when the term ends and then
// acknowledges the step-down, so a graceful handover takes milliseconds.
// After a handover the new leader's writes carry a higher token, and a late
// write from the old leader is answered 409 Conflict.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/baton-sidecar/baton/clients/go/baton"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fencedwrites store|writer [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "store":
		err = runStore(ctx, os.Args[2:])
	case "writer":
		err = runWriter(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

// store is the toy key-value store. Its lock covers the fence check and the
// write together, so no stale write can slip in between.
type store struct {
	mu    sync.Mutex
	fence baton.Fence
	data  map[string]string
}

func (s *store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/kv/")
	if key == r.URL.Path || key == "" {
		http.Error(w, "use /kv/KEY", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.mu.Lock()
		v, ok := s.data[key]
		s.mu.Unlock()
		if !ok {
			http.Error(w, "no such key", http.StatusNotFound)
			return
		}
		fmt.Fprintln(w, v)
	case http.MethodPut:
		token, err := baton.TokenFromHeader(r.Header)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.fence.Admit(token); err != nil {
			log.Printf("refused %s=%q: %v", key, body, err)
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		s.data[key] = string(body)
		log.Printf("wrote %s=%q with token %d", key, body, token)
	default:
		http.Error(w, "GET or PUT", http.StatusMethodNotAllowed)
	}
}

func runStore(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("store", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:7070", "address to serve the store on")
	fs.Parse(args)
	srv := &http.Server{Addr: *listen, Handler: &store{data: map[string]string{}},
		ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	log.Printf("toy store on %s", *listen)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func runWriter(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("writer", flag.ExitOnError)
	storeURL := fs.String("store", "http://127.0.0.1:7070", "the toy store")
	key := fs.String("key", "counter", "key to write")
	every := fs.Duration("every", time.Second, "interval between writes")
	minValidity := fs.Duration("min-validity", 500*time.Millisecond,
		"write only with at least this much guaranteed leadership left")
	fs.Parse(args)

	c, err := baton.New() // $BATON_GRPC_ADDR or 127.0.0.1:4041
	if err != nil {
		return err
	}
	defer c.Close()
	host, _ := os.Hostname()
	n := 0
	log.Printf("waiting for leadership")
	// Returns on SIGTERM once the writes have stopped and the step-down is
	// acknowledged.
	err = c.RunWhileLeader(ctx, func(ctx context.Context, l baton.Leadership) error {
		log.Printf("leading with token %d (revision %v)", l.FencingToken, l.FencingRevision)
		for {
			// ctx ends with the term; Fenced also bounds each write by the
			// guarantee of a fresh answer.
			err := c.Fenced(ctx, *minValidity, func(ctx context.Context, token int32) error {
				n++
				return put(ctx, *storeURL+"/kv/"+*key, fmt.Sprintf("%s #%d", host, n), token)
			})
			switch {
			case errors.Is(err, baton.ErrNotLeader), errors.Is(err, baton.ErrSidecarUnavailable):
				log.Printf("not writing: %v", err)
			case err != nil:
				log.Printf("write %d failed: %v", n, err)
			default:
				log.Printf("write %d done", n)
			}
			select {
			case <-ctx.Done():
				log.Printf("term with token %d ended: stopped writing", l.FencingToken)
				return nil
			case <-time.After(*every):
			}
		}
	})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// put is one fenced write: the token travels in the Baton-Fencing-Token
// header.
func put(ctx context.Context, url, value string, token int32) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, strings.NewReader(value))
	if err != nil {
		return err
	}
	baton.SetToken(req.Header, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("store: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
