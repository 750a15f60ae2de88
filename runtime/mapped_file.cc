#include "runtime/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln {
namespace {

struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr != nullptr) munmap(addr, size);
  }
};

}  // namespace

Result<FileBytes> MapFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(StrFormat("cannot open '%s': %s", path.c_str(), std::strerror(errno)));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return NotFound(StrFormat("cannot stat '%s': %s", path.c_str(), std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArgument(StrFormat("'%s' is not a regular file", path.c_str()));
  }
  FileBytes bytes;
  if (st.st_size == 0) {
    close(fd);
    return bytes;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* addr = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  close(fd);  // the mapping stays valid without the descriptor
  if (addr == MAP_FAILED) {
    return ResourceExhausted(StrFormat("cannot map '%s' (%zu bytes): %s", path.c_str(), size, std::strerror(err)));
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->addr = addr;
  mapping->size = size;
  bytes.data = static_cast<const uint8_t*>(addr);
  bytes.size = size;
  bytes.owner = std::move(mapping);
  return bytes;
}

Result<std::string> ReadFileToString(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(FileBytes bytes, MapFile(path));
  return std::string(reinterpret_cast<const char*>(bytes.data), bytes.size);
}

}  // namespace kiln
