#pragma once
// Repository identity in the registry: types (with their URL spellings), ids and the stored repo row.
// Name rules are shared with the client (net/names.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kbuild/net/names.hpp"

namespace kbuild::server {

using net::is_valid_namespace;
using net::is_valid_ref_name;
using net::is_valid_repo_name;
using net::is_valid_repo_path;

// ---------------------------------------------------------------------------------------------
// Repository types: name, API segment (/api/{plural}/...) and resolve/LFS URL prefix.
//
//   type     plural     url prefix
//   model    models     ""
//   dataset  datasets   "datasets/"
//   space    spaces     "spaces/"
//   kernel   kernels    "kernels/"

enum class RepoType { model, dataset, space, kernel };

std::string_view repo_type_name(RepoType type);
std::string_view repo_type_plural(RepoType type);
std::string_view repo_type_url_prefix(RepoType type);
std::optional<RepoType> parse_repo_type(std::string_view name);
std::optional<RepoType> parse_repo_type_plural(std::string_view plural);

struct RepoId {
  RepoType type = RepoType::model;
  std::string ns;  ///< user or organisation
  std::string name;
  std::string full_name() const { return ns + "/" + name; }
};

struct Repo {
  std::int64_t key = 0;  ///< database key
  RepoId id;
  bool is_private = false;
  std::string object_id;  ///< 24 lowercase hex, stable for the repo's life
  std::int64_t created_ms = 0;
};

}  // namespace kbuild::server
