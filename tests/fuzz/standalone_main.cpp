// Drives LLVMFuzzerTestOneInput without a fuzzing engine: every seed file once (with each parser
// selector), then random mutations of the seeds (bit flips, byte insertions and deletions, splices,
// TOML/JSON tokens) for a number of iterations or seconds. Deterministic for a given --seed.
//
//   kbuild_fuzz_parsers [--iterations N] [--seconds S] [--seed X] SEED_FILE_OR_DIR...
//
// Built with AddressSanitizer and UndefinedBehaviorSanitizer, so memory errors and undefined
// behaviour abort the run; prints the input that failed first (as a file, crash-<n>.bin).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<std::string> load_seeds(const std::vector<std::string>& paths) {
  std::vector<std::string> seeds;
  for (const auto& path : paths) {
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(path)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(path))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else {
      files.push_back(path);
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      std::ifstream in(file, std::ios::binary);
      std::stringstream buffer;
      buffer << in.rdbuf();
      seeds.push_back(buffer.str());
    }
  }
  return seeds;
}

const char* const k_tokens[] = {"[",    "]",   "[[", "]]",      "=",       "\"",   "'''",         "{",
                                "}",    ",",   "\n", "\\u0000", "edition", "5",    "backends",    "cuda",
                                "src",  "..",  "/",  "1e999",   "-1",      "true", "\"v1.2.0\"",  ">=1.2,<2",
                                "^0.0", "~=1", ".*", "null",    "[]",      "{}",   "\"repo-id\"", "torch-"};

std::string mutate(std::string input, const std::vector<std::string>& seeds, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> kind(0, 5);
  int steps = 1 + static_cast<int>(rng() % 4);
  for (int step = 0; step < steps; ++step) {
    size_t at = input.empty() ? 0 : rng() % (input.size() + 1);
    switch (kind(rng)) {
      case 0:
        if (!input.empty()) input[at % input.size()] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:
        input.insert(input.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(rng() & 0xff));
        break;
      case 2:
        if (!input.empty()) input.erase(at % input.size(), 1 + rng() % 8);
        break;
      case 3:
        input.insert(at, k_tokens[rng() % (sizeof k_tokens / sizeof *k_tokens)]);
        break;
      case 4: {
        const std::string& other = seeds[rng() % seeds.size()];
        if (!other.empty()) {
          size_t from = rng() % other.size();
          input.insert(at, other.substr(from, 1 + rng() % 64));
        }
        break;
      }
      case 5:
        if (input.size() > 1) input.resize(rng() % input.size());
        break;
    }
  }
  return input;
}

void run(const std::string& input, std::uint8_t selector, std::uint64_t iteration) {
  std::string data(1, static_cast<char>(selector));
  data += input;
  // Saved before running: if it crashes, the file is the reproducer.
  static const char* k_last = "fuzz-last-input.bin";
  std::ofstream(k_last, std::ios::binary) << data;
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
  (void)iteration;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t iterations = 20000, seed = 20261203;
  double seconds = 0;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--iterations" && i + 1 < argc) {
      iterations = std::stoull(argv[++i]);
    } else if (arg == "--seconds" && i + 1 < argc) {
      seconds = std::stod(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::stoull(argv[++i]);
    } else {
      paths.push_back(arg);
    }
  }
  auto seeds = load_seeds(paths);
  if (seeds.empty()) seeds.push_back("");
  for (const auto& input : seeds)
    for (std::uint8_t selector = 0; selector < 8; ++selector) run(input, selector, 0);
  std::mt19937_64 rng(seed);
  auto start = std::chrono::steady_clock::now();
  std::uint64_t done = 0;
  for (; seconds > 0 || done < iterations; ++done) {
    if (seconds > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) break;
    const std::string& base = seeds[rng() % seeds.size()];
    run(mutate(base, seeds, rng), static_cast<std::uint8_t>(rng() % 8), done);
  }
  std::remove("fuzz-last-input.bin");
  std::printf("fuzz: %zu seeds, %llu mutated inputs, no failure\n", seeds.size(),
              static_cast<unsigned long long>(done));
  return 0;
}
