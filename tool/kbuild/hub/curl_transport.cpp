#include "kbuild/hub/curl_transport.hpp"

#include <curl/curl.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "kbuild/util/build_info.hpp"
#include "kbuild/util/interrupt.hpp"

namespace kbuild::hub {

std::string curl_library_version() {
  const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  return std::string(info->version) + (info->ssl_version ? std::string(" (") + info->ssl_version + ")" : "");
}

namespace {

std::once_flag g_curl_init;

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
    curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
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

// Options every request gets: URL, timeouts, user agent, where the answer goes.
void configure(CURL* curl, const net::HttpRequest& request, net::HttpResponse& response, ResponseSink& sink) {
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 30L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
  if (request.timeout_seconds > 0)
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_seconds * 1000));
  const std::string agent = std::string("kbuild/") + util::k_kbuild_version;
  curl_easy_setopt(curl, CURLOPT_USERAGENT, agent.c_str());
  sink.curl = curl;
  sink.memory = &response.body;
  if (request.response_file) sink.file_path = &*request.response_file;
  sink.max_bytes = request.max_response_bytes;
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, write_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response.headers);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever the server compresses, decoded
}

}  // namespace

struct CurlTransport::Impl {
  CURL* handle = nullptr;
};

CurlTransport::CurlTransport() : m_impl(std::make_unique<Impl>()) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  m_impl->handle = curl_easy_init();
}

CurlTransport::~CurlTransport() {
  if (m_impl->handle) curl_easy_cleanup(m_impl->handle);
}

std::expected<net::HttpResponse, net::TransportError> CurlTransport::send(const net::HttpRequest& request) {
  CURL* curl = m_impl->handle;
  if (!curl) return std::unexpected(net::TransportError{"libcurl could not be initialised", false});
  curl_easy_reset(curl);
  net::HttpResponse response;
  ResponseSink sink;
  configure(curl, request, response, sink);
  UploadSource source;
  bool has_body = request.body_file || !request.body.empty() || request.method == "POST" || request.method == "PUT";
  if (!open_body(request, source))
    return std::unexpected(net::TransportError{"cannot read " + request.body_file->string(), false});
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (has_body) {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, read_body);
    curl_easy_setopt(curl, CURLOPT_READDATA, &source);
    curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, seek_body);
    curl_easy_setopt(curl, CURLOPT_SEEKDATA, &source);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(source.length));
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  } else if (request.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &request);
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  for (const auto& [name, value] : request.headers.all())
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

  CURLcode code = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
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
        curl_easy_strerror(code), code == CURLE_OPERATION_TIMEDOUT,
        code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY});
  response.status = static_cast<int>(status);
  response.file_bytes = sink.file_bytes;
  return response;
}

}  // namespace kbuild::hub
