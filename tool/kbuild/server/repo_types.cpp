#include "kbuild/server/repo_types.hpp"

namespace kbuild::server {

namespace {
struct RepoTypeNames {
  RepoType type;
  std::string_view name, plural, prefix;
};
constexpr RepoTypeNames k_repo_types[] = {
    {RepoType::model, "model", "models", ""},
    {RepoType::dataset, "dataset", "datasets", "datasets/"},
    {RepoType::space, "space", "spaces", "spaces/"},
    {RepoType::kernel, "kernel", "kernels", "kernels/"},
};
const RepoTypeNames& names_of(RepoType type) { return k_repo_types[static_cast<int>(type)]; }
}  // namespace

std::string_view repo_type_name(RepoType type) { return names_of(type).name; }
std::string_view repo_type_plural(RepoType type) { return names_of(type).plural; }
std::string_view repo_type_url_prefix(RepoType type) { return names_of(type).prefix; }

std::optional<RepoType> parse_repo_type(std::string_view name) {
  for (const auto& entry : k_repo_types)
    if (entry.name == name) return entry.type;
  return std::nullopt;
}

std::optional<RepoType> parse_repo_type_plural(std::string_view plural) {
  for (const auto& entry : k_repo_types)
    if (entry.plural == plural) return entry.type;
  return std::nullopt;
}

}  // namespace kbuild::server
