#pragma once

#include <string>
#include <utility>
#include <vector>

namespace lab {

// A self-contained HTML page (no network: styles inline, figures embedded as data: URIs) that a
// person opens after a run: its title, the command, the figures, and tables.
class HtmlReport {
 public:
  explicit HtmlReport(std::string title);

  void paragraph(const std::string& text);
  void heading(const std::string& text);
  // The PNG at `path` embedded; a paragraph saying so when it cannot be read.
  void figure(const std::string& path, const std::string& caption);
  // A table; the first row is the header. Cells that look like numbers are right-aligned. With
  // `link_suffix`, each cell of the first column links to cell + suffix (a page beside this one).
  void table(const std::vector<std::vector<std::string>>& rows, const std::string& link_suffix = "");
  // "prefix <a href=href>text</a>".
  void link_paragraph(const std::string& prefix, const std::string& href, const std::string& text);
  // A list of links (href, text).
  void link_list(const std::vector<std::pair<std::string, std::string>>& links);
  // The verdict's lines, each a line of its own: a missed goal (MISSED, "above the goal") stands
  // out in red, a met one in green, "too small to judge" and "inconclusive" in grey.
  void verdict(const std::vector<std::string>& lines);
  void preformatted(const std::string& text);

  // Writes the page to `path` (through a temporary file renamed at the end). Throws on failure.
  void write(const std::string& path) const;

 private:
  std::string title_;
  std::string body_;
};

std::string html_escape(const std::string& text);

}  // namespace lab
