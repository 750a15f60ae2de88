// Measuring through a runner command (runner.h): the job is files in a fresh
// directory, the measuring program (kiln-measure for the target) runs under
// the user's command, and its exit status and output become the
// measurement's state and message.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "compiler/tune/runner.h"

namespace kiln {
namespace tune {

namespace {

Measurement Failed(MeasureState state, std::string message) {
  Measurement m;
  m.state = state;
  m.message = std::move(message);
  return m;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The last part of a program's output, for messages.
std::string Tail(const std::string& s) {
  std::string t = s.size() > 600 ? "..." + s.substr(s.size() - 600) : s;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t.empty() ? "(no output)" : t;
}

// A directory removed with its files (one level: the job writes no more).
class JobDir {
 public:
  explicit JobDir(const std::string& parent) {
    std::string tmpl = parent + "/kiln-measure-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~JobDir() {
    for (const std::string& f : files_) unlink(f.c_str());
    if (!path_.empty()) rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

bool WriteFile(const std::string& path, const void* data, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  return static_cast<bool>(f);
}

}  // namespace

namespace {

// How the job's program is started, and what its exit says.
struct Launch {
  std::string program;
  std::string prefix;  // shell words before "PROGRAM JOB" ("exec" for the host program)
  bool host = false;   // kiln-measure-host: an exit other than 0, 2 or 3 is a crash
};

Measurement RunJob(const std::vector<uint8_t>& shared_object, const std::string& kernel,
                   const std::vector<std::vector<int64_t>>& shapes, const RunnerOptions& options,
                   const Measurement* reference, const Launch& launch) {
  if (launch.program.empty() || access(launch.program.c_str(), R_OK) != 0)
    return Failed(MeasureState::kRunFailed, "the measuring program '" + launch.program + "' does not exist (build " +
                                                (launch.host ? "kiln-measure-host" : "kiln-measure for the target") +
                                                ")");
  const char* tmp = getenv("TMPDIR");
  JobDir dir(!options.work_dir.empty() ? options.work_dir : tmp != nullptr && *tmp ? tmp : "/tmp");
  if (dir.path().empty()) return Failed(MeasureState::kRunFailed, std::string("mkdtemp: ") + strerror(errno));
  std::string lib = dir.File("kernel.so");
  if (!WriteFile(lib, shared_object.data(), shared_object.size()))
    return Failed(MeasureState::kRunFailed, "cannot write " + lib);
  std::ostringstream job;
  job << "kiln-measure-job 1\nlibrary " << lib << "\nkernel " << kernel << "\nthreads " << options.threads
      << "\nwarmup " << options.warmup << "\nrepeats " << options.repeats << "\nargs " << shapes.size() << "\n";
  std::vector<std::string> inputs;
  for (size_t k = 0; k < shapes.size(); ++k) {
    int64_t count = 1;
    for (int64_t e : shapes[k]) count *= e;
    std::vector<float> v = SeededInput(options.input_seed, k, count);
    inputs.push_back(dir.File("arg" + std::to_string(k) + ".bin"));
    dir.File("arg" + std::to_string(k) + ".bin.out");
    if (!WriteFile(inputs.back(), v.data(), v.size() * sizeof(float)))
      return Failed(MeasureState::kRunFailed, "cannot write " + inputs.back());
    job << shapes[k].size();
    for (int64_t e : shapes[k]) job << " " << e;
    job << " " << inputs.back() << "\n";
  }
  // An optional last line, so a job without it reads as before.
  if (options.cold_cache) job << "cold_cache_bytes " << options.cold_cache_bytes << "\n";
  std::string job_path = dir.File("job.txt");
  std::string job_text = job.str();
  if (!WriteFile(job_path, job_text.data(), job_text.size()))
    return Failed(MeasureState::kRunFailed, "cannot write " + job_path);

  std::string cmd = launch.prefix + " " + Quote(launch.program) + " " + Quote(job_path);
  int fds[2];
  if (pipe(fds) != 0) return Failed(MeasureState::kRunFailed, std::string("pipe: ") + strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Failed(MeasureState::kRunFailed, std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    // Its own process group, so the timeout kills the runner and what it
    // started (qemu, ssh) together.
    setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  close(fds[1]);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000));
  std::string output;
  bool finished = false;
  char buf[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      finished = true;
      break;
    }
    output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (!finished) kill(-pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  const std::string shown = (launch.host ? "the measuring process `" : "the runner command `") + cmd + "`";
  if (!finished)
    return Failed(MeasureState::kTimedOut,
                  shown + " was still running after " + std::to_string(options.timeout_s) + " s; killed");
  if (WIFSIGNALED(wstatus))
    return Failed(MeasureState::kCrashed, shown + " was killed by signal " + std::to_string(WTERMSIG(wstatus)) + " (" +
                                              strsignal(WTERMSIG(wstatus)) + "): " + Tail(output));
  int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  // kiln-measure-host exits 2 or 3 for the errors it reports itself; any
  // other failing exit is a sanitizer (or the candidate's own handler)
  // turning a crash into exit(1).
  if (launch.host && code != 0 && code != 2 && code != 3)
    return Failed(MeasureState::kCrashed, shown + " exited with status " + std::to_string(code) +
                                              " before its report was complete: " + Tail(output));
  if (code == 127 || code == 126)
    return Failed(MeasureState::kRunFailed, shown + " could not be run (exit status " +
                                                std::to_string(code) + "; is the command installed?): " +
                                                Tail(output));
  if (code > 128)  // the shell's report of a program killed by a signal (qemu re-raises the guest's)
    return Failed(MeasureState::kCrashed, "the measuring program died by signal " + std::to_string(code - 128) +
                                              " (" + strsignal(code - 128) + ") under " + shown + ": " + Tail(output));
  if (code != 0)
    return Failed(MeasureState::kRunFailed,
                  shown + " exited with status " + std::to_string(code) + ": " + Tail(output));

  Measurement m;
  std::istringstream lines(output);
  bool done = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.compare(0, 8, "time_us ") == 0) m.times_us.push_back(strtod(line.c_str() + 8, nullptr));
    else if (line == "done") done = true;
  }
  if (!done || m.times_us.size() != static_cast<size_t>(options.repeats))
    return Failed(MeasureState::kRunFailed, shown + " exited 0 without the measuring program's report (is the program "
                                                "kiln-measure?): " + Tail(output));
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::ifstream f(inputs[k] + ".out", std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    int64_t count = 1;
    for (int64_t e : shapes[k]) count *= e;
    if (bytes.size() != static_cast<size_t>(count) * sizeof(float))
      return Failed(MeasureState::kRunFailed, "the measuring program wrote " + std::to_string(bytes.size()) +
                                                  " bytes to " + inputs[k] + ".out, expected " +
                                                  std::to_string(count * sizeof(float)));
    m.outputs.push_back(std::move(bytes));
  }
  return Finish(std::move(m), reference);
}

}  // namespace

Measurement MeasureWithCommand(const std::vector<uint8_t>& shared_object, const std::string& kernel,
                               const std::vector<std::vector<int64_t>>& shapes, const RunnerOptions& options,
                               const Measurement* reference) {
  return RunJob(shared_object, kernel, shapes, options, reference, {options.measure_program, options.command, false});
}

Measurement MeasureWithHostProgram(const std::vector<uint8_t>& shared_object, const std::string& kernel,
                                   const std::vector<std::vector<int64_t>>& shapes, const RunnerOptions& options,
                                   const Measurement* reference) {
  // exec: the shell becomes the program, so its signals and exit reach us.
  return RunJob(shared_object, kernel, shapes, options, reference, {options.host_program, "exec", true});
}

}  // namespace tune
}  // namespace kiln
