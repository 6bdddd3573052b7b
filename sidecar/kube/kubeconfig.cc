#include "sidecar/kube/kubeconfig.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sidecar/kube/read_file.h"
#include "yaml-cpp/yaml.h"

namespace baton::kube {
namespace {

// User fields baton understands; any other is an authentication method it
// does not implement and is refused rather than silently ignored. `exec` is
// handled apart: allowed only where KubeconfigOptions says so.
constexpr std::array<absl::string_view, 7> kSupportedUserFields = {
    "token",      "tokenFile",       "client-certificate", "client-certificate-data",
    "client-key", "client-key-data", "extensions"};

constexpr absl::string_view kExecApiV1 = "client.authentication.k8s.io/v1";
constexpr absl::string_view kExecApiV1beta1 = "client.authentication.k8s.io/v1beta1";

// One parsed kubeconfig file.
struct Document {
  YAML::Node root;
  std::string base_dir;
  std::string source;
};

// Walks the merged view of one or more kubeconfig documents. yaml-cpp
// reports type errors by exception; ParseKubeconfigs catches those,
// everything else is returned as a status.
class Parser {
 public:
  Parser(std::vector<Document> docs, const KubeconfigOptions& options)
      : docs_(std::move(docs)), options_(options) {
    std::vector<absl::string_view> sources;
    sources.reserve(docs_.size());
    for (const Document& d : docs_) sources.push_back(d.source);
    source_ = absl::StrJoin(sources, ":");
  }

  absl::StatusOr<RestConfig> Parse() const {
    for (const Document& d : docs_) {
      if (!d.root.IsMap() && !d.root.IsNull()) return Invalid(d, "not a YAML mapping");
    }
    std::string name = options_.context;
    if (name.empty()) {
      absl::StatusOr<std::string> current = CurrentContext();
      if (!current.ok()) return current.status();
      if (current->empty()) return Invalid("no current-context set and no context named");
      name = *current;
    }
    absl::StatusOr<Entry> context = Named("contexts", "context", name);
    if (!context.ok()) return context.status();
    const Document& cdoc = *context->doc;
    absl::StatusOr<std::string> cluster_name = String(cdoc, context->body, "cluster", name);
    absl::StatusOr<std::string> user_name = String(cdoc, context->body, "user", name);
    absl::StatusOr<std::string> ns = String(cdoc, context->body, "namespace", name);
    for (const auto* s : {&cluster_name, &user_name, &ns}) {
      if (!s->ok()) return s->status();
    }
    if (cluster_name->empty()) {
      return Invalid(cdoc, absl::StrCat("context \"", name, "\" names no cluster"));
    }

    RestConfig config;
    config.namespace_name = *ns;
    absl::StatusOr<Entry> cluster = Named("clusters", "cluster", *cluster_name);
    if (!cluster.ok()) return cluster.status();
    if (absl::Status s = ReadCluster(*cluster, *cluster_name, config); !s.ok()) return s;
    if (!user_name->empty()) {
      absl::StatusOr<Entry> user = Named("users", "user", *user_name);
      if (!user.ok()) return user.status();
      if (absl::Status s = ReadUser(*user, *user_name, config); !s.ok()) return s;
    }
    return config;
  }

 private:
  // A named entry's body and the document it came from.
  struct Entry {
    YAML::Node body;
    const Document* doc;
  };

  absl::Status Invalid(absl::string_view why) const {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": ", why));
  }
  static absl::Status Invalid(const Document& doc, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(doc.source, ": ", why));
  }

  // The first current-context set, in precedence order; "" if none.
  absl::StatusOr<std::string> CurrentContext() const {
    for (const Document& d : docs_) {
      absl::StatusOr<std::string> current = String(d, d.root, "current-context", "kubeconfig");
      if (!current.ok() || !current->empty()) return current;
    }
    return std::string();
  }

  // The `section` body (e.g. the `cluster:` map) of the first entry called
  // `name` in the lists `list` (e.g. `clusters:`) of the documents.
  absl::StatusOr<Entry> Named(const char* list, const char* section,
                              const std::string& name) const {
    for (const Document& d : docs_) {
      const YAML::Node entries = d.root.IsMap() ? d.root[list] : YAML::Node();
      if (!entries.IsDefined() || entries.IsNull()) continue;
      if (!entries.IsSequence()) return Invalid(d, absl::StrCat("\"", list, "\" is not a list"));
      for (const YAML::Node& entry : entries) {
        if (!entry.IsMap() || !entry["name"].IsScalar() || entry["name"].Scalar() != name) {
          continue;
        }
        const YAML::Node body = entry[section];
        if (!body.IsDefined() || body.IsNull()) return Entry{YAML::Node(YAML::NodeType::Map), &d};
        if (!body.IsMap()) {
          return Invalid(d, absl::StrCat(section, " \"", name, "\" is not a mapping"));
        }
        return Entry{body, &d};
      }
    }
    return Invalid(absl::StrCat("no ", section, " named \"", name, "\""));
  }

  // The string at `key`, or "" if absent.
  static absl::StatusOr<std::string> String(const Document& doc, const YAML::Node& map,
                                            const std::string& key, absl::string_view owner) {
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) return std::string();
    if (!v.IsScalar()) {
      return Invalid(doc, absl::StrCat("\"", key, "\" of \"", owner, "\" is not a string"));
    }
    return v.Scalar();
  }

  static std::string Path(const Document& doc, const std::string& p) {
    if (p.empty() || p.front() == '/' || doc.base_dir.empty()) return p;
    return absl::StrCat(doc.base_dir, "/", p);
  }

  static absl::StatusOr<std::string> ReadNamedFile(const Document& doc, const std::string& p) {
    absl::StatusOr<std::string> contents = ReadFile(Path(doc, p));
    if (!contents.ok()) {
      return absl::Status(contents.status().code(),
                          absl::StrCat(doc.source, ": ", contents.status().message()));
    }
    return contents;
  }

  // The base64 `<key>-data`, else the file named by `<key>`; "" if neither.
  static absl::StatusOr<std::string> DataOrFile(const Entry& entry, const std::string& key,
                                                const std::string& owner) {
    const Document& doc = *entry.doc;
    absl::StatusOr<std::string> data = String(doc, entry.body, key + "-data", owner);
    if (!data.ok()) return data.status();
    if (!data->empty()) {
      std::string decoded;
      if (!absl::Base64Unescape(*data, &decoded)) {
        return Invalid(doc,
                       absl::StrCat("\"", key, "-data\" of \"", owner, "\" is not valid base64"));
      }
      return decoded;
    }
    absl::StatusOr<std::string> file = String(doc, entry.body, key, owner);
    if (!file.ok() || file->empty()) return file;
    return ReadNamedFile(doc, *file);
  }

  static absl::Status ReadCluster(const Entry& entry, const std::string& name, RestConfig& config) {
    const Document& doc = *entry.doc;
    const YAML::Node& cluster = entry.body;
    const std::string owner = absl::StrCat("cluster \"", name, "\"");
    absl::StatusOr<std::string> server = String(doc, cluster, "server", name);
    if (!server.ok()) return server.status();
    if (server->empty()) return Invalid(doc, absl::StrCat(owner, " has no server"));
    if (absl::Status s = SetServerUrl(*server, config); !s.ok()) {
      return Invalid(doc, absl::StrCat(owner, ": ", s.message()));
    }
    if (const YAML::Node skip = cluster["insecure-skip-tls-verify"];
        skip.IsDefined() && skip.as<bool>(true)) {
      return Invalid(doc,
                     absl::StrCat(owner,
                                  " sets insecure-skip-tls-verify: baton always verifies the "
                                  "API server's certificate; give certificate-authority[-data]"));
    }
    if (cluster["proxy-url"].IsDefined()) {
      return Invalid(doc, absl::StrCat(owner, " sets proxy-url, which baton does not support"));
    }
    absl::StatusOr<std::string> ca = DataOrFile(entry, "certificate-authority", name);
    if (!ca.ok()) return ca.status();
    if (ca->empty()) {
      return Invalid(doc, absl::StrCat(owner,
                                       " has no certificate-authority or certificate-authority-"
                                       "data; baton verifies the API server against the cluster "
                                       "CA only"));
    }
    config.endpoint.ca_pem = *std::move(ca);
    absl::StatusOr<std::string> server_name = String(doc, cluster, "tls-server-name", name);
    if (!server_name.ok()) return server_name.status();
    config.endpoint.tls_server_name = *std::move(server_name);
    return absl::OkStatus();
  }

  absl::Status ReadUser(const Entry& entry, const std::string& name, RestConfig& config) const {
    const Document& doc = *entry.doc;
    const YAML::Node& user = entry.body;
    const std::string owner = absl::StrCat("user \"", name, "\"");
    for (const auto& field : user) {
      const std::string key = field.first.Scalar();
      if (std::find(kSupportedUserFields.begin(), kSupportedUserFields.end(), key) !=
              kSupportedUserFields.end() ||
          (key == "exec" && options_.allow_exec_plugins)) {
        continue;
      }
      if (key == "exec") {
        return Invalid(doc, absl::StrCat(owner, " uses ", DescribeUnsupported(key, field.second),
                                         ": the sidecar runs in a Pod and authenticates with its "
                                         "ServiceAccount token, so it runs no credential plugins; "
                                         "outside a cluster give it a kubeconfig with a token, "
                                         "tokenFile or client certificate (`baton leases` does "
                                         "run exec plugins)"));
      }
      return Invalid(doc, absl::StrCat(owner, " uses ", DescribeUnsupported(key, field.second),
                                       ", which baton does not support; use a ServiceAccount "
                                       "token (token or tokenFile) or a client certificate"));
    }
    absl::StatusOr<std::string> token = String(doc, user, "token", name);
    absl::StatusOr<std::string> token_file = String(doc, user, "tokenFile", name);
    absl::StatusOr<std::string> cert = DataOrFile(entry, "client-certificate", name);
    absl::StatusOr<std::string> key = DataOrFile(entry, "client-key", name);
    for (const auto* s : {&token, &token_file, &cert, &key}) {
      if (!s->ok()) return s->status();
    }
    if (!token_file->empty()) {
      // Fail at start-up, not on the first request, if it is missing.
      if (absl::StatusOr<std::string> t = ReadNamedFile(doc, *token_file); !t.ok()) {
        return t.status();
      }
      config.bearer_token_file = Path(doc, *token_file);
    }
    if (cert->empty() != key->empty()) {
      return Invalid(
          doc, absl::StrCat(owner, " needs both client-certificate[-data] and client-key[-data]"));
    }
    config.bearer_token = *std::move(token);
    config.endpoint.client_cert_pem = *std::move(cert);
    config.endpoint.client_key_pem = *std::move(key);
    if (const YAML::Node exec = user["exec"]; exec.IsDefined() && !exec.IsNull()) {
      if (!config.bearer_token.empty() || !config.bearer_token_file.empty() ||
          !config.endpoint.client_cert_pem.empty()) {
        return Invalid(doc, absl::StrCat(owner,
                                         " sets both an exec plugin and a token or client "
                                         "certificate; give one way to authenticate"));
      }
      absl::StatusOr<ExecPlugin> plugin = ReadExec(doc, exec, owner);
      if (!plugin.ok()) return plugin.status();
      config.exec = *std::move(plugin);
    }
    return absl::OkStatus();
  }

  // `user.exec`, as client-go reads it: apiVersion, command, args, env
  // (name/value pairs), interactiveMode, provideClusterInfo, installHint.
  static absl::StatusOr<ExecPlugin> ReadExec(const Document& doc, const YAML::Node& exec,
                                             const std::string& owner) {
    const std::string where = absl::StrCat("exec of ", owner);
    if (!exec.IsMap()) return Invalid(doc, absl::StrCat(where, " is not a mapping"));
    ExecPlugin plugin;
    absl::StatusOr<std::string> api_version = String(doc, exec, "apiVersion", where);
    absl::StatusOr<std::string> command = String(doc, exec, "command", where);
    absl::StatusOr<std::string> mode = String(doc, exec, "interactiveMode", where);
    absl::StatusOr<std::string> hint = String(doc, exec, "installHint", where);
    for (const auto* s : {&api_version, &command, &mode, &hint}) {
      if (!s->ok()) return s->status();
    }
    if (*api_version != kExecApiV1 && *api_version != kExecApiV1beta1) {
      return Invalid(
          doc, absl::StrCat(where, ": apiVersion \"", *api_version, "\" is not supported; use ",
                            kExecApiV1, " or ", kExecApiV1beta1));
    }
    if (command->empty()) return Invalid(doc, absl::StrCat(where, " has no command"));
    plugin.api_version = *api_version;
    // A relative path with a separator is relative to the kubeconfig; a bare
    // name is looked up in $PATH.
    plugin.command = absl::StrContains(*command, '/') ? Path(doc, *command) : *command;
    plugin.install_hint = *hint;
    if (*mode == "Never") {
      plugin.interactive = ExecPlugin::Interactive::kNever;
    } else if (*mode == "IfAvailable" || (mode->empty() && *api_version == kExecApiV1beta1)) {
      plugin.interactive = ExecPlugin::Interactive::kIfAvailable;
    } else if (*mode == "Always") {
      plugin.interactive = ExecPlugin::Interactive::kAlways;
    } else {
      return Invalid(doc, absl::StrCat(where, ": interactiveMode \"", *mode,
                                       "\" is not one of Never, IfAvailable, Always",
                                       mode->empty() ? " (required by v1)" : ""));
    }
    if (const YAML::Node info = exec["provideClusterInfo"]; info.IsDefined() && !info.IsNull()) {
      plugin.provide_cluster_info = info.as<bool>();
    }
    if (const YAML::Node args = exec["args"]; args.IsDefined() && !args.IsNull()) {
      if (!args.IsSequence()) return Invalid(doc, absl::StrCat(where, ": args is not a list"));
      for (const YAML::Node& arg : args) plugin.args.push_back(arg.as<std::string>());
    }
    if (const YAML::Node env = exec["env"]; env.IsDefined() && !env.IsNull()) {
      if (!env.IsSequence()) return Invalid(doc, absl::StrCat(where, ": env is not a list"));
      for (const YAML::Node& var : env) {
        // A missing key is an invalid node, on which IsScalar() throws.
        if (!var.IsMap() || !var["name"].IsDefined() || !var["name"].IsScalar() ||
            var["name"].Scalar().empty()) {
          return Invalid(doc, absl::StrCat(where, ": every env entry needs a name"));
        }
        const YAML::Node value = var["value"];
        plugin.env.emplace_back(var["name"].Scalar(), value.IsDefined() && !value.IsNull()
                                                          ? value.as<std::string>()
                                                          : std::string());
      }
    }
    return plugin;
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

  const std::vector<Document> docs_;
  const KubeconfigOptions options_;
  std::string source_;  // every document's source, ':'-joined
};

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

absl::StatusOr<RestConfig> ParseKubeconfigs(const std::vector<KubeconfigText>& texts,
                                            const KubeconfigOptions& options) {
  if (texts.empty()) return absl::NotFoundError("no kubeconfig given");
  // yaml-cpp throws on malformed input and on type mismatches; nothing
  // escapes this function.
  std::vector<Document> docs;
  docs.reserve(texts.size());
  for (const KubeconfigText& text : texts) {
    try {
      docs.push_back({YAML::Load(text.yaml), text.base_dir, text.source});
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(text.source, ": malformed YAML: ", e.what()));
    }
  }
  try {
    return Parser(std::move(docs), options).Parse();
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(texts.front().source, ": ", e.what()));
  }
}

absl::StatusOr<RestConfig> LoadKubeconfig(const std::string& path,
                                          const KubeconfigOptions& options) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseKubeconfigs({{*std::move(text), DirectoryOf(path), path}}, options);
}

absl::StatusOr<RestConfig> LoadMergedKubeconfig(const std::vector<std::string>& paths,
                                                const KubeconfigOptions& options) {
  std::vector<KubeconfigText> texts;
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> text = ReadFile(path);
    if (absl::IsNotFound(text.status())) continue;
    if (!text.ok()) return text.status();
    texts.push_back({*std::move(text), DirectoryOf(path), path});
  }
  if (texts.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no kubeconfig found (looked for ", absl::StrJoin(paths, ", "), ")"));
  }
  return ParseKubeconfigs(texts, options);
}

std::vector<std::string> KubeconfigPaths(absl::string_view flag, absl::string_view env_kubeconfig,
                                         absl::string_view home) {
  if (!flag.empty()) return {std::string(flag)};
  std::vector<std::string> paths;
  for (absl::string_view entry : absl::StrSplit(env_kubeconfig, ':', absl::SkipEmpty())) {
    if (std::find(paths.begin(), paths.end(), entry) == paths.end()) {
      paths.emplace_back(entry);
    }
  }
  if (paths.empty() && !home.empty()) paths.push_back(absl::StrCat(home, "/.kube/config"));
  return paths;
}

}  // namespace baton::kube
