// kiln-dump FILE.vmfb: prints everything a .vmfb holds.
#include <cstdio>
#include <cstring>

#include "tools/kiln-dump/dump.h"

int main(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(stderr, "usage: kiln-dump FILE.vmfb\n");
    return argc == 2 ? 0 : 2;
  }
  kiln::Result<std::string> text = kiln::tools::DumpVmfbFile(argv[1]);
  if (!text.ok()) {
    std::fprintf(stderr, "kiln-dump: %s\n", text.status().ToString().c_str());
    return 1;
  }
  std::fputs(text->c_str(), stdout);
  return 0;
}
