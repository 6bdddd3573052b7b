#!/usr/bin/env bash
# The baton binary's flag handling, end to end: bad configuration, from flags
# or from BATON_* variables, exits 2 with a message naming the flag or the
# variable (flags are checked before the API client config is loaded);
# --help and --version work.
set -u
baton=$1
fail=0
environment=()  # VAR=value pairs for the next expect
expect() {  # expect CODE SUBSTRING ARGS...
  local code=$1 want=$2; shift 2
  local out rc
  out=$(env -u POD_NAMESPACE "${environment[@]}" "$baton" "$@" 2>&1); rc=$?
  if [[ $rc -ne $code || $out != *"$want"* ]]; then
    echo "FAIL: baton $* -> rc=$rc, want $code and output containing '$want'; got: $out"
    fail=1
  fi
}
expect 2 "--lease-name is required" --lease-namespace=ns
expect 2 "pass --kubeconfig" --lease-name=x
expect 2 "no-such.kubeconfig" --lease-name=x --kubeconfig=/no-such.kubeconfig
expect 2 "--api-timeout=3s must be" --lease-name=x --api-timeout=3s --renew-deadline=2s \
  --lease-duration=4s --retry-period=1s
expect 2 "--renew-deadline must be at most" \
  --lease-name=x --lease-namespace=ns --lease-duration=10s --renew-deadline=10s
expect 2 "one-second resolution" \
  --lease-name=x --lease-namespace=ns --lease-duration=2s --renew-deadline=1500ms --retry-period=250ms
expect 2 "--retry-period × 1.2" \
  --lease-name=x --lease-namespace=ns --retry-period=9s
expect 2 "unknown flag --no-such-flag" --lease-name=x --no-such-flag=1
expect 2 "unknown command bogus" bogus --lease-name=x
expect 2 "--lease-name needs a value" --lease-name
expect 2 "--lease-duration=soon is not a valid value" --lease-name=x --lease-duration=soon
expect 2 "--namespace belongs to \`baton leases\`" --lease-name=x --namespace=y
expect 2 "--restart belongs to \`baton run -- CMD\`" --lease-name=x --restart=always
# Given at all, even at its default value, a flag of another command is refused.
expect 2 "--stop-grace belongs to \`baton run -- CMD\`" --lease-name=x --stop-grace=5s
expect 2 "--watch belongs to \`baton leases\`" run --lease-name=x --watch=false -- true
expect 2 "--stop-signal belongs to \`baton run -- CMD\`" leases --stop-signal=SIGTERM
expect 2 "--http-addr=foo:4040: the host must be" --lease-name=x --http-addr=foo:4040
expect 2 "unexpected argument" --lease-name=x stray
expect 2 "baton run needs a command" run --lease-name=x --lease-namespace=ns
expect 2 "--stop-grace=5s plus 200ms must be shorter than --renew-deadline" \
  run --lease-name=x --lease-namespace=ns --lease-duration=3s --renew-deadline=1500ms \
  --retry-period=250ms -- true
expect 2 "--restart=sometimes" run --lease-name=x --lease-namespace=ns --restart=sometimes -- true
expect 2 "--stop-signal=SIGNOPE" run --lease-name=x --lease-namespace=ns --stop-signal=SIGNOPE -- true
expect 0 "(commit " --version
expect 0 "--lease-name=STRING  (env BATON_LEASE_NAME)" --help
if "$baton" --help | grep -qE -- '--[a-z]+_[a-z_]+|\.cc'; then
  echo "FAIL: baton --help shows a flag with underscores or a source path"; fail=1
fi

# The environment: BATON_<FLAG>, named in errors; a flag wins over it.
environment=(BATON_LEASE_DURATION=soon)
expect 2 "BATON_LEASE_DURATION=soon is not a valid value for --lease-duration" --lease-name=x
environment=(BATON_LOG_LEVEL=loud)
expect 2 "--log-level=loud is not debug, info, warn or error (--log-level is BATON_LOG_LEVEL=loud)" \
  --lease-name=x --lease-namespace=ns
environment=(BATON_LEASE_NAME=x BATON_RENEW_DEADLINE=15s)
expect 2 "(--renew-deadline is BATON_RENEW_DEADLINE=15s)" --lease-namespace=ns
expect 2 "pass --kubeconfig" --renew-deadline=10s
environment=(BATON_LEASE_NAME=x BATON_SERVICE_HOST=10.0.0.1 BATON_PORT=tcp://10.0.0.1:4040)
expect 2 "no-such.kubeconfig" --kubeconfig=/no-such.kubeconfig
environment=()
expect 2 "--output" leases --output=yaml
expect 2 "--log-format=yaml is not logfmt or json" --lease-name=x --lease-namespace=ns --log-format=yaml
exit $fail
