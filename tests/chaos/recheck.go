package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// recheck runs the checker again over rounds kept as TSV files (the dumps
// of failed rounds, or every round with --keep-answers), e.g. after a fix of
// the checker itself, and prints what it finds in each. It returns the
// number of files with findings (or that could not be read).
func recheck(paths []string) int {
	bad := 0
	for _, path := range paths {
		answers, acks, err := readRound(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			bad++
			continue
		}
		r := Check(answers, acks, Instant(-1<<62), Instant(1<<62))
		fmt.Printf("%s: %d answers, %d acknowledgements: %d overlaps, %d broken promises\n",
			path, len(answers), len(acks), len(r.Overlaps), len(r.Broken))
		for _, b := range r.Broken {
			fmt.Printf("  broken: %s's %s answer (validFor %v) by %s %v before it lapsed\n",
				b.Promise.Member, b.Promise.Surface, b.Promise.ValidFor, b.By, b.Excess)
		}
		if len(r.Overlaps)+len(r.Broken) > 0 {
			bad++
		}
	}
	return bad
}

// readRound parses what dumpRound wrote. Times are relative to the fault,
// which does not matter to the checker.
func readRound(path string) ([]Answer, []Ack, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	surfaces := map[string]Surface{}
	for i, n := range surfaceNames {
		surfaces[n] = Surface(i)
	}
	instant := func(s string) (Instant, error) {
		if s == "-" {
			return 0, nil
		}
		ms, err := strconv.ParseFloat(s, 64)
		return Instant(ms * 1e6), err
	}
	var answers []Answer
	var acks []Ack
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		c := strings.Split(sc.Text(), "\t")
		if line == 1 {
			continue // the header
		}
		if len(c) != 11 {
			return nil, nil, fmt.Errorf("line %d: %d columns, want 11", line, len(c))
		}
		send, err1 := instant(c[3])
		recv, err2 := instant(c[4])
		token, err3 := strconv.ParseInt(c[7], 10, 32)
		if err := firstError(err1, err2, err3); err != nil {
			return nil, nil, fmt.Errorf("line %d: %v", line, err)
		}
		if c[1] == "ack" {
			acks = append(acks, Ack{Member: c[0], Client: c[2], Token: int32(token), At: send,
				Done: recv, Acknowledged: c[5] == "true"})
			continue
		}
		s, ok := surfaces[c[1]]
		if !ok {
			return nil, nil, fmt.Errorf("line %d: unknown surface %q", line, c[1])
		}
		revision, err4 := strconv.ParseInt(c[8], 10, 64)
		validFor, err5 := time.ParseDuration(c[9])
		until, err6 := instant(c[10])
		if err := firstError(err4, err5, err6); err != nil {
			return nil, nil, fmt.Errorf("line %d: %v", line, err)
		}
		answers = append(answers, Answer{Member: c[0], Surface: s, Client: c[2], Send: send,
			Recv: recv, IsLeader: c[5] == "true", SteppingDown: c[6] == "true", Token: int32(token),
			Revision: revision, ValidFor: validFor, ValidUntil: until})
	}
	return answers, acks, sc.Err()
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
