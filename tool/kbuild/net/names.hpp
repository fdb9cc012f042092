#pragma once
// Names on the Hub, shared by the client (what kbuild accepts from users before sending a request)
// and the registry (what it accepts from clients): repository names and ids, file paths inside a
// repository, branch and tag names.

#include <string_view>

namespace kbuild::net {

/// A namespace or repo name as the Hub accepts it: 1-96 characters from [A-Za-z0-9._-], not starting
/// or ending with '-' or '.', without "--" or "..". Names ending in ".git" are refused (they would make
/// LFS URLs ambiguous).
bool is_valid_repo_name(std::string_view name);
/// is_valid_repo_name, and not one of the words that start server routes (api, datasets, spaces,
/// kernels, models, lfs), so `/{ns}/{name}/resolve/...` stays unambiguous.
bool is_valid_namespace(std::string_view ns);
/// A path inside a repo: non-empty '/'-separated components, none empty, ".", ".." or ".git", no
/// leading '/', no NUL, CR or LF, at most 4096 bytes.
bool is_valid_repo_path(std::string_view path);
/// A branch or tag name (git check-ref-format, simplified): non-empty, at most 255 bytes, no control
/// characters, spaces or any of ~^:?*[\, no "..", "//" or "@{", not starting with '-' or '/', not ending
/// with '/', '.' or ".lock", no component starting with '.', and not "HEAD".
bool is_valid_ref_name(std::string_view name);
/// "namespace/name" with both parts valid (is_valid_namespace, is_valid_repo_name).
bool is_valid_repo_id(std::string_view id);

}  // namespace kbuild::net
