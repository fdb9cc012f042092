// kbuild hub serve | token: a Hub-compatible registry on this machine (tool/kbuild/server/).

#include <fmt/core.h>

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <limits>

#include "kbuild/cli/command.hpp"
#include "kbuild/server/config.hpp"
#include "kbuild/server/listener.hpp"
#include "kbuild/server/router.hpp"
#include "kbuild/server/store.hpp"
#include "kbuild/util/log.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::cli {

namespace {

struct ServeOptions {
  std::string root;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string base_url;
  std::string log;
};

struct OrgOptions {
  std::string root;
  std::string name;
  bool trusted = false;
  bool untrusted = false;
};

struct TokenOptions {
  std::string root;
  std::string user;
  std::vector<std::string> namespaces;
};

// No upload or request survives a restart: every temporary file is stale, and so are the parts of
// expired uploads (unexpired ones stay, so that their clients can resume them).
Result<void> sweep_at_start(server::Store& store, const util::Clock& clock) {
  KB_TRY(store.expire_uploads(clock.unix_ms()));
  KB_TRY_ASSIGN(auto swept, store.sweep_temporary(std::numeric_limits<std::int64_t>::max()));
  if (swept.files > 0)
    util::log::info(fmt::format("hub: removed {} stale temporary file(s) and upload folder(s), {} bytes, from {}",
                                swept.files, swept.bytes, store.root().string()));
  return {};
}

Result<ExitCode> run_serve(const ServeOptions& options, Services& services) {
  auto root = absolute_dir(options.root);
  if (options.port < 0 || options.port > 65535)
    return fail("--port must be 0 to 65535", "use 0 for any free port", ExitCode::usage);
  // Whatever the caller's umask, what the registry writes (blobs, spooled bodies, upload parts,
  // the database's side files) is the owner's only; Store::open makes the root itself 0700.
  ::umask(077);
  KB_TRY_ASSIGN(server::Config config, server::load_config(root));
  if (auto warning = server::config_permission_warning(root / "config.toml")) util::log::warn(*warning);
  KB_TRY_ASSIGN(auto store, server::Store::open(root, services.random));
  server::ListenerOptions listen;
  listen.host = options.host;
  listen.port = options.port;
  listen.access_log = options.log.empty() ? std::filesystem::path() : std::filesystem::absolute(options.log);
  listen.spool_dir = store->temp_dir();
  listen.limits = config.limits;
  listen.trusted_proxies = config.trusted_proxies;
  listen.proxy_secret = config.proxy_secret;
  listen.clock = &services.clock;
  KB_TRY_ASSIGN(auto listener, server::Listener::bind(listen));
  KB_TRY(store->lock_exclusively());
  KB_TRY(sweep_at_start(*store, services.clock));

  server::RouterOptions router_options;
  std::string host = options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
  std::string address = "http://" + host + ":" + std::to_string(listener->port());
  router_options.base_url = options.base_url.empty() ? address : options.base_url;
  router_options.config_file = root / "config.toml";
  router_options.clock = &services.clock;
  router_options.on_config_error = [](const std::string& message) { util::log::warn(message); };
  const size_t token_count = config.tokens.size();
  const bool public_reads = config.read == server::ReadAccess::anyone;
  server::Router router(*store, std::move(config), router_options);

  // From here on SIGINT and SIGTERM stop the server cleanly (serve_until_signal waits for them), also
  // when they arrive right after the line below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  fmt::print("kbuild hub: serving {} at {}\n", root.string(), address);
  if (router_options.base_url != address) fmt::print("kbuild hub: public URL {}\n", router_options.base_url);
  if (token_count == 0)
    fmt::print(
        "kbuild hub: no tokens in {}/config.toml, so uploads are refused; add one with "
        "kbuild hub token --root {} --user NAME\n",
        root.string(), root.string());
  else
    fmt::print("kbuild hub: {} in {}/config.toml (more: kbuild hub token --root {} --user NAME); reads {}\n",
               util::count_of(token_count, "token"), root.string(), root.string(),
               public_reads ? "are public" : "need a token");
  fmt::print("kbuild hub: clients use HF_ENDPOINT={} (and HF_TOKEN for writes); repositories are browsable at {}/{}\n",
             router_options.base_url, router_options.base_url, "kernels/ORG/NAME");
  std::fflush(stdout);
  KB_TRY(server::serve_until_signal(*listener, router));
  fmt::print("kbuild hub: stopped\n");
  return ExitCode::ok;
}

Result<ExitCode> run_token(const TokenOptions& options, Services& services) {
  auto root = absolute_dir(options.root);
  KB_TRY_ASSIGN(std::string token, server::add_token(root, options.user, options.namespaces, services.random));
  fmt::print("{}\n", token);
  return ExitCode::ok;
}

Result<ExitCode> run_org(const OrgOptions& options) {
  if (options.trusted == options.untrusted)
    return fail("say whether the organisation is a trusted kernel publisher", "pass --trusted or --untrusted",
                ExitCode::usage);
  auto root = absolute_dir(options.root);
  KB_TRY_ASSIGN(auto change, server::set_organization(root, options.name, options.trusted));
  const char* what = change == server::OrganizationChange::added     ? "added"
                     : change == server::OrganizationChange::updated ? "updated"
                                                                     : "unchanged";
  fmt::print(
      "organisation {} {}: trusted-kernel-publisher = {} ({}/config.toml; a running server applies it at "
      "once)\n",
      options.name, what, options.trusted ? "true" : "false", root.string());
  return ExitCode::ok;
}

}  // namespace

void register_hub(CLI::App& app, CommandAction& action) {
  CLI::App* hub = app.add_subcommand("hub", "Run a local Hugging Face Hub-compatible registry");
  hub->require_subcommand(1);

  auto serve = std::make_shared<ServeOptions>();
  CLI::App* serve_cmd = hub->add_subcommand("serve", "Serve the registry stored in --root over HTTP");
  serve_cmd->add_option("--root", serve->root, "Registry directory (created when missing)")->required();
  serve_cmd->add_option("--host", serve->host, "Address to listen on")->capture_default_str();
  serve_cmd->add_option("--port", serve->port, "Port to listen on; 0 picks a free one")->capture_default_str();
  serve_cmd->add_option("--base-url", serve->base_url,
                        "Public URL clients reach the server at (default: http://HOST:PORT)");
  serve_cmd->add_option("--log", serve->log, "Append one line per request to this file");
  serve_cmd->callback([serve, &action] { action = [serve](Services& s) { return run_serve(*serve, s); }; });

  auto token = std::make_shared<TokenOptions>();
  CLI::App* token_cmd = hub->add_subcommand("token", "Add an access token to ROOT/config.toml and print it");
  token_cmd->add_option("--root", token->root, "Registry directory (created when missing)")->required();
  token_cmd->add_option("--user", token->user, "User name the token acts as (may write namespace USER)")->required();
  token_cmd->add_option("--namespace", token->namespaces,
                        "Another namespace (organization) the token may write; repeatable");
  token_cmd->callback(
      [token, &action] { action = [token](Services& services) { return run_token(*token, services); }; });

  auto org = std::make_shared<OrgOptions>();
  CLI::App* org_cmd = hub->add_subcommand(
      "org", "Declare an organisation in ROOT/config.toml, and whether `kernels` may trust its kernels");
  org_cmd->add_option("name", org->name, "Organisation (namespace) name")->required();
  org_cmd->add_option("--root", org->root, "Registry directory (created when missing)")->required();
  org_cmd->add_flag("--trusted", org->trusted,
                    "Mark it a trusted kernel publisher (kernels lock / get_kernel accept its kernels)");
  org_cmd->add_flag("--untrusted", org->untrusted, "Mark it not trusted");
  org_cmd->callback([org, &action] { action = [org](Services&) { return run_org(*org); }; });
}

}  // namespace kbuild::cli
