#pragma once
// The router's file helpers: request bodies spooled to files, the parts of multipart LFS uploads, and
// file bodies of responses. A write that fails removes what it had written of its destination.

#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::server {

enum class ReadFailure { cannot_open, short_read };

/// `length` bytes of `path` from `offset`.
std::expected<std::string, ReadFailure> read_slice(const std::filesystem::path& path, std::uint64_t offset,
                                                   std::uint64_t length);
/// The content of a small file; nullopt when it cannot be read.
std::optional<std::string> read_small_file(const std::filesystem::path& path);

/// Writes `content` to `path` (created, or truncated).
Result<void> write_file(const std::filesystem::path& path, std::string_view content);
/// Copies `length` bytes of `source` from `offset` into a new file `destination`.
Result<void> copy_slice(const std::filesystem::path& source, std::uint64_t offset, std::uint64_t length,
                        const std::filesystem::path& destination);
/// Writes the files `parts`, one after the other, into a new file `destination`.
Result<void> concatenate(const std::vector<std::filesystem::path>& parts, const std::filesystem::path& destination);
/// Renames `file` to `destination` (same filesystem), creating the destination's directory.
Result<void> move_file(const std::filesystem::path& file, const std::filesystem::path& destination);

}  // namespace kbuild::server
