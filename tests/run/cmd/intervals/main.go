// intervals is the command the `baton run` tests run under baton: while it
// runs it appends one line every few milliseconds to a shared file,
//
//	<fencing token> <identity> <pid> <start ns> <now ns>
//
// (CLOCK_BOOTTIME), so the file holds every child's interval and the tests
// can check that no two ever overlapped. At start it also checks that no
// earlier child in the file is still alive and, if one is, appends
// "ALIVE <its pid> <this pid>".
//
// Flags: --file (required), --every (5ms), --ignore-term (keep running on
// SIGTERM, so only SIGKILL ends it), --exit-after and --exit-code (end on its
// own).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"baton/tests/internal/proc"
)

// earlierChildren are the pids the file names, other than self.
func earlierChildren(path string) []int {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	seen := map[int]bool{}
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 5 {
			continue
		}
		pid, err := strconv.Atoi(fields[2])
		if err == nil && pid != os.Getpid() && !seen[pid] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	return pids
}

func main() {
	path := flag.String("file", "", "the shared file to append to")
	every := flag.Duration("every", 5*time.Millisecond, "interval between lines")
	ignoreTerm := flag.Bool("ignore-term", false, "keep running on SIGTERM")
	exitAfter := flag.Duration("exit-after", 0, "exit on its own after this long (0: never)")
	exitCode := flag.Int("exit-code", 0, "the code to exit with after --exit-after")
	flag.Parse()
	start := proc.Boottime()
	f, err := os.OpenFile(*path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	token, identity := os.Getenv("BATON_FENCING_TOKEN"), os.Getenv("BATON_IDENTITY")
	line := func() {
		fmt.Fprintf(f, "%s %s %d %d %d\n", token, identity, os.Getpid(), start, proc.Boottime())
	}
	line()
	for _, pid := range earlierChildren(*path) {
		if proc.Alive(pid) {
			fmt.Fprintf(f, "ALIVE %d %d\n", pid, os.Getpid())
		}
	}
	signals := make(chan os.Signal, 1)
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(signals, syscall.SIGTERM)
	}
	var exit <-chan time.Time
	if *exitAfter > 0 {
		exit = time.After(*exitAfter)
	}
	tick := time.NewTicker(*every)
	for {
		select {
		case <-tick.C:
			line()
		case <-signals:
			line()
			os.Exit(0)
		case <-exit:
			line()
			os.Exit(*exitCode)
		}
	}
}
