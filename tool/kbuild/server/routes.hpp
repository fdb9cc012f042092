#pragma once
// Private to the server module: the route table, the endpoint list of router.hpp as data. Dispatch
// looks the decoded path segments up here, then applies the route's access rule and calls its handler.
//
// Patterns are '/'-separated, one element per path segment:
//
//   literal    the segment itself
//   {T}        a repo type's plural (models, datasets, spaces, kernels): Match::id.type
//   {id}       two segments, namespace and name: Match::id
//   {P}{id}    (first only) {id}, after a "datasets", "spaces" or "kernels" segment that gives the type
//              whenever the path has at least 4 segments (the type is model otherwise)
//   {P}{id}.git  the same, with a name that ends in ".git" (dropped from Match::id.name)
//   {x}        one segment, possibly empty
//   {x!}       one non-empty segment
//   {x*}       all remaining segments (none or more), joined with '/'
//   {x+}       all remaining segments, at least one, joined with '/'
//   {x*!}      all remaining segments joined with '/', not empty
//
// where x names the Match field: rev, path, name, oid or part.
//
// Areas: a path under /lfs/upload/ (3 segments or more) is only tried against the /lfs/upload/ routes,
// a path under /api/ only against the /api/ routes, any other path only against the {P}{id} routes.

#include <string>
#include <string_view>
#include <vector>

#include "kbuild/server/handlers.hpp"

namespace kbuild::server {

/// Who may call a route (router.hpp, "Access"), checked before the handler runs.
enum class Access {
  none,    ///< anyone
  token,   ///< a valid Authorization token
  read,    ///< "read": with {id}, the repo must be visible (Match::repo); without, read access at all
  write,   ///< "write": with {id}, a token that may write the namespace (Match::repo); without, any valid
           ///< token, and the handler checks the namespace named in the body
  upload,  ///< the one-time token of an LFS upload in the query, checked by the handler
};

struct Route {
  std::string_view methods;  ///< space-separated; "*" for any. GET also answers HEAD.
  std::string_view pattern;
  Access access;
  Outcome<Reply> (Handlers::*handler)(const Match&);
};

/// Whether the path lies under /lfs/upload/, where an Authorization header is ignored.
bool is_upload_path(const std::vector<std::string>& segments);

struct RouteLookup {
  const Route* route = nullptr;  ///< nullptr: 404, or 405 when `other_method`
  Match match;
  bool other_method = false;  ///< some route has this path, none this method
};

/// The first route of the table whose pattern and methods fit; `method` is upper case.
RouteLookup find_route(const std::vector<std::string>& segments, std::string_view method);

}  // namespace kbuild::server
