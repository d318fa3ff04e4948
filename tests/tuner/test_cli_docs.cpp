// docs/cli.md keeps up with the program: every command `ktune --help` lists has a section there,
// and every option any command's `--help` shows is written on that page.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;

// The commands of `ktune --help`: the indented names under "commands:".
std::vector<std::string> listed_commands(const std::string& help) {
  std::vector<std::string> out;
  const auto start = help.find("commands:\n");
  const auto end = help.find("\n\n", start);
  const std::regex line(R"(^  ([a-z][a-z-]*)\s)");
  std::istringstream in(help.substr(start, end - start));
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) out.push_back(m[1]);
  }
  return out;
}

bool documents_option(const std::string& doc, const std::string& option) {
  const std::regex word(option + "(?![a-z0-9-])");
  return std::regex_search(doc, word);
}

TEST(CliDocs, EveryCommandAndOptionInHelpIsInCliMd) {
  test::TempDir tmp;
  const std::string doc = test::read_file(fs::path(KTUNE_SOURCE_DIR) / "docs/cli.md");
  const auto top = test::run_ktune({"--help"}, tmp.path(), tmp.path() / "cache");
  ASSERT_EQ(top.code, 0) << top;
  const auto commands = listed_commands(top.out);
  ASSERT_GE(commands.size(), 10u) << top.out;
  const std::regex option_re(R"(--[a-z][a-z0-9-]*)");
  for (const auto& command : commands) {
    EXPECT_TRUE(test::contains(doc, "\n## " + command + "\n")) << "no section for " << command;
    EXPECT_TRUE(test::contains(doc, "[`" + command + "`](#")) << command << " not in the table";
    const auto help = test::run_ktune({command, "--help"}, tmp.path(), tmp.path() / "cache");
    ASSERT_EQ(help.code, 0) << help;
    std::set<std::string> options;
    for (std::sregex_iterator it(help.out.begin(), help.out.end(), option_re), end; it != end; ++it)
      options.insert(it->str());
    EXPECT_FALSE(options.empty()) << command;
    for (const auto& option : options)
      EXPECT_TRUE(documents_option(doc, option))
          << "ktune " << command << " --help shows " << option << ", docs/cli.md does not";
  }
}

}  // namespace
}  // namespace ktune
