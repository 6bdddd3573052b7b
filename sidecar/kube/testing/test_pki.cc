#include "sidecar/kube/testing/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace baton::kube::testing {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using Bio = std::unique_ptr<BIO, BioFree>;

std::atomic<int64_t> next_serial{1};

std::string BioString(BIO* bio) {
  char* data = nullptr;
  const int64_t n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string CertPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  return BioString(bio.get());
}

std::string KeyPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  return BioString(bio.get());
}

Cert ParseCert(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

Pkey ParseKey(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return Pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `cn`, valid from an hour ago for a day.
Cert NewCert(EVP_PKEY* key, const std::string& cn) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), next_serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), int64_t{24} * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return cert;
}

}  // namespace

TestCert NewTestCa(const std::string& cn) {
  Pkey key(EVP_EC_gen("P-256"));
  Cert cert = NewCert(key.get(), cn);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  X509_sign(cert.get(), key.get(), EVP_sha256());
  return {CertPem(cert.get()), KeyPem(key.get())};
}

TestCert IssueTestCert(const TestCert& ca, const std::string& cn,
                       const std::vector<std::string>& dns_names,
                       const std::vector<std::string>& ips) {
  Cert ca_cert = ParseCert(ca.cert_pem);
  Pkey ca_key = ParseKey(ca.key_pem);
  Pkey key(EVP_EC_gen("P-256"));
  Cert cert = NewCert(key.get(), cn);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get()));
  AddExtension(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(cert.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature");
  AddExtension(cert.get(), ca_cert.get(), NID_ext_key_usage, "serverAuth,clientAuth");
  AddExtension(cert.get(), ca_cert.get(), NID_subject_key_identifier, "hash");
  AddExtension(cert.get(), ca_cert.get(), NID_authority_key_identifier, "keyid:always");
  std::vector<std::string> sans;
  sans.reserve(dns_names.size() + ips.size());
  for (const std::string& d : dns_names) sans.push_back(absl::StrCat("DNS:", d));
  for (const std::string& ip : ips) sans.push_back(absl::StrCat("IP:", ip));
  if (!sans.empty()) {
    AddExtension(cert.get(), ca_cert.get(), NID_subject_alt_name, absl::StrJoin(sans, ","));
  }
  X509_sign(cert.get(), ca_key.get(), EVP_sha256());
  return {CertPem(cert.get()), KeyPem(key.get())};
}

}  // namespace baton::kube::testing
