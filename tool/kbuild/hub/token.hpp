#pragma once
// Where the Hub endpoint and token come from, as huggingface_hub resolves them:
//   endpoint: --endpoint, else $HF_ENDPOINT, else https://huggingface.co (trailing '/' removed);
//   token:    $HF_TOKEN, else $HUGGING_FACE_HUB_TOKEN, else the file $HF_TOKEN_PATH, else
//             $HF_HOME/token, else $XDG_CACHE_HOME/huggingface/token, else ~/.cache/huggingface/token.
// A token file holds the bare token; "\r" and "\n" are removed and whitespace trimmed; an empty
// result means no token. The token itself is never printed: `origin` says where it came from.

#include <map>
#include <optional>
#include <string>

#include "kbuild/util/fs.hpp"

namespace kbuild::hub {

struct Token {
  std::string value;
  std::string origin;  ///< "HF_TOKEN" or the file it was read from
};

using Environment = std::map<std::string, std::string>;

std::string resolve_endpoint(const std::optional<std::string>& option, const Environment& env);
std::optional<Token> resolve_token(const Environment& env, const util::FileSystem& fs);

/// Replaces every occurrence of `token` in `text` with "hf_***" (for logs and error messages).
std::string redact(std::string text, const std::optional<Token>& token);

}  // namespace kbuild::hub
