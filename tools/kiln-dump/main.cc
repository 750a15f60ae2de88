// kiln-dump [--info] FILE.vmfb: prints everything a .vmfb holds, or only its header.
#include <cstdio>
#include <cstring>

#include "tools/kiln-dump/dump.h"

int main(int argc, char** argv) {
  bool info_only = argc == 3 && std::strcmp(argv[1], "--info") == 0;
  if ((argc != 2 && !info_only) || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(stderr,
                 "usage: kiln-dump [--info] FILE.vmfb\n"
                 "  --info  only the header (format, producer, target), without decoding the code\n");
    return argc == 2 ? 0 : 2;
  }
  kiln::Result<std::string> text =
      info_only ? kiln::tools::DumpVmfbInfoFile(argv[2]) : kiln::tools::DumpVmfbFile(argv[1]);
  if (!text.ok()) {
    std::fprintf(stderr, "kiln-dump: %s\n", text.status().ToString().c_str());
    return 1;
  }
  std::fputs(text->c_str(), stdout);
  return 0;
}
