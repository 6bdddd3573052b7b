// Command controlplane runs a real Kubernetes control plane (etcd and
// kube-apiserver, built from their upstream Go modules) on 127.0.0.1 for
// baton's tests, demo and users. scripts/controlplane is its front end.
//
//	controlplane run --dir DIR [--watch-pid PID]   run in the foreground until signalled
//	controlplane restart-apiserver --dir DIR       restart kube-apiserver on the same port
//	controlplane token --dir DIR NAMESPACE SA      print a bound ServiceAccount token
//	controlplane token-kubeconfig --dir DIR NAMESPACE SA OUT
//
// `run` generates its own PKI, starts etcd and kube-apiserver on free ports
// with RBAC and ServiceAccount tokens, waits for /readyz, writes DIR/kubeconfig
// (admin, system:masters) and DIR/ready, and stops both children on
// SIGTERM/SIGINT, when the process --watch-pid names exits, or when it dies
// itself (children carry a parent-death signal).
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	dir := fs.String("dir", "", "control-plane state directory (required)")
	var err error
	switch cmd {
	case "run":
		watchPID := fs.Int("watch-pid", 0, "stop when this process exits (0: never)")
		_ = fs.Parse(args)
		requireDir(*dir)
		err = run(*dir, *watchPID)
	case "restart-apiserver":
		_ = fs.Parse(args)
		requireDir(*dir)
		err = restartAPIServer(*dir)
	case "token":
		duration := fs.Duration("duration", defaultTokenDuration, "token lifetime")
		_ = fs.Parse(args)
		requireDir(*dir)
		if fs.NArg() != 2 {
			usage()
		}
		var tok string
		tok, err = mintToken(*dir, fs.Arg(0), fs.Arg(1), *duration)
		if err == nil {
			fmt.Println(tok)
		}
	case "token-kubeconfig":
		duration := fs.Duration("duration", defaultTokenDuration, "token lifetime")
		_ = fs.Parse(args)
		requireDir(*dir)
		if fs.NArg() != 3 {
			usage()
		}
		err = writeTokenKubeconfig(*dir, fs.Arg(0), fs.Arg(1), fs.Arg(2), *duration)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "controlplane %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

func requireDir(dir string) {
	if dir == "" {
		usage()
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  controlplane run --dir DIR [--watch-pid PID]
  controlplane restart-apiserver --dir DIR
  controlplane token --dir DIR [--duration 1h] NAMESPACE SERVICEACCOUNT
  controlplane token-kubeconfig --dir DIR [--duration 1h] NAMESPACE SERVICEACCOUNT OUT
`)
	os.Exit(2)
}
