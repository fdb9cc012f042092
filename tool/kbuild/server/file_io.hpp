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
/// Writes `content` to a temporary sibling of `path`, then renames it over `path`: readers see the old
/// or the new content, never a part.
Result<void> replace_file(const std::filesystem::path& path, std::string_view content);

/// The lines of a request body, held in memory or as `length` bytes of a file from `offset`, one at a
/// time: only the current line is in memory, in a string of exactly its size (a line longer than the
/// read buffer is measured first, then read in one piece).
class LineReader {
 public:
  explicit LineReader(std::string_view memory) : m_memory(memory), m_end(memory.size()) {}
  LineReader(const std::filesystem::path& file, std::uint64_t offset, std::uint64_t length);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  /// The next line without its '\n' (the last one may lack it); false after the last line, or when
  /// the file cannot be read (failed()).
  bool next(std::string& line);
  bool failed() const { return m_failed; }

 private:
  /// Up to `size` bytes at body offset `at` into `out`; false on a read error.
  bool read_at(std::uint64_t at, char* out, std::size_t size);
  /// Reads the buffer from body offset `at`.
  bool fill(std::uint64_t at);
  /// Body offset of the next '\n' at or after `from`, or m_end; nullopt on a read error.
  std::optional<std::uint64_t> find_newline(std::uint64_t from);

  static constexpr std::size_t k_buffer_size = 1 << 16;

  std::string_view m_memory;
  int m_fd = -1;
  std::uint64_t m_offset = 0;  ///< of the body in the file
  std::uint64_t m_pos = 0;     ///< next unread body byte
  std::uint64_t m_end = 0;     ///< body length
  std::string m_buffer;        ///< file bodies: bytes [m_buffer_start, m_buffer_start + m_buffer_length)
  std::uint64_t m_buffer_start = 0;
  std::size_t m_buffer_length = 0;
  bool m_failed = false;
};

}  // namespace kbuild::server
