#pragma once

#include <string>

namespace lab {

// Draws the run's PNG with tools/plot/plot_lab.py (python3 + matplotlib). Returns an empty string
// on success, else a message saying what is missing and how to get it; never fatal, the table
// has already been printed.
std::string render_plot(const std::string& json_path, const std::string& png_path);

}  // namespace lab
