#include "kbuild/server/config.hpp"

#include "kbuild/server/guard.hpp"

#include <toml++/toml.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "kbuild/server/store.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"
#include "kbuild/util/toml_parse.hpp"

namespace kbuild::server {

namespace fs = std::filesystem;

namespace {

// Names in URLs are ASCII and, like repo ids on the Hub, compare without case ("Org" is "org").
// Rights do not: a token's namespaces grant what their configured spelling names (may_write).
bool same_namespace(std::string_view a, std::string_view b) {
  return util::ascii_lowercase(a) == util::ascii_lowercase(b);
}

}  // namespace

bool TokenEntry::may_write(std::string_view ns) const {
  return ns == user || std::find(namespaces.begin(), namespaces.end(), ns) != namespaces.end();
}

const TokenEntry* Config::find_token(std::string_view token) const {
  const TokenEntry* found = nullptr;
  for (const auto& entry : tokens) {
    // Constant time for equal lengths, so response times do not reveal a token's prefix.
    unsigned char difference = entry.token.size() == token.size() ? 0 : 1;
    for (size_t i = 0; i < entry.token.size() && i < token.size(); ++i)
      difference |= static_cast<unsigned char>(entry.token[i] ^ token[i]);
    if (difference == 0) found = &entry;
  }
  return found;
}

std::optional<Organization> Config::find_organization(std::string_view name) const {
  for (const auto& organization : organizations)
    if (same_namespace(organization.name, name)) return organization;
  bool is_user =
      std::any_of(tokens.begin(), tokens.end(), [&](const TokenEntry& t) { return same_namespace(t.user, name); });
  if (is_user) return std::nullopt;
  for (const auto& entry : tokens)
    for (const auto& ns : entry.namespaces)
      if (same_namespace(ns, name)) return Organization{ns, false};
  return std::nullopt;
}

std::vector<std::string> Config::organizations_of(const TokenEntry& entry) const {
  std::vector<std::string> out;
  for (const auto& ns : entry.namespaces)
    if (ns != entry.user) out.push_back(ns);
  return out;
}

namespace {

// Reads one TOML table, remembering which keys were read so that the rest can be reported as unknown.
class ConfigReader {
 public:
  ConfigReader(std::string file, std::vector<std::string>& errors) : m_file(std::move(file)), m_errors(errors) {}

  std::string at(const toml::source_region& region) const {
    return m_file + ":" + std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column);
  }
  void error(const toml::source_region& region, const std::string& message) {
    m_errors.push_back(at(region) + ": " + message);
  }

  /// Reports every key of `table` not in `known`.
  void check_keys(const toml::table& table, std::initializer_list<std::string_view> known, std::string_view where) {
    check_keys(table, std::vector<std::string>(known.begin(), known.end()), where);
  }
  void check_keys(const toml::table& table, const std::vector<std::string>& known, std::string_view where) {
    for (const auto& [key, node] : table) {
      if (std::find(known.begin(), known.end(), key.str()) != known.end()) continue;
      const std::vector<std::string>& candidates = known;
      std::string suggestion = util::closest_match(key.str(), candidates);
      error(key.source(), "unknown key \"" + std::string(key.str()) + "\" in " + std::string(where) +
                              (suggestion.empty() ? "" : " (did you mean \"" + suggestion + "\"?)"));
    }
  }

  std::optional<std::string> string(const toml::table& table, std::string_view key, std::string_view where,
                                    bool required) {
    const toml::node* node = table.get(key);
    if (!node) {
      if (required) error(table.source(), std::string(where) + " needs a \"" + std::string(key) + "\" string");
      return std::nullopt;
    }
    if (auto value = node->value<std::string>()) return *value;
    error(node->source(), std::string(where) + "." + std::string(key) + " must be a string");
    return std::nullopt;
  }

  std::optional<std::uint64_t> size(const toml::table& table, std::string_view key) {
    const toml::node* node = table.get(key);
    if (!node) return std::nullopt;
    auto value = node->value<std::int64_t>();
    if (!node->is_integer() || !value || *value <= 0) {
      error(node->source(), "limits." + std::string(key) + " must be a positive integer");
      return std::nullopt;
    }
    return static_cast<std::uint64_t>(*value);
  }

  /// The tables of an array of tables `key` ([[key]]), reporting anything else.
  std::vector<const toml::table*> tables(const toml::table& root, std::string_view key) {
    std::vector<const toml::table*> out;
    const toml::node* node = root.get(key);
    if (!node) return out;
    const toml::array* array = node->as_array();
    if (!array) {
      error(node->source(), "\"" + std::string(key) + "\" must be an array of tables ([[" + std::string(key) + "]])");
      return out;
    }
    for (const auto& element : *array) {
      if (const toml::table* table = element.as_table())
        out.push_back(table);
      else
        error(element.source(), "each entry of \"" + std::string(key) + "\" must be a table");
    }
    return out;
  }

 private:
  std::string m_file;
  std::vector<std::string>& m_errors;
};

bool is_valid_token_text(std::string_view token) {
  if (token.size() < 20 || token.size() > 256) return false;
  return std::all_of(token.begin(), token.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

}  // namespace

namespace {

// The tables of config.toml, in the order parse_config reads them.

void read_trusted_proxies(ConfigReader& reader, const toml::table& server, Config& config) {
  const toml::node* node = server.get("trusted-proxies");
  if (!node) return;
  const toml::array* array = node->as_array();
  if (!array) reader.error(node->source(), "server.trusted-proxies must be an array of IP addresses");
  for (size_t i = 0; array && i < array->size(); ++i) {
    auto text = array->get(i)->value<std::string>();
    auto address = text ? canonical_ip(*text) : std::nullopt;
    if (!address)
      reader.error(array->get(i)->source(), "server.trusted-proxies entries must be IP addresses, e.g. \"127.0.0.1\"");
    else
      config.trusted_proxies.push_back(*address);
  }
}

void read_server(ConfigReader& reader, const toml::table& root, Config& config) {
  if (const toml::node* node = root.get("server")) {
    if (const toml::table* server = node->as_table()) {
      reader.check_keys(*server, {"read", "trusted-proxies", "proxy-secret"}, "[server]");
      read_trusted_proxies(reader, *server, config);
      if (auto secret = reader.string(*server, "proxy-secret", "server", false)) {
        const bool printable = std::all_of(secret->begin(), secret->end(), [](char c) { return c > ' ' && c < 127; });
        if (secret->size() < 32 || secret->size() > 256 || !printable)
          reader.error(server->get("proxy-secret")->source(),
                       "server.proxy-secret must be 32 to 256 printable ASCII characters without spaces");
        else
          config.proxy_secret = *secret;
      }
      if (!config.trusted_proxies.empty() && config.proxy_secret.empty())
        reader.error(server->get("trusted-proxies")->source(),
                     "server.trusted-proxies needs server.proxy-secret: without it any client on a proxy's host "
                     "could claim any X-Forwarded-For (set one, e.g. `openssl rand -hex 32`, and have the proxy "
                     "send it as X-Kbuild-Proxy-Secret)");
      if (auto read = reader.string(*server, "read", "server", false)) {
        if (*read == "public")
          config.read = ReadAccess::anyone;
        else if (*read == "token")
          config.read = ReadAccess::token;
        else
          reader.error(server->get("read")->source(), "server.read must be \"public\" or \"token\"");
      }
    } else {
      reader.error(node->source(), "\"server\" must be a table");
    }
  }
}

void read_limits(ConfigReader& reader, const toml::table& root, Config& config) {
  if (const toml::node* node = root.get("limits")) {
    if (const toml::table* limits = node->as_table()) {
      static const std::pair<std::string_view, std::uint64_t Limits::*> k_keys[] = {
          {"max-lfs-object", &Limits::max_lfs_object},
          {"max-commit-body", &Limits::max_commit_body},
          {"max-json-body", &Limits::max_json_body},
          {"multipart-chunk", &Limits::multipart_chunk},
          {"read-timeout-seconds", &Limits::read_timeout_seconds},
          {"max-connections-per-client", &Limits::max_connections_per_client},
          {"max-connections", &Limits::max_connections},
          {"max-header-count", &Limits::max_header_count},
          {"max-header-bytes", &Limits::max_header_bytes},
          {"min-body-rate", &Limits::min_body_rate},
          {"body-grace-seconds", &Limits::body_grace_seconds},
      };
      std::vector<std::string> names;
      for (const auto& [key, field] : k_keys) names.emplace_back(key);
      reader.check_keys(*limits, names, "[limits]");
      for (const auto& [key, field] : k_keys)
        if (auto value = reader.size(*limits, key)) config.limits.*field = *value;
    } else {
      reader.error(node->source(), "\"limits\" must be a table");
    }
  }
}

void read_tokens(ConfigReader& reader, const toml::table& root, Config& config) {
  std::set<std::string> seen_tokens;
  for (const toml::table* table : reader.tables(root, "tokens")) {
    reader.check_keys(*table, {"token", "user", "namespaces"}, "[[tokens]]");
    TokenEntry entry;
    auto token = reader.string(*table, "token", "[[tokens]]", true);
    auto user = reader.string(*table, "user", "[[tokens]]", true);
    if (token && !is_valid_token_text(*token))
      reader.error(table->get("token")->source(),
                   "a token must be 20-256 printable ASCII characters without spaces (guessable otherwise; kbuild hub "
                   "token makes 37)");
    else if (token && !seen_tokens.insert(*token).second)
      reader.error(table->get("token")->source(), "this token is listed twice");
    if (user && !is_valid_namespace(*user))
      reader.error(table->get("user")->source(), "invalid user name \"" + *user + "\"");
    if (const toml::node* namespaces = table->get("namespaces")) {
      const toml::array* array = namespaces->as_array();
      if (!array) reader.error(namespaces->source(), "[[tokens]].namespaces must be an array of strings");
      for (size_t i = 0; array && i < array->size(); ++i) {
        auto ns = array->get(i)->value<std::string>();
        if (!ns || !array->get(i)->is_string() || !is_valid_namespace(*ns))
          reader.error(array->get(i)->source(), "[[tokens]].namespaces entries must be valid namespace names");
        else
          entry.namespaces.push_back(*ns);
      }
    }
    entry.token = token.value_or("");
    entry.user = user.value_or("");
    config.tokens.push_back(std::move(entry));
  }
}

void read_organizations(ConfigReader& reader, const toml::table& root, Config& config) {
  for (const toml::table* table : reader.tables(root, "organizations")) {
    reader.check_keys(*table, {"name", "trusted-kernel-publisher"}, "[[organizations]]");
    Organization organization;
    if (auto name = reader.string(*table, "name", "[[organizations]]", true)) {
      if (!is_valid_namespace(*name))
        reader.error(table->get("name")->source(), "invalid organization name \"" + *name + "\"");
      organization.name = *name;
    }
    if (const toml::node* trusted = table->get("trusted-kernel-publisher")) {
      if (auto value = trusted->value<bool>(); value && trusted->is_boolean())
        organization.trusted_kernel_publisher = *value;
      else
        reader.error(trusted->source(), "trusted-kernel-publisher must be true or false");
    }
    config.organizations.push_back(std::move(organization));
  }
}

}  // namespace

Result<Config> parse_config(std::string_view text, const std::string& file) {
  toml::table root;
  try {
    root = util::parse_toml(text, file);
  } catch (const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    return fail(file + ":" + std::to_string(begin.line) + ":" + std::to_string(begin.column) +
                    ": invalid TOML: " + std::string(e.description()),
                "see the format in tool/kbuild/server/config.hpp", ExitCode::usage);
  }
  Config config;
  std::vector<std::string> errors;
  ConfigReader reader(file, errors);
  reader.check_keys(root, {"server", "limits", "tokens", "organizations"}, "config.toml");

  read_server(reader, root, config);
  read_limits(reader, root, config);
  read_tokens(reader, root, config);
  read_organizations(reader, root, config);

  if (!errors.empty())
    return fail(util::join(errors, "\n"), "see the format in tool/kbuild/server/config.hpp", ExitCode::usage);
  return config;
}

Result<Config> load_config(const fs::path& root) {
  fs::path path = root / "config.toml";
  std::error_code ec;
  if (!fs::exists(path, ec)) return Config{};
  util::RealFileSystem files;
  KB_TRY_ASSIGN(std::string text, files.read_file(path));
  return parse_config(text, path.string());
}

std::optional<std::string> config_permission_warning(const fs::path& config_file) {
  struct ::stat st;
  if (::stat(config_file.c_str(), &st) != 0 || (st.st_mode & 077) == 0) return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return config_file.string() + " holds tokens and is readable by others (mode " + mode +
         "); make it the owner's only: chmod 600 " + config_file.string();
}

std::string generate_token(util::Random& random) {
  return "hf_" + util::base32_lower_nopad(random.bytes(21)).substr(0, 34);
}

namespace {

// Writes config.toml as its owner-only file (it holds tokens): a private temporary file, flushed,
// renamed over the old one, so no reader ever sees a partial or world-readable file.
Result<void> write_private_atomic(const fs::path& path, const std::string& text) {
  fs::path temp = util::temp_sibling(path);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return fail("cannot write " + temp.string() + ": " + std::strerror(errno));
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    written += static_cast<size_t>(n);
  }
  bool ok = written == text.size() && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    return fail("cannot write " + path.string() + ": " + std::strerror(saved));
  }
  return {};
}

// Runs `edit` on the text of <root>/config.toml ("" when missing) under an exclusive lock, so two
// concurrent edits never lose one another's change; the result must parse before it is written.
Result<void> edit_config(const fs::path& root, const std::function<Result<std::string>(std::string)>& edit) {
  util::RealFileSystem files;
  KB_TRY(files.make_dirs(root));
  fs::path lock_path = root / ".config.lock";
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) return fail("cannot open " + lock_path.string() + ": " + std::strerror(errno));
  while (::flock(lock_fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  auto result = [&]() -> Result<void> {
    fs::path path = root / "config.toml";
    std::string text;
    if (files.stat(path).exists) {
      KB_TRY_ASSIGN(text, files.read_file(path));
      KB_TRY(parse_config(text, path.string()));
    }
    KB_TRY_ASSIGN(std::string edited, edit(std::move(text)));
    KB_TRY(parse_config(edited, path.string()));
    return write_private_atomic(path, edited);
  }();
  ::close(lock_fd);
  return result;
}

std::string with_block(std::string text, const std::string& block) {
  if (!text.empty() && !text.ends_with("\n")) text += "\n";
  if (!text.empty()) text += "\n";
  return text + block;
}

}  // namespace

Result<std::string> add_token(const fs::path& root, const std::string& user, const std::vector<std::string>& namespaces,
                              util::Random& random) {
  if (!is_valid_namespace(user))
    return fail("invalid user name \"" + user + "\"", "use letters, digits, '-', '_' and '.'", ExitCode::usage);
  for (const auto& ns : namespaces)
    if (!is_valid_namespace(ns))
      return fail("invalid namespace \"" + ns + "\"", "use letters, digits, '-', '_' and '.'", ExitCode::usage);
  std::string token = generate_token(random);
  std::string entry = "[[tokens]]\ntoken = \"" + token + "\"\nuser = \"" + user + "\"\n";
  if (!namespaces.empty()) {
    std::vector<std::string> quoted;
    for (const auto& ns : namespaces) quoted.push_back("\"" + ns + "\"");
    entry += "namespaces = [" + util::join(quoted, ", ") + "]\n";
  }
  KB_TRY(
      edit_config(root, [&](std::string text) -> Result<std::string> { return with_block(std::move(text), entry); }));
  return token;
}

Result<OrganizationChange> set_organization(const fs::path& root, const std::string& name, bool trusted) {
  if (!is_valid_namespace(name))
    return fail("invalid organization name \"" + name + "\"", "use letters, digits, '-', '_' and '.'", ExitCode::usage);
  OrganizationChange change = OrganizationChange::added;
  KB_TRY(edit_config(root, [&](std::string text) -> Result<std::string> {
    toml::table root_table = toml::parse(text);
    const toml::array* organizations = root_table["organizations"].as_array();
    const toml::table* existing = nullptr;
    if (organizations)
      for (const auto& node : *organizations)
        if (const auto* table = node.as_table(); table && (*table)["name"].value<std::string>() == name)
          existing = table;
    const std::string value = trusted ? "true" : "false";
    if (!existing) {
      change = OrganizationChange::added;
      return with_block(std::move(text),
                        "[[organizations]]\nname = \"" + name + "\"\ntrusted-kernel-publisher = " + value + "\n");
    }
    // Edit in place, so comments and the rest of the file stay as they are.
    std::vector<std::string> lines = util::split(text, '\n');
    if (const toml::node* flag = existing->get("trusted-kernel-publisher")) {
      const auto& region = flag->source();
      if (region.begin.line != region.end.line) return fail("cannot edit a multi-line trusted-kernel-publisher");
      std::string& line = lines[region.begin.line - 1];
      line.replace(region.begin.column - 1, region.end.column - region.begin.column, value);
      change = flag->value<bool>() == trusted ? OrganizationChange::unchanged : OrganizationChange::updated;
    } else {
      const auto& region = existing->get("name")->source();
      lines.insert(lines.begin() + static_cast<long>(region.end.line), "trusted-kernel-publisher = " + value);
      change = trusted ? OrganizationChange::updated : OrganizationChange::unchanged;
    }
    return util::join(lines, "\n");
  }));
  return change;
}

}  // namespace kbuild::server
