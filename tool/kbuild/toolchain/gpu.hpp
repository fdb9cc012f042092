#pragma once
// The GPUs of this machine, for local builds that compile only what they can run (--cuda-archs
// native, kernel-builder's local default). NVIDIA's driver lists each GPU as a directory in
// /proc/driver/nvidia/gpus/<PCI address>; only when there is one does kbuild ask nvidia-smi for the
// compute capabilities, and it remembers the answer per set of PCI addresses in `memo_file`, so a
// no-op build neither starts a process nor waits for the driver.
//
// Memo format (text): first line "kbuild-gpus 1 <PCI addresses, sorted, space-separated>", second
// line the capabilities, space-separated ("9.0 9.0").

#include <filesystem>
#include <string>
#include <vector>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"

namespace kbuild::toolchain {

/// Compute capabilities of the GPUs, "major.minor", deduplicated and sorted; empty when the machine
/// has none that the driver lists, or nvidia-smi cannot tell.
std::vector<std::string> detect_gpu_capabilities(util::ProcessLauncher& launcher, util::FileSystem& fs,
                                                 const std::filesystem::path& memo_file,
                                                 const std::filesystem::path& driver_dir = "/proc/driver/nvidia/gpus");

}  // namespace kbuild::toolchain
