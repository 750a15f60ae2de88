#include "tools/common/plugins.h"

#include "capi/kiln.h"

namespace kiln {
namespace tools {

Status LoadPlugins(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    size_t count = 0;
    kiln_status_t* s = kiln_plugin_load(path.c_str(), &count);
    if (s != nullptr) {
      Status status(static_cast<StatusCode>(kiln_status_code(s)), kiln_status_message(s));
      kiln_status_free(s);
      return status.Annotate("--plugin");
    }
  }
  return Status::Ok();
}

}  // namespace tools
}  // namespace kiln
