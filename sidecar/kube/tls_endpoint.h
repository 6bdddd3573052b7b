// TlsEndpoint: a server reached over verified TLS, as a plain value: where it
// is, the name its certificate must carry, the CA that signs it, and the
// client certificate presented to it. RestConfig (the API server) and
// HttpsClientOptions (one connection to it) both carry one, so a field added
// here reaches the connection without a copy to keep in step.
#ifndef BATON_SIDECAR_KUBE_TLS_ENDPOINT_H_
#define BATON_SIDECAR_KUBE_TLS_ENDPOINT_H_

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace baton::kube {

struct TlsEndpoint {
  // Server to dial: a DNS name or an IP literal (IPv6 without brackets), and
  // its port.
  std::string host;
  std::string port = "443";
  // Name the server certificate must carry, and the SNI sent (unless it is an
  // IP address). Empty: `host`.
  std::string tls_server_name;

  // PEM bundle of the CA(s) that sign the server certificate. Required: baton
  // never trusts the system roots.
  std::string ca_pem;
  // Optional client certificate (chain) and its key, both PEM, both or
  // neither.
  std::string client_cert_pem;
  std::string client_key_pem;

  // "host:port", the host bracketed if IPv6: the Host header, and a URL's
  // authority.
  std::string Authority() const {
    const bool ipv6 = absl::StrContains(host, ':');
    return absl::StrCat(ipv6 ? "[" : "", host, ipv6 ? "]" : "", ":", port);
  }
};

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_TLS_ENDPOINT_H_
