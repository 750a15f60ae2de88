// libkiln.so exports exactly the C API: the kiln_* functions declared in
// capi/kiln*.h, parsed from the headers at test time (so new functions need
// no list to be kept by hand), against the library's dynamic symbol table
// (`nm -D --defined-only`). Also: the SONAME follows KILN_API_VERSION_MAJOR,
// the library needs no compiler-side library, and dlopen + dlsym reach the
// C API with nothing else.
#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "capi/kiln.h"

namespace {

// The names of the kiln_* functions a C header declares. Comments and
// preprocessor lines are dropped first (the headers name functions in
// prose); a function-pointer typedef "(*kiln_x_fn_t)(" is not a declaration.
std::set<std::string> DeclaredFunctions(const std::string& header_text) {
  std::string code;
  for (size_t i = 0; i < header_text.size();) {
    if (header_text.compare(i, 2, "/*") == 0) {
      size_t end = header_text.find("*/", i + 2);
      i = end == std::string::npos ? header_text.size() : end + 2;
      code += ' ';
    } else if (header_text.compare(i, 2, "//") == 0) {
      i = header_text.find('\n', i);
      if (i == std::string::npos) i = header_text.size();
    } else {
      code += header_text[i++];
    }
  }
  std::string no_preprocessor;
  std::istringstream lines(code);
  bool continued = false;
  for (std::string line; std::getline(lines, line);) {
    size_t first = line.find_first_not_of(" \t");
    bool directive = continued || (first != std::string::npos && line[first] == '#');
    continued = directive && !line.empty() && line.back() == '\\';
    if (!directive) no_preprocessor += line + "\n";
  }
  std::set<std::string> names;
  static const std::regex kDeclaration(R"((^|[^A-Za-z0-9_*(])(kiln_[A-Za-z0-9_]+)\s*\()");
  for (auto it = std::sregex_iterator(no_preprocessor.begin(), no_preprocessor.end(), kDeclaration);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[2]);
  }
  return names;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The public C headers: capi/kiln*.h (kiln.hpp is C++ calling the C API).
std::vector<std::string> PublicCHeaders() {
  std::vector<std::string> headers;
  std::string listing;
  FILE* ls = popen("ls " KILN_CAPI_DIR "/kiln*.h", "r");
  if (ls == nullptr) return headers;
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), ls) != nullptr) listing += buffer;
  pclose(ls);
  std::istringstream in(listing);
  for (std::string path; std::getline(in, path);) headers.push_back(path);
  return headers;
}

// stdout of a command; *status is its exit status.
std::string Capture(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return out;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  *status = pclose(pipe);
  return out;
}

std::string Join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += "  " + name + "\n";
  return out;
}

TEST(DeclaredFunctionsTest, FindsDeclarationsOnly) {
  const char* header =
      "/* kiln_in_a_comment(x) is prose */\n"
      "// kiln_in_a_line_comment(y)\n"
      "#define KILN_X(a) kiln_in_a_macro(a)\n"
      "#define KILN_Y(a) \\\n"
      "  kiln_in_a_continued_macro(a)\n"
      "typedef struct kiln_thing kiln_thing_t;\n"
      "typedef kiln_status_t* (*kiln_callback_t)(void* user);\n"
      "kiln_status_t* kiln_first(const kiln_thing_t* t,\n"
      "                          int32_t* out_x);\n"
      "void kiln_second (kiln_thing_t* t);\n"
      "const char* kiln_third(void); uint32_t kiln_fourth(void);\n";
  EXPECT_EQ(DeclaredFunctions(header),
            (std::set<std::string>{"kiln_first", "kiln_second", "kiln_third", "kiln_fourth"}));
}

TEST(SharedLibraryTest, ExportsExactlyTheDeclaredFunctions) {
  std::set<std::string> declared;
  std::vector<std::string> headers = PublicCHeaders();
  ASSERT_FALSE(headers.empty()) << "no " KILN_CAPI_DIR "/kiln*.h";
  for (const std::string& header : headers) {
    std::set<std::string> names = DeclaredFunctions(ReadFile(header));
    declared.insert(names.begin(), names.end());
  }
  ASSERT_GT(declared.size(), 20u) << "the header parser found too little";
  EXPECT_TRUE(declared.count("kiln_module_load_file"));

  int status = 0;
  std::string table = Capture("nm -D --defined-only '" KILN_SHARED_LIBRARY "'", &status);
  ASSERT_EQ(status, 0) << "nm -D failed on " KILN_SHARED_LIBRARY;
  std::set<std::string> exported;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string address, type, name;
    fields >> address >> type >> name;
    if (name.empty()) continue;
    name = name.substr(0, name.find('@'));  // a version suffix, if any
    exported.insert(name);
  }

  std::set<std::string> missing, extra;
  for (const std::string& name : declared) {
    if (!exported.count(name)) missing.insert(name);
  }
  for (const std::string& name : exported) {
    if (!declared.count(name)) extra.insert(name);
  }
  EXPECT_TRUE(missing.empty()) << "declared in kiln*.h but not exported by libkiln.so:\n" << Join(missing);
  EXPECT_TRUE(extra.empty()) << "exported by libkiln.so but not declared in kiln*.h:\n" << Join(extra);
}

TEST(SharedLibraryTest, SonameIsTheApiMajorVersion) {
  int status = 0;
  std::string dynamic = Capture("readelf -d '" KILN_SHARED_LIBRARY "'", &status);
  ASSERT_EQ(status, 0);
  std::smatch match;
  ASSERT_TRUE(std::regex_search(dynamic, match, std::regex(R"(SONAME\)\s+Library soname: \[([^\]]+)\])")))
      << dynamic;
  // The header as it is now, not as it was when this test was compiled.
  std::smatch major;
  std::string header = ReadFile(KILN_CAPI_DIR "/kiln.h");
  ASSERT_TRUE(std::regex_search(header, major, std::regex(R"(#define KILN_API_VERSION_MAJOR ([0-9]+))")));
  EXPECT_EQ(match[1].str(), "libkiln.so." + major[1].str());
}

TEST(SharedLibraryTest, NeedsNoCompilerLibraries) {
  int status = 0;
  std::string dynamic = Capture("readelf -d '" KILN_SHARED_LIBRARY "'", &status);
  ASSERT_EQ(status, 0);
  for (const char* name : {"LLVM", "yaml", "lld", "flatbuffers"}) {
    EXPECT_EQ(dynamic.find(name), std::string::npos) << "libkiln.so needs " << name << ":\n" << dynamic;
  }
}

TEST(SharedLibraryTest, DlopenReachesTheCApiAndNothingElse) {
  void* library = dlopen(KILN_SHARED_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  auto version = reinterpret_cast<uint32_t (*)(void)>(dlsym(library, "kiln_api_version"));
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(version() >> 16, static_cast<uint32_t>(KILN_API_VERSION_MAJOR));
  auto code_name = reinterpret_cast<const char* (*)(kiln_status_code_t)>(dlsym(library, "kiln_status_code_name"));
  ASSERT_NE(code_name, nullptr);
  EXPECT_STREQ(code_name(KILN_STATUS_NOT_FOUND), "NOT_FOUND");
  // A runtime internal that is in the library (kiln::Status::ToString() const)
  // is not reachable.
  EXPECT_EQ(dlsym(library, "_ZNK4kiln6Status8ToStringB5cxx11Ev"), nullptr);
  // Not dlclose'd: the runtime's registries are process-lifetime singletons
  // (never freed by design), which LeakSanitizer reports once the library
  // holding the pointers to them is unmapped.
}

}  // namespace
