// `baton run`: campaigns exactly like the sidecar (the same Daemon, so the
// local API, probes and metrics all work) and runs one command while this
// replica leads, stopping it before that leadership can end (run::Runner).
//
// Exit codes (docs/run.md): 0 after SIGTERM/SIGINT/SIGHUP, or after the
// command exited 0 and --restart does not run it again; the command's own
// code (128 + N if signal N ended it) when it ended on its own and is not
// run again, after the Lease was released; 1 if baton cannot start (a port in
// use). Configuration errors (2) are main's.
#ifndef BATON_SIDECAR_MAIN_RUN_COMMAND_H_
#define BATON_SIDECAR_MAIN_RUN_COMMAND_H_

#include "sidecar/kube/rest_config.h"
#include "sidecar/main/config.h"
#include "sidecar/run/runner.h"

namespace baton {

// Runs until a shutdown signal or the end of the command (see above) and
// returns baton's exit code. `shutdown_signals` must already be blocked in
// every thread. `options.acknowledge` is filled in here.
int RunCommand(const SidecarConfig& config, kube::RestConfig rest, run::Runner::Options options,
               const sigset_t& shutdown_signals);

}  // namespace baton

#endif  // BATON_SIDECAR_MAIN_RUN_COMMAND_H_
