#include "kbuild/plan/cuda_archs.hpp"

#include <algorithm>
#include <optional>

#include "kbuild/util/strings.hpp"

namespace kbuild::plan {

std::string strip_ptx(const std::string& capability) {
  return capability.ends_with("+PTX") ? capability.substr(0, capability.size() - 4) : capability;
}

std::optional<std::vector<std::string>> parse_arch_list(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  auto flush = [&]() -> bool {
    if (current.empty()) return true;
    size_t dot = current.find('.');
    bool ok = dot != std::string::npos && dot > 0 && dot + 1 < current.size();
    for (size_t i = 0; ok && i < current.size(); ++i) {
      char c = current[i];
      bool suffix = i + 1 == current.size() && (c == 'a' || c == 'f') && i > dot + 1;
      ok = (c >= '0' && c <= '9') || i == dot || suffix;
    }
    if (!ok) return false;
    if (std::find(out.begin(), out.end(), current) == out.end()) out.push_back(current);
    current.clear();
    return true;
  };
  for (char c : text) {
    if (c == ',' || c == ';' || c == ' ') {
      if (!flush()) return std::nullopt;
    } else {
      current += c;
    }
  }
  if (!flush() || out.empty()) return std::nullopt;
  return out;
}

std::vector<std::string> restrict_archs(const std::vector<std::string>& archs, const std::vector<std::string>& only) {
  std::vector<std::string> out;
  for (const auto& arch : archs)
    if (std::find(only.begin(), only.end(), strip_ptx(arch)) != only.end()) out.push_back(arch);
  return out;
}

std::vector<std::string> default_cuda_capabilities(const util::Version& cuda) {
  if (cuda >= util::Version({13, 0}))
    return {"7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0", "12.1+PTX"};
  if (cuda >= util::Version({12, 8}))
    return {"7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.1", "12.0+PTX"};
  return {"7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0+PTX"};
}

namespace {

// "9.0a" -> Version 9.0; suffixes are compared separately.
util::Version numeric(const std::string& arch) {
  std::string base = arch;
  while (!base.empty() && (base.back() == 'a' || base.back() == 'f')) base.pop_back();
  return util::Version::parse(base).value_or(util::Version());
}

void natural_sort(std::vector<std::string>& archs) {
  std::stable_sort(archs.begin(), archs.end(), [](const std::string& a, const std::string& b) {
    auto va = numeric(strip_ptx(a)), vb = numeric(strip_ptx(b));
    if (va != vb) return va < vb;
    return a < b;
  });
}

void push_unique(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

}  // namespace

std::vector<std::string> loose_intersection(const std::vector<std::string>& requested,
                                            const std::vector<std::string>& base) {
  std::vector<std::string> source, ptx;
  for (const auto& arch : requested) {
    if (arch.ends_with("+PTX")) {
      push_unique(ptx, strip_ptx(arch));
      push_unique(source, strip_ptx(arch));
    } else {
      push_unique(source, arch);
    }
  }
  std::vector<std::string> targets = base, result;
  // Architecture- or family-specific requests ("9.0a", "10.0f") are kept when their base is a target.
  std::vector<std::string> plain;
  for (const auto& arch : source) {
    if (arch.ends_with('a') || arch.ends_with('f')) {
      std::string stripped = arch.substr(0, arch.size() - 1);
      if (auto it = std::find(targets.begin(), targets.end(), stripped); it != targets.end()) {
        targets.erase(it);
        push_unique(result, arch);
      }
    } else {
      plain.push_back(arch);
    }
  }
  natural_sort(plain);
  for (const auto& target : targets) {
    util::Version t = numeric(target);
    std::optional<std::string> best;
    for (const auto& arch : plain) {
      util::Version s = numeric(arch);
      if (s > t) break;
      bool is_ptx = std::find(ptx.begin(), ptx.end(), arch) != ptx.end();
      if (is_ptx || s.major() == t.major()) best = arch;
    }
    if (best) push_unique(result, *best);
  }
  for (auto& arch : result)
    if (std::find(ptx.begin(), ptx.end(), arch) != ptx.end()) arch += "+PTX";
  natural_sort(result);
  return result;
}

std::vector<std::string> effective_cuda_capabilities(const std::vector<std::string>& requested,
                                                     const util::Version& cuda) {
  auto defaults = default_cuda_capabilities(cuda);
  if (requested.empty()) return defaults;
  std::vector<std::string> base;
  for (const auto& arch : defaults) base.push_back(strip_ptx(arch));
  return loose_intersection(requested, base);
}

std::vector<std::string> unsupported_cuda_capabilities(const std::vector<std::string>& requested,
                                                       const util::Version& cuda) {
  std::vector<std::string> base;
  for (const auto& arch : default_cuda_capabilities(cuda)) base.push_back(strip_ptx(arch));
  std::vector<std::string> kept;
  for (const auto& arch : loose_intersection(requested, base)) kept.push_back(strip_ptx(arch));
  std::vector<std::string> unsupported;
  for (const auto& arch : requested)
    if (std::find(kept.begin(), kept.end(), strip_ptx(arch)) == kept.end()) unsupported.push_back(arch);
  return unsupported;
}

std::vector<std::string> gencode_flags(const std::vector<std::string>& capabilities) {
  std::vector<std::string> flags;
  for (const auto& capability : capabilities) {
    std::string arch = strip_ptx(capability);
    arch.erase(std::remove(arch.begin(), arch.end(), '.'), arch.end());
    flags.push_back("-gencode");
    flags.push_back("arch=compute_" + arch + ",code=sm_" + arch);
    if (capability.ends_with("+PTX")) {
      flags.push_back("-gencode");
      flags.push_back("arch=compute_" + arch + ",code=compute_" + arch);
    }
  }
  return flags;
}

}  // namespace kbuild::plan
