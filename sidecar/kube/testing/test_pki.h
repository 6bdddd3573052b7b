// Test PKI: a throwaway certificate authority and certificates it issues,
// generated with OpenSSL when a test runs (P-256 keys, valid for a day), so
// TLS tests need no files checked in.
//
// Thread-safe; each call generates fresh keys.
#ifndef BATON_SIDECAR_KUBE_TESTING_TEST_PKI_H_
#define BATON_SIDECAR_KUBE_TESTING_TEST_PKI_H_

#include <string>
#include <vector>

namespace baton::kube::testing {

struct TestCert {
  std::string cert_pem;
  std::string key_pem;
};

// A self-signed CA certificate with common name `cn`.
TestCert NewTestCa(const std::string& cn);

// A certificate signed by `ca` for server and client authentication, with
// subject CN `cn` and subjectAltNames `dns_names` and `ips`.
TestCert IssueTestCert(const TestCert& ca, const std::string& cn,
                       const std::vector<std::string>& dns_names,
                       const std::vector<std::string>& ips);

}  // namespace baton::kube::testing

#endif  // BATON_SIDECAR_KUBE_TESTING_TEST_PKI_H_
