#include "kbuild/hub/curl_transport.hpp"

#include <curl/curl.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "kbuild/hub/ca_bundle.hpp"
#include "kbuild/util/build_info.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/lazy_libraries.hpp"
#include "kbuild/util/shared_library.hpp"

namespace kbuild::hub {

namespace {

// libcurl's functions, from the library loaded on first use (util/shared_library.hpp).
struct CurlApi {
  decltype(&curl_global_init) global_init;
  decltype(&curl_version_info) version_info;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_reset) easy_reset;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
};

Result<void> bind_curl(const util::SharedLibrary& library, CurlApi& functions) {
  KB_TRY(KB_BIND(library, functions.global_init, curl_global_init));
  KB_TRY(KB_BIND(library, functions.version_info, curl_version_info));
  KB_TRY(KB_BIND(library, functions.easy_init, curl_easy_init));
  KB_TRY(KB_BIND(library, functions.easy_cleanup, curl_easy_cleanup));
  KB_TRY(KB_BIND(library, functions.easy_reset, curl_easy_reset));
  KB_TRY(KB_BIND(library, functions.easy_setopt, curl_easy_setopt));
  KB_TRY(KB_BIND(library, functions.easy_getinfo, curl_easy_getinfo));
  KB_TRY(KB_BIND(library, functions.easy_perform, curl_easy_perform));
  KB_TRY(KB_BIND(library, functions.easy_strerror, curl_easy_strerror));
  KB_TRY(KB_BIND(library, functions.slist_append, curl_slist_append));
  KB_TRY(KB_BIND(library, functions.slist_free_all, curl_slist_free_all));
  functions.global_init(CURL_GLOBAL_DEFAULT);
  return {};
}

// Loaded and globally initialised once per process, on first use.
const Result<CurlApi>& curl_api() {
  return util::load_once<CurlApi>(util::k_libcurl_soname,
                                  "kbuild needs libcurl for the network (Debian: apt install libcurl4)", bind_curl);
}

// Only called where curl_api() succeeded: CurlTransport has no handle otherwise.
const CurlApi& api() { return *curl_api(); }

}  // namespace

std::string curl_library_version() {
  if (!curl_api()) return util::not_loaded(curl_api().error());
  const curl_version_info_data* info = api().version_info(CURLVERSION_NOW);
  return std::string(info->version) + (info->ssl_version ? std::string(" (") + info->ssl_version + ")" : "");
}

namespace {

// The body of an upload: a byte range of a file, or a string. Rewindable (curl seeks back to
// resend a body when a reused connection turns out to be dead).
struct UploadSource {
  std::FILE* file = nullptr;
  std::uint64_t file_offset = 0;  ///< where the range starts in the file
  std::uint64_t length = 0;
  std::uint64_t remaining = 0;
  const std::string* memory = nullptr;
  size_t memory_offset = 0;
  ~UploadSource() {
    if (file) std::fclose(file);
  }
};

int seek_body(void* user, curl_off_t offset, int origin) {
  auto* source = static_cast<UploadSource*>(user);
  if (origin != SEEK_SET || offset < 0) return CURL_SEEKFUNC_CANTSEEK;
  auto position = static_cast<std::uint64_t>(offset);
  if (source->memory) {
    if (position > source->memory->size()) return CURL_SEEKFUNC_FAIL;
    source->memory_offset = static_cast<size_t>(position);
    return CURL_SEEKFUNC_OK;
  }
  if (position > source->length) return CURL_SEEKFUNC_FAIL;
  if (std::fseek(source->file, static_cast<long>(source->file_offset + position), SEEK_SET) != 0)
    return CURL_SEEKFUNC_FAIL;
  source->remaining = source->length - position;
  return CURL_SEEKFUNC_OK;
}

// Opens the request's body; false when its file cannot be read.
bool open_body(const net::HttpRequest& request, UploadSource& source) {
  if (!request.body_file) {
    source.memory = &request.body;
    source.length = request.body.size();
    return true;
  }
  source.file = std::fopen(request.body_file->c_str(), "rb");
  if (!source.file) return false;
  source.file_offset = request.body_offset;
  if (request.body_length) {
    source.length = *request.body_length;
  } else {
    std::fseek(source.file, 0, SEEK_END);
    source.length = static_cast<std::uint64_t>(std::ftell(source.file)) - request.body_offset;
  }
  std::fseek(source.file, static_cast<long>(source.file_offset), SEEK_SET);
  source.remaining = source.length;
  return true;
}

size_t read_body(char* buffer, size_t size, size_t count, void* user) {
  auto* source = static_cast<UploadSource*>(user);
  size_t wanted = size * count;
  if (source->memory) {
    size_t n = std::min(wanted, source->memory->size() - source->memory_offset);
    std::memcpy(buffer, source->memory->data() + source->memory_offset, n);
    source->memory_offset += n;
    return n;
  }
  if (source->remaining < wanted) wanted = static_cast<size_t>(source->remaining);
  size_t n = std::fread(buffer, 1, wanted, source->file);
  if (n == 0 && wanted > 0) return CURL_READFUNC_ABORT;
  source->remaining -= n;
  return n;
}

// Where a response body goes: memory, or a file when the request asks for one and the status is 2xx
// (decided at the first byte, when the status line has been read).
struct ResponseSink {
  CURL* curl = nullptr;
  std::string* memory = nullptr;
  const std::filesystem::path* file_path = nullptr;
  std::FILE* file = nullptr;
  std::uint64_t file_bytes = 0;
  bool decided = false;
  bool failed = false;
  std::uint64_t max_bytes = 0;  ///< 0: unbounded
  std::uint64_t received = 0;
  bool too_large = false;
};

size_t write_body(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<ResponseSink*>(user);
  size_t n = size * count;
  if (!sink->decided) {
    sink->decided = true;
    long status = 0;
    api().easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
    if (sink->file_path && status >= 200 && status < 300) {
      sink->file = std::fopen(sink->file_path->c_str(), "wb");
      if (!sink->file) {
        sink->failed = true;
        return 0;  // aborts the transfer
      }
    }
  }
  sink->received += n;
  if (sink->max_bytes > 0 && sink->received > sink->max_bytes) {
    sink->too_large = true;
    return 0;  // aborts the transfer
  }
  if (sink->file) {
    if (std::fwrite(data, 1, n, sink->file) != n) return 0;
    sink->file_bytes += n;
    return n;
  }
  sink->memory->append(data, n);
  return n;
}

size_t write_header(char* data, size_t size, size_t count, void* user) {
  std::string line(data, size * count);
  auto* headers = static_cast<net::Headers*>(user);
  if (line.starts_with("HTTP/")) {
    *headers = net::Headers();  // a new response (after a redirect or 100 Continue)
    return size * count;
  }
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(value.begin());
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.pop_back();
    headers->set(line.substr(0, colon), value);
  }
  return size * count;
}

// Also the way out of a transfer on SIGINT/SIGTERM (util/interrupt.hpp): curl calls it about once a
// second even when nothing arrives, and a non-zero answer aborts the transfer.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t upload_total, curl_off_t upload_now) {
  if (util::interrupted()) return 1;
  auto* request = static_cast<const net::HttpRequest*>(user);
  if (request->on_upload_progress && upload_total > 0)
    request->on_upload_progress(static_cast<std::uint64_t>(upload_now), static_cast<std::uint64_t>(upload_total));
  return 0;
}

// Read once per process: the environment and the distribution do not change while kbuild runs.
const CaLocation& ca_location() {
  static const CaLocation location = find_ca_location(util::RealEnvironment(), [](const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
  });
  return location;
}

// Options every request gets: URL, timeouts, user agent, trusted CAs, where the answer goes.
void configure(CURL* curl, const net::HttpRequest& request, net::HttpResponse& response, ResponseSink& sink) {
  api().easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  api().easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  api().easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 30L);
  api().easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  api().easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
  if (request.timeout_seconds > 0)
    api().easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_seconds * 1000));
  const std::string agent = std::string("kbuild/") + util::k_kbuild_version;
  api().easy_setopt(curl, CURLOPT_USERAGENT, agent.c_str());
  if (!ca_location().file.empty()) api().easy_setopt(curl, CURLOPT_CAINFO, ca_location().file.c_str());
  if (!ca_location().directory.empty()) api().easy_setopt(curl, CURLOPT_CAPATH, ca_location().directory.c_str());
  sink.curl = curl;
  sink.memory = &response.body;
  if (request.response_file) sink.file_path = &*request.response_file;
  sink.max_bytes = request.max_response_bytes;
  api().easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_body);
  api().easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  api().easy_setopt(curl, CURLOPT_HEADERFUNCTION, write_header);
  api().easy_setopt(curl, CURLOPT_HEADERDATA, &response.headers);
  api().easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever the server compresses, decoded
}

}  // namespace

struct CurlTransport::Impl {
  CURL* handle = nullptr;
};

CurlTransport::CurlTransport() : m_impl(std::make_unique<Impl>()) {
  if (curl_api()) m_impl->handle = api().easy_init();
}

CurlTransport::~CurlTransport() {
  if (m_impl->handle) api().easy_cleanup(m_impl->handle);
}

std::expected<net::HttpResponse, net::TransportError> CurlTransport::send(const net::HttpRequest& request) {
  CURL* curl = m_impl->handle;
  if (!curl) {
    if (!curl_api())
      return std::unexpected(
          net::TransportError{curl_api().error().message + " (" + curl_api().error().hint + ")", false});
    return std::unexpected(net::TransportError{"libcurl could not be initialised", false});
  }
  api().easy_reset(curl);
  net::HttpResponse response;
  ResponseSink sink;
  configure(curl, request, response, sink);
  UploadSource source;
  bool has_body = request.body_file || !request.body.empty() || request.method == "POST" || request.method == "PUT";
  if (!open_body(request, source))
    return std::unexpected(net::TransportError{"cannot read " + request.body_file->string(), false});
  if (request.method == "HEAD") {
    api().easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (has_body) {
    api().easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    api().easy_setopt(curl, CURLOPT_READFUNCTION, read_body);
    api().easy_setopt(curl, CURLOPT_READDATA, &source);
    api().easy_setopt(curl, CURLOPT_SEEKFUNCTION, seek_body);
    api().easy_setopt(curl, CURLOPT_SEEKDATA, &source);
    api().easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(source.length));
    api().easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  } else if (request.method != "GET") {
    api().easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  api().easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  api().easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  api().easy_setopt(curl, CURLOPT_XFERINFODATA, &request);
  curl_slist* headers = nullptr;
  headers = api().slist_append(headers, "Expect:");  // no 100-continue round trip
  for (const auto& [name, value] : request.headers.all())
    headers = api().slist_append(headers, (name + ": " + value).c_str());
  api().easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

  CURLcode code = api().easy_perform(curl);
  long status = 0;
  api().easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  api().slist_free_all(headers);
  bool write_failed = sink.failed || (sink.file && std::fclose(sink.file) != 0);
  if (write_failed)
    return std::unexpected(net::TransportError{"cannot write " + request.response_file->string(), false});
  if (sink.too_large) {  // an answer, not a transport failure: retrying would not help
    response.status = static_cast<int>(status);
    response.too_large = true;
    return response;
  }
  long final_status = status;
  if (request.response_file && final_status >= 200 && final_status < 300 && !sink.decided) {
    // An empty 2xx body: the file must still exist, empty.
    if (std::FILE* empty = std::fopen(request.response_file->c_str(), "wb")) std::fclose(empty);
  }
  if (code != CURLE_OK)
    return std::unexpected(net::TransportError{
        api().easy_strerror(code), code == CURLE_OPERATION_TIMEDOUT,
        code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY});
  response.status = static_cast<int>(status);
  response.file_bytes = sink.file_bytes;
  return response;
}

}  // namespace kbuild::hub
