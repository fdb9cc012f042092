#pragma once
// Configuration of the registry server: <root>/config.toml. Every key is optional; a missing file
// means the defaults (public reads, no tokens, so every write is refused with 401).
//
//   [server]
//   read = "public"                  # "public": anyone may read public repos;
//                                    # "token": every request needs a valid token
//   trusted-proxies = ["127.0.0.1"]  # reverse proxies in front (nginx): their connections carry many
//                                    # clients, so they are exempt from max-connections-per-client, and
//                                    # a request through them is attributed to the client their
//                                    # X-Forwarded-For names (guard.hpp: forwarded_client); IP addresses
//   proxy-secret = "..."             # required with trusted-proxies, 32-256 characters: the proxy sends
//                                    # it as X-Kbuild-Proxy-Secret; a request from a proxy's address
//                                    # without it is the host's own client (its X-Forwarded-For is
//                                    # ignored, the connection counts against max-connections-per-client)
//
//   [limits]                         # sizes in bytes
//   max-lfs-object = 2147483648      # largest LFS object (batch "size", PUT body, multipart total)
//   max-commit-body = 268435456      # largest commit NDJSON body (parsed line by line from disk)
//   max-json-body = 16777216         # largest body of every other endpoint (JSON, forms), which is
//                                    # parsed in memory
//   multipart-chunk = 67108864       # LFS objects of at least this size are uploaded in parts of
//                                    # this size (the last part shorter); smaller ones with one PUT
//   read-timeout-seconds = 10        # a request's line and headers must arrive within this time of
//                                    # its first byte, and its body must keep coming (64 KiB at
//                                    # least every this many seconds); slower clients are cut off
//   min-body-rate = 65536            # and after its first body-grace-seconds a body must have come at
//   body-grace-seconds = 30          # this many bytes per second on average (a body announcing 16 MiB
//                                    # is due within 30 + 256 s); slower ones get 408 and are cut off
//   max-connections-per-client = 16  # concurrent connections from one IP address; more get 429
//   max-connections = 0              # connections open at once; 0: the descriptor limit less 256. At
//                                    # the cap a new connection takes the place of an idle one (of the
//                                    # address holding the most), else it gets 503
//   max-header-count = 100           # request headers; more (or more bytes) get 431
//   max-header-bytes = 65536         # request line and headers together
//
//   [[tokens]]                       # one per access token; `kbuild hub token` appends these
//   token = "hf_..."                 # required, unique, 20-256 printable ASCII characters, no spaces
//   user = "alice"                   # required; the name whoami-v2 reports
//   namespaces = ["kernels-community"]  # optional; namespaces the token may write besides `user`
//
//   [[organizations]]
//   name = "kernels-community"       # required
//   trusted-kernel-publisher = true  # optional, default false (GET /api/organizations/NAME/overview)
//
// A namespace listed in some token's `namespaces` that is no token's user counts as an organisation
// too (untrusted unless declared). Unknown keys, wrong types and invalid names are errors reported as
// "config.toml:LINE:COL: message", all at once. `kbuild hub serve` reads the file again when it
// changes (RouterOptions::config_file): tokens and organisations take effect at the next request;
// [limits] need a restart (the listener applies them).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::server {

enum class ReadAccess { anyone, token };

struct TokenEntry {
  std::string token;
  std::string user;
  std::vector<std::string> namespaces;  ///< beyond `user`
  /// Whether this token may create repos in, and commit to, namespace `ns` (exactly as configured:
  /// the repository's own spelling decides, never the URL's).
  bool may_write(std::string_view ns) const;
};

struct Organization {
  std::string name;
  bool trusted_kernel_publisher = false;
};

struct Limits {
  std::uint64_t max_lfs_object = 2ull << 30;
  std::uint64_t max_commit_body = 256ull << 20;
  std::uint64_t max_json_body = 16ull << 20;
  std::uint64_t multipart_chunk = 64ull << 20;
  std::uint64_t read_timeout_seconds = 10;
  std::uint64_t max_connections_per_client = 16;
  std::uint64_t max_connections = 0;  ///< 0: the descriptor limit less a reserve
  std::uint64_t max_header_count = 100;
  std::uint64_t max_header_bytes = 64ull << 10;
  std::uint64_t min_body_rate = 64ull << 10;  ///< bytes per second, on average, after the grace
  std::uint64_t body_grace_seconds = 30;
};

struct Config {
  ReadAccess read = ReadAccess::anyone;
  std::vector<TokenEntry> tokens;
  std::vector<Organization> organizations;  ///< declared ones
  Limits limits;
  std::vector<std::string> trusted_proxies;  ///< canonical IP addresses (a restart applies changes)
  std::string proxy_secret;                  ///< what a trusted proxy sends as X-Kbuild-Proxy-Secret

  /// The entry whose token equals `token` (compared in constant time), or nullptr.
  const TokenEntry* find_token(std::string_view token) const;
  /// A declared organisation, or an implied one (see above) with trusted_kernel_publisher false;
  /// `name` compares without case and the result carries the configured spelling.
  std::optional<Organization> find_organization(std::string_view name) const;
  /// Organisations `entry` belongs to: its `namespaces`, in order.
  std::vector<std::string> organizations_of(const TokenEntry& entry) const;
};

/// Parses config.toml text; `file` names it in error messages.
Result<Config> parse_config(std::string_view text, const std::string& file);
/// Reads <root>/config.toml; defaults when the file does not exist.
Result<Config> load_config(const std::filesystem::path& root);
/// Appends a [[tokens]] entry with a fresh random token for `user` to <root>/config.toml (creating
/// root and file when missing; the existing text, comments included, is kept), after checking that the
/// result still parses. Returns the token. Edits of config.toml take a lock (<root>/.config.lock), and
/// the file is written owner-only (0600) and atomically; a running server reloads it.
Result<std::string> add_token(const std::filesystem::path& root, const std::string& user,
                              const std::vector<std::string>& namespaces, util::Random& random);
enum class OrganizationChange { added, updated, unchanged };

/// Declares organisation `name` in <root>/config.toml (or updates its entry in place, comments kept),
/// with trusted-kernel-publisher = `trusted`. A running server picks the change up at its next request.
Result<OrganizationChange> set_organization(const std::filesystem::path& root, const std::string& name, bool trusted);
/// "hf_" followed by 34 random characters from [a-z2-7].
std::string generate_token(util::Random& random);

/// A warning when `config_file` (it holds tokens) can be read or written by group or others; none
/// when it is the owner's only or does not exist.
std::optional<std::string> config_permission_warning(const std::filesystem::path& config_file);

}  // namespace kbuild::server
