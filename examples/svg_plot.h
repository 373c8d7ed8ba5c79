#pragma once
// Learning curves as a small standalone SVG: loss on the left, accuracy on the right.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <tapegrad/core/error.h>

namespace examples {

namespace detail {

// One panel: axes, a few grid lines with labels, and one polyline per series.
inline void panel(std::ostringstream& svg, double x0, const std::string& title,
                  const std::vector<std::pair<std::string, const std::vector<double>*>>& series,
                  const std::vector<std::string>& colours, double lo, double hi) {
  const double w = 340, h = 220, top = 40, left = x0 + 50;
  const size_t n = series.front().second->size();
  auto px = [&](size_t i) { return left + (n > 1 ? w * i / (n - 1) : 0); };
  auto py = [&](double v) { return top + h * (1 - (v - lo) / (hi - lo)); };
  svg << "<text x='" << left + w / 2 << "' y='24' text-anchor='middle' font-weight='bold'>" << title
      << "</text>\n";
  for (int k = 0; k <= 4; ++k) {
    const double v = lo + (hi - lo) * k / 4;
    svg << "<line x1='" << left << "' x2='" << left + w << "' y1='" << py(v) << "' y2='" << py(v)
        << "' stroke='#ddd'/>\n<text x='" << left - 6 << "' y='" << py(v) + 4
        << "' text-anchor='end'>" << std::to_string(v).substr(0, 5) << "</text>\n";
  }
  svg << "<rect x='" << left << "' y='" << top << "' width='" << w << "' height='" << h
      << "' fill='none' stroke='#444'/>\n<text x='" << left + w / 2 << "' y='" << top + h + 32
      << "' text-anchor='middle'>epoch (1.." << n << ")</text>\n";
  for (size_t s = 0; s < series.size(); ++s) {
    svg << "<polyline fill='none' stroke-width='2' stroke='" << colours[s] << "' points='";
    for (size_t i = 0; i < n; ++i) svg << px(i) << "," << py((*series[s].second)[i]) << " ";
    svg << "'/>\n<text x='" << left + w - 4 << "' y='" << top + h - 10 - 16 * s
        << "' text-anchor='end' fill='" << colours[s] << "'>" << series[s].first << "</text>\n";
  }
}

}  // namespace detail

inline void write_curves_svg(const std::string& path, const std::vector<double>& train_loss,
                             const std::vector<double>& train_acc,
                             const std::vector<double>& test_acc) {
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='860' height='310' "
         "font-family='sans-serif' "
         "font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  const double max_loss = *std::max_element(train_loss.begin(), train_loss.end());
  detail::panel(svg, 0, "training loss (cross entropy)", {{"train loss", &train_loss}}, {"#d62728"},
                0.0, std::max(max_loss, 1e-3));
  const double min_acc = std::min(*std::min_element(train_acc.begin(), train_acc.end()),
                                  *std::min_element(test_acc.begin(), test_acc.end()));
  detail::panel(svg, 430, "accuracy", {{"train", &train_acc}, {"test", &test_acc}},
                {"#1f77b4", "#2ca02c"}, std::min(0.9, std::floor(min_acc * 10) / 10), 1.0);
  svg << "</svg>\n";
  std::ofstream f(path);
  TG_CHECK(f.good(), tg::Error, "digits", "cannot write '", path, "'");
  f << svg.str();
}

}  // namespace examples
