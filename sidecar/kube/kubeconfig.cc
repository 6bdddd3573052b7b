#include "sidecar/kube/kubeconfig.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sidecar/kube/read_file.h"
#include "yaml-cpp/yaml.h"

namespace baton::kube {
namespace {

// User fields baton understands; any other is an authentication method it
// does not implement and is refused rather than silently ignored.
constexpr std::array<absl::string_view, 7> kSupportedUserFields = {
    "token",      "tokenFile",       "client-certificate", "client-certificate-data",
    "client-key", "client-key-data", "extensions"};

// Walks one kubeconfig document. yaml-cpp reports type errors by exception;
// ParseKubeconfig catches those, everything else is returned as a status.
class Parser {
 public:
  Parser(absl::string_view base_dir, absl::string_view source)
      : base_dir_(base_dir), source_(source) {}

  absl::StatusOr<RestConfig> Parse(const YAML::Node& root, absl::string_view context_name) const {
    if (!root.IsMap()) return Invalid("not a YAML mapping");
    std::string name(context_name);
    if (name.empty()) {
      absl::StatusOr<std::string> current = String(root, "current-context", "kubeconfig");
      if (!current.ok()) return current.status();
      if (current->empty()) return Invalid("no current-context set and no context named");
      name = *current;
    }
    absl::StatusOr<YAML::Node> context = Named(root, "contexts", "context", name);
    if (!context.ok()) return context.status();
    absl::StatusOr<std::string> cluster_name = String(*context, "cluster", name);
    absl::StatusOr<std::string> user_name = String(*context, "user", name);
    absl::StatusOr<std::string> ns = String(*context, "namespace", name);
    for (const auto* s : {&cluster_name, &user_name, &ns}) {
      if (!s->ok()) return s->status();
    }
    if (cluster_name->empty())
      return Invalid(absl::StrCat("context \"", name, "\" names no cluster"));

    RestConfig config;
    config.namespace_name = *ns;
    absl::StatusOr<YAML::Node> cluster = Named(root, "clusters", "cluster", *cluster_name);
    if (!cluster.ok()) return cluster.status();
    if (absl::Status s = ReadCluster(*cluster, *cluster_name, config); !s.ok()) return s;
    if (!user_name->empty()) {
      absl::StatusOr<YAML::Node> user = Named(root, "users", "user", *user_name);
      if (!user.ok()) return user.status();
      if (absl::Status s = ReadUser(*user, *user_name, config); !s.ok()) return s;
    }
    return config;
  }

 private:
  absl::Status Invalid(absl::string_view why) const {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": ", why));
  }

  // The `section` body (e.g. the `cluster:` map) of the entry called `name`
  // in the list `list` (e.g. `clusters:`).
  absl::StatusOr<YAML::Node> Named(const YAML::Node& root, const char* list, const char* section,
                                   const std::string& name) const {
    const YAML::Node entries = root[list];
    if (entries.IsDefined() && !entries.IsNull()) {
      if (!entries.IsSequence()) return Invalid(absl::StrCat("\"", list, "\" is not a list"));
      for (const YAML::Node& entry : entries) {
        if (!entry.IsMap() || !entry["name"].IsScalar() || entry["name"].Scalar() != name) {
          continue;
        }
        const YAML::Node body = entry[section];
        if (!body.IsDefined() || body.IsNull()) return YAML::Node(YAML::NodeType::Map);
        if (!body.IsMap()) {
          return Invalid(absl::StrCat(section, " \"", name, "\" is not a mapping"));
        }
        return body;
      }
    }
    return Invalid(absl::StrCat("no ", section, " named \"", name, "\""));
  }

  // The string at `key`, or "" if absent.
  absl::StatusOr<std::string> String(const YAML::Node& map, const std::string& key,
                                     absl::string_view owner) const {
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) return std::string();
    if (!v.IsScalar()) {
      return Invalid(absl::StrCat("\"", key, "\" of \"", owner, "\" is not a string"));
    }
    return v.Scalar();
  }

  std::string Path(const std::string& p) const {
    if (p.empty() || p.front() == '/' || base_dir_.empty()) return p;
    return absl::StrCat(base_dir_, "/", p);
  }

  absl::StatusOr<std::string> ReadNamedFile(const std::string& p) const {
    absl::StatusOr<std::string> contents = ReadFile(Path(p));
    if (!contents.ok()) {
      return absl::Status(contents.status().code(),
                          absl::StrCat(source_, ": ", contents.status().message()));
    }
    return contents;
  }

  // The base64 `<key>-data`, else the file named by `<key>`; "" if neither.
  absl::StatusOr<std::string> DataOrFile(const YAML::Node& map, const std::string& key,
                                         const std::string& owner) const {
    absl::StatusOr<std::string> data = String(map, key + "-data", owner);
    if (!data.ok()) return data.status();
    if (!data->empty()) {
      std::string decoded;
      if (!absl::Base64Unescape(*data, &decoded)) {
        return Invalid(absl::StrCat("\"", key, "-data\" of \"", owner, "\" is not valid base64"));
      }
      return decoded;
    }
    absl::StatusOr<std::string> file = String(map, key, owner);
    if (!file.ok() || file->empty()) return file;
    return ReadNamedFile(*file);
  }

  absl::Status ReadCluster(const YAML::Node& cluster, const std::string& name,
                           RestConfig& config) const {
    const std::string owner = absl::StrCat("cluster \"", name, "\"");
    absl::StatusOr<std::string> server = String(cluster, "server", name);
    if (!server.ok()) return server.status();
    if (server->empty()) return Invalid(absl::StrCat(owner, " has no server"));
    if (absl::Status s = SetServerUrl(*server, config); !s.ok()) {
      return Invalid(absl::StrCat(owner, ": ", s.message()));
    }
    if (const YAML::Node skip = cluster["insecure-skip-tls-verify"];
        skip.IsDefined() && skip.as<bool>(true)) {
      return Invalid(absl::StrCat(owner,
                                  " sets insecure-skip-tls-verify: baton always verifies the API "
                                  "server's certificate; give certificate-authority[-data]"));
    }
    if (cluster["proxy-url"].IsDefined()) {
      return Invalid(absl::StrCat(owner, " sets proxy-url, which baton does not support"));
    }
    absl::StatusOr<std::string> ca = DataOrFile(cluster, "certificate-authority", name);
    if (!ca.ok()) return ca.status();
    if (ca->empty()) {
      return Invalid(absl::StrCat(owner,
                                  " has no certificate-authority or certificate-authority-data; "
                                  "baton verifies the API server against the cluster CA only"));
    }
    config.ca_pem = *std::move(ca);
    absl::StatusOr<std::string> server_name = String(cluster, "tls-server-name", name);
    if (!server_name.ok()) return server_name.status();
    config.tls_server_name = *std::move(server_name);
    return absl::OkStatus();
  }

  absl::Status ReadUser(const YAML::Node& user, const std::string& name, RestConfig& config) const {
    const std::string owner = absl::StrCat("user \"", name, "\"");
    for (const auto& field : user) {
      const std::string key = field.first.Scalar();
      if (std::find(kSupportedUserFields.begin(), kSupportedUserFields.end(), key) !=
          kSupportedUserFields.end()) {
        continue;
      }
      return Invalid(absl::StrCat(owner, " uses ", DescribeUnsupported(key, field.second),
                                  ", which baton does not support; use a ServiceAccount token "
                                  "(token or tokenFile) or a client certificate"));
    }
    absl::StatusOr<std::string> token = String(user, "token", name);
    absl::StatusOr<std::string> token_file = String(user, "tokenFile", name);
    absl::StatusOr<std::string> cert = DataOrFile(user, "client-certificate", name);
    absl::StatusOr<std::string> key = DataOrFile(user, "client-key", name);
    for (const auto* s : {&token, &token_file, &cert, &key}) {
      if (!s->ok()) return s->status();
    }
    if (!token_file->empty()) {
      // Fail at start-up, not on the first request, if it is missing.
      if (absl::StatusOr<std::string> t = ReadNamedFile(*token_file); !t.ok()) return t.status();
      config.bearer_token_file = Path(*token_file);
    }
    if (cert->empty() != key->empty()) {
      return Invalid(
          absl::StrCat(owner, " needs both client-certificate[-data] and client-key[-data]"));
    }
    config.bearer_token = *std::move(token);
    config.client_cert_pem = *std::move(cert);
    config.client_key_pem = *std::move(key);
    return absl::OkStatus();
  }

  static std::string DescribeUnsupported(const std::string& key, const YAML::Node& value) {
    auto field = [&](const char* name) {
      return value.IsMap() && value[name].IsScalar() ? value[name].Scalar() : std::string();
    };
    if (key == "exec") {
      return absl::StrCat("an exec credential plugin (command \"", field("command"), "\")");
    }
    if (key == "auth-provider") return absl::StrCat("auth-provider \"", field("name"), "\"");
    if (key == "username" || key == "password") return "basic authentication (username/password)";
    if (key == "as" || absl::StartsWith(key, "as-")) {
      return absl::StrCat("impersonation (\"", key, "\")");
    }
    return absl::StrCat("the unknown field \"", key, "\"");
  }

  const std::string base_dir_;
  const std::string source_;
};

}  // namespace

absl::StatusOr<RestConfig> ParseKubeconfig(absl::string_view yaml, absl::string_view base_dir,
                                           absl::string_view context, absl::string_view source) {
  // yaml-cpp throws on malformed input and on type mismatches; nothing
  // escapes this function.
  try {
    return Parser(base_dir, source).Parse(YAML::Load(std::string(yaml)), context);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": malformed YAML: ", e.what()));
  }
}

absl::StatusOr<RestConfig> LoadKubeconfig(const std::string& path, absl::string_view context) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  const size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (dir.empty()) dir = "/";
  return ParseKubeconfig(*text, dir, context, path);
}

}  // namespace baton::kube
