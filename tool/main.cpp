#include "kbuild/cli/app.hpp"

int main(int argc, char** argv) { return kbuild::cli::run(argc, argv); }
