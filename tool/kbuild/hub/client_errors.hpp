#pragma once
// The errors HubClient's two halves (client.cpp: requests, repos, refs, trees; client_transfer.cpp:
// downloads, uploads, commits) report; internal to the hub module.

#include <exception>
#include <string>

#include "kbuild/util/result.hpp"

namespace kbuild::hub {

/// An answer of the Hub that is not the one asked for (exit code 4, "network").
Error hub_error(std::string message, std::string hint = {});
/// An answer kbuild cannot read (not the Hub API's JSON, or of another shape): plain words and what
/// to do instead of the JSON library's message (which goes to the debug log, `-v`).
Error malformed_answer(const std::string& endpoint, const std::string& what, const std::exception& problem);
/// No answer at all (connection, TLS, timeout): like hub_error, with ErrorKind::transport.
Error transport_error(std::string message, std::string hint = {});

}  // namespace kbuild::hub
