// makemore, after Andrej Karpathy's: learn to spell English-looking words one character at a
// time from /usr/share/dict/words (Debian's wamerican; tools/setup.sh installs it). First a
// bigram table (counts of which letter follows which), then a small causal transformer (2 blocks,
// 4 heads, 64 dims, a context of 16 characters) trained with AdamW; both are scored by their
// negative log-likelihood per character on the same held-out words, and the transformer, which
// sees the whole word so far instead of one letter, must do clearly better. Ends by sampling 20
// new words (not in the list).
//
//   ./build/examples/makemore [--steps N] [--quick] [--threads N] [--out DIR]
//
// --quick is the ctest schedule (fewer steps). Writes DIR/makemore_curves.svg. Exits non-zero
// unless the transformer's validation loss is at least kMargin below the bigram's.
#include <tapegrad/tapegrad.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr int64_t kVocab = 27;    // '.' (start and end of a word) and a..z
constexpr int64_t kContext = 16;  // '.' plus up to 15 letters
constexpr double kMargin = 0.15;  // nats per character the transformer must gain over bigrams
constexpr const char* kWords = "/usr/share/dict/words";

struct Config {
  int64_t steps = 2000;
  int64_t batch_size = 32;
  int64_t eval_every = 100;
  double lr = 6e-3;
  double weight_decay = 0.05;
  // One thread: this model's ops are small (512 tokens x 64 dims), and splitting them across
  // threads costs more than it saves, most of all on a busy machine.
  int threads = 1;
  std::string out = TG_OUT_DIR;
};

Config parse_args(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) {
      c.steps = std::stoll(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      c.threads = std::stoi(argv[++i]);
    } else if (a == "--quick") {
      c.steps = 300;
    } else if (a == "--out" && i + 1 < argc) {
      c.out = argv[++i];
    } else {
      std::cerr << "usage: makemore [--steps N] [--quick] [--threads N] [--out DIR]\n";
      std::exit(2);
    }
  }
  return c;
}

// The word list: lower-case words of letters only, at most kContext - 1 of them, each once.
std::vector<std::string> read_words() {
  std::ifstream in(kWords);
  if (!in) {
    std::cerr << "makemore: cannot read " << kWords << " (Debian package wamerican; "
              << "tools/setup.sh installs it)\n";
    std::exit(1);
  }
  std::set<std::string> words;
  for (std::string w; std::getline(in, w);) {
    const bool letters = !w.empty() && std::all_of(w.begin(), w.end(),
                                                   [](char ch) { return ch >= 'a' && ch <= 'z'; });
    if (letters && static_cast<int64_t>(w.size()) < kContext) words.insert(w);
  }
  return {words.begin(), words.end()};
}

int64_t token(char ch) { return ch - 'a' + 1; }

// Inputs and targets of each word: x = ".word" padded with '.', y = "word." padded with -100
// (cross_entropy's ignore_index), so position t predicts character t + 1 from characters 0..t.
std::pair<tg::Tensor, tg::Tensor> encode(const std::vector<std::string>& words,
                                         const std::vector<int64_t>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size());
  std::vector<int64_t> x(n * kContext, 0), y(n * kContext, -100);
  for (int64_t r = 0; r < n; ++r) {
    const std::string& w = words[rows[r]];
    for (size_t t = 0; t < w.size(); ++t) {
      x[r * kContext + t + 1] = token(w[t]);
      y[r * kContext + t] = token(w[t]);
    }
    y[r * kContext + w.size()] = 0;
  }
  return {tg::tensor(x, {n, kContext}), tg::tensor(y, {n, kContext})};
}

// The bigram model: P(next | current) from train counts plus one (no zero probabilities), and
// its mean negative log-likelihood per character on the validation words.
double bigram_val_loss(const std::vector<std::string>& words, const std::vector<int64_t>& train,
                       const std::vector<int64_t>& val) {
  std::vector<double> counts(kVocab * kVocab, 1.0);
  auto each_pair = [&](const std::string& w, auto fn) {
    int64_t prev = 0;
    for (char ch : w) {
      fn(prev, token(ch));
      prev = token(ch);
    }
    fn(prev, 0);
  };
  for (int64_t r : train)
    each_pair(words[r], [&](int64_t a, int64_t b) { counts[a * kVocab + b] += 1; });
  std::vector<double> row_sum(kVocab, 0.0);
  for (int64_t a = 0; a < kVocab; ++a)
    for (int64_t b = 0; b < kVocab; ++b) row_sum[a] += counts[a * kVocab + b];
  double nll = 0;
  int64_t n = 0;
  for (int64_t r : val)
    each_pair(words[r], [&](int64_t a, int64_t b) {
      nll -= std::log(counts[a * kVocab + b] / row_sum[a]);
      ++n;
    });
  return nll / static_cast<double>(n);
}

// Token and position embeddings, causal transformer blocks, a final norm and the logits.
struct CharTransformer : tg::nn::Module {
  std::shared_ptr<tg::nn::Embedding> token_embedding, position_embedding;
  std::shared_ptr<tg::nn::ModuleList> blocks;
  std::shared_ptr<tg::nn::LayerNorm> norm;
  std::shared_ptr<tg::nn::Linear> head;

  CharTransformer(int64_t dim, int64_t heads, int64_t layers) : Module("CharTransformer") {
    token_embedding =
        register_module("token_embedding", std::make_shared<tg::nn::Embedding>(kVocab, dim));
    position_embedding =
        register_module("position_embedding", std::make_shared<tg::nn::Embedding>(kContext, dim));
    blocks = register_module("blocks", std::make_shared<tg::nn::ModuleList>());
    for (int64_t i = 0; i < layers; ++i)
      blocks->push_back(std::make_shared<tg::nn::TransformerBlock>(
          dim, heads, tg::nn::TransformerBlockOptions{.causal = true}));
    norm = register_module("norm", std::make_shared<tg::nn::LayerNorm>(std::vector<int64_t>{dim}));
    head = register_module("head", std::make_shared<tg::nn::Linear>(dim, kVocab));
  }

  // tokens [B, T] -> logits [B, T, kVocab]
  tg::Tensor forward(const tg::Tensor& tokens) override {
    const int64_t T = tokens.size(1);
    tg::Tensor x = (*token_embedding)(tokens) + (*position_embedding)(tg::arange(T, tg::kInt64));
    for (const auto& block : *blocks) x = (*block)(x);
    return (*head)((*norm)(x));
  }
};

double loss_of(CharTransformer& model, const tg::Tensor& x, const tg::Tensor& y) {
  const tg::Tensor logits = model(x);
  return tg::cross_entropy(logits.reshape({-1, kVocab}), y.reshape({-1})).item<double>();
}

// Mean validation loss per character over rows [0, n) in chunks (the chunks' losses are means
// over their own characters, so they are weighted by those counts).
double val_loss(CharTransformer& model, const tg::Tensor& x, const tg::Tensor& y, int64_t n) {
  tg::NoGradGuard no_grad;
  model.eval();
  double total = 0, chars = 0;
  for (int64_t r = 0; r < n; r += 1024) {
    const int64_t len = std::min<int64_t>(1024, n - r);
    const tg::Tensor yc = y.narrow(0, r, len);
    const double count = tg::sum(yc != -100).item<double>();
    total += loss_of(model, x.narrow(0, r, len), yc) * count;
    chars += count;
  }
  model.train();
  return total / chars;
}

// One word from the model: start with '.', sample each next character from the softmax of the
// last position's logits, stop at '.' or at the context's end.
std::string sample_word(CharTransformer& model) {
  tg::NoGradGuard no_grad;
  std::vector<int64_t> context{0};
  std::string word;
  while (static_cast<int64_t>(context.size()) < kContext) {
    const int64_t t = static_cast<int64_t>(context.size());
    const tg::Tensor logits = model(tg::tensor(context, {1, t})).select(1, t - 1).select(0, 0);
    const std::vector<float> p = tg::softmax(logits, 0).to_vector<float>();
    double u = tg::rand({1}).item<float>();
    int64_t next = kVocab - 1;
    for (int64_t c = 0; c < kVocab; ++c)
      if ((u -= p[c]) < 0) {
        next = c;
        break;
      }
    if (next == 0) break;
    word += static_cast<char>('a' + next - 1);
    context.push_back(next);
  }
  return word;
}

void write_loss_svg(const std::string& path, const std::vector<double>& steps,
                    const std::vector<double>& train, const std::vector<double>& val,
                    double bigram) {
  const double w = 560, h = 300, left = 60, top = 40;
  // The y range in quarter nats around every value shown.
  const double hi = std::ceil(std::max({*std::max_element(train.begin(), train.end()),
                                        *std::max_element(val.begin(), val.end()), bigram}) *
                              4) /
                    4;
  const double lo = std::floor(std::min(*std::min_element(train.begin(), train.end()),
                                        *std::min_element(val.begin(), val.end())) *
                               4) /
                    4;
  auto px = [&](double s) { return left + w * s / steps.back(); };
  auto py = [&](double v) { return top + h * (hi - v) / (hi - lo); };
  std::ofstream f(path);
  f << "<svg xmlns='http://www.w3.org/2000/svg' width='700' height='400' font-family='sans-serif'"
       " font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n<text x='"
    << left + w / 2 << "' y='24' text-anchor='middle' font-weight='bold'>makemore: loss per "
    << "character (nats)</text>\n";
  for (double v = lo; v <= hi + 1e-9; v += 0.25)
    f << "<line x1='" << left << "' x2='" << left + w << "' y1='" << py(v) << "' y2='" << py(v)
      << "' stroke='#ddd'/><text x='" << left - 6 << "' y='" << py(v) + 4 << "' text-anchor='end'>"
      << v << "</text>\n";
  f << "<rect x='" << left << "' y='" << top << "' width='" << w << "' height='" << h
    << "' fill='none' stroke='#444'/>\n<text x='" << left + w / 2 << "' y='" << top + h + 32
    << "' text-anchor='middle'>training step (0.." << steps.back() << ")</text>\n";
  f << "<line x1='" << left << "' x2='" << left + w << "' y1='" << py(bigram) << "' y2='"
    << py(bigram) << "' stroke='#888' stroke-dasharray='6 4'/>\n";
  const std::vector<std::pair<const std::vector<double>*, const char*>> lines = {{&train,
                                                                                  "#d62728"},
                                                                                 {&val, "#1f77b4"}};
  for (const auto& [series, colour] : lines) {
    f << "<polyline fill='none' stroke-width='2' stroke='" << colour << "' points='";
    for (size_t i = 0; i < steps.size(); ++i) f << px(steps[i]) << "," << py((*series)[i]) << " ";
    f << "'/>\n";
  }
  // The legend, bottom left (the curves start high and fall to the right).
  const std::vector<std::pair<const char*, const char*>> legend = {{"train (transformer)",
                                                                    "#d62728"},
                                                                   {"validation (transformer)",
                                                                    "#1f77b4"},
                                                                   {"validation (bigram)", "#888"}};
  for (size_t i = 0; i < legend.size(); ++i)
    f << "<text x='" << left + 10 << "' y='" << top + h - 46 + 16 * static_cast<double>(i)
      << "' fill='" << legend[i].second << "'>" << legend[i].first << "</text>\n";
  f << "</svg>\n";
}

}  // namespace

int main(int argc, char** argv) {
  const Config cfg = parse_args(argc, argv);
  std::filesystem::create_directories(cfg.out);
  tg::set_num_threads(cfg.threads);
  tg::manual_seed(0);

  // Data: a fixed seeded 90/10 split of the words.
  const std::vector<std::string> words = read_words();
  const auto split =
      tg::data::train_test_split(static_cast<int64_t>(words.size()), 0.1, /*seed=*/0);
  const std::vector<int64_t> train_rows = split.train.to_vector<int64_t>();
  const std::vector<int64_t> val_rows = split.test.to_vector<int64_t>();
  const auto [x_train, y_train] = encode(words, train_rows);
  const auto [x_val, y_val] = encode(words, val_rows);
  std::printf("makemore: %zu words from %s (%zu train / %zu validation), %lld characters + '.'\n",
              words.size(), kWords, train_rows.size(), val_rows.size(),
              static_cast<long long>(kVocab - 1));

  const double bigram = bigram_val_loss(words, train_rows, val_rows);
  std::printf("bigram model: validation loss %.4f nats per character\n", bigram);

  CharTransformer model(64, 4, 2);
  std::printf("transformer: %lld parameters, %lld steps of %lld words, AdamW lr %.0e\n",
              static_cast<long long>(model.num_parameters()), static_cast<long long>(cfg.steps),
              static_cast<long long>(cfg.batch_size), cfg.lr);
  tg::nn::AdamW optimizer(model.parameters(), {.lr = cfg.lr, .weight_decay = cfg.weight_decay});
  tg::nn::CosineAnnealingLR schedule(optimizer, cfg.steps, cfg.lr / 20);
  const int64_t n_train = x_train.size(0), val_subset = std::min<int64_t>(1024, x_val.size(0));

  std::vector<double> curve_steps, curve_train, curve_val;
  double train_seconds = 0, running = 0;  // train_seconds: the steps only, not the evaluations
  int64_t running_n = 0;
  for (int64_t step = 1; step <= cfg.steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    const tg::Tensor rows = tg::randint(0, n_train, {cfg.batch_size});
    const tg::Tensor logits = model(x_train.index_select(0, rows));
    const tg::Tensor loss = tg::cross_entropy(logits.reshape({-1, kVocab}),
                                              y_train.index_select(0, rows).reshape({-1}));
    optimizer.zero_grad();
    loss.backward();
    tg::nn::utils::clip_grad_norm_(model.parameters(), 1.0);
    optimizer.step();
    schedule.step();
    running += loss.item<double>();
    ++running_n;
    train_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (step % cfg.eval_every == 0 || step == cfg.steps) {
      const double val = val_loss(model, x_val, y_val, val_subset);
      curve_steps.push_back(static_cast<double>(step));
      curve_train.push_back(running / static_cast<double>(running_n));
      curve_val.push_back(val);
      std::printf("step %5lld/%lld  train loss %.4f  validation loss %.4f  (%.1f s)\n",
                  static_cast<long long>(step), static_cast<long long>(cfg.steps),
                  curve_train.back(), val, train_seconds);
      std::fflush(stdout);
      running = 0;
      running_n = 0;
    }
  }
  const double transformer = val_loss(model, x_val, y_val, x_val.size(0));
  std::printf("training time: %.1f s for %lld steps\n", train_seconds,
              static_cast<long long>(cfg.steps));
  std::printf("validation loss per character: bigram %.4f, transformer %.4f\n", bigram,
              transformer);

  const std::string svg_path = cfg.out + "/makemore_curves.svg";
  write_loss_svg(svg_path, curve_steps, curve_train, curve_val, bigram);
  std::cout << "curves: " << svg_path << "\n";

  // 20 new words: samples that are not in the word list (dictionary words are counted, not shown).
  model.eval();
  const std::set<std::string> known(words.begin(), words.end());
  std::vector<std::string> fresh;
  int64_t tries = 0;
  while (fresh.size() < 20 && tries < 1000) {
    ++tries;
    std::string w = sample_word(model);
    if (!w.empty() && !known.count(w)) fresh.push_back(w);
  }
  std::printf("20 new words (%lld samples; the other %lld were already in the list or empty):\n ",
              static_cast<long long>(tries), static_cast<long long>(tries - 20));
  for (const auto& w : fresh) std::printf(" %s", w.c_str());
  std::printf("\n");

  if (transformer > bigram - kMargin) {
    std::cerr << "FAILED: the transformer's validation loss is not " << kMargin
              << " below the bigram's\n";
    return 1;
  }
  return 0;
}
