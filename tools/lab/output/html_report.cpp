#include "output/html_report.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace lab {
namespace {

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16 | static_cast<unsigned char>(bytes[i + 1]) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < bytes.size()) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool numeric(const std::string& cell) {
  if (cell.empty()) return false;
  for (char c : cell)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == 'x' || c == '%')) return false;
  return true;
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

HtmlReport::HtmlReport(std::string title) : title_(std::move(title)) {}

void HtmlReport::paragraph(const std::string& text) { body_ += "<p>" + html_escape(text) + "</p>\n"; }

void HtmlReport::heading(const std::string& text) { body_ += "<h2>" + html_escape(text) + "</h2>\n"; }

void HtmlReport::figure(const std::string& path, const std::string& caption) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    paragraph("(no figure: " + path + " was not drawn)");
    return;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  body_ += "<figure><img alt=\"" + html_escape(caption) + "\" src=\"data:image/png;base64," + base64(bytes) +
           "\"><figcaption>" + html_escape(caption) + "</figcaption></figure>\n";
}

void HtmlReport::table(const std::vector<std::vector<std::string>>& rows, const std::string& link_suffix) {
  if (rows.empty()) return;
  body_ += "<table>\n<tr>";
  for (const auto& h : rows[0]) body_ += "<th>" + html_escape(h) + "</th>";
  body_ += "</tr>\n";
  for (std::size_t r = 1; r < rows.size(); ++r) {
    body_ += "<tr>";
    for (std::size_t i = 0; i < rows[r].size(); ++i) {
      const std::string& c = rows[r][i];
      std::string cell = html_escape(c);
      if (i == 0 && !link_suffix.empty() && !c.empty())
        cell = "<a href=\"" + html_escape(c + link_suffix) + "\">" + cell + "</a>";
      if (c.find("FAILED") != std::string::npos || c.find("MISSED") != std::string::npos)
        cell = "<span class=\"missed\">" + cell + "</span>";
      body_ += (numeric(c) ? "<td class=\"n\">" : "<td>") + cell + "</td>";
    }
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

void HtmlReport::link_paragraph(const std::string& prefix, const std::string& href, const std::string& text) {
  body_ += "<p>" + html_escape(prefix) + "<a href=\"" + html_escape(href) + "\">" + html_escape(text) + "</a></p>\n";
}

void HtmlReport::link_list(const std::vector<std::pair<std::string, std::string>>& links) {
  body_ += "<ul class=\"links\">";
  for (const auto& [href, text] : links)
    body_ += "<li><a href=\"" + html_escape(href) + "\">" + html_escape(text) + "</a></li>";
  body_ += "</ul>\n";
}

void HtmlReport::verdict(const std::vector<std::string>& lines) {
  body_ += "<div class=\"verdict\">\n";
  for (const auto& line : lines) {
    const char* cls = "";
    if (line.find("MISSED") != std::string::npos || line.find("above the goal") != std::string::npos ||
        line.find("FAILED") != std::string::npos)
      cls = " class=\"missed\"";
    else if (line.find("too small to judge") != std::string::npos || line.find("nconclusive") != std::string::npos ||
             line.find("INCONCLUSIVE") != std::string::npos)
      cls = " class=\"unjudged\"";
    else if (line.find(": met") != std::string::npos || line.find("at every sample of all") != std::string::npos)
      cls = " class=\"met\"";
    std::string text = html_escape(line);
    for (const char* word : {"MISSED", "FAILED"}) {
      const auto at = text.find(word);
      if (at != std::string::npos) text.replace(at, std::string(word).size(), std::string("<strong>") + word + "</strong>");
    }
    body_ += "<div" + std::string(cls) + ">" + text + "</div>\n";
  }
  body_ += "</div>\n";
}

void HtmlReport::preformatted(const std::string& text) { body_ += "<pre>" + html_escape(text) + "</pre>\n"; }

void HtmlReport::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error("cannot write " + tmp);
    out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << html_escape(title_)
        << "</title>\n<style>body{font-family:sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#222}"
           "table{border-collapse:collapse;margin:1em 0;font-size:0.9em}th,td{border:1px solid #bbb;padding:0.2em "
           "0.6em}th{background:#eee}td.n{text-align:right;font-family:monospace}img{max-width:100%}"
           "pre{background:#f6f6f6;padding:0.6em;overflow-x:auto;font-size:0.8em}figcaption{color:#555}"
           ".verdict{font-family:monospace;font-size:0.9em;background:#f6f6f6;padding:0.6em}.verdict div{white-space:pre-wrap}"
           ".missed{color:#b00020;font-weight:bold}.verdict .missed{background:#fde7ea}"
           ".met{color:#1b5e20}.unjudged{color:#666;font-style:italic}ul.links{columns:3}</style>"
           "</head>\n<body>\n<h1>"
        << html_escape(title_) << "</h1>\n"
        << body_ << "</body></html>\n";
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace lab
