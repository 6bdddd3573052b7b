// ProcessSupervisor against real processes and real signals.
#include "sidecar/run/supervisor.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace baton::run {
namespace {

MonoTime Now() { return SystemClock()->Monotonic(); }
MonoTime Far() { return Now() + absl::Hours(1); }

ChildSpec Spec(std::vector<std::string> argv, MonoTime kill_by) {
  ChildSpec spec;
  spec.argv = std::move(argv);
  spec.kill_by = kill_by;
  return spec;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/supervisor_test_", getpid(), "_", name);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Waits up to `timeout` for the child to exit and reaps it.
std::optional<ExitStatus> AwaitExit(ProcessSupervisor& s, absl::Duration timeout) {
  pollfd p = {s.exit_fd(), POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) != 1) return std::nullopt;
  return s.Reap();
}

// Whether `pid` is gone (or a zombie nobody has reaped yet).
bool Gone(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] == 'Z';
}

bool GoneWithin(pid_t pid, absl::Duration timeout) {
  const MonoTime until = Now() + timeout;
  while (Now() < until) {
    if (Gone(pid)) return true;
    usleep(5000);
  }
  return Gone(pid);
}

pid_t ReadPid(const std::string& path, absl::Duration timeout) {
  const MonoTime until = Now() + timeout;
  while (Now() < until) {
    int pid = 0;
    if (std::istringstream(ReadAll(path)) >> pid) return pid;
    usleep(5000);
  }
  return -1;
}

TEST(ProcessSupervisorTest, ChildGetsTheExtraEnvironmentAndItsExitCodeIsReported) {
  const std::string out = TempPath("env");
  ProcessSupervisor s;
  ChildSpec spec;
  spec.argv = {"sh", "-c", absl::StrCat("echo \"$BATON_FENCING_TOKEN $HOME\" > ", out, "; exit 3")};
  spec.extra_env = {"BATON_FENCING_TOKEN=42"};
  spec.kill_by = Far();
  ASSERT_TRUE(s.Start(spec).ok());
  const std::optional<ExitStatus> status = AwaitExit(s, absl::Seconds(5));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->code, 3);
  EXPECT_EQ(ReadAll(out), absl::StrCat("42 ", std::getenv("HOME"), "\n"));
  EXPECT_EQ(s.exit_fd(), -1);
  std::remove(out.c_str());
}

TEST(ProcessSupervisorTest, MissingCommandExits127) {
  ProcessSupervisor s;
  ASSERT_TRUE(s.Start(Spec({"/nonexistent/command"}, Far())).ok());
  const std::optional<ExitStatus> status = AwaitExit(s, absl::Seconds(5));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->code, 127);
}

TEST(ProcessSupervisorTest, SignalReachesTheWholeProcessGroup) {
  const std::string pidfile = TempPath("group");
  ProcessSupervisor s;
  // The shell ignores SIGTERM; its background sleep, started before, does not.
  ASSERT_TRUE(s.Start(Spec({"sh", "-c",
                            absl::StrCat("sleep 100 & echo $! > ", pidfile,
                                         "; trap '' TERM; sleep 0.3; exit 0")},
                           Far()))
                  .ok());
  const pid_t grandchild = ReadPid(pidfile, absl::Seconds(5));
  ASSERT_GT(grandchild, 0);
  s.Signal(SIGTERM);
  EXPECT_TRUE(GoneWithin(grandchild, absl::Seconds(2)));
  const std::optional<ExitStatus> status = AwaitExit(s, absl::Seconds(5));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->Success());
  std::remove(pidfile.c_str());
}

TEST(ProcessSupervisorTest, ReapKillsDescendantsTheChildLeftBehind) {
  const std::string pidfile = TempPath("left");
  ProcessSupervisor s;
  ASSERT_TRUE(
      s.Start(Spec({"sh", "-c", absl::StrCat("sleep 100 & echo $! > ", pidfile)}, Far())).ok());
  ASSERT_TRUE(AwaitExit(s, absl::Seconds(5)).has_value());
  const pid_t grandchild = ReadPid(pidfile, absl::Seconds(1));
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(GoneWithin(grandchild, absl::Seconds(2)));
  std::remove(pidfile.c_str());
}

TEST(ProcessSupervisorTest, WatchdogKillsTheGroupAtItsDeadline) {
  ProcessSupervisor s;
  const MonoTime start = Now();
  ASSERT_TRUE(s.Start(Spec({"sleep", "100"}, start + absl::Milliseconds(300))).ok());
  // Extended once, like a renew does.
  s.ExtendDeadline(start + absl::Milliseconds(600));
  const std::optional<ExitStatus> status = AwaitExit(s, absl::Seconds(5));
  const absl::Duration took = Now() - start;
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->signaled);
  EXPECT_EQ(status->signal, SIGKILL);
  EXPECT_GE(took, absl::Milliseconds(600));
  EXPECT_LT(took, absl::Milliseconds(1500));
}

TEST(ProcessSupervisorTest, AnEarlierDeadlineTakesEffectAtOnce) {
  ProcessSupervisor s;
  const MonoTime start = Now();
  ASSERT_TRUE(s.Start(Spec({"sleep", "100"}, Far())).ok());
  // A shorter validity (a renew deadline cut short) moves the watchdog's
  // timer forward.
  s.ExtendDeadline(start + absl::Milliseconds(200));
  const std::optional<ExitStatus> status = AwaitExit(s, absl::Seconds(5));
  const absl::Duration took = Now() - start;
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->signaled);
  EXPECT_GE(took, absl::Milliseconds(200));
  EXPECT_LT(took, absl::Milliseconds(1000));
}

// What kill -9 of baton leaves behind: nothing of the child's group.
TEST(ProcessSupervisorTest, ChildAndItsGroupDieWithTheSupervisingProcess) {
  const std::string pidfile = TempPath("orphan");
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t baton = fork();
  ASSERT_GE(baton, 0);
  if (baton == 0) {
    ProcessSupervisor s;
    if (!s.Start(
              Spec({"sh", "-c", absl::StrCat("sleep 100 & echo $! > ", pidfile, "; wait")}, Far()))
             .ok()) {
      _exit(1);
    }
    const pid_t child = s.pid();
    (void)!write(report[1], &child, sizeof(child));
    pause();
    _exit(0);
  }
  close(report[1]);
  pid_t child = -1;
  ASSERT_EQ(read(report[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  close(report[0]);
  const pid_t grandchild = ReadPid(pidfile, absl::Seconds(5));
  ASSERT_GT(grandchild, 0);
  kill(baton, SIGKILL);
  waitpid(baton, nullptr, 0);
  EXPECT_TRUE(GoneWithin(child, absl::Seconds(2)));
  EXPECT_TRUE(GoneWithin(grandchild, absl::Seconds(2)));
  std::remove(pidfile.c_str());
}

}  // namespace
}  // namespace baton::run
