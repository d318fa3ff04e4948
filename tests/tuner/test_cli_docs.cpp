// The CLI pages keep up with the program: docs/cli.md and the pages beside it (docs/cli-*.md).
// Every command `ktune --help` lists has exactly one section (`## COMMAND`) on one of those pages
// and a link to it in docs/cli.md's table of commands, and every option any command's `--help`
// shows is written on the page of that command's section or on docs/cli.md (the option groups
// the commands share). docs/database.md names the database file the commands use by default.
#include <gtest/gtest.h>

#include <map>
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

// docs/cli.md and every docs/cli-*.md, by file name.
std::map<std::string, std::string> cli_pages() {
  std::map<std::string, std::string> pages;
  for (const auto& entry : fs::directory_iterator(fs::path(KTUNE_SOURCE_DIR) / "docs")) {
    const auto name = entry.path().filename().string();
    if (!entry.is_regular_file() || entry.path().extension() != ".md") continue;
    if (name == "cli.md" || name.rfind("cli-", 0) == 0) pages[name] = test::read_file(entry.path());
  }
  return pages;
}

TEST(CliDocs, EveryCommandAndOptionInHelpIsOnTheCliPages) {
  test::TempDir tmp;
  const auto pages = cli_pages();
  ASSERT_TRUE(pages.count("cli.md")) << "docs/cli.md is missing";
  const std::string& main_page = pages.at("cli.md");
  const auto top = test::run_ktune({"--help"}, tmp.path(), tmp.path() / "cache");
  ASSERT_EQ(top.code, 0) << top;
  const auto commands = listed_commands(top.out);
  ASSERT_GE(commands.size(), 10u) << top.out;
  const std::regex option_re(R"(--[a-z][a-z0-9-]*)");
  for (const auto& command : commands) {
    std::vector<std::string> sections;
    for (const auto& [name, text] : pages)
      if (test::contains(text, "\n## " + command + "\n")) sections.push_back(name);
    ASSERT_EQ(sections.size(), 1u)
        << "'## " << command << "' should be on exactly one of docs/cli*.md";
    const std::string& page = sections.front();
    const std::string target = (page == "cli.md" ? "" : page) + "#" + command + ")";
    EXPECT_TRUE(test::contains(main_page, "[`" + command + "`](" + target))
        << command << " not in docs/cli.md's table, linked to " << page;
    const std::string doc = pages.at(page) + "\n" + (page == "cli.md" ? "" : main_page);
    const auto help = test::run_ktune({command, "--help"}, tmp.path(), tmp.path() / "cache");
    ASSERT_EQ(help.code, 0) << help;
    std::set<std::string> options;
    for (std::sregex_iterator it(help.out.begin(), help.out.end(), option_re), end; it != end; ++it)
      options.insert(it->str());
    EXPECT_FALSE(options.empty()) << command;
    for (const auto& option : options)
      EXPECT_TRUE(documents_option(doc, option))
          << "ktune " << command << " --help shows " << option << ", neither docs/" << page
          << " nor docs/cli.md does";
  }
}

// docs/database.md opens with the file the commands write by default: --db's default, or
// $KTUNE_DB where it is set.
TEST(CliDocs, TheDatabasePageNamesTheDefaultDatabaseFile) {
  test::TempDir tmp;
  const auto help = test::run_ktune({"tune", "--help"}, tmp.path(), tmp.path() / "cache");
  ASSERT_EQ(help.code, 0) << help;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(help.out, m, std::regex(R"(--db FILE \(=([^)]+)\))"))) << help.out;
  const std::string file = m[1];
  const std::string page = test::read_file(fs::path(KTUNE_SOURCE_DIR) / "docs" / "database.md");
  const auto first = page.find("\n\n") + 2;  // the paragraph after the title
  const std::string opening = page.substr(first, page.find("\n\n", first) - first);
  EXPECT_TRUE(test::contains(opening, "`./" + file + "`")) << opening;
  EXPECT_TRUE(test::contains(opening, "`$KTUNE_DB`")) << opening;
  EXPECT_FALSE(test::contains(opening, "results.db")) << opening;
}

}  // namespace
}  // namespace ktune
