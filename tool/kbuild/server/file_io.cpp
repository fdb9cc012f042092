#include "kbuild/server/file_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "kbuild/server/object_ids.hpp"
#include "kbuild/util/fs.hpp"

namespace kbuild::server {

namespace fs = std::filesystem;

namespace {
// `result`, after removing `path` when it is an error.
Result<void> removing_on_error(Result<void> result, const fs::path& path) {
  if (!result) {
    std::error_code ec;
    fs::remove(path, ec);
  }
  return result;
}

Result<void> copy_slice_to(const fs::path& source, std::uint64_t offset, std::uint64_t length,
                           const fs::path& destination) {
  std::ifstream in(source, std::ios::binary);
  if (!in) return fail("cannot read " + source.string());
  in.seekg(static_cast<std::streamoff>(offset));
  std::ofstream out(destination, std::ios::binary | std::ios::trunc);
  if (!out) return fail("cannot write " + destination.string());
  std::vector<char> buffer(1 << 20);
  while (length > 0) {
    auto chunk = static_cast<std::streamsize>(std::min<std::uint64_t>(length, buffer.size()));
    in.read(buffer.data(), chunk);
    if (in.gcount() != chunk) return fail("short read from " + source.string());
    out.write(buffer.data(), chunk);
    length -= static_cast<std::uint64_t>(chunk);
  }
  out.close();
  if (!out) return fail("cannot write " + destination.string());
  return {};
}

Result<void> concatenate_to(const std::vector<fs::path>& parts, const fs::path& destination) {
  std::ofstream out(destination, std::ios::binary | std::ios::trunc);
  for (const auto& part : parts) {
    if (!out) break;
    std::ifstream in(part, std::ios::binary);
    out << in.rdbuf();
  }
  out.close();
  if (!out) return fail("cannot write " + destination.string());
  return {};
}
}  // namespace

std::expected<std::string, ReadFailure> read_slice(const fs::path& path, std::uint64_t offset, std::uint64_t length) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(ReadFailure::cannot_open);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string content(length, '\0');
  in.read(content.data(), static_cast<std::streamsize>(length));
  if (static_cast<std::uint64_t>(in.gcount()) != length) return std::unexpected(ReadFailure::short_read);
  return content;
}

std::optional<std::string> read_small_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return content;
}

Result<void> write_file(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  return removing_on_error(out ? Result<void>() : fail("cannot write " + path.string()), path);
}

Result<void> copy_slice(const fs::path& source, std::uint64_t offset, std::uint64_t length,
                        const fs::path& destination) {
  return removing_on_error(copy_slice_to(source, offset, length, destination), destination);
}

Result<void> concatenate(const std::vector<fs::path>& parts, const fs::path& destination) {
  return removing_on_error(concatenate_to(parts, destination), destination);
}

Result<void> move_file(const fs::path& file, const fs::path& destination) {
  std::error_code ec;
  fs::create_directories(destination.parent_path(), ec);
  fs::rename(file, destination, ec);
  if (ec) return fail("cannot move " + file.string() + " to " + destination.string() + ": " + ec.message());
  return {};
}

}  // namespace kbuild::server

namespace kbuild::server {

Result<void> replace_file(const fs::path& path, std::string_view content) {
  fs::path temp = util::temp_sibling(path);
  KB_TRY(write_file(temp, content));
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) {
    fs::remove(temp, ec);
    return fail("cannot write " + path.string());
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// LineReader

LineReader::LineReader(const fs::path& file, std::uint64_t offset, std::uint64_t length)
    : m_offset(offset), m_end(length) {
  m_fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  m_failed = m_fd < 0;
}

LineReader::~LineReader() {
  if (m_fd >= 0) ::close(m_fd);
}

bool LineReader::read_at(std::uint64_t at, char* out, std::size_t size) {
  if (m_fd < 0) {
    std::memcpy(out, m_memory.data() + at, size);
    return true;
  }
  while (size > 0) {
    ssize_t got = ::pread(m_fd, out, size, static_cast<off_t>(m_offset + at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    at += static_cast<std::uint64_t>(got);
    size -= static_cast<std::size_t>(got);
  }
  return true;
}

bool LineReader::fill(std::uint64_t at) {
  m_buffer.resize(k_buffer_size);
  m_buffer_start = at;
  m_buffer_length = static_cast<std::size_t>(std::min<std::uint64_t>(k_buffer_size, m_end - at));
  return read_at(at, m_buffer.data(), m_buffer_length);
}

std::optional<std::uint64_t> LineReader::find_newline(std::uint64_t from) {
  if (m_fd < 0) {
    size_t found = m_memory.find('\n', from);
    return found == std::string_view::npos ? m_end : found;
  }
  auto in_buffer = [&](std::uint64_t at) -> std::optional<std::uint64_t> {
    const char* begin = m_buffer.data() + (at - m_buffer_start);
    const void* newline = std::memchr(begin, '\n', m_buffer_length - (at - m_buffer_start));
    if (!newline) return std::nullopt;
    return at + static_cast<std::uint64_t>(static_cast<const char*>(newline) - begin);
  };
  if (from < m_buffer_start || from >= m_buffer_start + m_buffer_length || !in_buffer(from)) {
    if (!fill(from)) return std::nullopt;
  }
  while (true) {
    if (auto found = in_buffer(std::max(from, m_buffer_start))) return found;
    std::uint64_t next = m_buffer_start + m_buffer_length;
    if (next >= m_end) return m_end;
    if (!fill(next)) return std::nullopt;  // a long line: keep measuring it
  }
}

bool LineReader::next(std::string& line) {
  if (m_failed || m_pos >= m_end) return false;
  auto newline = find_newline(m_pos);
  if (!newline) return !(m_failed = true);
  line.clear();
  line.shrink_to_fit();  // a long previous line must not stay allocated
  line.resize(static_cast<std::size_t>(*newline - m_pos));
  bool buffered = m_fd >= 0 && m_pos >= m_buffer_start && *newline <= m_buffer_start + m_buffer_length;
  if (buffered)
    std::memcpy(line.data(), m_buffer.data() + (m_pos - m_buffer_start), line.size());
  else if (!read_at(m_pos, line.data(), line.size()))
    return !(m_failed = true);
  m_pos = *newline + 1;
  return true;
}

}  // namespace kbuild::server
