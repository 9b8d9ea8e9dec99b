#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "trace/jdk_locator.hpp"

namespace lab {
namespace {

namespace fs = std::filesystem;

TEST(JdkLocator, FeatureOfEveryVersionScheme) {
  EXPECT_EQ(jdk_feature("17.0.19"), 17);
  EXPECT_EQ(jdk_feature("25"), 25);
  EXPECT_EQ(jdk_feature("21.0.2+13-LTS"), 21);
  EXPECT_EQ(jdk_feature("11.0.22"), 11);
  EXPECT_EQ(jdk_feature("1.8.0_392"), 8);
  EXPECT_EQ(jdk_feature(""), 0);
}

// A JDK laid out as a real one is (bin/java, a release file), in a temporary folder.
fs::path fake_jdk(const std::string& name, const std::string& version) {
  const fs::path home = fs::path(testing::TempDir()) / ("jdk_locator_" + name);
  fs::remove_all(home);
  fs::create_directories(home / "bin");
  std::ofstream(home / "bin" / "java") << "#!/bin/sh\nexit 0\n";
  fs::permissions(home / "bin" / "java", fs::perms::owner_all);
  std::ofstream(home / "release") << "IMPLEMENTOR=\"test\"\nJAVA_VERSION=\"" << version << "\"\n";
  return fs::canonical(home);
}

// Restores an environment variable when the test ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(JdkLocator, ExplicitJavaThenJavaHomeThenPathAndALauncherPathWins) {
  const fs::path a = fake_jdk("a", "17.0.19"), b = fake_jdk("b", "25.0.3"), c = fake_jdk("c", "21.0.2");
  ScopedEnv path("PATH", (c / "bin").string());
  {
    ScopedEnv home("JAVA_HOME", b.string());
    Jdk jdk = locate_jdk(a.string(), "java");
    EXPECT_EQ(jdk.home, a.string());
    EXPECT_EQ(jdk.version, "17.0.19");
    EXPECT_EQ(jdk.feature, 17);
    EXPECT_EQ(jdk.chosen_by, "--java");
    EXPECT_EQ(jdk_launcher(jdk, "java"), (a / "bin" / "java").string());
    EXPECT_EQ(locate_jdk((a / "bin" / "java").string(), "java").home, a.string()) << "a launcher names its JDK";

    jdk = locate_jdk("", "java");
    EXPECT_EQ(jdk.home, b.string());
    EXPECT_EQ(jdk.chosen_by, "JAVA_HOME");
    EXPECT_EQ(jdk.feature, 25);

    jdk = locate_jdk("", (c / "bin" / "java").string());
    EXPECT_EQ(jdk.home, c.string()) << "a launcher given by its path is its own JDK, whatever JAVA_HOME says";
    EXPECT_THROW(locate_jdk(a.string(), (c / "bin" / "java").string()), std::runtime_error);
  }
  ScopedEnv no_home("JAVA_HOME", "");  // empty counts as unset
  const Jdk jdk = locate_jdk("", "java");
  EXPECT_EQ(jdk.home, c.string());
  EXPECT_EQ(jdk.chosen_by, "the java on PATH");
  EXPECT_EQ(jdk.feature, 21);
  EXPECT_THROW(locate_jdk("", "no-such-launcher"), std::runtime_error);
  EXPECT_THROW(locate_jdk(testing::TempDir(), "java"), std::runtime_error) << "not a JDK";
}

}  // namespace
}  // namespace lab
